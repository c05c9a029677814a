#pragma once

// The running webhook: the admission service behind the HTTPS server, with its health, readiness,
// metrics, live reload of definitions and policy, and lifecycle. `serve` runs one; the end-to-end tests
// run one in-process on an ephemeral port.

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "admission/admission_service.h"
#include "kube/kube_connection.h"
#include "kube/watcher.h"
#include "runtime/admission_state_loader.h"
#include "runtime/cluster_schemas.h"
#include "runtime/namespace_watch.h"
#include "server/https_server.h"

namespace karta {

struct WebhookConfig {
  ServerOptions server;
  TlsFiles tls;
  std::vector<std::filesystem::path> definition_directories;
  std::filesystem::path policy_file;  // empty: inject nothing
  std::vector<std::filesystem::path> crd_directories;  // CRD schemas Karta definitions are checked against
  // How often definition directories and the policy file are checked for changes. Polling by content
  // survives Kubernetes' symlink swaps of ConfigMap volumes, which inotify on the file misses.
  std::chrono::milliseconds reload_interval{2'000};
  // When set, Karta objects and CRD schemas are listed and watched through the API server, and the
  // cluster's definitions are merged over the built-in catalog and the directories.
  std::optional<kube::KubeConnection> cluster;
  kube::WatcherOptions watcher_options;
};

class Webhook {
 public:
  explicit Webhook(WebhookConfig config);  // throws on unusable certificates, definitions or policy
  ~Webhook();

  unsigned short listen();
  void run(bool handle_signals = true);  // blocks until shut down
  void shutdown();

  AdmissionService& service() { return *service_; }
  // The cluster's CRDs as serve holds them; nullptr when not watching a cluster.
  const ClusterSchemas* cluster_schemas() const { return schemas_.get(); }
  // Definitions loaded and, when watching a cluster, the first LIST of its Kartas and CRDs in them;
  // not shutting down. /readyz answers this.
  bool ready() const;
  // Why ready() is false ("shutting down", ...), or "" when it is true.
  std::string not_ready_reason() const;
  // The cluster's namespaces, once a policy has needed their labels (null before, or without a cluster).
  std::shared_ptr<ClusterNamespaces> cluster_namespaces();

 private:
  void watch_for_changes();
  // Compiles the jq states admission runs for the definitions in to_prepare_ (the built-in catalog's are
  // compiled on first use), one state of each, on a thread of its own: neither /readyz nor a reload waits
  // for it. Every reload interval, another state for each program whose runs had to wait for one (up to
  // one per CPU). Then returns the memory freed to the kernel (runtime/allocator.h).
  void prepare_admission_programs();
  void reload(const std::vector<const char*>& sources);
  void start_cluster_watch();
  // Starts the watch of the cluster's Namespaces the first time a policy needs their labels, and hands
  // the state what it keeps.
  void attach_namespaces(AdmissionState& state);

  WebhookConfig config_;
  std::shared_ptr<AdmissionService> service_;
  AdmissionStateLoader loader_;
  AdmissionStateLoader::Fingerprint loaded_fingerprint_;
  std::atomic<bool> shutting_down_{false};
  std::unique_ptr<HttpsServer> server_;
  std::mutex reload_mutex_;
  std::condition_variable reload_wake_;
  bool stop_reloading_ = false;
  std::thread reload_thread_;
  bool cluster_changed_ = false;  // guarded by reload_mutex_
  std::vector<std::shared_ptr<const CompiledDefinition>> to_prepare_;  // guarded by reload_mutex_
  std::condition_variable prepare_wake_;
  std::thread prepare_thread_;
  // The groups of the definitions loaded from the built-in catalog and directories (W without the
  // cluster's Kartas); the reload thread's.
  std::set<std::string> local_groups_;
  std::mutex cluster_mutex_;
  std::map<std::string, json> kartas_;  // guarded by cluster_mutex_; by name
  // The cluster's CRDs: an index of all, schemas of W's (runtime/cluster_schemas.h).
  std::shared_ptr<ClusterSchemas> schemas_;
  // Which collections have had their first LIST (guarded by cluster_mutex_), and whether a state built
  // from both is being served: until then a cluster's Kartas are not known, and /readyz says so.
  bool kartas_listed_ = false, crds_listed_ = false;
  std::atomic<bool> cluster_loaded_{false};
  std::unique_ptr<kube::ResourceWatcher> karta_watcher_, crd_watcher_;
  std::mutex namespaces_mutex_;
  std::shared_ptr<ClusterNamespaces> namespaces_;  // guarded by namespaces_mutex_; null until needed
};

}  // namespace karta
