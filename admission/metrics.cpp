#include "admission/metrics.h"

#include "definitions/jq_program.h"

#include <charconv>
#include <sstream>

namespace karta {
namespace {

// Label values are escaped as the exposition format requires: backslash, quote and newline.
std::string escape(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

// A sample value as the exposition format reads it: the shortest text that reads back as the same double
// (an ostream's six significant digits would print a day of admissions, 86400.123 s, as 86400.1).
std::string number(double value) {
  char text[32];
  auto [end, ec] = std::to_chars(text, text + sizeof text, value);
  return std::string(text, end);
}

}  // namespace

Metrics::Metrics() : id_([] {
  static std::atomic<std::uint64_t> next{1};
  return next++;
}()) {}

Metrics::Shard& Metrics::local_shard() {
  // Each thread remembers its shard of every Metrics it recorded into (one, in the server).
  thread_local std::vector<std::pair<std::uint64_t, Shard*>> mine;
  for (const auto& [id, shard] : mine) {
    if (id == id_) return *shard;
  }
  std::lock_guard lock(mutex_);
  shards_.push_back(std::make_unique<Shard>());
  mine.emplace_back(id_, shards_.back().get());
  return *shards_.back();
}

void Metrics::record_admission(const std::string& endpoint, const std::string& operation, const std::string& kind,
                               const std::string& result, std::size_t patch_operations, double seconds,
                               const std::string& tenant) {
  Shard& shard = local_shard();
  std::lock_guard lock(shard.mutex);
  Admissions& a = shard.admissions;
  LastAdmission& last = shard.last;
  if (!last.same(endpoint, operation, kind, result, tenant)) {
    auto key = std::make_tuple(std::string_view(endpoint), std::string_view(operation), std::string_view(kind),
                               std::string_view(result), std::string_view(tenant));
    auto counted = a.counts.find(key);
    if (counted == a.counts.end()) {
      counted = a.counts.emplace(std::make_tuple(endpoint, operation, kind, result, tenant), 0).first;
    }
    auto histogram = a.durations.find(endpoint);
    if (histogram == a.durations.end()) histogram = a.durations.emplace(endpoint, Histogram{}).first;
    auto patched = a.patch_operations.find(kind);
    last.endpoint = endpoint;
    last.operation = operation;
    last.kind = kind;
    last.result = result;
    last.tenant = tenant;
    last.count = &counted->second;
    last.histogram = &histogram->second;
    last.patch_operations = patched == a.patch_operations.end() ? nullptr : &patched->second;
  }
  ++*last.count;
  Histogram& h = *last.histogram;
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) ++h.buckets[i];
  }
  ++h.count;
  h.sum += seconds;
  if (patch_operations > 0) {
    if (last.patch_operations == nullptr) last.patch_operations = &a.patch_operations.emplace(kind, 0).first->second;
    *last.patch_operations += patch_operations;
  }
}

void Metrics::record_reload(const std::string& source, bool ok) {
  std::lock_guard lock(mutex_);
  ++(ok ? reloads_ : reload_errors_)[source];
}

void Metrics::set_definitions_loaded(std::size_t count) { definitions_loaded_ = count; }
void Metrics::set_policy_digest(std::string digest) {
  std::lock_guard lock(mutex_);
  policy_digest_ = std::move(digest);
}
void Metrics::set_last_reload_successful(bool ok) { last_reload_successful_ = ok; }
void Metrics::set_certificate_expiry(std::int64_t unix_seconds) { certificate_expiry_ = unix_seconds; }

void Metrics::record_definition_faults_admitted(const std::string& kind, std::size_t faults) {
  std::lock_guard lock(mutex_);
  definition_faults_admitted_[kind] += faults;
}

void Metrics::record_namespace_labels_unknown(const std::string& endpoint) {
  std::lock_guard lock(mutex_);
  ++namespace_labels_unknown_[endpoint];
}

std::string Metrics::render() const {
  std::ostringstream out;
  std::lock_guard lock(mutex_);
  Admissions total;  // the shards added up
  for (const auto& shard : shards_) {
    std::lock_guard shard_lock(shard->mutex);
    const Admissions& a = shard->admissions;
    for (const auto& [key, count] : a.counts) total.counts[key] += count;
    for (const auto& [endpoint, h] : a.durations) {
      Histogram& sum = total.durations[endpoint];
      for (std::size_t i = 0; i < kBuckets.size(); ++i) sum.buckets[i] += h.buckets[i];
      sum.count += h.count;
      sum.sum += h.sum;
    }
    for (const auto& [kind, count] : a.patch_operations) total.patch_operations[kind] += count;
  }
  out << "# HELP karta_admission_requests_total Admission reviews answered, by the tenant whose policy decided.\n"
         "# TYPE karta_admission_requests_total counter\n";
  for (const auto& [key, count] : total.counts) {
    const auto& [endpoint, operation, kind, result, tenant] = key;
    out << "karta_admission_requests_total{endpoint=\"" << escape(endpoint) << "\",operation=\"" << escape(operation)
        << "\",kind=\"" << escape(kind) << "\",result=\"" << escape(result) << "\"";
    // The global policy's admissions without the label: an empty value is no label, to Prometheus.
    if (!tenant.empty()) out << ",tenant=\"" << escape(tenant) << "\"";
    out << "} " << count << "\n";
  }
  out << "# HELP karta_admission_duration_seconds Time to decide one admission review, from body to answer.\n"
         "# TYPE karta_admission_duration_seconds histogram\n";
  for (const auto& [endpoint, h] : total.durations) {
    for (std::size_t i = 0; i < kBuckets.size(); ++i) {
      out << "karta_admission_duration_seconds_bucket{endpoint=\"" << escape(endpoint) << "\",le=\"" << kBuckets[i]
          << "\"} " << h.buckets[i] << "\n";
    }
    out << "karta_admission_duration_seconds_bucket{endpoint=\"" << escape(endpoint) << "\",le=\"+Inf\"} " << h.count
        << "\n";
    out << "karta_admission_duration_seconds_sum{endpoint=\"" << escape(endpoint) << "\"} " << number(h.sum) << "\n";
    out << "karta_admission_duration_seconds_count{endpoint=\"" << escape(endpoint) << "\"} " << h.count << "\n";
  }
  out << "# HELP karta_patch_operations_total JSON Patch operations sent.\n"
         "# TYPE karta_patch_operations_total counter\n";
  for (const auto& [kind, count] : total.patch_operations) {
    out << "karta_patch_operations_total{kind=\"" << escape(kind) << "\"} " << count << "\n";
  }
  out << "# HELP karta_definitions_loaded Karta definitions in the catalog being served.\n"
         "# TYPE karta_definitions_loaded gauge\n"
      << "karta_definitions_loaded " << definitions_loaded_.load() << "\n";
  out << "# HELP karta_last_reload_successful 1 when the last reload of definitions, policy and cluster Kartas "
         "loaded them all, 0 while a failure keeps (part of) the previous state served.\n"
         "# TYPE karta_last_reload_successful gauge\n"
      << "karta_last_reload_successful " << (last_reload_successful_.load() ? 1 : 0) << "\n";
  out << "# HELP karta_policy_info The policy served, by the first 16 hex digits of its file's SHA-256 (none: "
         "no --policy); replicas with different digests serve different policies.\n"
         "# TYPE karta_policy_info gauge\n";
  out << "karta_policy_info{digest=\"" << escape(policy_digest_) << "\"} 1\n";
  if (std::int64_t expiry = certificate_expiry_.load(); expiry != 0) {
    out << "# HELP karta_serving_certificate_expiration_timestamp_seconds When the serving certificate expires "
           "(its notAfter), in seconds since the Unix epoch.\n"
           "# TYPE karta_serving_certificate_expiration_timestamp_seconds gauge\n"
        << "karta_serving_certificate_expiration_timestamp_seconds " << expiry << "\n";
  }
  out << "# HELP karta_reloads_total Successful reloads, by source.\n# TYPE karta_reloads_total counter\n";
  for (const auto& [source, count] : reloads_) out << "karta_reloads_total{source=\"" << escape(source) << "\"} " << count << "\n";
  out << "# HELP karta_reload_errors_total Failed reloads (the previous state is kept), by source.\n"
         "# TYPE karta_reload_errors_total counter\n";
  for (const auto& [source, count] : reload_errors_) {
    out << "karta_reload_errors_total{source=\"" << escape(source) << "\"} " << count << "\n";
  }
  out << "# HELP karta_definition_faults_admitted_total Faults of Kartas admitted by definitionPolicy.mode warn, "
         "by the kind the Karta defines when a loaded definition registers it, else other.\n"
         "# TYPE karta_definition_faults_admitted_total counter\n";
  for (const auto& [kind, count] : definition_faults_admitted_) {
    out << "karta_definition_faults_admitted_total{kind=\"" << escape(kind) << "\"} " << count << "\n";
  }
  out << "# HELP karta_namespace_labels_unknown_total Admissions decided without the namespace's labels, which the "
         "policy needed (the global policy applied), by endpoint.\n"
         "# TYPE karta_namespace_labels_unknown_total counter\n";
  for (const auto& [endpoint, count] : namespace_labels_unknown_) {
    out << "karta_namespace_labels_unknown_total{endpoint=\"" << escape(endpoint) << "\"} " << count << "\n";
  }
  const JqPoolCounters jq = jq_pool_counters();
  out << "# HELP karta_jq_states_replaced_total jq states abandoned because a run would not end, and compiled anew.\n"
         "# TYPE karta_jq_states_replaced_total counter\n"
      << "karta_jq_states_replaced_total " << jq.states_replaced << "\n"
      << "# HELP karta_jq_wait_timeouts_total jq runs refused because no state of the program came free in time.\n"
         "# TYPE karta_jq_wait_timeouts_total counter\n"
      << "karta_jq_wait_timeouts_total " << jq.wait_timeouts << "\n";
  return out.str();
}

}  // namespace karta
