#pragma once

// The labels of the cluster's Namespaces, for tenant rules and scheduling.queue.namespaceLabel: a watch
// of their metadata only (PartialObjectMetadata, as client-go's metadata informers), keeping each
// namespace's name and labels and nothing else, and GETs of namespaces not seen yet (created since the
// last event), which admissions await without holding a thread.
//
// - find() reads the store and never waits. A namespace it has not heard of is pending.
// - await() starts one GET per namespace (single flight: every request for it waits on that one), at most
//   `concurrency` at a time (each on an ApiClient of its own, which one thread uses at a time), and
//   answers each waiter once: with the labels, with the watch's word if it comes first, or unknown when the
//   waiter's own deadline passes. A GET nobody waits for any more is not sent.
// - A 404 is remembered for `remember_absent`: a namespace created later comes with the watch's event.
//   A name that is not a namespace's (not a DNS label: "..", a 1 MiB string) is unknown at once, never
//   sent to the API server.
// - A failed GET answers its own waiters, and nobody else's: no pause shared across namespaces, and the
//   reason a waiter is given names no URL and no other namespace (the full error is logged).
// - Order: a GET's answer is kept only when the watch has said nothing of that namespace (no event, no
//   new LIST) since the GET was sent. The watch is one ordered stream, so whatever changed after the
//   GET's read comes as an event: preferring it can delay a change, never lose one. A per-name flag is
//   used rather than comparing resourceVersions, which Kubernetes defines as opaque strings.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "admission/namespace_labels.h"
#include "kube/api_client.h"
#include "kube/kube_connection.h"
#include "kube/watcher.h"

namespace karta {

struct NamespaceLookupOptions {
  std::size_t concurrency = 4;                        // GETs at once
  std::chrono::milliseconds get_timeout{5'000};       // one GET: connect, handshake and answer
  std::chrono::milliseconds remember_absent{10'000};  // how long a 404 is believed
  std::size_t max_absent = 10'000;                    // names remembered absent at most
};

class ClusterNamespaces : public NamespaceLabels {
 public:
  // The lookup threads start now; the watch with start().
  ClusterNamespaces(kube::KubeConnection connection, kube::WatcherOptions options, NamespaceLookupOptions lookups = {});
  ~ClusterNamespaces() override;
  void start();
  // Ends the watch and the GETs; waiters still waiting are answered (unknown), later ones at once.
  void stop();
  NamespaceLookup find(const std::string& namespace_name) const override;
  void await(const std::string& namespace_name, Clock::time_point deadline,
             std::function<void(NamespaceLookup)> done) const override;
  std::size_t known() const;  // namespaces whose labels are kept
  bool listed() const;        // the watch's first LIST is in

 private:
  struct Waiter {
    std::function<void(NamespaceLookup)> done;
    bool answered = false;
  };
  struct Lookup {
    std::vector<std::shared_ptr<Waiter>> waiters;
    bool sent = false;         // its GET is on its way
    bool watch_spoke = false;  // an event or a LIST about the namespace came since it was sent
  };
  using Answers = std::vector<std::pair<std::shared_ptr<Waiter>, NamespaceLookup>>;

  NamespaceLookup find_locked(const std::string& namespace_name, Clock::time_point now) const;
  void remember_absent(const std::string& namespace_name, Clock::time_point now) const;
  // The watch spoke of the namespace: its waiters get the store's word now (into `answers`).
  void settle_locked(const std::string& namespace_name, Answers& answers);
  void get_loop(kube::ApiClient& client);
  void deadline_loop();
  static void deliver(Answers& answers);

  mutable std::mutex mutex_;
  // Guarded by mutex_:
  mutable std::map<std::string, LabelMap> labels_;  // from the watch, or a GET it did not contradict
  mutable std::map<std::string, Clock::time_point> absent_;  // 404s (and deletions), believed until then
  mutable std::map<std::string, std::shared_ptr<Lookup>> lookups_;  // queued or sent, by name
  mutable std::deque<std::string> queue_;                           // names whose GET is still to send
  mutable std::multimap<Clock::time_point, std::weak_ptr<Waiter>> deadlines_;
  bool listed_ = false;
  bool stopping_ = false;

  mutable std::condition_variable queued_, deadline_moved_;
  NamespaceLookupOptions options_;
  std::unique_ptr<kube::ResourceWatcher> watcher_;
  std::vector<std::unique_ptr<kube::ApiClient>> getters_;  // one per GET thread
  std::vector<std::thread> threads_;
};

}  // namespace karta
