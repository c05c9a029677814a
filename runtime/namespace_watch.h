#pragma once

// The labels of the cluster's Namespaces, for tenant rules and scheduling.queue.namespaceLabel: a watch
// of their metadata only (PartialObjectMetadata, as client-go's metadata informers), keeping each
// namespace's name and labels and nothing else, and a GET of a namespace not seen yet (created since
// the last event). When neither tells, the labels are unknown and admission says so.

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "admission/namespace_labels.h"
#include "kube/api_client.h"
#include "kube/kube_connection.h"
#include "kube/watcher.h"

namespace karta {

class ClusterNamespaces : public NamespaceLabels {
 public:
  // `get_timeout`: the most a GET of an unseen namespace may take, on the admission's thread (the API
  // server's call to the webhook times out after 10 s). After a GET fails (but for a 404), none is tried
  // for `get_pause`: an unreachable API server does not slow every admission down.
  ClusterNamespaces(kube::KubeConnection connection, kube::WatcherOptions options,
                    std::chrono::milliseconds get_timeout = std::chrono::milliseconds(3'000),
                    std::chrono::milliseconds get_pause = std::chrono::milliseconds(5'000));
  ~ClusterNamespaces() override;
  void start();
  void stop();
  NamespaceLookup find(const std::string& namespace_name) const override;
  std::size_t known() const;  // namespaces whose labels are kept

 private:
  mutable std::mutex mutex_;
  mutable std::map<std::string, LabelMap> labels_;  // guarded by mutex_; find() adds what a GET learns
  std::unique_ptr<kube::ResourceWatcher> watcher_;
  mutable std::mutex get_mutex_;  // one GET at a time: an ApiClient is used by one thread
  std::unique_ptr<kube::ApiClient> getter_;
  std::chrono::milliseconds get_pause_;
  mutable std::chrono::steady_clock::time_point paused_until_{};  // guarded by get_mutex_
  mutable std::string last_get_error_;                            // guarded by get_mutex_
};

}  // namespace karta
