#include "policy/policy.h"

#include <cctype>
#include <set>

#include "definitions/documents.h"

namespace karta {
namespace {

bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])? of at most 63 characters.
std::string qualified_name_error(const std::string& name) {
  if (name.empty()) return "must not be empty";
  if (name.size() > 63) return "must be no more than 63 characters";
  if (!is_alnum(name.front()) || !is_alnum(name.back())) return "must begin and end with an alphanumeric character";
  for (char c : name) {
    if (!is_alnum(c) && c != '-' && c != '_' && c != '.') {
      return "may contain only alphanumerics, '-', '_' and '.'";
    }
  }
  return "";
}

// A lowercase RFC 1123 subdomain of at most 253 characters.
std::string dns_subdomain_error(const std::string& prefix) {
  if (prefix.empty() || prefix.size() > 253) return "prefix must be 1 to 253 characters";
  for (char c : prefix) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
    if (!ok) return "prefix must be a lowercase DNS subdomain";
  }
  if (!is_alnum(prefix.front()) || !is_alnum(prefix.back())) return "prefix must begin and end with an alphanumeric";
  return "";
}

std::map<std::string, std::string> read_string_map(const json& value, const std::string& field,
                                                   std::string (*key_error)(const std::string&),
                                                   bool check_values) {
  if (value.is_null()) return {};
  if (!value.is_object()) throw InputError(field + ": must be a map of strings, not " + value.type_name());
  std::map<std::string, std::string> map;
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string()) {
      throw InputError(field + "." + key + ": must be a string, not " + item.type_name() + " (quote it in YAML)");
    }
    if (auto error = key_error(key); !error.empty()) throw InputError(field + ": key \"" + key + "\" " + error);
    const auto& text = item.get_ref<const std::string&>();
    if (check_values) {
      if (auto error = label_value_error(text); !error.empty()) {
        throw InputError(field + "." + key + ": value \"" + text + "\" " + error);
      }
    }
    map.emplace(key, text);
  }
  return map;
}

void reject_unknown(const json& object, const std::string& where, std::initializer_list<const char*> known) {
  std::set<std::string> allowed(known.begin(), known.end());
  for (const auto& [key, unused] : object.items()) {
    if (allowed.count(key) == 0) throw InputError((where.empty() ? key : where + "." + key) + ": unknown field");
  }
}

}  // namespace

std::string label_key_error(const std::string& key) {
  auto slash = key.find('/');
  if (slash == std::string::npos) return qualified_name_error(key);
  if (auto error = dns_subdomain_error(key.substr(0, slash)); !error.empty()) return error;
  if (auto error = qualified_name_error(key.substr(slash + 1)); !error.empty()) return "name part " + error;
  return "";
}

std::string annotation_key_error(const std::string& key) { return label_key_error(key); }

std::string label_value_error(const std::string& value) {
  if (value.empty()) return "";
  return qualified_name_error(value);
}

Policy parse_policy(const json& document, const std::string& source) {
  Policy policy;
  policy.source = source;
  if (document.is_null()) return policy;
  if (!document.is_object()) throw InputError(source + ": a policy must be a map, not " + document.type_name());
  try {
    reject_unknown(document, "", {"podTemplates"});
    if (auto it = document.find("podTemplates"); it != document.end() && !it->is_null()) {
      const json& pt = *it;
      if (!pt.is_object()) throw InputError(std::string("podTemplates: must be a map, not ") + pt.type_name());
      reject_unknown(pt, "podTemplates", {"labels", "annotations", "overwrite"});
      policy.pod_templates.labels = read_string_map(pt.value("labels", json()), "podTemplates.labels",
                                                    label_key_error, /*check_values=*/true);
      policy.pod_templates.annotations = read_string_map(pt.value("annotations", json()), "podTemplates.annotations",
                                                         annotation_key_error, /*check_values=*/false);
      if (auto o = pt.find("overwrite"); o != pt.end() && !o->is_null()) {
        if (!o->is_boolean()) throw InputError("podTemplates.overwrite: must be true or false");
        policy.pod_templates.overwrite = o->get<bool>();
      }
    }
  } catch (const InputError& e) {
    throw InputError(source + ": " + e.what());
  }
  return policy;
}

Policy load_policy(const std::filesystem::path& file) {
  auto documents = read_documents(file);
  if (documents.size() > 1) throw InputError(file.string() + ": a policy is one YAML document, found " +
                                             std::to_string(documents.size()));
  return parse_policy(documents.empty() ? json() : documents[0].value, file.string());
}

}  // namespace karta
