#include "policy/section_reader.h"

#include <algorithm>

#include "k8s/edit_distance.h"
#include "k8s/name_syntax.h"
#include "policy/policy.h"

namespace karta {
namespace {

constexpr const char* kPlaceholders[] = {"namespace", "name", "kind", "group", "component", "instance", "gpus"};

}  // namespace

std::string nearest_field_hint(const std::string& key, const std::set<std::string>& known) {
  const std::string* best = nullptr;
  std::size_t best_distance = 4;
  for (const std::string& candidate : known) {
    const std::size_t distance = edit_distance(key, candidate);
    if (distance < best_distance && distance < std::max<std::size_t>(key.size(), 2)) {
      best = &candidate;
      best_distance = distance;
    }
  }
  return best == nullptr ? "" : " (did you mean \"" + *best + "\"?)";
}

// Names of the placeholders in `text`; throws on an unknown or unterminated one.
void check_placeholders(const std::string& text, const std::string& field) {
  std::size_t pos = 0;
  while ((pos = text.find("{{", pos)) != std::string::npos) {
    std::size_t end = text.find("}}", pos);
    if (end == std::string::npos) throw InputError(field + ": unterminated placeholder in \"" + text + "\"");
    std::string name = text.substr(pos + 2, end - pos - 2);
    if (std::find(std::begin(kPlaceholders), std::end(kPlaceholders), name) == std::end(kPlaceholders)) {
      throw InputError(field + ": unknown placeholder {{" + name +
                       "}} (known: namespace, name, kind, group, component, instance, gpus)");
    }
    pos = end + 2;
  }
}

std::map<std::string, std::string> read_string_map(const json& value, const std::string& field,
                                                   std::string (*key_error)(const std::string&), Values values) {
  if (value.is_null()) return {};
  if (!value.is_object()) throw InputError(field + ": must be a map of strings, not " + value.type_name());
  std::map<std::string, std::string> map;
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string()) {
      throw InputError(field + "." + key + ": must be a string, not " + item.type_name() + " (quote it in YAML)");
    }
    if (auto error = key_error(key); !error.empty()) throw InputError(field + ": key \"" + key + "\" " + error);
    const auto& text = item.get_ref<const std::string&>();
    check_placeholders(text, field + "." + key);
    // With placeholders, validity is known only once filled: checked per template then.
    if (values == Values::LabelValues && !has_placeholder(text)) {
      if (auto error = label_value_error(text); !error.empty()) {
        throw InputError(field + "." + key + ": value \"" + text + "\" " + error);
      }
    }
    map.emplace(key, text);
  }
  return map;
}

}  // namespace karta
