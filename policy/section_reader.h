#pragma once

// The strict reader of the policy's YAML maps, shared by the global sections and the tenant rules: every
// member read by name, an unknown one refused naming its field path, each value checked for its type.

#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "json/documents.h"

namespace karta {

using json = nlohmann::json;

// " (did you mean \"name\"?)" for the field of `known` nearest to `key` by edit distance, or nothing.
std::string nearest_field_hint(const std::string& key, const std::set<std::string>& known);

// Reads the members of one map of the policy, refusing unknown ones.
class Section {
 public:
  Section(const json& value, std::string where) : value_(value), where_(std::move(where)) {
    if (!value_.is_null() && !value_.is_object()) {
      throw InputError(where_ + ": must be a map, not " + std::string(value_.type_name()));
    }
  }
  ~Section() noexcept(false) {
    if (std::uncaught_exceptions() > 0 || !value_.is_object()) return;
    for (const auto& [key, unused] : value_.items()) {
      if (known_.count(key) == 0) throw InputError(field(key) + ": unknown field" + nearest_field_hint(key, known_));
    }
  }
  std::string field(const std::string& key) const { return where_.empty() ? key : where_ + "." + key; }
  const json& get(const std::string& key) {
    known_.insert(key);
    static const json null;
    if (!value_.is_object()) return null;
    auto it = value_.find(key);
    return it == value_.end() ? null : *it;
  }
  std::string string(const std::string& key, const std::string& fallback = "") {
    const json& v = get(key);
    if (v.is_null()) return fallback;
    if (!v.is_string()) throw InputError(field(key) + ": must be a string, not " + v.type_name());
    return v.get<std::string>();
  }
  bool boolean(const std::string& key, bool fallback) {
    const json& v = get(key);
    if (v.is_null()) return fallback;
    if (!v.is_boolean()) throw InputError(field(key) + ": must be true or false");
    return v.get<bool>();
  }
  std::vector<std::string> strings(const std::string& key) {
    const json& v = get(key);
    std::vector<std::string> out;
    if (v.is_null()) return out;
    if (!v.is_array()) throw InputError(field(key) + ": must be a list of strings, not " + v.type_name());
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string()) throw InputError(field(key) + "[" + std::to_string(i) + "]: must be a string");
      out.push_back(v[i].get<std::string>());
    }
    return out;
  }

 private:
  const json& value_;
  std::string where_;
  std::set<std::string> known_;
};

enum class Values { LabelValues, Free };

// A map of string to string (labels, annotations, a node selector), each key checked by `key_error`
// and, for LabelValues, each value as a label value (unless it holds a placeholder, checked when filled).
std::map<std::string, std::string> read_string_map(const json& value, const std::string& field,
                                                   std::string (*key_error)(const std::string&), Values values);

// Throws on a placeholder that is unknown or unterminated in `text`, read at `field`.
void check_placeholders(const std::string& text, const std::string& field);

}  // namespace karta
