#include "runtime/cluster_schemas.h"

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>

#include "json/documents.h"
#include "kube/api_path.h"
#include "kube/json_fields.h"

namespace karta {

using json = nlohmann::json;

namespace {

constexpr const char* kCrds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

kube::ApiClientOptions on_demand_client(const ClusterSchemasOptions& options) {
  kube::ApiClientOptions client = options.client;
  client.connect_timeout = std::min(client.connect_timeout, options.on_demand_timeout);
  client.handshake_timeout = std::min(client.handshake_timeout, options.on_demand_timeout);
  client.request_timeout = std::min(client.request_timeout, options.on_demand_timeout);
  return client;
}

}  // namespace

ClusterSchemas::ClusterSchemas(kube::KubeConnection connection, ClusterSchemasOptions options)
    : options_(std::move(options)),
      refresh_client_(std::make_unique<kube::ApiClient>(connection, options_.client)),
      on_demand_client_(std::make_unique<kube::ApiClient>(std::move(connection), on_demand_client(options_))) {}

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

std::optional<std::vector<std::shared_ptr<const CrdSchema>>> ClusterSchemas::get(kube::ApiClient& client,
                                                                                  const std::string& name) {
  ++gets_;
  json crd;
  try {
    crd = client.get(std::string(kCrds) + "/" + kube::path_escape(name));
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

std::shared_ptr<const CrdSchema> ClusterSchemas::fetch(const GroupVersionKind& kind) {
  std::map<std::string, std::string> candidates = indexed_in(kind.group);
  if (candidates.empty()) return nullptr;
  std::lock_guard fetching(on_demand_mutex_);
  const auto now = std::chrono::steady_clock::now();
  std::vector<std::string> to_get;
  {
    std::lock_guard lock(held_mutex_);
    for (const auto& [name, version] : candidates) {
      auto held = held_.find(name);
      const bool fresh = held != held_.end() && held->second.resource_version == version &&
                         (!held->second.on_demand || now - held->second.fetched_at <= options_.on_demand_ttl);
      if (!fresh) to_get.push_back(name);
    }
  }
  for (const std::string& name : to_get) {
    try {
      auto schemas = get(*on_demand_client_, name);
      std::lock_guard lock(held_mutex_);
      auto held = held_.find(name);
      const bool used = held != held_.end() && !held->second.on_demand;
      if (!schemas) {
        held_.erase(name);
      } else if (!used) {
        held_[name] = Held{candidates[name], std::move(*schemas), std::chrono::steady_clock::now(), true};
      }
    } catch (const std::exception& e) {
      spdlog::warn("GET of CustomResourceDefinition {} for a Karta of {} failed: {}; its paths are not verified",
                   kube::printable(name), kube::printable(kind.to_string()), e.what());
    }
  }
  std::lock_guard lock(held_mutex_);
  // The cache keeps the newest on_demand_entries CRDs fetched on demand.
  std::vector<std::pair<std::chrono::steady_clock::time_point, std::string>> on_demand;
  for (const auto& [name, held] : held_) {
    if (held.on_demand) on_demand.emplace_back(held.fetched_at, name);
  }
  if (on_demand.size() > options_.on_demand_entries) {
    std::sort(on_demand.begin(), on_demand.end());
    for (std::size_t i = 0; i + options_.on_demand_entries < on_demand.size(); ++i) held_.erase(on_demand[i].second);
  }
  for (const auto& [name, version] : candidates) {
    auto held = held_.find(name);
    if (held == held_.end()) continue;
    for (const auto& schema : held->second.schemas) {
      if (schema->kind == kind) return schema;
    }
  }
  return nullptr;
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
