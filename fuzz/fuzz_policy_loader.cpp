// Fuzz target: the policy loader. The input is the text of a --policy file.
//
// karta::parse_documents, then karta::parse_policy on each document. InputError is the documented
// failure; any other exception, or a crash, is a finding. A policy that loads is then applied to the demo
// JobSet (examples/jobset-demo.yaml) with the built-in JobSet definition: the patch must apply to the
// object and, applied, give no further patch (idempotence), whatever the policy says.

#include <cctype>
#include <cstdint>
#include <string>

#include "definitions/catalog.h"
#include "fuzz/fuzz_support.h"
#include "json/documents.h"
#include "mutate/mutation.h"
#include "policy/policy.h"

namespace {

constexpr std::string_view kDemoJobSet = R"({
  "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
  "metadata": {"name": "demo", "namespace": "research", "labels": {"team": "vision"}},
  "spec": {"replicatedJobs": [
    {"name": "leader", "replicas": 1, "template": {"spec": {"parallelism": 1, "completions": 1, "template": {
      "metadata": {"labels": {"platform.example.com/managed": "user-set"}},
      "spec": {"restartPolicy": "Never", "containers": [{"name": "trainer", "image": "nvcr.io/nvidia/pytorch:24.05-py3",
        "resources": {"limits": {"nvidia.com/gpu": 4}}}]}}}}},
    {"name": "worker", "replicas": 2, "template": {"spec": {"parallelism": 1, "completions": 1, "template": {
      "spec": {"restartPolicy": "Never", "containers": [{"name": "trainer", "image": "nvcr.io/nvidia/pytorch:24.05-py3",
        "resources": {"limits": {"nvidia.com/gpu": 4}}}]}}}}}]}})";

const karta::json& demo() {
  static const karta::json object = karta::json::parse(kDemoJobSet);
  return object;
}

const karta::CompiledDefinition& jobset_definition() {
  static const karta::CompiledDefinition* definition = [] {
    auto* found = karta::fuzz::builtin_catalog().find({"jobset.x-k8s.io", "v1alpha2", "JobSet"});
    if (found == nullptr) karta::fuzz::finding("the built-in catalog has no JobSet definition");
    return found;
  }();
  return *definition;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  karta::fuzz::quiet_logs();
  jobset_definition();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  karta::fuzz::quiet_logs();
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<karta::SourceDocument> documents;
  try {
    documents = karta::parse_documents(text, "fuzz-policy.yaml");
  } catch (const karta::InputError&) {
    return 0;
  }
  for (const auto& document : documents) {
    karta::Policy policy;
    try {
      policy = karta::parse_policy(document.value, document.source);
    } catch (const karta::InputError& e) {
      if (std::string(e.what()).empty()) karta::fuzz::finding("an InputError without a message");
      continue;
    }
    karta::WorkloadContext context{"research", "CREATE", std::nullopt};
    auto outcome = karta::mutate_workload(demo(), jobset_definition(), policy, context);
    if (outcome.patch.empty()) continue;
    karta::json patched;
    try {
      patched = demo().patch(outcome.patch.value());
    } catch (const karta::json::exception& e) {
      karta::fuzz::finding(std::string("the patch does not apply: ") + e.what() + "\n" + outcome.patch.text);
    }
    auto again = karta::mutate_workload(patched, jobset_definition(), policy, context);
    if (!again.patch.empty()) {
      karta::fuzz::finding("not idempotent: " + again.patch.text + "\nfirst patch: " + outcome.patch.text);
    }
    // Invalid UTF-8 would reach the patch as U+FFFD (the writer replaces it): the loader must have
    // refused it, so a replacement character there must come from the policy text itself, written
    // as such or as a YAML escape.
    if (outcome.patch.text.find("\xEF\xBF\xBD") != std::string::npos) {
      std::string lower = text;
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (lower.find("\xEF\xBF\xBD") == std::string::npos && lower.find("\\ufffd") == std::string::npos &&
          lower.find("\\u0000fffd") == std::string::npos) {
        karta::fuzz::finding("invalid UTF-8 from the policy reached the patch: " + outcome.patch.text);
      }
    }
  }
  return 0;
}
