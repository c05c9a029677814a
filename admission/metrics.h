#pragma once

// The webhook's Prometheus metrics, rendered in the text exposition format (version 0.0.4) on /metrics.
// Counters and one latency histogram. Admissions are counted in a shard per thread, each behind its own
// mutex, and added up when rendered: with one shared mutex and shared counters, every request moved the
// same cache lines between CPUs.

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <memory>
#include <tuple>
#include <vector>

namespace karta {

class Metrics {
 public:
  Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // One admission: endpoint (mutate|validate), operation, kind ("group/version/Kind", or "unregistered"),
  // result (patched, unchanged, allowed, denied, skipped, error), patch operations, duration, and the
  // tenant whose policy decided: a tenant rule's name from the policy, never a value of the request ("":
  // the global policy, or none decided; rendered without the label, which Prometheus reads the same).
  void record_admission(const std::string& endpoint, const std::string& operation, const std::string& kind,
                        const std::string& result, std::size_t patch_operations, double seconds,
                        const std::string& tenant = "");
  void record_reload(const std::string& source, bool ok);  // source: definitions, policy, cluster, certificate
  void set_definitions_loaded(std::size_t count);
  // Whether the last reload of the state served (definitions, policy, the cluster's Kartas) loaded it
  // whole: false while a broken file or a rejected Karta keeps (part of) the previous state served.
  void set_last_reload_successful(bool ok);
  // The policy served: karta_policy_info{digest} 1, the digest being AdmissionState::policy_digest (the
  // first 16 hex digits of its file's SHA-256, or "none"), so replicas that serve different policies show.
  void set_policy_digest(std::string digest);
  // The serving certificate's notAfter, in seconds since the Unix epoch.
  void set_certificate_expiry(std::int64_t unix_seconds);
  // Faults of a Karta admitted by definitionPolicy.mode warn, by the kind it defines ("group/version/Kind")
  // when a loaded definition registers it, else "other": the caller bounds the label's values.
  void record_definition_faults_admitted(const std::string& kind, std::size_t faults);
  // An admission whose policy needed the namespace's labels when they could not be learnt.
  void record_namespace_labels_unknown(const std::string& endpoint);

  std::string render() const;

  static constexpr std::array<double, 12> kBuckets{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                   0.01,   0.025,   0.05,   0.1,   0.25,   1.0};

 private:
  struct Histogram {
    std::array<std::uint64_t, kBuckets.size()> buckets{};
    std::uint64_t count = 0;
    double sum = 0;
  };
  // Transparent comparators: counting an admission that was counted before allocates nothing.
  struct LabelsLess {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return views(a) < views(b);
    }
    template <typename T>
    static auto views(const T& labels) {
      return std::apply([](const auto&... label) { return std::make_tuple(std::string_view(label)...); }, labels);
    }
  };
  struct Admissions {
    // by endpoint, operation, kind, result and tenant
    std::map<std::tuple<std::string, std::string, std::string, std::string, std::string>, std::uint64_t, LabelsLess> counts;
    std::map<std::string, Histogram, std::less<>> durations;  // by endpoint
    std::map<std::string, std::uint64_t, std::less<>> patch_operations;  // by kind
  };
  // The entries the thread's last admission counted into, with their labels: the next admission, most
  // often of the same labels, finds them without the three map lookups. (The maps only grow, so the
  // entries stay where they are.)
  struct LastAdmission {
    std::string endpoint, operation, kind, result, tenant;
    std::uint64_t* count = nullptr;
    Histogram* histogram = nullptr;
    std::uint64_t* patch_operations = nullptr;  // null until an admission of that kind patched
    bool same(std::string_view e, std::string_view o, std::string_view k, std::string_view r, std::string_view t) const {
      return count != nullptr && endpoint == e && operation == o && kind == k && result == r && tenant == t;
    }
  };
  struct Shard {
    std::mutex mutex;  // taken by its thread on every admission, by render() to read it
    Admissions admissions;
    LastAdmission last;  // its thread's only
  };
  Shard& local_shard();

  const std::uint64_t id_;  // tells this object's shards from another's in a thread's cache
  mutable std::mutex mutex_;  // guards shards_ (the list), the reload and definition fault counters
  std::vector<std::unique_ptr<Shard>> shards_;
  std::map<std::string, std::uint64_t> reloads_, reload_errors_;
  std::map<std::string, std::uint64_t> definition_faults_admitted_;  // guarded by mutex_
  std::map<std::string, std::uint64_t> namespace_labels_unknown_;    // guarded by mutex_
  std::string policy_digest_ = "none";                                // guarded by mutex_
  std::atomic<std::size_t> definitions_loaded_{0};
  std::atomic<bool> last_reload_successful_{true};  // the load at start-up succeeded, or serve would not
  std::atomic<std::int64_t> certificate_expiry_{0};  // 0: not set, and not rendered
};

}  // namespace karta
