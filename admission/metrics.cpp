#include "admission/metrics.h"

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

}  // namespace

void Metrics::record_admission(const std::string& endpoint, const std::string& operation, const std::string& kind,
                               const std::string& result, std::size_t patch_operations, double seconds) {
  std::lock_guard lock(mutex_);
  auto key = std::make_tuple(std::string_view(endpoint), std::string_view(operation), std::string_view(kind),
                             std::string_view(result));
  auto counted = admissions_.find(key);
  if (counted == admissions_.end()) counted = admissions_.emplace(std::make_tuple(endpoint, operation, kind, result), 0).first;
  ++counted->second;
  auto histogram = durations_.find(endpoint);
  if (histogram == durations_.end()) histogram = durations_.emplace(endpoint, Histogram{}).first;
  Histogram& h = histogram->second;
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) ++h.buckets[i];
  }
  ++h.count;
  h.sum += seconds;
  if (patch_operations > 0) {
    auto patched = patch_operations_.find(kind);
    if (patched == patch_operations_.end()) patched = patch_operations_.emplace(kind, 0).first;
    patched->second += patch_operations;
  }
}

void Metrics::record_reload(const std::string& source, bool ok) {
  std::lock_guard lock(mutex_);
  ++(ok ? reloads_ : reload_errors_)[source];
}

void Metrics::set_definitions_loaded(std::size_t count) { definitions_loaded_ = count; }

std::string Metrics::render() const {
  std::ostringstream out;
  std::lock_guard lock(mutex_);
  out << "# HELP karta_admission_requests_total Admission reviews answered.\n"
         "# TYPE karta_admission_requests_total counter\n";
  for (const auto& [key, count] : admissions_) {
    const auto& [endpoint, operation, kind, result] = key;
    out << "karta_admission_requests_total{endpoint=\"" << escape(endpoint) << "\",operation=\"" << escape(operation)
        << "\",kind=\"" << escape(kind) << "\",result=\"" << escape(result) << "\"} " << count << "\n";
  }
  out << "# HELP karta_admission_duration_seconds Time to decide one admission review, from body to answer.\n"
         "# TYPE karta_admission_duration_seconds histogram\n";
  for (const auto& [endpoint, h] : durations_) {
    for (std::size_t i = 0; i < kBuckets.size(); ++i) {
      out << "karta_admission_duration_seconds_bucket{endpoint=\"" << escape(endpoint) << "\",le=\"" << kBuckets[i]
          << "\"} " << h.buckets[i] << "\n";
    }
    out << "karta_admission_duration_seconds_bucket{endpoint=\"" << escape(endpoint) << "\",le=\"+Inf\"} " << h.count
        << "\n";
    out << "karta_admission_duration_seconds_sum{endpoint=\"" << escape(endpoint) << "\"} " << h.sum << "\n";
    out << "karta_admission_duration_seconds_count{endpoint=\"" << escape(endpoint) << "\"} " << h.count << "\n";
  }
  out << "# HELP karta_patch_operations_total JSON Patch operations sent.\n"
         "# TYPE karta_patch_operations_total counter\n";
  for (const auto& [kind, count] : patch_operations_) {
    out << "karta_patch_operations_total{kind=\"" << escape(kind) << "\"} " << count << "\n";
  }
  out << "# HELP karta_definitions_loaded Karta definitions in the catalog being served.\n"
         "# TYPE karta_definitions_loaded gauge\n"
      << "karta_definitions_loaded " << definitions_loaded_.load() << "\n";
  out << "# HELP karta_reloads_total Successful reloads, by source.\n# TYPE karta_reloads_total counter\n";
  for (const auto& [source, count] : reloads_) out << "karta_reloads_total{source=\"" << escape(source) << "\"} " << count << "\n";
  out << "# HELP karta_reload_errors_total Failed reloads (the previous state is kept), by source.\n"
         "# TYPE karta_reload_errors_total counter\n";
  for (const auto& [source, count] : reload_errors_) {
    out << "karta_reload_errors_total{source=\"" << escape(source) << "\"} " << count << "\n";
  }
  return out.str();
}

}  // namespace karta
