#pragma once

// Which resources the API server serves, read from its discovery documents as kubectl's RESTMapper
// reads them: GET /api and /apis for the groups and their preferred versions, GET /api/v1 and
// /apis/GROUP/VERSION for each version's resources. Documents are fetched when first needed and kept
// for the life of the object. Blocking, on the caller's thread, over ApiClient::get.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/api_client.h"

namespace karta::kube {

// One resource of one group version, as its APIResourceList names it.
struct ApiResource {
  std::string group;  // "" for the core group
  std::string version;
  std::string kind;
  std::string plural;  // the resource: "pods", "jobsets"
  std::string singular;
  std::vector<std::string> short_names;
  std::vector<std::string> verbs;
  bool namespaced = true;

  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  // "pods", "jobsets.jobset.x-k8s.io": how the API server names it in its messages.
  std::string group_resource() const { return group.empty() ? plural : plural + "." + group; }
  // The collection's path: all namespaces when `namespace_name` is empty (or the resource is
  // cluster-scoped), else the namespace's. Segments escaped (kube/api_path.h).
  std::string collection_path(const std::string& namespace_name = "") const;
  // The path of the object `name` in that collection.
  std::string object_path(const std::string& namespace_name, const std::string& name) const;
  bool supports(const std::string& verb) const;
};

class Discovery {
 public:
  explicit Discovery(ApiClient& client) : client_(client) {}

  // The resource a kubectl-style name stands for: a kind (case-insensitive), plural, singular or short
  // name, optionally qualified as NAME.GROUP or NAME.VERSION.GROUP ("jobsets.jobset.x-k8s.io",
  // "JobSet.jobset.x-k8s.io", "deployments.v1.apps"). The core group comes first, then the groups in the
  // order /apis lists them; within a group its preferred version, then the others. nullopt when the
  // cluster serves nothing by that name. A group version whose resource list cannot be read (an
  // aggregated API that answers 503) is passed over and kept in failures(), as kubectl warns and goes
  // on; when the name is found nowhere else, the ApiError names those group versions. Throws ApiError
  // when /api or /apis cannot be read.
  std::optional<ApiResource> resolve(const std::string& name);

  // The resource of exactly this group, version and kind; nullopt when the cluster does not serve it
  // (no such group, no such version, or no such kind in it). Throws ApiError when discovery fails.
  std::optional<ApiResource> resolve(const std::string& group, const std::string& version, const std::string& kind);

  // The group's versions, preferred first; empty when the cluster does not serve the group.
  std::vector<std::string> versions(const std::string& group);

  // A group version resolve(name) passed over, and why: "metrics.k8s.io/v1beta1", the ApiError's text.
  struct Failure {
    std::string group_version;
    std::string error;
  };
  // In the order met; each group version once (it is not asked again by resolve(name)).
  const std::vector<Failure>& failures() const { return failures_; }

 private:
  struct Group {
    std::string name;
    std::vector<std::string> versions;  // preferred first
  };
  const std::vector<Group>& groups();
  const std::vector<ApiResource>& resources(const std::string& group, const std::string& version);

  ApiClient& client_;
  std::optional<std::vector<Group>> groups_;
  std::map<std::string, std::vector<ApiResource>> resources_;  // by group/version
  std::vector<Failure> failures_;
};

}  // namespace karta::kube
