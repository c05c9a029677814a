#pragma once

// Which component and instance of a workload a running pod belongs to, read with the definition's
// podSelector as the published Workload Map CLI (`kli describe`) reads it: a pod is the workload's when
// its chain of controller ownerReferences reaches the workload; a component claims it when its
// componentTypeSelector holds (or, with none, when it is the definition's only pod-bearing component);
// the instance is the one its componentInstanceSelector.idPath names. Pure: the owners of a pod are
// fetched through a function the caller gives.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "definitions/compiled_definition.h"
#include "definitions/pod_template_locator.h"

namespace karta {

// Reading Kubernetes objects whose shape is not guaranteed: a member of an object (null when the value
// is not an object or has no such member), a string ("" when the value is not one), metadata.<key>.
const json& member_or_null(const json& object, const char* key);
std::string string_or_empty(const json& value);
std::string metadata_string(const json& object, const char* key);

// Owner chains longer than this end the walk (the published CLI's bound; real chains are 2-3 hops), which
// is also what ends a cycle in malformed data.
constexpr int kMaxOwnerDepth = 6;

struct OwnerReference {
  GroupVersionKind kind;
  std::string name;
  std::string uid;
};

// The ownerReference with controller: true, the only one a chain can be walked through unambiguously.
std::optional<OwnerReference> controller_reference(const json& object);

// Walks controller chains upwards, fetching each owner at most once however many objects share it.
class OwnerWalk {
 public:
  // The owner object in `namespace_name` (ignored for cluster-scoped kinds), or nullopt when it no longer
  // exists, which ends the chain. Errors are thrown and pass through.
  using Fetch = std::function<std::optional<json>(const OwnerReference& owner, const std::string& namespace_name)>;
  explicit OwnerWalk(Fetch fetch) : fetch_(std::move(fetch)) {}

  // True when an ownerReference at some level of the object's controller chain has `root_uid`.
  bool owned_by(const json& object, const std::string& root_uid);
  // True when the controller chain holds an object of a kind `covered` accepts: such an object is part
  // of a bigger workload (a Job of a JobSet), not a workload of its own. A covered controller is known
  // from the reference alone; only uncovered ones are fetched.
  bool nested(const json& object, const std::function<bool(const GroupVersionKind&)>& covered);

 private:
  bool climb(const json& object, const std::function<bool(const json& references)>& match);

  Fetch fetch_;
  std::map<std::string, std::optional<json>> owners_;  // ownerReferences of each owner fetched, nullopt: gone
};

// What one component's podSelector says of one pod.
struct PodSelection {
  bool claimed = false;                    // the pod is of this component type
  std::optional<std::string> instance_id;  // componentInstanceSelector.idPath, when it gives one value
  std::optional<std::string> replica_key;  // replicaSelector.keyPath, likewise
  std::vector<std::string> problems;       // why a selector gave no answer, naming its field
};

// Evaluates `plan`'s podSelector on `pod_object`. `pod` is an evaluation of the same definition on it:
// only the pod-side programs, compiled with the definition, run on it. `sole_pod_owner` is whether the
// component is the definition's only pod-bearing one: without a componentTypeSelector, only that one
// claims every pod.
PodSelection select_pod(const ComponentPlan& plan, const json& pod_object, DefinitionEvaluation& pod, bool sole_pod_owner);

// Where a pod goes in the workload's tree.
struct PodPlacement {
  const ComponentPlan* component = nullptr;  // nullptr: no selector places it
  std::string instance;                      // the instance id, or the component's name when it has no ids
  std::optional<std::string> replica_key;
  std::string unplaced_reason;  // when component is nullptr
  std::vector<std::string> notes;
};

// Places each pod (each known to be the workload's) on the first pod-bearing component, in definition
// order, that claims it, and on the instance of `layout` (the workload's pod templates) whose id its
// componentInstanceSelector gives. One placement per pod, in order.
std::vector<PodPlacement> attribute_pods(const CompiledDefinition& definition, const WorkloadLayout& layout,
                                         const std::vector<json>& pods);

}  // namespace karta
