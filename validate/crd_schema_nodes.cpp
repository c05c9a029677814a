#include "validate/crd_schema_nodes.h"

// A schema may say what it says of a node inside the node's allOf / anyOf / oneOf branches rather than
// on the node itself, so every question here is asked of the node and of each of its branches.

#include <set>

namespace karta::crd_schema_nodes {
namespace {

template <class Visit>
void for_each_branch(const json& node, Visit&& visit, int depth = 0) {
  if (!node.is_object()) return;
  visit(node);
  if (depth > 8) return;
  for (const char* key : {"allOf", "anyOf", "oneOf"}) {
    auto it = node.find(key);
    if (it != node.end() && it->is_array())
      for (const json& branch : *it) for_each_branch(branch, visit, depth + 1);
  }
}

}  // namespace

const json* member(const json& node, const char* key) {
  const json* found = nullptr;
  for_each_branch(node, [&](const json& branch) {
    if (found != nullptr) return;
    auto it = branch.find(key);
    if (it != branch.end()) found = &*it;
  });
  return found;
}

bool flag(const json& node, const char* key) {
  bool set = false;
  for_each_branch(node, [&](const json& branch) {
    auto it = branch.find(key);
    if (it != branch.end() && *it == true) set = true;
  });
  return set;
}

const json* property(const json& node, const std::string& name) {
  const json* found = nullptr;
  for_each_branch(node, [&](const json& branch) {
    if (found != nullptr) return;
    auto properties = branch.find("properties");
    if (properties == branch.end() || !properties->is_object()) return;
    auto it = properties->find(name);
    if (it != properties->end() && it->is_object()) found = &*it;
  });
  return found;
}

std::vector<std::string> property_names(const json& node) {
  std::set<std::string> names;
  for_each_branch(node, [&](const json& branch) {
    auto properties = branch.find("properties");
    if (properties != branch.end() && properties->is_object())
      for (auto it = properties->begin(); it != properties->end(); ++it) names.insert(it.key());
  });
  return {names.begin(), names.end()};
}

bool has_properties(const json& node) { return !property_names(node).empty(); }

// additionalProperties when it is a schema (a map of those).
const json* map_values(const json& node) {
  const json* additional = member(node, "additionalProperties");
  return additional != nullptr && additional->is_object() ? additional : nullptr;
}

// "object", "array", "string", "integer", "number", "boolean", "int-or-string", or "" when unknown.
std::string type_of(const json& node) {
  if (flag(node, "x-kubernetes-int-or-string")) return "int-or-string";
  const json* type = member(node, "type");
  if (type != nullptr && type->is_string()) return type->get<std::string>();
  if (has_properties(node) || member(node, "additionalProperties") != nullptr) return "object";
  if (member(node, "items") != nullptr) return "array";
  return "";
}

bool is_scalar(const std::string& type) {
  return type == "string" || type == "integer" || type == "number" || type == "boolean" || type == "int-or-string";
}

std::string describe(const std::string& type) {
  if (type == "integer") return "an integer";
  if (type == "object") return "an object";
  if (type == "array") return "an array";
  if (type == "int-or-string") return "an integer or a string";
  if (type.empty()) return "a value of any type";
  return "a " + type;
}

// Fields below which nothing is described (x-kubernetes-preserve-unknown-fields, or no fields listed).
bool is_opaque_object(const json& node) {
  return flag(node, "x-kubernetes-preserve-unknown-fields") || !has_properties(node);
}

const json& object_meta_schema() {
  static const json schema = json::parse(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string"}, "generateName": {"type": "string"}, "namespace": {"type": "string"},
      "uid": {"type": "string"}, "resourceVersion": {"type": "string"}, "generation": {"type": "integer"},
      "creationTimestamp": {"type": "string"}, "deletionTimestamp": {"type": "string"},
      "deletionGracePeriodSeconds": {"type": "integer"},
      "labels": {"type": "object", "additionalProperties": {"type": "string"}},
      "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
      "finalizers": {"type": "array", "items": {"type": "string"}},
      "ownerReferences": {"type": "array", "items": {"type": "object", "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "name": {"type": "string"},
        "uid": {"type": "string"}, "controller": {"type": "boolean"}, "blockOwnerDeletion": {"type": "boolean"}}}},
      "managedFields": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
    }
  })");
  return schema;
}

bool is_pod_spec(const json& node) { return property(node, "containers") != nullptr; }

bool is_pod_template(const json& node) {
  const json* spec = property(node, "spec");
  return spec != nullptr && is_pod_spec(*spec);
}

bool keeps_metadata_labels(const json& node) {
  if (flag(node, "x-kubernetes-preserve-unknown-fields")) return true;
  const json* metadata = property(node, "metadata");
  if (metadata == nullptr) return false;
  return flag(*metadata, "x-kubernetes-preserve-unknown-fields") || property(*metadata, "labels") != nullptr;
}

std::vector<std::string> inline_pod_fields(const json& node) {
  std::vector<std::string> found;
  for (const char* name : {"resources", "tolerations", "nodeSelector", "affinity", "schedulerName", "priorityClassName",
                           "podLabels", "podAnnotations"}) {
    if (property(node, name) != nullptr) found.emplace_back(name);
  }
  return found;
}

const json& string_schema() {
  static const json schema = json{{"type", "string"}};
  return schema;
}

}  // namespace karta::crd_schema_nodes
