#pragma once

// Keeps the objects of one collection up to date, the way client-go's reflector does: LIST (in pages)
// for a snapshot and its resourceVersion, then WATCH from that resourceVersion, again and again, moving
// it on with every event and bookmark. A 410 Gone (the resourceVersion was compacted away) means a new
// LIST (and a snapshot, if it changed anything); connection failures and 5xx answers are retried. Both
// wait first, with client-go's backoff (retry_backoff.h): a server that answers every watch with 410 gets
// a LIST after 0.8-1.6 s, then 1.6-3.2 s, ... down to one every 30-60 s, not a LIST loop.
// Everything runs on the watcher's own thread, callbacks included.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/api_client.h"
#include "kube/kube_connection.h"
#include "kube/list_pages.h"
#include "kube/retry_backoff.h"

namespace karta::kube {

enum class EventType { Added, Modified, Deleted };

const char* to_string(EventType type);

struct WatcherOptions {
  // LIST ?limit=: what one page makes the watcher hold is bounded by a page (kube/list_pages.h).
  std::size_t page_size = kListPageSize;
  // Ask for metadata only (PartialObjectMetadataList and PartialObjectMetadata, as client-go's metadata
  // client): for a collection of large objects the watcher only indexes, such as the cluster's
  // CustomResourceDefinitions, most of which no definition names.
  bool metadata_only = false;
  // Each watch request asks the server to end it after this long (timeoutSeconds); client-go picks
  // 5 to 10 minutes. The client gives up on a stream open `watch_grace` longer than that.
  std::chrono::seconds watch_timeout{300};
  std::chrono::seconds watch_grace{30};
  // The waits before a retry after a failure or a 410: client-go's by default. Tests shorten them.
  BackoffOptions backoff;
  ApiClientOptions client;
  // Applied to every object listed or watched before it is kept or handed on: what the watcher keeps of
  // each (a namespace's name, resourceVersion and labels), so that its memory is bounded by that.
  std::function<void(nlohmann::json& object)> keep_only;
};

struct WatcherCallbacks {
  // After the first LIST, and after each later one (after a 410) that found the objects changed: every
  // object of the collection. A LIST that finds exactly the objects the watcher already knows (every
  // resourceVersion the same) is not delivered: nothing would change but a needless reload.
  std::function<void(std::vector<nlohmann::json> objects)> on_snapshot;
  // For each ADDED, MODIFIED and DELETED event, after the watcher's own set has been updated.
  std::function<void(EventType type, const nlohmann::json& object)> on_event;
};

class ResourceWatcher {
 public:
  // `collection` is the API path of a collection: "/apis/run.ai/v1alpha1/kartas",
  // "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "/api/v1/namespaces/ns/configmaps".
  // Throws KubeConfigError when the connection's TLS material is unusable.
  ResourceWatcher(KubeConnection connection, std::string collection, WatcherCallbacks callbacks,
                  WatcherOptions options = {});
  ~ResourceWatcher();  // stops
  ResourceWatcher(const ResourceWatcher&) = delete;
  ResourceWatcher& operator=(const ResourceWatcher&) = delete;

  // Starts the watcher's thread. Once only.
  void start();
  // Ends the request in progress or the backoff wait and joins the thread: returns within milliseconds.
  // Idempotent. Called from a callback, it only asks the thread to end.
  void stop();

  bool synced() const { return synced_.load(); }  // the first LIST has completed
  // Waits until synced() or `timeout` passes; returns synced().
  bool wait_until_synced(std::chrono::milliseconds timeout) const;

  // The resourceVersion of each object now known, by object_key(). The watcher keeps no objects: this
  // is enough to tell whether a LIST after a 410 changed anything, and the callbacks have the objects.
  std::map<std::string, std::string> versions() const;
  // The resourceVersion the next watch starts from.
  std::string resource_version() const;

  std::uint64_t lists() const { return lists_.load(); }                            // LISTs completed
  std::uint64_t watches() const { return watches_.load(); }                        // watch streams opened
  std::uint64_t relists_after_gone() const { return relists_after_gone_.load(); }  // LISTs redone after a 410
  std::uint64_t errors() const { return errors_.load(); }  // failed requests and ERROR events other than 410
  std::string last_error() const;                          // the latest of those, "" when none

  // "name" for a cluster-scoped object, "namespace/name" for a namespaced one.
  static std::string object_key(const nlohmann::json& object);

 private:
  enum class WatchEnd { Ended, Gone };

  void run();
  void list();
  WatchEnd watch();
  void handle_event(const std::string& request, std::string_view line, bool& gone);
  void record_error(const std::string& error);
  // Sleeps for the next backoff delay. Returns false when stop() came first.
  bool back_off();
  void deliver_snapshot(std::vector<nlohmann::json> objects);

  std::string collection_;
  WatcherCallbacks callbacks_;
  WatcherOptions options_;
  std::unique_ptr<ApiClient> client_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> synced_{false};
  std::atomic<std::uint64_t> lists_{0}, watches_{0}, relists_after_gone_{0}, errors_{0};

  mutable std::mutex mutex_;  // guards what follows, and wakes a backoff wait or wait_until_synced
  mutable std::condition_variable changed_;
  std::map<std::string, std::string> versions_;  // by object_key()
  std::string resource_version_;
  std::string last_error_;
  RetryBackoff backoff_;

  std::uint64_t events_in_watch_ = 0;  // the watcher thread's own
};

}  // namespace karta::kube
