#include "definitions/suspend.h"

#include <charconv>

namespace karta {
namespace {

const char* direction_name(SuspendDirection direction) {
  return direction == SuspendDirection::Suspend ? "suspendActions" : "resumeActions";
}

const SuspendPlan& plan_of(const CompiledDefinition& definition) {
  if (!definition.suspend()) {
    throw SuspendError(definition.root_kind().to_string() + " has no suspendDefinition in definition \"" +
                       definition.definition().name + "\" (" + definition.definition().source +
                       "): the framework cannot be suspended through its spec");
  }
  return *definition.suspend();
}

// Sets `value` at `pointer`, creating missing objects on the way as jq's setpath does; an index must
// name an existing element (jq would pad the array with nulls, which no workload field wants).
void assign(json& document, const JsonPointer& pointer, const json& value, const std::string& where) {
  json* place = &document;
  for (const auto& token : pointer.tokens()) {
    if (place->is_null()) *place = json::object();
    if (place->is_object()) {
      place = &(*place)[token];
    } else if (place->is_array()) {
      std::size_t index = 0;
      auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), index);
      if (error != std::errc() || end != token.data() + token.size() || index >= place->size()) {
        throw SuspendError(where + ": " + pointer.to_string() + " names element " + token + " of a list of " +
                           std::to_string(place->size()));
      }
      place = &(*place)[index];
    } else {
      throw SuspendError(where + ": " + pointer.to_string() + " passes through a " + place->type_name() +
                         ", not an object");
    }
  }
  *place = value;
}

}  // namespace

json apply_suspend_actions(const json& object, const CompiledDefinition& definition, SuspendDirection direction) {
  const SuspendPlan& plan = plan_of(definition);
  const bool suspend = direction == SuspendDirection::Suspend;
  const auto& actions = suspend ? plan.suspend->suspend_actions : plan.suspend->resume_actions;
  const auto& paths = suspend ? plan.suspend_paths : plan.resume_paths;
  json result = object;
  for (std::size_t i = 0; i < actions.size(); ++i) {
    // Each action sees what the ones before it did, as in Go, so the object is read afresh.
    JsonDocument document = JsonDocument::from(result);
    DefinitionEvaluation evaluation(definition, document.root());
    const ExpressionOutcome& outcome = evaluation.outcome(paths[i]);
    std::string where = std::string(direction_name(direction)) + "[" + std::to_string(i) + "] (path " +
                        actions[i].path.expression + ")";
    if (outcome.error) throw SuspendError(where + ": " + *outcome.error);
    if (outcome.pointers.empty()) throw SuspendError(where + ": the path names no place in this object");
    for (const auto& pointer : outcome.pointers) assign(result, pointer, actions[i].parsed_value, where);
  }
  return result;
}

json suspend_merge_patch(const json& object, const CompiledDefinition& definition, SuspendDirection direction) {
  return merge_patch_between(object, apply_suspend_actions(object, definition, direction));
}

std::optional<bool> is_suspended(DefinitionEvaluation& evaluation) {
  const auto& plan = evaluation.definition().suspend();
  if (!plan) return std::nullopt;
  for (std::size_t i = 0; i < plan->suspend_paths.size(); ++i) {
    const ExpressionOutcome& outcome = evaluation.outcome(plan->suspend_paths[i]);
    if (outcome.error || outcome.pointers.empty()) return false;
    for (const auto& pointer : outcome.pointers) {
      auto value = find_at(evaluation.object(), pointer);
      if (!value || to_json(*value) != plan->suspend->suspend_actions[i].parsed_value) return false;
    }
  }
  return true;
}

json merge_patch_between(const json& from, const json& to) {
  if (!from.is_object() || !to.is_object()) return to;
  json patch = json::object();
  for (const auto& [key, value] : from.items()) {
    if (!to.contains(key)) patch[key] = nullptr;
  }
  for (const auto& [key, value] : to.items()) {
    auto before = from.find(key);
    if (before == from.end()) {
      patch[key] = value;
    } else if (*before != value) {
      patch[key] = merge_patch_between(*before, value);
    }
  }
  return patch;
}

}  // namespace karta
