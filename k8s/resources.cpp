#include "k8s/resources.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace karta {

namespace {

std::optional<double> parse_quantity_text(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  double number = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(number)) return std::nullopt;
  std::string_view suffix(end);
  static const std::pair<const char*, double> kSuffixes[] = {
      {"", 1},     {"m", 1e-3}, {"k", 1e3},  {"M", 1e6},  {"G", 1e9},  {"T", 1e12}, {"P", 1e15},
      {"E", 1e18}, {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
      {"Pi", 1125899906842624.0}, {"Ei", 1152921504606846976.0}};
  for (const auto& [name, factor] : kSuffixes) {
    if (suffix == name) return number * factor;
  }
  return std::nullopt;
}

}  // namespace

std::optional<double> parse_quantity(const json& quantity) {
  if (quantity.is_number()) return quantity.get<double>();
  if (!quantity.is_string()) return std::nullopt;
  return parse_quantity_text(quantity.get_ref<const std::string&>());
}

std::optional<double> parse_quantity(JsonElement quantity) {
  if (quantity.is_number()) return double(quantity.get_double().value_unsafe());
  auto text = string_of(quantity);
  if (!text) return std::nullopt;
  return parse_quantity_text(std::string(*text));
}

PodRequests container_requests(JsonElement resources, const std::vector<std::string>& gpu_names) {
  PodRequests r;
  if (!resources.is_object()) return r;
  auto amount = [&](const std::string& name) {
    double value = 0;
    for (const char* section : {"limits", "requests"}) {
      auto s = member(resources, section);
      if (!s) continue;
      auto q = member(*s, name);
      if (!q) continue;
      if (auto parsed = parse_quantity(*q)) value = std::max(value, *parsed);
    }
    return value;
  };
  for (const auto& name : gpu_names) r.gpus += amount(name);
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

PodRequests of_container(JsonElement container, const std::vector<std::string>& gpu_names) {
  auto resources = member(container, "resources");
  return resources ? container_requests(*resources, gpu_names) : PodRequests{};
}

}  // namespace

PodRequests pod_requests(JsonElement pod_spec, const std::vector<std::string>& gpu_names) {
  if (!pod_spec.is_object()) return {};
  return pod_requests(member(pod_spec, "containers"), member(pod_spec, "initContainers"), gpu_names);
}

PodRequests pod_requests(const json& pod_spec, const std::vector<std::string>& gpu_names) {
  JsonDocument document = JsonDocument::from(pod_spec);
  return pod_requests(document.root(), gpu_names);
}

PodRequests pod_requests(std::optional<JsonElement> container_list, std::optional<JsonElement> init_list,
                         const std::vector<std::string>& gpu_names) {
  PodRequests containers;
  if (container_list && container_list->is_array()) {
    for (auto c : array_of(*container_list)) add(containers, of_container(c, gpu_names));
  }
  // Kubernetes (KEP-753): init containers run in order; a restartable one keeps running beside the rest.
  PodRequests sidecars, init_peak;
  if (init_list && init_list->is_array()) {
    for (auto c : array_of(*init_list)) {
      PodRequests r = of_container(c, gpu_names);
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
