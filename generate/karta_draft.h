#pragma once

// Drafting a Karta from a CustomResourceDefinition (`karta-webhook generate`): the published
// run.ai/v1alpha1 form, for one version of the CRD, with what its schema shows. Every place that holds a
// pod (generate/pod_places.h) becomes a child component: `podTemplateSpecPath`, `podSpecPath` (with the
// nearest object holding its pods' labels and annotations as `metadataPath`), or a
// `fragmentedPodSpecDefinition` (tolerations and node selector in karta-webhook's extensions annotation);
// lists on the way are iterated, a list keyed by `name` (or by its one required `...Name` string) gives
// `instanceIdPath`, a map its keys; an integer `replicas` beside the pod gives `replicasPath`, and
// `minReplicas` / `maxReplicas` the scale bounds. On the root: `.status.conditions` of Kubernetes' shape
// gives `conditionsDefinition`; a string enum `.status.phase` (or `state`, `status`) gives `phaseDefinition`
// and `statusMappings` by its values; a boolean `.spec.suspend` (or one object further down) gives
// `suspendDefinition`. Each inferred value has a YAML comment that says what it was inferred from, and
// what the schema cannot say (the kind the operator creates, the labels on its pods) is said at the top.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace karta {

using json = nlohmann::json;

// The version drafted: `version` when given (it must be served), else the storage version. Throws
// InputError (json/documents.h) when `crd` is not a CustomResourceDefinition, the version is not in it,
// it has no schema, or the schema holds no pod.
std::string draft_karta(const json& crd, const std::optional<std::string>& version = std::nullopt);

// The version draft_karta drafts by default: the storage version (the only one of a v1beta1 CRD with
// spec.version); "" when there is none.
std::string storage_version(const json& crd);

// The openAPIV3Schema of a served version of `crd`; nullptr when it has none.
const json* version_schema(const json& crd, const std::string& version);

}  // namespace karta
