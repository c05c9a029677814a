#pragma once

// A Kubernetes kind named by its API group, version and kind, as the API server names what it serves and
// what an AdmissionReview carries. Definitions, CRD schemas and the catalog are keyed by it.

#include <compare>
#include <string>

namespace karta {

struct GroupVersionKind {
  std::string group;  // empty for the core group
  std::string version;
  std::string kind;

  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  std::string to_string() const { return api_version() + " " + kind; }
  bool empty() const { return group.empty() && version.empty() && kind.empty(); }
  bool operator==(const GroupVersionKind&) const = default;
  auto operator<=>(const GroupVersionKind&) const = default;

  // "apps/v1" + "Deployment"; "v1" is the core group.
  static GroupVersionKind from_api_version(const std::string& api_version, const std::string& kind);
};

}  // namespace karta
