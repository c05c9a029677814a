#include "k8s/openapi_schema.h"

// Defaulting and pruning: the two passes that change the object, as the API server makes them before
// storing it. Apart from validation (openapi_schema.cpp), which only reads the object; both walk it with
// the same reading of the schema (openapi_schema_nodes.h).

#include <string>
#include <vector>

#include "k8s/openapi_schema_nodes.h"

namespace karta {

using openapi_schema_nodes::child_field;
using openapi_schema_nodes::Extra;
using openapi_schema_nodes::extra_fields;
using openapi_schema_nodes::flag;
using openapi_schema_nodes::index_field;
using openapi_schema_nodes::is_meta_field;
using openapi_schema_nodes::member;
using openapi_schema_nodes::property_schema;

namespace {

// The schema of the field `key` of an object: its property, else the schema of the map's values; null
// when neither (an unknown field, or any field of a map without a value schema).
const json& field_schema(const json& schema, const std::string& key) {
  const json& property = property_schema(schema, key);
  if (property.is_object()) return property;
  return extra_fields(schema) == Extra::Schema ? member(schema, "additionalProperties") : property;
}

// A null the API server replaces by the place's default: the place has a schema, is not nullable and
// has a default.
bool defaultable_null(const json& value, const json& schema) {
  return value.is_null() && schema.is_object() && !flag(schema, "nullable") && schema.contains("default");
}

// ---- nulls, as apiextensions-apiserver's defaulting/prunenulls.go: PruneNonNullableNullsWithoutDefaults

void prune_nulls(const json& schema, json& value) {
  if (value.is_object()) {
    std::vector<std::string> gone;
    for (auto& [key, child] : value.items()) {
      const json& field = field_schema(schema, key);
      if (child.is_null() && field.is_object() && !flag(field, "nullable") && !field.contains("default")) {
        gone.push_back(key);
      } else {
        prune_nulls(field, child);
      }
    }
    for (const auto& key : gone) value.erase(key);
  } else if (value.is_array()) {
    for (auto& entry : value) prune_nulls(member(schema, "items"), entry);
  }
}

// ---- defaulting, as defaulting/algorithm.go: Default

void apply_defaults(const json& schema, json& value, bool resource_root) {
  if (!schema.is_object()) return;
  resource_root = resource_root || flag(schema, "x-kubernetes-embedded-resource");
  if (value.is_object()) {
    if (const json& properties = member(schema, "properties"); properties.is_object()) {
      for (const auto& [key, property] : properties.items()) {
        if (resource_root && key == "metadata") continue;
        if (!property.is_object() || !property.contains("default")) continue;
        auto it = value.find(key);
        if (it == value.end() || defaultable_null(*it, property)) value[key] = property["default"];
      }
    }
    for (auto& [key, child] : value.items()) {
      if (resource_root && key == "metadata") continue;
      const json& property = property_schema(schema, key);
      if (property.is_object()) {
        apply_defaults(property, child, false);
      } else if (extra_fields(schema) == Extra::Schema) {
        const json& values = member(schema, "additionalProperties");
        if (defaultable_null(child, values)) child = values["default"];
        apply_defaults(values, child, false);
      }
    }
  } else if (value.is_array()) {
    const json& items = member(schema, "items");
    for (auto& entry : value) {
      if (defaultable_null(entry, items)) entry = items["default"];
      apply_defaults(items, entry, false);
    }
  }
}

// ---- pruning, as apiextensions-apiserver's pruning/algorithm.go: prune() and skipPrune()

class Pruner {
 public:
  std::vector<std::string> removed;

  void prune(const json& schema, json& value, const std::string& field, bool resource_root) {
    if (flag(schema, "x-kubernetes-preserve-unknown-fields")) {
      skip(schema, value, field, resource_root);
      return;
    }
    resource_root = resource_root || flag(schema, "x-kubernetes-embedded-resource");
    if (value.is_object()) {
      std::vector<std::string> unknown;
      for (auto& [key, child] : value.items()) {
        if (resource_root && is_meta_field(key)) continue;
        const json& property = property_schema(schema, key);
        if (property.is_object()) {
          prune(property, child, child_field(field, key), false);
        } else if (extra_fields(schema) == Extra::Schema) {
          prune(member(schema, "additionalProperties"), child, child_field(field, key), false);
        } else if (extra_fields(schema) == Extra::Unknown) {
          removed.push_back(child_field(field, key));  // named in document order, erased after the loop
          unknown.push_back(key);
        }
      }
      for (const auto& key : unknown) value.erase(key);
    } else if (value.is_array()) {
      for (std::size_t i = 0; i < value.size(); ++i)
        prune(member(schema, "items"), value[i], index_field(field, i), false);
    }
  }

 private:
  // A place that keeps its unknown fields: only the fields the schema declares are pruned below it.
  void skip(const json& schema, json& value, const std::string& field, bool resource_root) {
    resource_root = resource_root || flag(schema, "x-kubernetes-embedded-resource");
    if (value.is_object()) {
      for (auto& [key, child] : value.items()) {
        if (resource_root && is_meta_field(key)) continue;
        const json& property = property_schema(schema, key);
        if (property.is_object()) {
          prune(property, child, child_field(field, key), false);
        } else if (extra_fields(schema) == Extra::Schema) {
          prune(member(schema, "additionalProperties"), child, child_field(field, key), false);
        }
      }
    } else if (value.is_array()) {
      const json& items = member(schema, "items");
      if (!items.is_object()) return;
      for (std::size_t i = 0; i < value.size(); ++i) skip(items, value[i], index_field(field, i), false);
    }
  }
};

}  // namespace

void apply_schema_defaults(const json& schema, json& object) {
  prune_nulls(schema, object);
  apply_defaults(schema, object, true);
}

std::vector<std::string> prune_unknown_fields(const json& schema, json& object) {
  Pruner pruner;
  pruner.prune(schema, object, "", true);
  return std::move(pruner.removed);
}

}  // namespace karta
