#pragma once

// ObjectReader, the field-by-field JSON reader of the definition parser (definitions/karta_definition.cpp):
// every field nobody asked for is an "unknown field" with a did-you-mean. Apart from the parser so that
// the extensions annotation (definitions/extensions_annotation.cpp) is read with the same rules and the
// same messages. Internal to the parser: other code reads definitions through karta_definition.h.

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "definitions/karta_definition.h"
#include "k8s/edit_distance.h"

namespace karta::definition_reading {

inline std::string index_field(const std::string& list, std::size_t i) { return list + "[" + std::to_string(i) + "]"; }

// Reads one JSON object field by field; fields nobody asked for are reported as unknown. The schema of
// the published CRD has already been checked when this runs, so its faults are a second line: they
// name what the schema check would have named.
class ObjectReader {
 public:
  ObjectReader(const json& value, std::string path, std::vector<DefinitionFault>& faults)
      : value_(value), path_(std::move(path)), faults_(faults) {
    if (!value_.is_object()) fault(path_, std::string("must be an object, not ") + value_.type_name());
  }
  ObjectReader(const ObjectReader&) = delete;
  ObjectReader& operator=(const ObjectReader&) = delete;
  ~ObjectReader() { report_unknown_fields(); }

  bool is_object() const { return value_.is_object(); }
  bool has(const std::string& key) const { return value_.is_object() && value_.contains(key) && !value_[key].is_null(); }
  std::string field(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  // The member, or nullptr when absent or null. A missing required member is a fault.
  const json* member(const std::string& key, bool required = false) {
    known_.insert(key);
    if (!value_.is_object()) return nullptr;
    auto it = value_.find(key);
    if (it == value_.end() || it->is_null()) {
      if (required) fault(field(key), "is required");
      return nullptr;
    }
    return &*it;
  }

  std::optional<std::string> string(const std::string& key, bool required = false, bool allow_empty = true) {
    const json* value = member(key, required);
    if (value == nullptr) return std::nullopt;
    if (!value->is_string()) {
      fault(field(key), std::string("must be a string, not ") + value->type_name());
      return std::nullopt;
    }
    if (!allow_empty && value->get_ref<const std::string&>().empty()) {
      fault(field(key), "must not be empty");
      return std::nullopt;
    }
    return value->get<std::string>();
  }

  // A jq expression: a non-empty string.
  std::optional<JqField> jq(const std::string& key, bool required = false) {
    auto text = string(key, required, /*allow_empty=*/false);
    if (!text) return std::nullopt;
    return JqField{field(key), *text};
  }

  const json* object(const std::string& key, bool required = false) {
    const json* value = member(key, required);
    if (value != nullptr && !value->is_object()) {
      fault(field(key), std::string("must be an object, not ") + value->type_name());
      return nullptr;
    }
    return value;
  }

  const json* array(const std::string& key, bool required = false) {
    const json* value = member(key, required);
    if (value != nullptr && !value->is_array()) {
      fault(field(key), std::string("must be a list, not ") + value->type_name());
      return nullptr;
    }
    return value;
  }

  // A list of jq expressions.
  std::vector<JqField> jq_list(const std::string& key) {
    std::vector<JqField> fields;
    const json* list = array(key);
    if (list == nullptr) return fields;
    for (std::size_t i = 0; i < list->size(); ++i) {
      const json& item = (*list)[i];
      if (!item.is_string() || item.get_ref<const std::string&>().empty()) {
        fault(index_field(field(key), i), "must be a jq expression (a non-empty string)");
        continue;
      }
      fields.push_back({index_field(field(key), i), item.get<std::string>()});
    }
    return fields;
  }

  // A map of strings.
  std::map<std::string, std::string> string_map(const std::string& key) {
    std::map<std::string, std::string> out;
    const json* map = object(key);
    if (map == nullptr) return out;
    for (const auto& [k, v] : map->items()) {
      if (!v.is_string()) {
        fault(field(key) + "[\"" + k + "\"]", std::string("must be a string, not ") + v.type_name());
        continue;
      }
      out[k] = v.get<std::string>();
    }
    return out;
  }

  void fault(std::string where, std::string message) { faults_.push_back({std::move(where), std::move(message)}); }

 private:
  void report_unknown_fields() {
    if (!value_.is_object()) return;
    for (const auto& [key, unused] : value_.items()) {
      if (known_.count(key) != 0) continue;
      std::string message = "unknown field";
      const std::string* closest = nullptr;
      // Suggest only near misses: up to a third of the name may differ ("podTemplatePath").
      std::size_t best = std::max<std::size_t>(3, key.size() / 3) + 1;
      for (const auto& candidate : known_) {
        std::size_t distance = edit_distance(key, candidate);
        if (distance < best) best = distance, closest = &candidate;
      }
      if (closest != nullptr) message += "; did you mean \"" + *closest + "\"?";
      fault(field(key), message);
    }
  }

  const json& value_;
  std::string path_;
  std::vector<DefinitionFault>& faults_;
  std::set<std::string> known_;
};

}  // namespace karta::definition_reading
