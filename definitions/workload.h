#pragma once

// A workload as its definition sees it: the pod templates, and what one pod of each requests.

#include <string>
#include <vector>

#include "definitions/pod_template_locator.h"
#include "definitions/resources.h"

namespace karta {

struct WorkloadAnalysis {
  WorkloadLayout layout;
  std::vector<PodRequests> per_pod;  // one per layout.templates entry
  double total_gpus = 0;             // sum of per-pod GPUs x replicas
};

WorkloadAnalysis analyze_workload(DefinitionEvaluation& evaluation, const std::vector<std::string>& gpu_names);

// "4" for 4.0, "0.5" for 0.5: how a count is written into a label or annotation.
std::string format_count(double value);

}  // namespace karta
