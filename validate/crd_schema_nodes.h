#pragma once

// Reading a node of a CRD's OpenAPI v3 schema with its allOf / anyOf / oneOf branches merged: what
// check_path_against_schema (validate/crd_schema.cpp) asks of the schema at each place a path reaches.
// Apart from it because these know nothing of jq. Internal to that check (validate/crd_schema*.cpp):
// k8s/openapi_schema.cpp has helpers of its own for structural schemas, which declare every field outside
// the branches.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace karta::crd_schema_nodes {

using json = nlohmann::json;

// The first `key` of the node or of one of its branches; nullptr when none has it.
const json* member(const json& node, const char* key);
// Whether `key` is `true` in the node or in one of its branches.
bool flag(const json& node, const char* key);
// The schema of the field `name` (an object), from the `properties` of the node or of a branch.
const json* property(const json& node, const std::string& name);
// Every field the node and its branches declare, in name order.
std::vector<std::string> property_names(const json& node);
bool has_properties(const json& node);
// additionalProperties when it is a schema (a map of those).
const json* map_values(const json& node);
// "object", "array", "string", "integer", "number", "boolean", "int-or-string", or "" when unknown.
std::string type_of(const json& node);
bool is_scalar(const std::string& type);
// A type of type_of() as messages name it: "an integer", "a value of any type".
std::string describe(const std::string& type);
// Fields below which nothing is described (x-kubernetes-preserve-unknown-fields, or no fields listed).
bool is_opaque_object(const json& node);
// The schema of ObjectMeta, for a root (or embedded resource) `metadata` the CRD only calls an object;
// and `{type: string}`, for its `apiVersion` and `kind`.
const json& object_meta_schema();
const json& string_schema();

}  // namespace karta::crd_schema_nodes
