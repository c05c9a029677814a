#include "k8s/resources.h"

#include <algorithm>
#include <cstdint>

#include "k8s/quantity.h"

namespace karta {

std::optional<double> parse_quantity(JsonElement quantity) {
  // A number as Kubernetes reads it: its text. Integers keep every digit; a fraction or an exponent is
  // a double by now, and its shortest text is what was written, bar digits past a double's precision.
  // An integer's text parses to itself as whole units, up to kQuantityLimit (clamped there): the same
  // double is had without writing the text and parsing it back.
  std::optional<Quantity> parsed;
  if (quantity.is_uint64()) {
    return static_cast<double>(std::min<std::uint64_t>(quantity.get_uint64().value_unsafe(), kQuantityLimit));
  } else if (quantity.is_int64()) {
    const std::int64_t value = quantity.get_int64().value_unsafe();  // negative: is_uint64 took the rest
    const std::uint64_t magnitude = value < 0 ? 0 - static_cast<std::uint64_t>(value) : static_cast<std::uint64_t>(value);
    const double units = static_cast<double>(std::min<std::uint64_t>(magnitude, kQuantityLimit));
    return value < 0 ? -units : units;
  } else if (quantity.is_number()) {
    parsed = quantity_of_number(quantity.get_double().value_unsafe());
  } else if (auto text = string_of(quantity)) {
    parsed = parse_quantity_text(*text);
  }
  return parsed ? std::optional<double>(parsed->to_double()) : std::nullopt;
}

std::optional<double> parse_quantity(const json& quantity) {
  JsonDocument document = JsonDocument::from(quantity);
  return parse_quantity(document.root());
}

PodRequests container_requests(JsonElement resources, const std::vector<std::string>& gpu_names, Counted counted) {
  PodRequests r;
  if (!resources.is_object()) return r;
  const std::optional<JsonElement> sections[] = {member(resources, "limits"), member(resources, "requests")};
  auto amount = [&](std::string_view name) {
    double value = 0;
    for (const auto& section : sections) {
      if (!section) continue;
      auto q = member(*section, name);
      if (!q) continue;
      if (auto parsed = parse_quantity(*q)) value = std::max(value, *parsed);
    }
    return value;
  };
  for (const auto& name : gpu_names) r.gpus += amount(name);
  if (counted == Counted::GpusOnly) return r;
  r.cpu = amount("cpu");
  r.memory_bytes = amount("memory");
  return r;
}

namespace {

void add(PodRequests& into, const PodRequests& r) {
  into.gpus += r.gpus;
  into.cpu += r.cpu;
  into.memory_bytes += r.memory_bytes;
}

void keep_max(PodRequests& into, const PodRequests& r) {
  into.gpus = std::max(into.gpus, r.gpus);
  into.cpu = std::max(into.cpu, r.cpu);
  into.memory_bytes = std::max(into.memory_bytes, r.memory_bytes);
}

PodRequests of_container(JsonElement container, const std::vector<std::string>& gpu_names, Counted counted) {
  auto resources = member(container, "resources");
  return resources ? container_requests(*resources, gpu_names, counted) : PodRequests{};
}

}  // namespace

PodRequests pod_requests(JsonElement pod_spec, const std::vector<std::string>& gpu_names, Counted counted) {
  if (!pod_spec.is_object()) return {};
  return pod_requests(member(pod_spec, "containers"), member(pod_spec, "initContainers"), gpu_names, counted);
}

PodRequests pod_requests(const json& pod_spec, const std::vector<std::string>& gpu_names, Counted counted) {
  JsonDocument document = JsonDocument::from(pod_spec);
  return pod_requests(document.root(), gpu_names, counted);
}

PodRequests pod_requests(std::optional<JsonElement> container_list, std::optional<JsonElement> init_list,
                         const std::vector<std::string>& gpu_names, Counted counted) {
  PodRequests containers;
  if (container_list && container_list->is_array()) {
    for (auto c : array_of(*container_list)) add(containers, of_container(c, gpu_names, counted));
  }
  // Kubernetes (KEP-753): init containers run in order; a restartable one keeps running beside the rest.
  PodRequests sidecars, init_peak;
  if (init_list && init_list->is_array()) {
    for (auto c : array_of(*init_list)) {
      PodRequests r = of_container(c, gpu_names, counted);
      auto policy = member(c, "restartPolicy");
      bool restartable = policy && string_of(*policy) == std::string_view("Always");
      PodRequests during = sidecars;
      add(during, r);
      keep_max(init_peak, during);
      if (restartable) add(sidecars, r);
    }
  }
  add(containers, sidecars);
  keep_max(containers, init_peak);
  return containers;
}

std::vector<std::string> fragmented_gpu_names(const std::vector<std::string>& gpu_names) {
  std::vector<std::string> names = gpu_names;
  if (std::find(names.begin(), names.end(), "gpu") == names.end()) names.push_back("gpu");
  return names;
}

}  // namespace karta
