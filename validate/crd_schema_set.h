#pragma once

// The CRD schemas definitions are checked against, read from CustomResourceDefinition documents (files
// offline; validate/definition_validation.h says where else they come from). Apart from crd_schema.h,
// which reads jq paths against one of them, because loading CRDs knows nothing of jq.

#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "k8s/group_version_kind.h"

namespace karta {

using json = nlohmann::json;

// The schema of one served version of a CustomResourceDefinition.
struct CrdSchema {
  GroupVersionKind kind;  // spec.group, the version's name, spec.names.kind
  std::string plural;     // spec.names.plural
  json schema;            // the version's openAPIV3Schema (spec.validation's for old CRDs); null when none
};

// What asking the API server for the CRD schema of one kind came to (a Karta's kind on /validate:
// runtime/cluster_schemas.h): the schema; or none and `unreadable` empty, when no CRD of the cluster
// serves the kind; or none and `unreadable` saying why it could not be read in time (no answer before
// the deadline, an error answer), when one may.
struct CrdFetch {
  std::shared_ptr<const CrdSchema> schema;
  std::string unreadable;
};

class CrdSchemaSet {
 public:
  // Adds one entry per served version of a CustomResourceDefinition (apiextensions.k8s.io v1, or v1beta1
  // with spec.version / spec.validation). An entry for the same group, version and kind replaces the
  // earlier one. Throws InputError (json/documents.h) when the document is not a
  // CustomResourceDefinition or has no spec.group, spec.names.kind or version.
  void add_crd(const json& crd_document);

  // The entries of one CustomResourceDefinition, one per served version, without adding them: a schema
  // parsed once is shared by every set that holds it (the old and the new served state of a reload).
  // Throws as add_crd().
  // With `paths_only`, each schema keeps only the keywords the checks of a definition's paths read
  // (validate/crd_schema.h: type, properties, items, additionalProperties, allOf/anyOf/oneOf and the
  // x-kubernetes- flags of embedded resources, int-or-string and preserved fields): what `serve` holds of
  // the cluster's CRDs. Without it (files, `validate`, `audit`) the schema is whole but its descriptions.
  static std::vector<std::shared_ptr<const CrdSchema>> parse_crd(const json& crd_document, bool paths_only = false);
  // Adds (or replaces, for the same group, version and kind) one entry.
  void add(std::shared_ptr<const CrdSchema> schema);

  // Keyed by group, version and kind: Knative's serving.knative.dev/v1 Service is not the core v1 Service.
  const CrdSchema* find(const GroupVersionKind& kind) const;
  std::size_t size() const { return schemas_.size(); }
  // Every entry, by group, version and kind.
  const std::map<GroupVersionKind, std::shared_ptr<const CrdSchema>>& entries() const { return schemas_; }

  // Every CustomResourceDefinition document of the *.yaml, *.yml and *.json files directly in
  // `directory` (files in name order; other documents are ignored). Throws InputError when the directory
  // cannot be read or a file does not parse.
  static CrdSchemaSet load_directory(const std::filesystem::path& directory);
  // The same, added to this set (a later directory's CRD replaces an earlier one's).
  void add_directory(const std::filesystem::path& directory);

 private:
  std::map<GroupVersionKind, std::shared_ptr<const CrdSchema>> schemas_;
};

}  // namespace karta
