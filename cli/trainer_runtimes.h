#pragma once

// Kubeflow Trainer's TrainJob names a runtime (.spec.runtimeRef: a ClusterTrainingRuntime, or a
// TrainingRuntime of its namespace) whose .spec.mlPolicy.numNodes gives the number of training nodes
// when the TrainJob leaves .spec.trainer.numNodes out. The object alone does not hold it, so its
// definition counts one node; `inspect -f` of files that hold the runtime too, and `inspect` and `list`
// of the cluster (which read it from the API server), count the runtime's nodes, as the trainer does.
// The decision is made here alone, for both.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace karta {

using json = nlohmann::json;

// The runtime a TrainJob names.
struct TrainerRuntimeRef {
  std::string api_version;     // the TrainJob's: the runtime is of the same group version
  std::string kind;            // ClusterTrainingRuntime (the trainer's default) or TrainingRuntime
  std::string namespace_name;  // the TrainJob's for a TrainingRuntime; "" for a ClusterTrainingRuntime
  std::string name;
  // As a note names it: `TrainingRuntime "torch" in namespace research`, `ClusterTrainingRuntime "torch"`.
  std::string describe() const;
};

// Reads a runtime that was not given (from the cluster): the object, or why it could not be read.
using TrainerRuntimeLookup = std::function<std::variant<json, std::string>(const TrainerRuntimeRef&)>;

// The runtimes among given objects (ClusterTrainingRuntime and TrainingRuntime of trainer.kubeflow.org),
// or those a lookup reads, each once.
class TrainerRuntimes {
 public:
  explicit TrainerRuntimes(const std::vector<json>& objects);
  explicit TrainerRuntimes(TrainerRuntimeLookup lookup);
  static bool is_runtime(const json& object);
  // The runtime whose nodes count for `object`: nullopt unless it is a TrainJob that leaves numNodes out
  // and names a runtime.
  static std::optional<TrainerRuntimeRef> runtime_for(const json& object);
  // What to count for `object`, and a note saying why, when its runtime decides: the object with
  // .spec.trainer.numNodes filled in from the runtime's mlPolicy.numNodes; or, when the lookup could not
  // read the runtime, the object as it is and a note saying which runtime and why. nullopt otherwise
  // (the object is counted as it is): no runtime needed, a runtime neither given nor looked up, or one
  // without mlPolicy.numNodes (the trainer's default, one node, is what the definition counts).
  std::optional<std::pair<json, std::string>> with_runtime_nodes(const json& object);

 private:
  using Key = std::tuple<std::string, std::string, std::string>;  // kind, namespace, name
  std::map<Key, std::variant<json, std::string>> runtimes_;
  TrainerRuntimeLookup lookup_;
};

}  // namespace karta
