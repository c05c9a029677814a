#include "validate/crd_schema_set.h"

// Both forms of CustomResourceDefinition are read: apiextensions.k8s.io/v1 (a schema per version) and
// v1beta1 (spec.version and one spec.validation for every version), since clusters and CRD files still
// hold the older one.

#include <algorithm>
#include <set>
#include <system_error>
#include <utility>
#include <vector>

#include "json/documents.h"

namespace karta {
namespace {

// Descriptions are most of a CRD's schema (70-80% of the corpus CRDs' bytes) and nothing a check reads:
// a schema is held without them. Only the schema's own keywords go; a property named "description" stays.
void strip_descriptions(json& node) {
  if (!node.is_object()) return;
  node.erase("description");
  for (const char* key : {"properties", "patternProperties", "definitions"}) {
    auto children = node.find(key);
    if (children == node.end() || !children->is_object()) continue;
    for (auto& [name, child] : children->items()) strip_descriptions(child);
  }
  for (const char* key : {"items", "additionalProperties", "not", "additionalItems"}) {
    auto child = node.find(key);
    if (child == node.end()) continue;
    if (child->is_array()) {
      for (json& each : *child) strip_descriptions(each);
    } else {
      strip_descriptions(*child);
    }
  }
  for (const char* key : {"allOf", "anyOf", "oneOf"}) {
    auto list = node.find(key);
    if (list == node.end() || !list->is_array()) continue;
    for (json& each : *list) strip_descriptions(each);
  }
}

// The keywords validate/crd_schema*.cpp reads of a schema node; the rest (validations, formats, enums,
// defaults, ...) are for the API server.
void keep_path_keywords(json& node) {
  if (!node.is_object()) return;
  static const std::set<std::string> kRead = {"type",
                                              "properties",
                                              "items",
                                              "additionalProperties",
                                              "allOf",
                                              "anyOf",
                                              "oneOf",
                                              "x-kubernetes-preserve-unknown-fields",
                                              "x-kubernetes-int-or-string",
                                              "x-kubernetes-embedded-resource"};
  for (auto it = node.begin(); it != node.end();) {
    if (kRead.count(it.key()) == 0) {
      it = node.erase(it);
      continue;
    }
    if (it.key() == "properties" && it->is_object()) {
      for (auto& [name, child] : it->items()) keep_path_keywords(child);
    } else if (it->is_array()) {
      for (json& each : *it) keep_path_keywords(each);
    } else {
      keep_path_keywords(*it);
    }
    ++it;
  }
}

}  // namespace

void CrdSchemaSet::add_crd(const json& crd) {
  for (auto& schema : parse_crd(crd)) add(std::move(schema));
}

void CrdSchemaSet::add(std::shared_ptr<const CrdSchema> schema) {
  GroupVersionKind kind = schema->kind;
  schemas_[std::move(kind)] = std::move(schema);
}

std::vector<std::shared_ptr<const CrdSchema>> CrdSchemaSet::parse_crd(const json& crd, bool paths_only) {
  if (!crd.is_object() || crd.value("kind", json()) != "CustomResourceDefinition")
    throw InputError("not a CustomResourceDefinition");
  std::string name = "(unnamed)";
  if (crd.contains("metadata") && crd["metadata"].is_object() && crd["metadata"].value("name", json()).is_string())
    name = crd["metadata"]["name"].get<std::string>();
  static const json kEmpty = json::object();
  const json* spec_value = crd.contains("spec") && crd["spec"].is_object() ? &crd["spec"] : &kEmpty;
  const json& spec = *spec_value;
  const json group = spec.value("group", json());
  const json names = spec.value("names", json::object());
  if (!group.is_string() || !names.is_object() || !names.value("kind", json()).is_string())
    throw InputError("CustomResourceDefinition " + name + ": spec.group and spec.names.kind are required");
  const std::string kind = names["kind"].get<std::string>();
  const std::string plural = names.value("plural", json("")).is_string() ? names.value("plural", std::string()) : "";
  // apiextensions.k8s.io/v1beta1 keeps one schema for every version in spec.validation.
  json shared_schema;
  if (spec.contains("validation") && spec["validation"].is_object())
    shared_schema = spec["validation"].value("openAPIV3Schema", json());

  std::vector<std::pair<std::string, json>> served;
  if (spec.contains("versions") && spec["versions"].is_array() && !spec["versions"].empty()) {
    for (const json& version : spec["versions"]) {
      if (!version.is_object() || !version.value("name", json()).is_string()) continue;
      if (version.contains("served") && version["served"] == false) continue;
      json schema = shared_schema;
      if (version.contains("schema") && version["schema"].is_object() && version["schema"].contains("openAPIV3Schema"))
        schema = version["schema"]["openAPIV3Schema"];
      served.emplace_back(version["name"].get<std::string>(), std::move(schema));
    }
  } else if (spec.value("version", json()).is_string()) {
    served.emplace_back(spec["version"].get<std::string>(), shared_schema);
  } else {
    throw InputError("CustomResourceDefinition " + name + ": it has no version");
  }
  std::vector<std::shared_ptr<const CrdSchema>> parsed;
  for (auto& [version, schema] : served) {
    GroupVersionKind gvk{group.get<std::string>(), version, kind};
    if (paths_only) {
      keep_path_keywords(schema);
    } else {
      strip_descriptions(schema);
    }
    parsed.push_back(
        std::make_shared<const CrdSchema>(CrdSchema{gvk, plural, schema.is_object() ? std::move(schema) : json()}));
  }
  return parsed;
}

const CrdSchema* CrdSchemaSet::find(const GroupVersionKind& kind) const {
  auto it = schemas_.find(kind);
  return it == schemas_.end() ? nullptr : it->second.get();
}

CrdSchemaSet CrdSchemaSet::load_directory(const std::filesystem::path& directory) {
  CrdSchemaSet set;
  set.add_directory(directory);
  return set;
}

void CrdSchemaSet::add_directory(const std::filesystem::path& directory) {
  std::error_code error;
  std::vector<std::filesystem::path> files;
  for (std::filesystem::directory_iterator it(directory, error), end; !error && it != end; it.increment(error)) {
    if (!it->is_regular_file()) continue;
    const std::string extension = it->path().extension().string();
    if (extension == ".yaml" || extension == ".yml" || extension == ".json") files.push_back(it->path());
  }
  if (error) throw InputError(directory.string() + ": " + error.message());
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    for (const SourceDocument& document : read_documents(file)) {
      const json& value = document.value;
      if (!value.is_object() || value.value("kind", json()) != "CustomResourceDefinition") continue;
      const json api_version = value.value("apiVersion", json());
      if (!api_version.is_string() || api_version.get<std::string>().rfind("apiextensions.k8s.io/", 0) != 0) continue;
      try {
        add_crd(value);
      } catch (const InputError& e) {
        throw InputError(document.source + ": " + e.what());
      }
    }
  }
}

}  // namespace karta
