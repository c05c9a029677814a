#include "generate/coverage.h"

#include <string>

#include "generate/karta_draft.h"
#include "generate/pod_places.h"

namespace karta {

json uncovered_kinds(const std::vector<json>& crds, const std::function<bool(const GroupVersionKind&)>& defined) {
  json uncovered = json::array();
  for (const json& crd : crds) {
    if (!crd.is_object() || !crd.contains("spec") || !crd["spec"].is_object()) continue;
    const json& spec = crd["spec"];
    const json names = spec.value("names", json::object());
    if (!spec.value("group", json()).is_string() || !names.is_object() || !names.value("kind", json()).is_string())
      continue;
    const std::string group = spec["group"].get<std::string>();
    const std::string kind = names["kind"].get<std::string>();
    const json metadata = crd.value("metadata", json::object());
    const std::string name =
        metadata.is_object() && metadata.value("name", json()).is_string() ? metadata["name"].get<std::string>()
        : names.value("plural", json("")).is_string() ? names.value("plural", std::string()) + "." + group
                                                      : group;
    std::vector<std::string> served;
    if (spec.contains("versions") && spec["versions"].is_array()) {
      for (const json& version : spec["versions"])
        if (version.is_object() && version.value("name", json()).is_string() && version.value("served", true) != false)
          served.push_back(version["name"].get<std::string>());
    } else if (spec.value("version", json()).is_string()) {
      served.push_back(spec["version"].get<std::string>());
    }
    bool covered = false;
    for (const auto& version : served) covered = covered || defined(GroupVersionKind{group, version, kind});
    if (covered || served.empty()) continue;
    std::string version = storage_version(crd);
    const json* schema = version.empty() ? nullptr : version_schema(crd, version);
    for (std::size_t i = 0; schema == nullptr && i < served.size(); ++i)
      schema = version_schema(crd, version = served[i]);
    if (schema == nullptr) continue;
    json places = json::array();
    for (const PodPlace& place : find_pod_places(*schema).places)
      places.push_back({{"shape", pod_shape_name(place.shape)}, {"path", jq_path(place.steps)}});
    if (places.empty()) continue;
    uncovered.push_back({{"crd", name},
                         {"group", group},
                         {"kind", kind},
                         {"versions", served},
                         {"version", version},
                         {"places", places}});
  }
  return uncovered;
}

}  // namespace karta
