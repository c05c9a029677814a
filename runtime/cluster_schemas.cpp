#include "runtime/cluster_schemas.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include <spdlog/spdlog.h>

#include "json/documents.h"
#include "kube/api_path.h"
#include "kube/json_fields.h"

namespace karta {

using json = nlohmann::json;

namespace {

constexpr const char* kCrds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

// A CRD's version name is a DNS label (v1, v1beta2): anything else is served by no CRD, and not asked for.
bool crd_version_name(const std::string& version) {
  if (version.empty() || version.size() > 63 || !std::islower(static_cast<unsigned char>(version.front()))) return false;
  return std::all_of(version.begin(), version.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-';
  });
}

}  // namespace

ClusterSchemas::ClusterSchemas(kube::KubeConnection connection, ClusterSchemasOptions options)
    : options_(std::move(options)),
      refresh_client_(std::make_unique<kube::ApiClient>(connection, options_.client)),
      on_demand_client_(std::make_unique<kube::ApiClient>(std::move(connection), options_.client)) {}

ClusterSchemas::~ClusterSchemas() = default;

std::string ClusterSchemas::group_of(const std::string& crd_name) {
  auto dot = crd_name.find('.');
  return dot == std::string::npos ? "" : crd_name.substr(dot + 1);
}

bool ClusterSchemas::used_locked(const std::string& name) const { return groups_.count(group_of(name)) > 0; }

bool ClusterSchemas::replace_index(const std::vector<json>& objects) {
  std::map<std::string, std::string> index;
  for (const json& object : objects) {
    std::string name = kube::metadata_string(object, "name");
    if (!name.empty()) index[std::move(name)] = kube::metadata_string(object, "resourceVersion");
  }
  std::lock_guard lock(index_mutex_);
  bool used_changed = false;
  for (const auto& [name, version] : index) {
    auto old = index_.find(name);
    if (used_locked(name) && (old == index_.end() || old->second != version)) used_changed = true;
  }
  for (const auto& [name, version] : index_) {
    if (used_locked(name) && index.count(name) == 0) used_changed = true;
  }
  index_ = std::move(index);
  return used_changed;
}

bool ClusterSchemas::apply_event(kube::EventType type, const json& object) {
  std::string name = kube::metadata_string(object, "name");
  std::lock_guard lock(index_mutex_);
  if (type == kube::EventType::Deleted) {
    index_.erase(name);
  } else {
    index_[name] = kube::metadata_string(object, "resourceVersion");
  }
  if (used_locked(name)) return true;
  ++events_ignored_;
  return false;
}

std::map<std::string, std::string> ClusterSchemas::indexed_in(const std::string& group) const {
  std::map<std::string, std::string> found;
  std::lock_guard lock(index_mutex_);
  for (const auto& [name, version] : index_) {
    if (group_of(name) == group) found.emplace(name, version);
  }
  return found;
}

std::optional<std::vector<std::shared_ptr<const CrdSchema>>> ClusterSchemas::get(
    kube::ApiClient& client, const std::string& name, std::optional<std::chrono::steady_clock::time_point> deadline) {
  ++gets_;
  json crd;
  try {
    crd = client.get(std::string(kCrds) + "/" + kube::path_escape(name), deadline);
  } catch (const kube::ApiError& e) {
    if (e.status() == 404) return std::nullopt;
    throw;
  }
  try {
    return CrdSchemaSet::parse_crd(crd, /*paths_only=*/true);
  } catch (const InputError& e) {
    throw std::runtime_error("CustomResourceDefinition " + kube::printable(name) +
                             " not usable for checking definitions: " + e.what());
  }
}

std::vector<std::shared_ptr<const CrdSchema>> ClusterSchemas::refresh(const std::set<std::string>& groups,
                                                                      std::vector<std::string>* errors) {
  std::map<std::string, std::string> wanted;  // name -> resourceVersion in the index
  {
    std::lock_guard lock(index_mutex_);
    groups_ = groups;
    for (const auto& [name, version] : index_) {
      if (used_locked(name)) wanted.emplace(name, version);
    }
  }
  std::vector<std::string> to_get;
  {
    std::lock_guard lock(held_mutex_);
    for (const auto& [name, version] : wanted) {
      auto held = held_.find(name);
      if (held == held_.end() || held->second.resource_version != version) {
        to_get.push_back(name);
      } else {
        held->second.on_demand = false;
      }
    }
  }
  // The GETs hold no lock: /validate's fetches and the watcher's events go on meanwhile.
  for (const std::string& name : to_get) {
    try {
      auto schemas = get(*refresh_client_, name);
      std::lock_guard lock(held_mutex_);
      if (!schemas) {
        held_.erase(name);
      } else {
        held_[name] = Held{wanted[name], std::move(*schemas), std::chrono::steady_clock::now(), false};
      }
    } catch (const std::exception& e) {
      std::string error = std::string("GET of CustomResourceDefinition ") + kube::printable(name) + " failed: " + e.what();
      spdlog::warn("{}; its schema {}", error, "is kept as it was, if it was held");
      if (errors != nullptr) errors->push_back(std::move(error));
    }
  }
  // The connection kept alive holds a read buffer as large as the largest CRD fetched (megabytes): a
  // refresh is rare, so the next one opens a new connection rather than keep that.
  if (!to_get.empty()) refresh_client_ = std::make_unique<kube::ApiClient>(refresh_client_->connection(), options_.client);
  std::vector<std::shared_ptr<const CrdSchema>> schemas;
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(held_mutex_);
  for (auto it = held_.begin(); it != held_.end();) {
    const bool is_wanted = wanted.count(it->first) > 0;
    const bool expired = it->second.on_demand && now - it->second.fetched_at > options_.on_demand_ttl;
    if ((!is_wanted && !it->second.on_demand) || (!is_wanted && expired)) {
      it = held_.erase(it);
      continue;
    }
    if (is_wanted) schemas.insert(schemas.end(), it->second.schemas.begin(), it->second.schemas.end());
    ++it;
  }
  return schemas;
}

std::string ClusterSchemas::served_by(const GroupVersionKind& kind, std::chrono::steady_clock::time_point deadline) {
  ++gets_;
  json list;
  try {
    list = on_demand_client_->get(kube::group_version_path(kind.group, kind.version), deadline);
  } catch (const kube::ApiError& e) {
    if (e.status() == 404) return "";  // the group version is not served
    throw;
  }
  auto resources = list.find("resources");
  if (!list.is_object() || resources == list.end() || !resources->is_array()) return "";
  for (const json& resource : *resources) {
    if (!resource.is_object()) continue;
    const json name = resource.value("name", json());
    // "PLURAL/status" and "PLURAL/scale" name the same kind: the resource itself has no '/'.
    if (resource.value("kind", json()) == kind.kind && name.is_string() &&
        name.get<std::string>().find('/') == std::string::npos) {
      return name.get<std::string>() + "." + kind.group;
    }
  }
  return "";
}

void ClusterSchemas::trim_locked(const std::string& keep) {
  std::vector<std::pair<std::chrono::steady_clock::time_point, std::string>> on_demand;
  for (const auto& [name, held] : held_) {
    if (held.on_demand) on_demand.emplace_back(held.fetched_at, name);
  }
  if (on_demand.size() <= options_.on_demand_entries) return;
  std::size_t excess = on_demand.size() - options_.on_demand_entries;
  std::sort(on_demand.begin(), on_demand.end());
  for (const auto& [fetched_at, name] : on_demand) {
    if (excess == 0) break;
    const auto& schemas = held_.at(name).schemas;
    const bool in_use = std::any_of(schemas.begin(), schemas.end(), [](const auto& schema) { return schema.use_count() > 1; });
    if (name == keep || in_use) continue;
    held_.erase(name);
    --excess;
  }
}

CrdFetch ClusterSchemas::fetch(const GroupVersionKind& kind, std::chrono::steady_clock::time_point deadline) {
  // Only a group the index holds a CRD of is asked about: a Karta's made-up group costs no GET.
  const std::map<std::string, std::string> in_group = indexed_in(kind.group);
  if (in_group.empty() || !crd_version_name(kind.version)) return {};
  std::string stale;  // a CRD held that served the kind and has changed since
  auto cached = [&]() -> std::shared_ptr<const CrdSchema> {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(held_mutex_);
    for (const auto& [name, version] : in_group) {
      auto held = held_.find(name);
      if (held == held_.end()) continue;
      for (const auto& schema : held->second.schemas) {
        if (schema->kind != kind) continue;
        const bool fresh = held->second.resource_version == version &&
                           (!held->second.on_demand || now - held->second.fetched_at <= options_.on_demand_ttl);
        if (fresh) return schema;
        stale = name;
      }
    }
    return nullptr;
  };
  if (auto schema = cached()) return {std::move(schema), ""};
  std::unique_lock fetching(on_demand_mutex_, deadline);
  if (!fetching.owns_lock()) return {nullptr, "no answer within the request's deadline"};
  if (auto schema = cached()) return {std::move(schema), ""};  // fetched by the /validate before this one
  try {
    const std::string name = !stale.empty() ? stale : served_by(kind, deadline);
    if (name.empty()) return {};
    auto schemas = get(*on_demand_client_, name, deadline);
    if (!schemas) {  // deleted meanwhile
      std::lock_guard lock(held_mutex_);
      if (auto held = held_.find(name); held != held_.end() && held->second.on_demand) held_.erase(held);
      return {};
    }
    std::shared_ptr<const CrdSchema> found;
    for (const auto& schema : *schemas) {
      if (schema->kind == kind) found = schema;
    }
    std::lock_guard lock(held_mutex_);
    auto held = held_.find(name);
    if (held == held_.end() || held->second.on_demand) {  // a used group's entry is the reload's to replace
      auto version = in_group.find(name);
      held_[name] = Held{version != in_group.end() ? version->second : "", std::move(*schemas),
                         std::chrono::steady_clock::now(), true};
    }
    trim_locked(name);
    return {std::move(found), ""};
  } catch (const std::exception& e) {
    const auto* api_error = dynamic_cast<const kube::ApiError*>(&e);
    std::string why = std::chrono::steady_clock::now() >= deadline ? "no answer within the request's deadline"
                      : api_error != nullptr && api_error->status() != 0
                          ? "the API server answered " + std::to_string(api_error->status())
                      : api_error != nullptr ? "the API server could not be asked"
                                             : "its schema could not be read";
    spdlog::warn("reading the CustomResourceDefinition of {} for a Karta failed ({}): {}",
                 kube::printable(kube::shortened(kind.to_string(), 200)), why, e.what());
    return {nullptr, std::move(why)};
  }
}

std::uint64_t ClusterSchemas::gets() const { return gets_.load(); }

std::uint64_t ClusterSchemas::events_ignored() const {
  std::lock_guard lock(index_mutex_);
  return events_ignored_;
}

std::size_t ClusterSchemas::indexed() const {
  std::lock_guard lock(index_mutex_);
  return index_.size();
}

std::size_t ClusterSchemas::held() const {
  std::lock_guard lock(held_mutex_);
  return held_.size();
}

}  // namespace karta
