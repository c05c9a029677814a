// Validation of custom objects against structural OpenAPI v3 schemas, following apiextensions-apiserver
// (see openapi_schema.h for what is covered and how violations are named). Defaulting and pruning, which
// change the object, are in openapi_schema_defaults_pruning.cpp; the x-kubernetes-validations rules this
// reports on are evaluated in openapi_schema_rules.cpp.

#include "k8s/openapi_schema.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <set>

#include "k8s/edit_distance.h"
#include "k8s/openapi_schema_nodes.h"

namespace karta {
namespace {

using openapi_schema_nodes::as_json_text;
using openapi_schema_nodes::child_field;
using openapi_schema_nodes::Extra;
using openapi_schema_nodes::extra_fields;
using openapi_schema_nodes::flag;
using openapi_schema_nodes::index_field;
using openapi_schema_nodes::is_identifier;
using openapi_schema_nodes::is_meta_field;
using openapi_schema_nodes::member;
using openapi_schema_nodes::property_schema;
using openapi_schema_nodes::type_of;

// Strings longer than this are not searched with a pattern: std::regex recurses per character.
constexpr std::size_t kMaxPatternInput = 4096;

// ---- values

bool is_integer(const json& value) {
  if (value.is_number_integer()) return true;
  if (!value.is_number_float()) return false;
  double d = value.get<double>();
  return std::isfinite(d) && d == std::floor(d);
}

// "a string", for "must be a string, not boolean".
std::string expected_name(const std::string& type) {
  if (type == "object") return "an object";
  if (type == "array") return "a list";
  if (type == "integer") return "an integer";
  return "a " + type;
}

bool has_type(const json& value, const std::string& type) {
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "string") return value.is_string();
  if (type == "integer") return is_integer(value);
  if (type == "number") return value.is_number();
  if (type == "boolean") return value.is_boolean();
  return true;  // an unknown type: the API server refuses such a CRD; nothing to check here
}

std::size_t utf8_length(const std::string& s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string plural(std::int64_t n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

// A schema bound as an integer (minItems, ...), or nullopt when absent or not an integer.
std::optional<std::int64_t> bound(const json& schema, const char* key) {
  const json& value = member(schema, key);
  if (!is_integer(value)) return std::nullopt;
  if (value.is_number_integer()) return value.get<std::int64_t>();
  double d = value.get<double>();
  if (std::fabs(d) > 9e18) return std::nullopt;  // not representable: no CRD has such a bound
  return static_cast<std::int64_t>(d);
}

// ---- patterns, compiled once per process

struct CompiledPattern {
  std::optional<std::regex> regex;  // nullopt when std::regex does not accept the pattern
};

const CompiledPattern& compiled_pattern(const std::string& pattern) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<CompiledPattern>> cache;
  std::lock_guard lock(mutex);
  auto& entry = cache[pattern];
  if (!entry) {
    entry = std::make_unique<CompiledPattern>();
    try {
      entry->regex.emplace(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error&) {
      entry->regex.reset();
    }
  }
  return *entry;
}

// A rule's `fieldPath` (`.a.b`) appended to `field`, or `field` when it is absent or of another form.
std::string rule_field(const std::string& field, const json& rule) {
  const json& path = member(rule, "fieldPath");
  if (!path.is_string()) return field;
  const std::string& text = path.get_ref<const std::string&>();
  std::string out = field;
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (text[pos] != '.') return field;
    std::size_t end = text.find('.', pos + 1);
    std::string key = text.substr(pos + 1, end == std::string::npos ? std::string::npos : end - pos - 1);
    if (!is_identifier(key)) return field;
    out = child_field(out, key);
    pos = end == std::string::npos ? text.size() : end;
  }
  return out;
}

// ---- validation

class Validator {
 public:
  // `check_fields`: report unknown fields (off inside allOf, anyOf, oneOf and not).
  explicit Validator(bool check_fields = true) : check_fields_(check_fields) {}

  std::vector<SchemaViolation> violations;

  // `skip_unknown`: this place keeps unknown fields (x-kubernetes-preserve-unknown-fields here, or on a
  // list holding this entry). `resource_root`: the root object, whose meta fields are the API server's.
  void validate(const json& schema, const json& value, const std::string& field, bool skip_unknown,
                bool resource_root) {
    skip_unknown = skip_unknown || flag(schema, "x-kubernetes-preserve-unknown-fields");
    bool embedded = flag(schema, "x-kubernetes-embedded-resource");
    resource_root = resource_root || embedded;
    if (!check_type(schema, value, field)) return;

    check_enum(schema, value, field);
    if (value.is_string()) check_string(schema, value.get_ref<const std::string&>(), field);
    if (value.is_number()) check_number(schema, value, field);
    if (value.is_array()) check_list(schema, value, field);
    if (value.is_object()) check_object(schema, value, field, embedded);
    check_combinations(schema, value, field);
    check_rules(schema, value, field);

    if (value.is_array()) {
      const json& items = member(schema, "items");
      for (std::size_t i = 0; i < value.size(); ++i) {
        validate(items, value[i], index_field(field, i), skip_unknown, false);
      }
    } else if (value.is_object()) {
      validate_fields(schema, value, field, skip_unknown, resource_root);
    }
  }

 private:
  void add(std::string field, std::string message) { violations.push_back({std::move(field), std::move(message)}); }

  // False when the value is not of the schema's type (nothing else is checked then).
  bool check_type(const json& schema, const json& value, const std::string& field) {
    std::string type = type_of(schema);
    bool int_or_string = flag(schema, "x-kubernetes-int-or-string");
    if (value.is_null()) {
      if (flag(schema, "nullable")) return false;
      if (int_or_string)
        add(field, "must be an integer or a string, not null");
      else if (!type.empty())
        add(field, "must be " + expected_name(type) + ", not null");
      return false;
    }
    if (int_or_string) {
      if (is_integer(value) || value.is_string()) return true;
      add(field, std::string("must be an integer or a string, not ") + value.type_name());
      return false;
    }
    if (type.empty() || has_type(value, type)) return true;
    add(field, "must be " + expected_name(type) + ", not " + value.type_name());
    return false;
  }

  void check_enum(const json& schema, const json& value, const std::string& field) {
    const json& values = member(schema, "enum");
    if (!values.is_array() || std::find(values.begin(), values.end(), value) != values.end()) return;
    std::string list;
    for (const auto& allowed : values) list += (list.empty() ? "" : ", ") + as_json_text(allowed);
    add(field, "must be one of " + list + ", not " + as_json_text(value));
  }

  void check_string(const json& schema, const std::string& value, const std::string& field) {
    std::size_t length = utf8_length(value);
    if (auto min = bound(schema, "minLength"); min && static_cast<std::int64_t>(length) < *min) {
      add(field, "must be at least " + plural(*min, "character") + " long");
    }
    if (auto max = bound(schema, "maxLength"); max && static_cast<std::int64_t>(length) > *max) {
      add(field, "must be at most " + plural(*max, "character") + " long");
    }
    const json& pattern = member(schema, "pattern");
    if (!pattern.is_string()) return;
    const std::string& text = pattern.get_ref<const std::string&>();
    if (value.size() > kMaxPatternInput) {
      add(field,
          "too long to check against the pattern `" + text + "` (over " + std::to_string(kMaxPatternInput) + " bytes)");
      return;
    }
    const CompiledPattern& compiled = compiled_pattern(text);
    if (!compiled.regex) {
      add(field, "pattern not supported: `" + text + "`");
      return;
    }
    try {
      if (!std::regex_search(value, *compiled.regex)) add(field, "must match the pattern `" + text + "`");
    } catch (const std::regex_error&) {
      add(field, "could not be checked against the pattern `" + text + "`");
    }
  }

  void check_number(const json& schema, const json& value, const std::string& field) {
    double number = value.get<double>();
    if (const json& min = member(schema, "minimum"); min.is_number()) {
      bool exclusive = flag(schema, "exclusiveMinimum");
      if (exclusive ? number <= min.get<double>() : number < min.get<double>()) {
        add(field, std::string("must be greater than ") + (exclusive ? "" : "or equal to ") + min.dump());
      }
    }
    if (const json& max = member(schema, "maximum"); max.is_number()) {
      bool exclusive = flag(schema, "exclusiveMaximum");
      if (exclusive ? number >= max.get<double>() : number > max.get<double>()) {
        add(field, std::string("must be less than ") + (exclusive ? "" : "or equal to ") + max.dump());
      }
    }
    if (const json& factor = member(schema, "multipleOf"); factor.is_number() && factor.get<double>() > 0) {
      // As go-openapi, with room for the rounding of decimal fractions (0.3 is a multiple of 0.1).
      double quotient = number / factor.get<double>();
      if (std::fabs(quotient - std::round(quotient)) > 1e-9 * std::max(1.0, std::fabs(quotient))) {
        add(field, "must be a multiple of " + factor.dump());
      }
    }
  }

  void check_list(const json& schema, const json& value, const std::string& field) {
    auto size = static_cast<std::int64_t>(value.size());
    if (auto min = bound(schema, "minItems"); min && size < *min) {
      add(field, "must have at least " + plural(*min, "item"));
    }
    if (auto max = bound(schema, "maxItems"); max && size > *max) {
      add(field, "must have at most " + plural(*max, "item"));
    }

    const json& list_type = member(schema, "x-kubernetes-list-type");
    if (list_type == "set") {
      std::map<json, std::size_t> seen;
      for (std::size_t i = 0; i < value.size(); ++i) {
        auto [it, added] = seen.emplace(value[i], i);
        if (!added) add(index_field(field, i), "duplicate entry: the same as [" + std::to_string(it->second) + "]");
      }
    } else if (list_type == "map") {
      std::vector<std::string> keys = list_map_keys(schema);
      if (keys.empty()) return;
      std::map<json, std::size_t> seen;
      for (std::size_t i = 0; i < value.size(); ++i) {
        if (!value[i].is_object()) continue;
        json key = json::array();
        std::string described;
        for (const auto& name : keys) {
          auto it = value[i].find(name);
          if (it == value[i].end()) break;
          key.push_back(*it);
          described += (described.empty() ? "" : ", ") + name + " " + as_json_text(*it);
        }
        if (key.size() != keys.size()) continue;  // a missing key is reported as a missing required field
        auto [it, added] = seen.emplace(key, i);
        if (!added) {
          add(index_field(field, i),
              "duplicate entry: " + described + " is already at [" + std::to_string(it->second) + "]");
        }
      }
    }
  }

  // x-kubernetes-list-map-keys; without them, the entries' single required field (see the header).
  static std::vector<std::string> list_map_keys(const json& schema) {
    std::vector<std::string> keys;
    const json& given = member(schema, "x-kubernetes-list-map-keys");
    if (given.is_array()) {
      for (const auto& key : given) {
        if (key.is_string()) keys.push_back(key.get<std::string>());
      }
      return keys;
    }
    const json& required = member(member(schema, "items"), "required");
    if (required.is_array() && required.size() == 1 && required[0].is_string()) {
      keys.push_back(required[0].get<std::string>());
    }
    return keys;
  }

  void check_object(const json& schema, const json& value, const std::string& field, bool embedded) {
    auto size = static_cast<std::int64_t>(value.size());
    if (auto min = bound(schema, "minProperties"); min && size < *min) {
      add(field, "must have at least " + plural(*min, "field"));
    }
    if (auto max = bound(schema, "maxProperties"); max && size > *max) {
      add(field, "must have at most " + plural(*max, "field"));
    }
    const json& required = member(schema, "required");
    if (required.is_array()) {
      for (const auto& name : required) {
        if (name.is_string() && !value.contains(name.get<std::string>())) {
          add(child_field(field, name.get<std::string>()), "is required");
        }
      }
    }
    if (embedded) {
      for (const char* name : {"apiVersion", "kind"}) {
        bool listed = required.is_array() && std::find(required.begin(), required.end(), name) != required.end();
        if (!listed && !value.contains(name)) add(child_field(field, name), "is required");
      }
    }
  }

  // Whether `value` satisfies `schema` as a value validation (no unknown-field checks).
  static bool satisfies(const json& schema, const json& value, const std::string& field) {
    Validator inner(false);
    inner.validate(schema, value, field, true, false);
    return inner.violations.empty();
  }

  void check_combinations(const json& schema, const json& value, const std::string& field) {
    if (const json& all = member(schema, "allOf"); all.is_array()) {
      for (const auto& part : all) {
        Validator inner(false);
        inner.validate(part, value, field, true, false);
        violations.insert(violations.end(), inner.violations.begin(), inner.violations.end());
      }
    }
    if (const json& any = member(schema, "anyOf"); any.is_array() && !any.empty()) {
      bool matched =
          std::any_of(any.begin(), any.end(), [&](const json& part) { return satisfies(part, value, field); });
      if (!matched) add(field, "must match at least one of the schemas of anyOf");
    }
    if (const json& one = member(schema, "oneOf"); one.is_array() && !one.empty()) {
      auto matched =
          std::count_if(one.begin(), one.end(), [&](const json& part) { return satisfies(part, value, field); });
      if (matched != 1) {
        add(field, "must match exactly one of the schemas of oneOf, not " + std::to_string(matched));
      }
    }
    if (const json& negated = member(schema, "not"); negated.is_object() && satisfies(negated, value, field)) {
      add(field, "must not match the schema of not");
    }
  }

  void check_rules(const json& schema, const json& value, const std::string& field) {
    const json& rules = member(schema, "x-kubernetes-validations");
    if (!rules.is_array()) return;
    for (const auto& rule : rules) {
      const json& text = member(rule, "rule");
      if (!text.is_string()) continue;
      const std::string& source = text.get_ref<const std::string&>();
      auto holds = evaluate_validation_rule(source, value);
      if (!holds) {
        add(field, "rule not supported: " + source);
      } else if (!*holds) {
        const json& message = member(rule, "message");
        add(rule_field(field, rule), message.is_string() && !message.get_ref<const std::string&>().empty()
                                         ? message.get<std::string>()
                                         : "failed rule: " + source);
      }
    }
  }

  void validate_fields(const json& schema, const json& value, const std::string& field, bool skip_unknown,
                       bool resource_root) {
    Extra extra = extra_fields(schema);
    for (const auto& [key, child] : value.items()) {
      std::string where = child_field(field, key);
      if (resource_root && is_meta_field(key)) {
        if (key == "metadata") {
          if (!child.is_object()) add(where, std::string("must be an object, not ") + child.type_name());
        } else {
          static const json kString = {{"type", "string"}};
          const json& own = property_schema(schema, key);
          validate(own.is_object() ? own : kString, child, where, false, false);
        }
        continue;
      }
      const json& property = property_schema(schema, key);
      if (property.is_object()) {
        validate(property, child, where, false, false);
      } else if (extra == Extra::Schema) {
        validate(member(schema, "additionalProperties"), child, where, false, false);
      } else if (extra == Extra::Unknown && !skip_unknown && check_fields_) {
        add(where, unknown_field_message(schema, key));
      }
    }
  }

  static std::string unknown_field_message(const json& schema, const std::string& key) {
    std::string message = "unknown field";
    const std::string* closest = nullptr;
    // As ObjectReader::report_unknown_fields: up to a third of the name may differ.
    std::size_t best = std::max<std::size_t>(3, key.size() / 3) + 1;
    const json& properties = member(schema, "properties");
    if (properties.is_object()) {
      for (const auto& [candidate, unused] : properties.items()) {
        std::size_t distance = edit_distance(key, candidate);
        if (distance < best) best = distance, closest = &candidate;
      }
    }
    if (closest != nullptr) message += "; did you mean \"" + *closest + "\"?";
    return message;
  }

  bool check_fields_;
};

}  // namespace

std::vector<SchemaViolation> validate_against_schema(const json& schema, const json& object) {
  Validator validator;
  validator.validate(schema, object, "", false, true);
  return std::move(validator.violations);
}

}  // namespace karta
