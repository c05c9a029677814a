#pragma once

// A workload as its definition sees it: the pod templates, and what one pod of each requests.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "definitions/pod_template_locator.h"
#include "k8s/resources.h"

namespace karta {

struct WorkloadAnalysis {
  WorkloadLayout layout;
  std::vector<PodRequests> per_pod;  // one per layout.templates entry
  double total_gpus = 0;             // sum of per-pod GPUs x replicas
};

// `counted`: what per_pod holds (k8s/resources.h); total_gpus is counted either way.
WorkloadAnalysis analyze_workload(DefinitionEvaluation& evaluation, const std::vector<std::string>& gpu_names,
                                  Counted counted = Counted::GpusCpuMemory);

// The gang's minimum member count at admission, before any pod exists: the replicas of the templates
// whose component the GangPlan counts. Either a figure or why there is none.
struct GangMinimum {
  std::optional<std::int64_t> min_member;
  std::optional<std::string> not_computed;  // no exact figure: the annotation is not written
};
GangMinimum gang_minimum(const GangPlan& plan, const WorkloadLayout& layout);

// a + b, or nullopt when the sum does not fit in 64 bits (a replica count is never meant to be that big,
// and a wrapped sum would tell the scheduler a wrong gang size).
std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b);

// "4" for 4.0, "0.5" for 0.5: how a count is written into a label or annotation.
std::string format_count(double value);

}  // namespace karta
