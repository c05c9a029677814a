#pragma once

// Which kinds a cluster serves that carry pods no definition covers: their pods get no queue label and no
// policy check. `audit` lists them, each with the places its schema holds pods (and, being the CLI, the
// command that drafts its Karta).

#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "k8s/group_version_kind.h"

namespace karta {

using json = nlohmann::json;

// For each CustomResourceDefinition of `crds` (as a LIST gives them: apiVersion and kind may be absent)
// whose schema holds a pod template, a pod spec or inline pod fields, and none of whose served versions
// `defined` says has a definition:
//   {"crd": NAME, "group", "kind", "versions": [served...], "version": the one read (storage),
//    "places": [{"shape": "PodTemplateSpec|PodSpec|fragmented pod", "path": jq}]}
// in the order of `crds`. A CRD that cannot be read (no group, no kind, no schema) is passed over.
json uncovered_kinds(const std::vector<json>& crds, const std::function<bool(const GroupVersionKind&)>& defined);

}  // namespace karta
