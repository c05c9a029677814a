#include "definitions/workload.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace karta {
namespace {

void keep_max(PodRequests& into, const PodRequests& r) {
  into.gpus = std::max(into.gpus, r.gpus);
  into.cpu = std::max(into.cpu, r.cpu);
  into.memory_bytes = std::max(into.memory_bytes, r.memory_bytes);
}

void add(PodRequests& into, const PodRequests& r) {
  into.gpus += r.gpus;
  into.cpu += r.cpu;
  into.memory_bytes += r.memory_bytes;
}

// What one pod of the template requests: its pod spec (or, fragmented, its containers and resources),
// plus containers the framework adds from elsewhere (additionalContainerPaths).
PodRequests template_requests(JsonElement object, const PodTemplateLocation& t, const std::vector<std::string>& gpu_names,
                              Counted counted) {
  PodRequests r;
  if (t.pod_spec) {
    std::optional<JsonElement> spec;
    if (t.pod_spec_found) {
      spec = t.pod_spec_found;
    } else if (t.element && t.kind == SpecKind::PodTemplateSpec) {
      spec = member(*t.element, "spec");  // t.pod_spec is t.location / "spec"
    } else {
      spec = find_at(object, *t.pod_spec);
    }
    if (spec) r = pod_requests(*spec, gpu_names, counted);
  } else {
    if (t.containers) {
      if (auto containers = find_at(object, *t.containers); containers && containers->is_array()) {
        r = pod_requests(containers, std::nullopt, gpu_names, counted);
      }
    } else if (t.container) {
      if (auto container = find_at(object, *t.container)) {
        if (auto resources = member(*container, "resources")) r = container_requests(*resources, gpu_names, counted);
      }
    }
    if (t.resources) {
      if (auto resources = find_at(object, *t.resources)) {
        keep_max(r, container_requests(*resources, fragmented_gpu_names(gpu_names), counted));
      }
    }
  }
  if (t.gpu_request) {  // {name, quantity}: quantity per pod when name is counted as a GPU
    if (auto request = find_at(object, *t.gpu_request)) {
      auto name_element = member(*request, "name");
      auto name = name_element ? string_of(*name_element) : std::nullopt;
      if (name && std::find(gpu_names.begin(), gpu_names.end(), *name) != gpu_names.end()) {
        if (auto quantity = member(*request, "quantity")) {
          if (auto parsed = parse_quantity(*quantity)) r.gpus += *parsed;
        }
      }
    }
  }
  for (const auto& extra : t.additional_containers) {
    if (auto container = find_at(object, extra)) {
      if (auto resources = member(*container, "resources")) add(r, container_requests(*resources, gpu_names, counted));
    }
  }
  return r;
}

}  // namespace

WorkloadAnalysis analyze_workload(DefinitionEvaluation& evaluation, const std::vector<std::string>& gpu_names,
                                  Counted counted) {
  WorkloadAnalysis analysis;
  analysis.layout = locate_pod_templates(evaluation);
  analysis.per_pod.reserve(analysis.layout.templates.size());
  for (const auto& t : analysis.layout.templates) {
    PodRequests r = template_requests(evaluation.object(), t, gpu_names, counted);
    analysis.total_gpus += r.gpus * static_cast<double>(t.replicas);
    analysis.per_pod.push_back(r);
  }
  return analysis;
}

std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

GangMinimum gang_minimum(const GangPlan& plan, const WorkloadLayout& layout) {
  if (plan.not_computable) return {std::nullopt, plan.not_computable};
  std::int64_t min_member = 0;
  for (const auto& t : layout.templates) {
    if (!plan.whole_workload && plan.components.count(t.component) == 0) continue;
    auto sum = checked_add(min_member, t.replicas);
    if (!sum) return {std::nullopt, "the replicas of the gang's members add up to more than 2^63-1"};
    min_member = *sum;
  }
  return {min_member, std::nullopt};
}

std::string format_count(double value) {
  if (std::nearbyint(value) == value && std::fabs(value) < 1e15) return std::to_string(static_cast<long long>(value));
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace karta
