#pragma once

// The fragmentedPodSpecDefinition of a drafted component (generate/karta_draft.h): where a pod spelt out
// field by field keeps its labels, container, scheduler, resources, affinity and priority, read in the
// place, or in the PodSpec the operator lays over it (PodPlace::overlay). Internal to generate/.

#include <string>

#include <nlohmann/json.hpp>

#include "generate/component_names.h"
#include "generate/draft_yaml.h"
#include "generate/pod_places.h"

namespace karta {

// Written at the specDefinition's indentation.
void draft_fragmented(draft_yaml::Yaml& out, const DraftComponent& component);

// The field of a pod that holds its ResourceRequirements: `resources`, or one named after it
// (`resourcesPerNode`); "" when none.
std::string resources_field(const nlohmann::json& node);

// A field of a pod spelt out field by field: in the place, else in the PodSpec laid over it (`.name` or
// `.extraPodSpec.name`, relative to the place); none when neither has it.
struct PodField {
  std::string path;
  const nlohmann::json* node = nullptr;
};
PodField pod_field(const PodPlace& place, const std::string& name);

// The object of a pod place named for its pods' metadata with `labels` (Dynamo's `extraPodMetadata`,
// Argo's `podMetadata`): its field name, "" when none.
std::string pod_metadata_field(const nlohmann::json& node);

}  // namespace karta
