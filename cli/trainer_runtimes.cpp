#include "cli/trainer_runtimes.h"

#include "json/json_document.h"
#include "kube/json_fields.h"

namespace karta {

namespace {

constexpr const char* kTrainerApiPrefix = "trainer.kubeflow.org/";

bool is_trainer_kind(const json& object, const char* kind) {
  return kube::string_at(object, "kind") == kind && kube::string_at(object, "apiVersion").starts_with(kTrainerApiPrefix);
}

}  // namespace

bool TrainerRuntimes::is_runtime(const json& object) {
  return is_trainer_kind(object, "ClusterTrainingRuntime") || is_trainer_kind(object, "TrainingRuntime");
}

TrainerRuntimes::TrainerRuntimes(const std::vector<json>& objects) {
  for (const json& object : objects) {
    if (is_runtime(object)) runtimes_.push_back(object);
  }
}

std::optional<std::pair<json, std::string>> TrainerRuntimes::with_runtime_nodes(const json& object) const {
  if (runtimes_.empty() || !is_trainer_kind(object, "TrainJob")) return std::nullopt;
  const json* nodes = find_json_at(object, json::json_pointer("/spec/trainer/numNodes"));
  if (nodes != nullptr && !nodes->is_null()) return std::nullopt;  // the TrainJob's own count
  const json* trainer = find_json_at(object, json::json_pointer("/spec/trainer"));
  if (trainer != nullptr && !trainer->is_object() && !trainer->is_null()) return std::nullopt;
  const json* ref = find_json_at(object, json::json_pointer("/spec/runtimeRef"));
  if (ref == nullptr || !ref->is_object()) return std::nullopt;
  const json name_value = ref->value("name", json()), kind_value = ref->value("kind", json("ClusterTrainingRuntime"));
  if (!name_value.is_string() || !kind_value.is_string()) return std::nullopt;
  const std::string name = name_value.get<std::string>();
  // The trainer's default kind is ClusterTrainingRuntime; a TrainingRuntime is looked up in the TrainJob's namespace.
  const std::string kind = kind_value.get<std::string>();
  const std::string namespace_name = kube::metadata_string(object, "namespace");
  for (const json& runtime : runtimes_) {
    if (kube::string_at(runtime, "kind") != kind || kube::metadata_string(runtime, "name") != name) continue;
    if (kind == "TrainingRuntime" && kube::metadata_string(runtime, "namespace") != namespace_name) continue;
    const json* runtime_nodes = find_json_at(runtime, json::json_pointer("/spec/mlPolicy/numNodes"));
    if (runtime_nodes == nullptr || !runtime_nodes->is_number_integer()) return std::nullopt;
    json filled = object;
    filled["spec"]["trainer"]["numNodes"] = *runtime_nodes;
    // Escaped where it is printed (render_inspection), exact in --output json.
    return std::pair{std::move(filled), "numNodes " + runtime_nodes->dump() + " from " + kind + " " + name +
                                            " (.spec.mlPolicy.numNodes): the TrainJob gives none"};
  }
  return std::nullopt;
}

}  // namespace karta
