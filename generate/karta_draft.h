#pragma once

// Drafting a Karta from a CustomResourceDefinition (`karta-webhook generate`): the published
// run.ai/v1alpha1 form, for one version of the CRD, with what its schema shows. Every place that holds a
// pod (generate/pod_places.h) becomes a child component: `podTemplateSpecPath` (or, where the template's
// schema declares no `metadata.labels`, which the API server would prune, its pod spec), `podSpecPath` (with
// the nearest object holding its pods' labels and annotations as `metadataPath`), or a
// `fragmentedPodSpecDefinition` (tolerations and node selector in karta-webhook's extensions annotation);
// lists on the way are iterated, a list keyed by `name` (or by its one required `...Name` string) gives
// `instanceIdPath`, a map its keys; the count of its pods and its scale bounds are generate/pod_counts.h's,
// GPUs outside its containers generate/pod_resources.h's. On the root: status and suspend
// (generate/root_draft.h), and a gang size as gangScheduling and `gangMinMemberPath`. Each inferred value has
// a YAML comment that says what it was inferred from, and what the schema cannot say (the kind the operator
// creates, the labels on its pods) is said at the top. A schema with no pod place gets a skeleton that says
// the pods are unknown.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace karta {

using json = nlohmann::json;

// The version drafted: `version` when given (it must be served), else the storage version. Throws
// InputError (json/documents.h) when `crd` is not a CustomResourceDefinition, the version is not in it,
// it has no schema, or the kind is a runtime or template that runs no pods of its own.
std::string draft_karta(const json& crd, const std::optional<std::string>& version = std::nullopt);

// The version draft_karta drafts by default: the storage version (the only one of a v1beta1 CRD with
// spec.version); "" when there is none.
std::string storage_version(const json& crd);

// The openAPIV3Schema of a served version of `crd`; nullptr when it has none.
const json* version_schema(const json& crd, const std::string& version);

}  // namespace karta
