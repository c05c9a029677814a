#include "k8s/openapi_schema_nodes.h"

// Absent members read as one null value (kNoSchema) rather than nullptr, so that lookups chain:
// member(member(schema, "items"), "required").

#include <algorithm>
#include <cctype>

namespace karta::openapi_schema_nodes {
namespace {

const json kNoSchema;  // null: no schema at all (an absent `items`, ...)

}  // namespace

bool is_identifier(const std::string& key) {
  if (key.empty() || !(std::isalpha(static_cast<unsigned char>(key[0])) || key[0] == '_')) return false;
  return std::all_of(key.begin(), key.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::string as_json_text(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string child_field(const std::string& parent, const std::string& key) {
  if (!is_identifier(key)) return parent + "[" + as_json_text(key) + "]";
  return parent.empty() ? key : parent + "." + key;
}

std::string index_field(const std::string& parent, std::size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

const json& member(const json& schema, const char* key) {
  if (!schema.is_object()) return kNoSchema;
  auto it = schema.find(key);
  return it == schema.end() ? kNoSchema : *it;
}

bool flag(const json& schema, const char* key) {
  const json& value = member(schema, key);
  return value.is_boolean() && value.get<bool>();
}

std::string type_of(const json& schema) {
  const json& type = member(schema, "type");
  return type.is_string() ? type.get<std::string>() : "";
}

const json& property_schema(const json& schema, const std::string& key) {
  const json& properties = member(schema, "properties");
  if (!properties.is_object()) return kNoSchema;
  auto it = properties.find(key);
  return it == properties.end() ? kNoSchema : *it;
}

bool is_meta_field(const std::string& key) { return key == "apiVersion" || key == "kind" || key == "metadata"; }

Extra extra_fields(const json& schema) {
  const json& additional = member(schema, "additionalProperties");
  if (additional.is_object()) return Extra::Schema;
  if (additional.is_boolean() && additional.get<bool>()) return Extra::Any;
  return Extra::Unknown;
}

}  // namespace karta::openapi_schema_nodes
