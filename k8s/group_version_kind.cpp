#include "k8s/group_version_kind.h"

namespace karta {

GroupVersionKind GroupVersionKind::from_api_version(const std::string& api_version, const std::string& kind) {
  auto slash = api_version.find('/');
  if (slash == std::string::npos) return {"", api_version, kind};
  return {api_version.substr(0, slash), api_version.substr(slash + 1), kind};
}

}  // namespace karta
