#include "definitions/pod_attribution.h"

#include <algorithm>

#include "definitions/status.h"
#include "json/json_document.h"

namespace karta {
namespace {


// The published library's evaluateSingleResult: exactly one output, neither null nor "".
std::optional<std::string> single_value(DefinitionEvaluation& pod, ExpressionId id, const char* field,
                                        std::vector<std::string>& problems) {
  const ExpressionOutcome& outcome = pod.outcome(id);
  const std::string& expression = pod.definition().expressions()[id].field.expression;
  if (outcome.error) {
    problems.push_back(std::string(field) + " " + expression + " failed: " + *outcome.error);
  } else if (outcome.values.size() != 1) {
    problems.push_back(std::string(field) + " " + expression + " gave " + std::to_string(outcome.values.size()) +
                       " values, not one");
  } else if (outcome.values[0].is_null() || outcome.values[0] == "") {
    problems.push_back(std::string(field) + " " + expression + " gave no value");
  } else {
    // The published library formats the value with Go's "%v": for the strings, integers and booleans ids
    // are, that is jq's tostring.
    return jq_tostring(outcome.values[0]);
  }
  return std::nullopt;
}

bool type_selector_holds(const ComponentPlan& plan, const json& pod_object, DefinitionEvaluation& pod,
                         std::vector<std::string>& problems) {
  const ComponentTypeSelector& selector = *plan.component->pod_selector->component_type;
  if (plan.pod_type_key != kNoExpression) {
    const ExpressionOutcome& outcome = pod.outcome(plan.pod_type_key);
    if (outcome.error) {
      problems.push_back("componentTypeSelector.keyPath " + selector.key_path->expression + " failed: " + *outcome.error);
      return false;
    }
    // With a value, `keyPath == value` must give true for some output; without one, some output must
    // not be null.
    auto holds = [&](const json& v) { return selector.value ? v == json(*selector.value) : !v.is_null(); };
    if (std::none_of(outcome.values.begin(), outcome.values.end(), holds)) return false;
  }
  const json& labels = member_or_null(member_or_null(pod_object, "metadata"), "labels");
  for (const auto& [key, value] : selector.match_labels) {
    const json& label = member_or_null(labels, key.c_str());
    if (!label.is_string() || label.get<std::string>() != value) return false;
  }
  return true;
}

}  // namespace

const json& member_or_null(const json& object, const char* key) {
  static const json null;
  if (!object.is_object()) return null;
  auto it = object.find(key);
  return it == object.end() ? null : *it;
}

std::string string_or_empty(const json& value) { return value.is_string() ? value.get<std::string>() : ""; }

std::string metadata_string(const json& object, const char* key) {
  return string_or_empty(member_or_null(member_or_null(object, "metadata"), key));
}

std::optional<OwnerReference> controller_reference(const json& object) {
  const json& references = member_or_null(member_or_null(object, "metadata"), "ownerReferences");
  if (!references.is_array()) return std::nullopt;
  for (const json& reference : references) {
    if (member_or_null(reference, "controller") != json(true)) continue;
    return OwnerReference{GroupVersionKind::from_api_version(string_or_empty(member_or_null(reference, "apiVersion")), string_or_empty(member_or_null(reference, "kind"))),
                          string_or_empty(member_or_null(reference, "name")), string_or_empty(member_or_null(reference, "uid"))};
  }
  return std::nullopt;
}

bool OwnerWalk::climb(const json& object, const std::function<bool(const json& references)>& match) {
  json references = member_or_null(member_or_null(object, "metadata"), "ownerReferences");
  const std::string namespace_name = string_or_empty(member_or_null(member_or_null(object, "metadata"), "namespace"));
  for (int depth = 0; depth < kMaxOwnerDepth; ++depth) {
    if (match(references)) return true;
    auto controller = controller_reference({{"metadata", {{"ownerReferences", references}}}});
    if (!controller) return false;
    std::string key = controller->kind.to_string() + "/" + namespace_name + "/" + controller->name;
    auto it = owners_.find(key);
    if (it == owners_.end()) {
      std::optional<json> owner = fetch_(*controller, namespace_name);
      std::optional<json> owner_references;
      if (owner) owner_references = member_or_null(member_or_null(*owner, "metadata"), "ownerReferences");
      it = owners_.emplace(key, std::move(owner_references)).first;
    }
    if (!it->second) return false;  // the owner is gone: the chain ends
    references = *it->second;
  }
  return false;
}

bool OwnerWalk::owned_by(const json& object, const std::string& root_uid) {
  return climb(object, [&](const json& references) {
    return references.is_array() && std::any_of(references.begin(), references.end(), [&](const json& reference) {
             return string_or_empty(member_or_null(reference, "uid")) == root_uid;
           });
  });
}

bool OwnerWalk::nested(const json& object, const std::function<bool(const GroupVersionKind&)>& covered) {
  return climb(object, [&](const json& references) {
    auto controller = controller_reference({{"metadata", {{"ownerReferences", references}}}});
    return controller && covered(controller->kind);
  });
}

PodSelection select_pod(const ComponentPlan& plan, const json& pod_object, DefinitionEvaluation& pod, bool sole_pod_owner) {
  PodSelection selection;
  const auto& selector = plan.component->pod_selector;
  selection.claimed = selector && selector->component_type ? type_selector_holds(plan, pod_object, pod, selection.problems)
                                                           : sole_pod_owner;
  if (!selection.claimed) return selection;
  if (plan.pod_instance_id != kNoExpression) {
    selection.instance_id = single_value(pod, plan.pod_instance_id, "componentInstanceSelector.idPath", selection.problems);
  }
  if (plan.pod_replica_key != kNoExpression) {
    selection.replica_key = single_value(pod, plan.pod_replica_key, "replicaSelector.keyPath", selection.problems);
  }
  return selection;
}

std::vector<PodPlacement> attribute_pods(const CompiledDefinition& definition, const WorkloadLayout& layout,
                                         const std::vector<json>& pods) {
  std::vector<const ComponentPlan*> bearing;
  for (const auto& plan : definition.components()) {
    if (plan.spec_kind != SpecKind::None) bearing.push_back(&plan);
  }
  std::vector<PodPlacement> placements;
  for (const json& pod : pods) {
    JsonDocument document = JsonDocument::from(pod);
    DefinitionEvaluation evaluation(definition, document.root());
    PodPlacement placement;
    placement.unplaced_reason = "no component's podSelector claims it";
    for (const ComponentPlan* plan : bearing) {
      PodSelection selection = select_pod(*plan, pod, evaluation, bearing.size() == 1);
      if (!selection.claimed) continue;
      const std::string& name = plan->component->name;
      std::vector<std::string> instances;
      for (const auto& t : layout.templates) {
        if (t.component == name && std::find(instances.begin(), instances.end(), t.instance) == instances.end()) {
          instances.push_back(t.instance);
        }
      }
      std::string listed;
      for (const auto& instance : instances) listed += (listed.empty() ? "" : ", ") + instance;
      if (!plan->component->instance_id) {
        placement.component = plan;
        placement.instance = instances.empty() ? name : instances.front();
      } else if (plan->pod_instance_id == kNoExpression) {
        placement.unplaced_reason = "component " + name + " has instances (" + listed +
                                    ") but no componentInstanceSelector to tell them apart";
      } else if (!selection.instance_id) {
        placement.unplaced_reason = "component " + name + ": " + selection.problems.front();
      } else if (std::find(instances.begin(), instances.end(), *selection.instance_id) == instances.end()) {
        placement.unplaced_reason = "component " + name + ": instance id \"" + *selection.instance_id +
                                    "\" is not one of the workload's (" + listed + ")";
      } else {
        placement.component = plan;
        placement.instance = *selection.instance_id;
      }
      if (placement.component) {
        placement.replica_key = selection.replica_key;
        placement.notes = selection.problems;
        placement.unplaced_reason.clear();
      }
      break;
    }
    placements.push_back(std::move(placement));
  }
  return placements;
}

}  // namespace karta
