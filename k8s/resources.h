#pragma once

// What one pod of a template requests: GPUs, CPU and memory, counted as Kubernetes counts them.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "json/json_document.h"

namespace karta {

// A Kubernetes quantity ("4", "500m", "16Gi", "1e3", or a JSON number) as a number, read as Kubernetes
// reads it (k8s/quantity.h); nullopt where Kubernetes refuses it ("0x4", " 4").
std::optional<double> parse_quantity(JsonElement quantity);
std::optional<double> parse_quantity(const json& quantity);

struct PodRequests {
  double gpus = 0;
  double cpu = 0;           // cores
  double memory_bytes = 0;
};

// What to count: the admission needs only GPUs (scheduling hints, the workload's total); `inspect`
// shows CPU and memory too. Counting GPUs only leaves cpu and memory_bytes at 0 and saves four map
// lookups a container.
enum class Counted { GpusCpuMemory, GpusOnly };

// One container's requests: per resource the larger of its limit and its request (a limit alone
// implies an equal request). `gpu_names` are the resource names that count as GPUs.
PodRequests container_requests(JsonElement resources, const std::vector<std::string>& gpu_names,
                               Counted counted = Counted::GpusCpuMemory);

// A pod's effective requests: the sum over containers, against the largest init container (init
// containers run one at a time); restartable (sidecar) init containers run alongside and are added.
PodRequests pod_requests(JsonElement pod_spec, const std::vector<std::string>& gpu_names,
                         Counted counted = Counted::GpusCpuMemory);
PodRequests pod_requests(const json& pod_spec, const std::vector<std::string>& gpu_names,
                         Counted counted = Counted::GpusCpuMemory);
// The same for a pod given as its lists of containers and init containers (either may be absent).
PodRequests pod_requests(std::optional<JsonElement> containers, std::optional<JsonElement> init_containers,
                         const std::vector<std::string>& gpu_names, Counted counted = Counted::GpusCpuMemory);

// The GPU names a ResourceRequirements-like map reached by a definition's resourcesPath may also use:
// Dynamo spells a GPU as plain "gpu".
std::vector<std::string> fragmented_gpu_names(const std::vector<std::string>& gpu_names);

}  // namespace karta
