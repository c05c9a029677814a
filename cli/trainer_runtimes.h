#pragma once

// Kubeflow Trainer's TrainJob names a runtime (.spec.runtimeRef: a ClusterTrainingRuntime, or a
// TrainingRuntime of its namespace) whose .spec.mlPolicy.numNodes gives the number of training nodes
// when the TrainJob leaves .spec.trainer.numNodes out. The object alone does not hold it, so its
// definition counts one node; offline, `inspect -f` of a file that holds the runtime too counts the
// runtime's nodes, as the trainer does.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace karta {

using json = nlohmann::json;

// The runtimes among `objects` (ClusterTrainingRuntime and TrainingRuntime of trainer.kubeflow.org).
class TrainerRuntimes {
 public:
  explicit TrainerRuntimes(const std::vector<json>& objects);
  static bool is_runtime(const json& object);
  // `object` with .spec.trainer.numNodes filled in from its runtime, and a note saying so, when it is a
  // TrainJob that leaves numNodes out and names a runtime given here with mlPolicy.numNodes; nullopt
  // otherwise (the object is counted as it is).
  std::optional<std::pair<json, std::string>> with_runtime_nodes(const json& object) const;

 private:
  std::vector<json> runtimes_;
};

}  // namespace karta
