#include "runtime/namespace_watch.h"

#include <spdlog/spdlog.h>

#include "kube/api_path.h"

namespace karta {
namespace {

constexpr const char* kNamespaces = "/api/v1/namespaces";
// client-go's metadata client asks for these (k8s.io/client-go/metadata), with JSON as the fallback.
constexpr const char* kAcceptList = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
constexpr const char* kAcceptObject = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

// What is kept of a namespace: its name, resourceVersion (for the watch) and labels.
void keep_labels(json& object) {
  json kept = {{"metadata", json::object()}};
  if (object.is_object() && object.contains("metadata") && object["metadata"].is_object()) {
    json& metadata = object["metadata"];
    for (const char* key : {"name", "resourceVersion", "labels"}) {
      if (metadata.contains(key)) kept["metadata"][key] = std::move(metadata[key]);
    }
  }
  object = std::move(kept);
}

std::string name_of(const json& object) {
  const json* name = object.contains("metadata") ? &object["metadata"] : nullptr;
  if (name == nullptr || !name->contains("name") || !(*name)["name"].is_string()) return "";
  return (*name)["name"].get<std::string>();
}

}  // namespace

ClusterNamespaces::ClusterNamespaces(kube::KubeConnection connection, kube::WatcherOptions options,
                                     std::chrono::milliseconds get_timeout, std::chrono::milliseconds get_pause)
    : get_pause_(get_pause) {
  kube::ApiClientOptions get_options = options.client;
  get_options.accept = kAcceptObject;
  get_options.request_timeout = std::min(get_options.request_timeout, get_timeout);
  get_options.connect_timeout = std::min(get_options.connect_timeout, get_timeout);
  get_options.handshake_timeout = std::min(get_options.handshake_timeout, get_timeout);
  getter_ = std::make_unique<kube::ApiClient>(connection, get_options);

  options.client.accept = kAcceptList;
  options.client.stream_accept = kAcceptObject;
  options.keep_only = keep_labels;
  kube::WatcherCallbacks callbacks;
  callbacks.on_snapshot = [this](std::vector<json> objects) {
    std::map<std::string, LabelMap> labels;
    for (const json& object : objects) labels[name_of(object)] = namespace_labels_of(object);
    std::lock_guard lock(mutex_);
    labels_ = std::move(labels);
  };
  callbacks.on_event = [this](kube::EventType type, const json& object) {
    std::lock_guard lock(mutex_);
    if (type == kube::EventType::Deleted) labels_.erase(name_of(object));
    else labels_[name_of(object)] = namespace_labels_of(object);
  };
  watcher_ = std::make_unique<kube::ResourceWatcher>(std::move(connection), kNamespaces, std::move(callbacks),
                                                     std::move(options));
}

ClusterNamespaces::~ClusterNamespaces() { stop(); }

void ClusterNamespaces::start() {
  spdlog::info("watching Namespaces (metadata only) for the policy's namespace labels");
  watcher_->start();
}

void ClusterNamespaces::stop() {
  watcher_->stop();
  getter_->cancel();
}

std::size_t ClusterNamespaces::known() const {
  std::lock_guard lock(mutex_);
  return labels_.size();
}

NamespaceLookup ClusterNamespaces::find(const std::string& namespace_name) const {
  {
    std::lock_guard lock(mutex_);
    if (auto it = labels_.find(namespace_name); it != labels_.end()) return {it->second, ""};
  }
  if (namespace_name.empty()) return {std::nullopt, "no namespace"};
  std::lock_guard get_lock(get_mutex_);
  {
    std::lock_guard lock(mutex_);  // another thread's GET may have brought it meanwhile
    if (auto it = labels_.find(namespace_name); it != labels_.end()) return {it->second, ""};
  }
  const auto now = std::chrono::steady_clock::now();
  if (now < paused_until_) return {std::nullopt, "not seen yet, and the last GET failed: " + last_get_error_};
  try {
    json object = getter_->get(kube::resource_path("", "v1", "namespaces", "", namespace_name));
    LabelMap labels = namespace_labels_of(object);
    std::lock_guard lock(mutex_);
    labels_[namespace_name] = labels;
    return {std::move(labels), ""};
  } catch (const kube::ApiError& e) {
    // A namespace that does not exist (404) says nothing of the API server: the next GET is not paused.
    if (e.status() != 404) {
      last_get_error_ = e.what();
      paused_until_ = now + get_pause_;
    }
    spdlog::warn("namespace {}: labels unknown: {}", namespace_name, e.what());
    return {std::nullopt, std::string("not seen yet, and GET failed: ") + e.what()};
  } catch (const std::exception& e) {
    last_get_error_ = e.what();
    paused_until_ = now + get_pause_;
    spdlog::warn("namespace {}: labels unknown: {}", namespace_name, last_get_error_);
    return {std::nullopt, "not seen yet, and GET failed: " + last_get_error_};
  }
}

}  // namespace karta
