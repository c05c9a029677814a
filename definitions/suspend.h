#pragma once

// Suspending and resuming a workload as its definition's suspendDefinition says: each action assigns its
// value (JSON text) at its jq path, in order, as Workload Map's Accessor.ApplySuspendActions does. The
// result is given as a JSON merge patch (RFC 7386), which `kubectl patch --type=merge -p` applies.

#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "definitions/compiled_definition.h"

namespace karta {

using json = nlohmann::json;

enum class SuspendDirection { Suspend, Resume };

// The definition has no suspendDefinition, or an action's place cannot be assigned in this object.
class SuspendError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `object` with the suspend (or resume) actions applied in order: every place an action's path names is
// set to its value, objects missing on the way are created. Throws SuspendError naming the action.
json apply_suspend_actions(const json& object, const CompiledDefinition& definition, SuspendDirection direction);

// The merge patch that makes `object` what the actions make it; `{}` when they change nothing. A value
// of `null` becomes a deletion, which is how the API server reads a null field anyway.
json suspend_merge_patch(const json& object, const CompiledDefinition& definition, SuspendDirection direction);

// Whether every suspend action's place already holds its value; nullopt without a suspendDefinition.
std::optional<bool> is_suspended(DefinitionEvaluation& evaluation);

// The RFC 7386 merge patch from `from` to `to`: members that differ, recursively in objects; removed
// members as null; arrays and other values whole.
json merge_patch_between(const json& from, const json& to);

}  // namespace karta
