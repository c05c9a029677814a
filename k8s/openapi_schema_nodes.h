#pragma once

// How the structural-schema code names the fields of an object, and what a schema says of one place:
// validation (openapi_schema.cpp) and defaulting and pruning (openapi_schema_defaults_pruning.cpp) walk an
// object the same way and name its fields alike. Internal to those files; the public interface is
// openapi_schema.h.

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

namespace karta::openapi_schema_nodes {

using json = nlohmann::json;

// ---- names of fields (see openapi_schema.h)

// A key written after a dot: a letter or `_`, then letters, digits and `_`.
bool is_identifier(const std::string& key);
// A value as compact JSON text, invalid UTF-8 replaced.
std::string as_json_text(const json& value);
// `parent.key`; `key` at the root; `parent["key"]` when the key is not an identifier.
std::string child_field(const std::string& parent, const std::string& key);
// `parent[index]`.
std::string index_field(const std::string& parent, std::size_t index);

// ---- reading schemas

// The member `key` of a schema; null when the schema is not an object or has no such member.
const json& member(const json& schema, const char* key);
// Whether the schema sets `key` to true.
bool flag(const json& schema, const char* key);
// The schema's `type`, or "" when it names none.
std::string type_of(const json& schema);
// The schema of the field `key` from `properties`; null when it declares none.
const json& property_schema(const json& schema, const std::string& key);
// apiVersion, kind and metadata, which are the API server's at the root of a resource.
bool is_meta_field(const std::string& key);

// How a field not in `properties` is treated at a place of an object.
enum class Extra { Unknown, Schema, Any };
Extra extra_fields(const json& schema);

}  // namespace karta::openapi_schema_nodes
