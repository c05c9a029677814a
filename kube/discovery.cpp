#include "kube/discovery.h"

#include <algorithm>
#include <cctype>

#include "kube/api_path.h"
#include "kube/json_fields.h"

namespace karta::kube {

using json = nlohmann::json;

namespace {

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

std::vector<std::string> strings_at(const json& object, const char* key) {
  std::vector<std::string> result;
  if (!object.is_object()) return result;
  auto found = object.find(key);
  if (found == object.end() || !found->is_array()) return result;
  for (const auto& item : *found) {
    if (item.is_string()) result.push_back(item.get<std::string>());
  }
  return result;
}

bool names(const ApiResource& resource, const std::string& lowered) {
  if (lowercase(resource.kind) == lowered || resource.plural == lowered || resource.singular == lowered) return true;
  return std::find(resource.short_names.begin(), resource.short_names.end(), lowered) != resource.short_names.end();
}

}  // namespace

std::string ApiResource::collection_path(const std::string& namespace_name) const {
  return resource_path(group, version, plural, namespaced ? namespace_name : "");
}

std::string ApiResource::object_path(const std::string& namespace_name, const std::string& name) const {
  return resource_path(group, version, plural, namespaced ? namespace_name : "", name);
}

bool ApiResource::supports(const std::string& verb) const {
  return std::find(verbs.begin(), verbs.end(), verb) != verbs.end();
}

const std::vector<Discovery::Group>& Discovery::groups() {
  if (groups_) return *groups_;
  std::vector<Group> groups;
  // The core group: GET /api lists its versions (only v1 ever).
  json core = client_.get("/api");
  std::vector<std::string> core_versions = strings_at(core, "versions");
  if (!core_versions.empty()) groups.push_back({"", core_versions});
  json list = client_.get("/apis");
  if (list.is_object() && list.contains("groups") && list["groups"].is_array()) {
    for (const json& entry : list["groups"]) {
      Group group{string_at(entry, "name"), {}};
      std::string preferred = entry.contains("preferredVersion") ? string_at(entry["preferredVersion"], "version") : "";
      if (!preferred.empty()) group.versions.push_back(preferred);
      if (entry.contains("versions") && entry["versions"].is_array()) {
        for (const json& version : entry["versions"]) {
          std::string name = string_at(version, "version");
          if (!name.empty() && name != preferred) group.versions.push_back(name);
        }
      }
      if (!group.name.empty() && !group.versions.empty()) groups.push_back(std::move(group));
    }
  }
  groups_ = std::move(groups);
  return *groups_;
}

const std::vector<ApiResource>& Discovery::resources(const std::string& group, const std::string& version) {
  std::string key = group + "/" + version;
  if (auto found = resources_.find(key); found != resources_.end()) return found->second;
  json list = client_.get(group_version_path(group, version));
  std::vector<ApiResource> result;
  if (list.is_object() && list.contains("resources") && list["resources"].is_array()) {
    for (const json& entry : list["resources"]) {
      ApiResource resource;
      resource.plural = string_at(entry, "name");
      // Subresources ("pods/status", "jobsets/scale") are listed beside their resources.
      if (resource.plural.empty() || resource.plural.find('/') != std::string::npos) continue;
      resource.group = group;
      resource.version = version;
      resource.kind = string_at(entry, "kind");
      resource.singular = string_at(entry, "singularName");
      // Older servers leave singularName empty for built-in kinds; kubectl then uses the kind, lowered.
      if (resource.singular.empty()) resource.singular = lowercase(resource.kind);
      resource.short_names = strings_at(entry, "shortNames");
      resource.verbs = strings_at(entry, "verbs");
      resource.namespaced = entry.value("namespaced", false);
      result.push_back(std::move(resource));
    }
  }
  return resources_[key] = std::move(result);
}

std::vector<std::string> Discovery::versions(const std::string& group) {
  for (const Group& served : groups()) {
    if (served.name == group) return served.versions;
  }
  return {};
}

std::optional<ApiResource> Discovery::resolve(const std::string& name) {
  std::string lowered = lowercase(name);
  auto failed = [this](const std::string& group_version) {
    return std::any_of(failures_.begin(), failures_.end(),
                       [&](const Failure& failure) { return failure.group_version == group_version; });
  };
  // Every reading of the dots: "jobsets.jobset.x-k8s.io" is jobsets in group jobset.x-k8s.io (or, less
  // likely, a resource named "jobsets.jobset" in group x-k8s.io); "deployments.v1.apps" names a version.
  for (const Group& group : groups()) {
    for (const std::string& version : group.versions) {
      const std::string group_version = group.name.empty() ? version : group.name + "/" + version;
      if (failed(group_version)) continue;
      std::string resource_name;
      if (group.name.empty()) {
        resource_name = lowered;
      } else if (lowered.ends_with("." + version + "." + group.name)) {
        resource_name = lowered.substr(0, lowered.size() - version.size() - group.name.size() - 2);
      } else if (lowered.ends_with("." + group.name)) {
        resource_name = lowered.substr(0, lowered.size() - group.name.size() - 1);
      } else {
        resource_name = lowered;
      }
      const std::vector<ApiResource>* served = nullptr;
      try {
        served = &resources(group.name, version);
      } catch (const ApiError& e) {
        failures_.push_back({group_version, e.what()});
        continue;
      }
      for (const ApiResource& resource : *served) {
        if (names(resource, resource_name)) return resource;
      }
    }
  }
  if (failures_.empty()) return std::nullopt;
  // It may be in a group version that could not be read: say which, rather than that it is served nowhere.
  std::string unread;
  for (const Failure& failure : failures_) {
    unread += (unread.empty() ? "" : "; ") + failure.group_version + " (" + failure.error + ")";
  }
  throw ApiError("no resource \"" + name + "\" in the group versions discovered, but it may be in one that could not be read: " + unread,
                 0, "", "discovery incomplete");
}

std::optional<ApiResource> Discovery::resolve(const std::string& group, const std::string& version,
                                              const std::string& kind) {
  std::vector<std::string> served = versions(group);
  if (std::find(served.begin(), served.end(), version) == served.end()) return std::nullopt;
  for (const ApiResource& resource : resources(group, version)) {
    if (resource.kind == kind) return resource;
  }
  return std::nullopt;
}

}  // namespace karta::kube
