#pragma once

// Helpers shared by the fuzz targets: a loud abort for oracle failures, and the catalog and policies
// the targets run against (built once per process).

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

#include "admission/admission_service.h"
#include "definitions/catalog.h"
#include "json/documents.h"
#include "policy/policy.h"

namespace karta::fuzz {

// An oracle failed: print why (libFuzzer then saves the input as crash-*) and abort.
[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "\n==== FUZZ FINDING: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

inline void quiet_logs() {
  static const bool done = [] {
    spdlog::set_level(spdlog::level::off);
    return true;
  }();
  (void)done;
}

// examples/policy.yaml, as of this writing: what the README demonstrates.
inline constexpr std::string_view kExamplePolicy = R"(
podTemplates:
  labels:
    platform.example.com/managed: "true"
    platform.example.com/role: "{{instance}}"
  annotations: {}
  overwrite: false
scheduling:
  schedulerName: kai-scheduler
  queue:
    label: kai.scheduler/queue
    default: default-queue
gpu:
  resourceNames: [nvidia.com/gpu]
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  nodeSelector: {}
  podAnnotations: {}
  workloadTotalAnnotation: platform.example.com/gpu-total
gang:
  minMemberAnnotation: kai.scheduler/batch-min-member
labelPolicy:
  mode: enforce
  exemptNamespaces: [kube-system]
  workload:
    required: [team]
    allowed: {team: "^[a-z][a-z0-9-]{1,30}$"}
  podTemplates:
    required: []
)";

// Every injection on, with every placeholder and overwrite: true, so the other branches run too.
inline constexpr std::string_view kEverythingPolicy = R"(
podTemplates:
  labels:
    platform.example.com/managed: "true"
    platform.example.com/instance: "{{instance}}"
    platform.example.com/component: "{{component}}"
  annotations:
    platform.example.com/owner: "{{namespace}}.{{name}}"
    platform.example.com/kind: "{{group}}/{{kind}}"
    platform.example.com/gpus: "{{gpus}}"
  overwrite: true
scheduling:
  schedulerName: kai-scheduler
  forceSchedulerName: false
  queue:
    label: kai.scheduler/queue
    default: default-queue
gpu:
  resourceNames: [nvidia.com/gpu, amd.com/gpu]
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  nodeSelector: {nvidia.com/gpu.present: "true"}
  podAnnotations: {platform.example.com/gpu-pod: "yes"}
  workloadTotalAnnotation: platform.example.com/gpu-total
gang:
  minMemberAnnotation: kai.scheduler/batch-min-member
labelPolicy:
  mode: audit
  exemptNamespaces: [kube-system]
  workload:
    required: [team]
    allowed: {team: "^[a-z][a-z0-9-]{1,30}$"}
  podTemplates:
    required: [platform.example.com/managed]
)";

inline Policy policy_from_text(std::string_view text, const std::string& name) {
  auto documents = parse_documents(text, name);
  if (documents.size() != 1) finding("the built-in fuzz policy " + name + " is not one document");
  return parse_policy(documents.front().value, name);
}

// The built-in catalog, compiled once per process (one jq state per program: one thread).
inline const Catalog& builtin_catalog() {
  static const Catalog catalog = load_catalog(CatalogSources{});
  return catalog;
}

// The built-in catalog with the given policy.
inline std::shared_ptr<const AdmissionState> make_state(std::string_view policy_text, const std::string& name) {
  auto state = std::make_shared<AdmissionState>();
  state->catalog = builtin_catalog();
  state->policy = policy_from_text(policy_text, name);
  return state;
}

}  // namespace karta::fuzz
