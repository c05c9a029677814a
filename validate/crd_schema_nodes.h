#pragma once

// Reading a node of a CRD's OpenAPI v3 schema with its allOf / anyOf / oneOf branches merged: what
// check_path_against_schema (validate/crd_schema.cpp) asks of the schema at each place a path reaches,
// and what a pod looks like in a schema, which `generate` (generate/) also asks when it looks for pods.
// Apart from the check because these know nothing of jq. k8s/openapi_schema.cpp has helpers of its own for
// structural schemas, which declare every field outside the branches.

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

// What a pod looks like in a schema. A PodSpec is an object with `containers`; a PodTemplateSpec one whose
// `spec` is a PodSpec.
bool is_pod_spec(const json& node);
bool is_pod_template(const json& node);
// Whether labels written at `node`'s `.metadata.labels` outlive the API server's pruning: the schema declares
// them there, or keeps unknown fields at `node` or its `metadata` (a structural schema keeps nothing else).
bool keeps_metadata_labels(const json& node);
// The fields of a pod that `node` holds itself, as frameworks do that spell out a pod piece by piece
// (Milvus's components, NIMService's spec), in this order: resources, tolerations, nodeSelector,
// affinity, schedulerName, priorityClassName, podLabels, podAnnotations.
std::vector<std::string> inline_pod_fields(const json& node);
const json& string_schema();

}  // namespace karta::crd_schema_nodes
