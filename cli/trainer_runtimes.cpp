#include "cli/trainer_runtimes.h"

#include "json/json_document.h"
#include "k8s/name_syntax.h"
#include "k8s/terminal_text.h"
#include "kube/json_fields.h"

namespace karta {

namespace {

constexpr const char* kTrainerApiPrefix = "trainer.kubeflow.org/";

bool is_trainer_kind(const json& object, const char* kind) {
  return kube::string_at(object, "kind") == kind && kube::string_at(object, "apiVersion").starts_with(kTrainerApiPrefix);
}

}  // namespace

std::string TrainerRuntimeRef::describe() const {
  return kind + " \"" + bounded_text(name, 253) + "\"" + (namespace_name.empty() ? "" : " in namespace " + namespace_name);
}

bool TrainerRuntimes::is_runtime(const json& object) {
  return is_trainer_kind(object, "ClusterTrainingRuntime") || is_trainer_kind(object, "TrainingRuntime");
}

TrainerRuntimes::TrainerRuntimes(const std::vector<json>& objects) {
  for (const json& object : objects) {
    if (!is_runtime(object)) continue;
    const std::string kind = kube::string_at(object, "kind");
    // A TrainingRuntime serves the TrainJobs of its namespace; the first of a name counts.
    runtimes_.emplace(Key{kind, kind == "TrainingRuntime" ? kube::metadata_string(object, "namespace") : "",
                          kube::metadata_string(object, "name")},
                      object);
  }
}

TrainerRuntimes::TrainerRuntimes(TrainerRuntimeLookup lookup) : lookup_(std::move(lookup)) {}

std::optional<TrainerRuntimeRef> TrainerRuntimes::runtime_for(const json& object) {
  if (!is_trainer_kind(object, "TrainJob")) return std::nullopt;
  const json* nodes = find_json_at(object, json::json_pointer("/spec/trainer/numNodes"));
  if (nodes != nullptr && !nodes->is_null()) return std::nullopt;  // the TrainJob's own count
  const json* trainer = find_json_at(object, json::json_pointer("/spec/trainer"));
  if (trainer != nullptr && !trainer->is_object() && !trainer->is_null()) return std::nullopt;
  const json* ref = find_json_at(object, json::json_pointer("/spec/runtimeRef"));
  if (ref == nullptr || !ref->is_object()) return std::nullopt;
  const json name = ref->value("name", json()), kind = ref->value("kind", json("ClusterTrainingRuntime"));
  if (!name.is_string() || !kind.is_string()) return std::nullopt;
  TrainerRuntimeRef runtime{kube::string_at(object, "apiVersion"), kind.get<std::string>(), "", name.get<std::string>()};
  if (runtime.kind != "ClusterTrainingRuntime" && runtime.kind != "TrainingRuntime") return std::nullopt;
  // A TrainingRuntime is looked up in the TrainJob's namespace.
  if (runtime.kind == "TrainingRuntime") runtime.namespace_name = kube::metadata_string(object, "namespace");
  return runtime;
}

std::optional<std::pair<json, std::string>> TrainerRuntimes::with_runtime_nodes(const json& object) {
  const auto ref = runtime_for(object);
  if (!ref) return std::nullopt;
  const Key key{ref->kind, ref->namespace_name, ref->name};
  auto known = runtimes_.find(key);
  if (known == runtimes_.end()) {
    if (!lookup_) return std::nullopt;
    // A name the API server would refuse is not asked for: in a path it could name another object.
    const std::string invalid = dns_subdomain_error(ref->name);
    known = runtimes_.emplace(key, invalid.empty() ? lookup_(*ref)
                                                   : std::variant<json, std::string>("its name is not an object name: " +
                                                                                     invalid)).first;
  }
  // Escaped where they are printed (print_notes, render_inspection, render_live_workload), exact in JSON.
  if (const std::string* why = std::get_if<std::string>(&known->second)) {
    return std::pair{object, ref->describe() + ", which the TrainJob leaves its numNodes to, could not be read (" +
                                 *why + "): the TrainJob is counted as it is"};
  }
  const json* runtime_nodes = find_json_at(std::get<json>(known->second), json::json_pointer("/spec/mlPolicy/numNodes"));
  if (runtime_nodes == nullptr || !runtime_nodes->is_number_integer()) return std::nullopt;
  json filled = object;
  filled["spec"]["trainer"]["numNodes"] = *runtime_nodes;
  return std::pair{std::move(filled), "numNodes " + runtime_nodes->dump() + " from " + ref->kind + " " + ref->name +
                                          " (.spec.mlPolicy.numNodes): the TrainJob gives none"};
}

}  // namespace karta
