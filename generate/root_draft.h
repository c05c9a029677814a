#pragma once

// The root component's part of a drafted Karta (generate/karta_draft.h): its statusDefinition, from
// `.status.conditions` and a phase-like string of `.status`, and its suspendDefinition, from a boolean
// `suspend` of `.spec` (or of an object in it); and the versions served with the same schema. Internal to
// generate/.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "generate/draft_yaml.h"

namespace karta {

// Written at the root component's indentation; the statusDefinition always (the published API requires
// one), with empty statusMappings and a comment when the schema names no status to map.
void draft_status(draft_yaml::Yaml& out, const nlohmann::json& schema);
void draft_suspend(draft_yaml::Yaml& out, const nlohmann::json& schema);

// The other served versions of `crd` whose schema is `version`'s (descriptions aside), in the CRD's order:
// the draft's equivalentVersions.
std::vector<std::string> equivalent_versions(const nlohmann::json& crd, const std::string& version);

}  // namespace karta
