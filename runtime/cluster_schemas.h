#pragma once

// The cluster's CustomResourceDefinitions as `serve` needs them. A GPU cluster holds hundreds of CRDs
// (cert-manager, Prometheus, Istio, cloud controllers, ...), and the only reader of a CRD's schema is the
// check of a definition whose root kind it serves. So:
// - every CRD is indexed by name and resourceVersion only, from a metadata-only watch (the watcher asks
//   for PartialObjectMetadata: kube/watcher.h), about a hundred bytes each;
// - a parsed schema is held only for the CRDs of the API groups that loaded definitions name (W: the
//   built-in catalog's, --definitions', the cluster's Kartas'), each fetched with one GET when its
//   resourceVersion changes, and shared by every served state that holds it;
// - a Karta sent to /validate whose kind is outside W gets its CRD fetched on demand, into a small cache.
// A CRD's name is PLURAL.GROUP (the API server refuses any other), so its group is known from the index,
// but not its kind: the metadata-only watch carries no spec.names. So /validate asks discovery
// (GET /apis/GROUP/VERSION, whose APIResourceList maps each kind to its plural) and then GETs the one CRD
// PLURAL.GROUP: two GETs, both within the request's deadline, rather than one GET per CRD of the group.
// Thread-safe: the watcher's thread updates the index, the reload thread refreshes, /validate fetches.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/api_client.h"
#include "kube/kube_connection.h"
#include "kube/watcher.h"
#include "validate/crd_schema_set.h"

namespace karta {

struct ClusterSchemasOptions {
  kube::ApiClientOptions client;  // of the GETs
  // A CRD fetched for /validate, of a kind no definition uses yet: kept this long, at most this many
  // (entries whose schema a check still holds are not counted out).
  std::chrono::seconds on_demand_ttl{60};
  std::size_t on_demand_entries = 16;
};

class ClusterSchemas {
 public:
  ClusterSchemas(kube::KubeConnection connection, ClusterSchemasOptions options = {});
  ~ClusterSchemas();
  ClusterSchemas(const ClusterSchemas&) = delete;
  ClusterSchemas& operator=(const ClusterSchemas&) = delete;

  // The watcher's snapshot (metadata-only objects). Returns true when a CRD of a used group was added,
  // changed or removed: the served schemas must be refreshed.
  bool replace_index(const std::vector<nlohmann::json>& objects);
  // One watch event: the same answer for one CRD. An event outside the used groups touches the index only.
  bool apply_event(kube::EventType type, const nlohmann::json& object);

  // On the reload thread: `groups` become the used groups; every indexed CRD of them whose schema is not
  // held at its resourceVersion is fetched (one GET each), schemas of CRDs gone or no longer used are
  // dropped. Returns the schemas of the used groups. A GET that fails keeps what was held before, and is
  // logged and listed in `errors` (when given).
  std::vector<std::shared_ptr<const CrdSchema>> refresh(const std::set<std::string>& groups,
                                                        std::vector<std::string>* errors = nullptr);

  // For /validate: the schema of `kind` when it is outside the used groups. From the cache when it holds
  // the kind at the index's resourceVersion; else, when the index has a CRD of the kind's group, with at
  // most two GETs (discovery of the group version, then the CRD it names), every one ending at
  // `deadline`, and one /validate at a time (waiting for another ends at `deadline` too). No schema and
  // nothing unreadable: no CRD serves the kind. The schema returned is the caller's to hold: trimming the
  // cache never takes it away, nor one another check still holds.
  CrdFetch fetch(const GroupVersionKind& kind, std::chrono::steady_clock::time_point deadline);

  std::uint64_t gets() const;             // GETs made: of one CRD, or of a group version's discovery
  std::uint64_t events_ignored() const;   // watch events of CRDs outside the used groups
  std::size_t indexed() const;            // CRDs in the index
  std::size_t held() const;               // CRDs whose schema is held (used groups and the cache)

  // "PLURAL.GROUP" -> "GROUP"; "" when the name has no dot.
  static std::string group_of(const std::string& crd_name);

 private:
  struct Held {
    std::string resource_version;
    std::vector<std::shared_ptr<const CrdSchema>> schemas;
    std::chrono::steady_clock::time_point fetched_at;
    bool on_demand = false;
  };
  // GETs one CRD with `client`: its schemas, or none when it is gone (404). Throws ApiError otherwise.
  std::optional<std::vector<std::shared_ptr<const CrdSchema>>> get(
      kube::ApiClient& client, const std::string& name,
      std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt);
  // The name (PLURAL.GROUP) of the CRD that serves `kind`, from discovery; "" when none does. Throws ApiError.
  std::string served_by(const GroupVersionKind& kind, std::chrono::steady_clock::time_point deadline);
  // Under held_mutex_: the on-demand entries past options.on_demand_entries go, oldest first, except
  // `keep` and those whose schemas a check holds.
  void trim_locked(const std::string& keep);
  bool used_locked(const std::string& name) const;  // index_mutex_ held
  // The index's CRDs of `group`, with their resourceVersions.
  std::map<std::string, std::string> indexed_in(const std::string& group) const;

  ClusterSchemasOptions options_;
  std::unique_ptr<kube::ApiClient> refresh_client_;    // the reload thread's
  std::timed_mutex on_demand_mutex_;                   // one /validate fetch at a time
  std::unique_ptr<kube::ApiClient> on_demand_client_;  // under on_demand_mutex_

  mutable std::mutex index_mutex_;
  std::map<std::string, std::string> index_;  // name -> resourceVersion
  std::set<std::string> groups_;              // used groups
  std::uint64_t events_ignored_ = 0;

  mutable std::mutex held_mutex_;
  std::map<std::string, Held> held_;  // by CRD name
  std::atomic<std::uint64_t> gets_{0};
};

}  // namespace karta
