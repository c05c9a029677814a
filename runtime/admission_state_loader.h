#pragma once

// The state an admission is decided on (AdmissionState: the catalog, the policy, the CRD schemas and the
// cluster's Kartas), built from the built-in catalog, --definitions directories, --policy, --crds and what
// the cluster's watchers keep. `serve` reloads it when any of them changes; `audit` and `inspect` load it
// once.

#include <filesystem>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "admission/admission_service.h"
#include "definitions/catalog.h"
#include "validate/crd_schema_set.h"

namespace karta {

using json = nlohmann::json;

// What the API server says: Karta objects, kept by their watcher, and the schemas of the CRDs of the
// groups definitions use (runtime/cluster_schemas.h), shared with the state served before.
struct ClusterSources {
  std::map<std::string, json> kartas;  // by name
  std::vector<std::shared_ptr<const CrdSchema>> crd_schemas;
};

// One Karta of the cluster as loading found it: its faults (validate_definition's) and whether it is
// in the catalog. A Karta with faults is loaded only under definitionPolicy.mode warn, and only when
// every fault is a path that yields nothing.
struct ClusterKartaCheck {
  std::string name;
  std::vector<std::string> faults;
  bool loaded = false;
  std::string not_loaded() const;  // "Karta NAME not loaded: FIRST FAULT (and N more)"
};

// Validates the cluster's Karta objects (by name) as /validate would, against state.crds and with
// state.policy's definitionPolicy (each may predate the webhook, or have been applied while it was
// down), and adds those that may be loaded over state.catalog, kind by kind, and to state.cluster_kartas.
// Logs each one left out. `serve` and `audit` merge the cluster's definitions this way.
// The API groups of the kinds the Kartas define (spec.structureDefinition.rootComponent.kind.group), and
// of the catalog's kinds: W, the groups whose CRD schemas `serve` holds.
std::set<std::string> groups_used(const Catalog& catalog, const std::map<std::string, json>& kartas);

std::vector<ClusterKartaCheck> add_cluster_kartas(AdmissionState& state, const std::map<std::string, json>& kartas,
                                                  DefinitionCache& cache);

// A policy file that did not load (load() throws it): a reload counts it under source="policy".
class PolicyLoadError : public InputError {
 public:
  using InputError::InputError;
};

// The first 16 hex digits of the SHA-256 of `bytes`, as `sha256sum | cut -c1-16` prints them.
std::string short_sha256(std::string_view bytes);

// Builds admission states: the built-in catalog, definition directories and the policy, reusing
// compiled definitions that did not change.
class AdmissionStateLoader {
 public:
  AdmissionStateLoader(std::vector<std::filesystem::path> directories, std::filesystem::path policy_file,
                       std::size_t concurrency, std::vector<std::filesystem::path> crd_directories = {});
  // Throws InputError or DefinitionError; a failed load leaves the cache as it was. Cluster definitions
  // that fail validation are not loaded: each is logged and listed in `rejected`.
  std::shared_ptr<AdmissionState> load(const ClusterSources& cluster = {}, std::vector<std::string>* rejected = nullptr);
  // A fingerprint of what load() reads, in two parts, so a reload can say which source changed.
  struct Fingerprint {
    std::string definitions;  // changes when any definition file changes
    std::string policy;       // changes when the policy file changes
    bool operator==(const Fingerprint&) const = default;
  };
  Fingerprint fingerprint() const;

 private:
  std::vector<std::filesystem::path> directories_;
  std::filesystem::path policy_file_;
  std::vector<std::filesystem::path> crd_directories_;
  DefinitionCache cache_;
};

// Loads definitions and policy once (a broken one is a broken environment: throws).
std::shared_ptr<AdmissionState> load_admission_state(const std::vector<std::filesystem::path>& definition_directories,
                                                     const std::filesystem::path& policy_file,
                                                     std::size_t concurrency);

}  // namespace karta
