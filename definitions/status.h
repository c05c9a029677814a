#pragma once

// A workload's status as the published Go implementation (Workload Map's resource.Accessor.ExtractStatus)
// computes it from the root's statusDefinition: every status whose mappings match, and the single state
// karta-webhook reports. Evaluated only by `inspect`, never on admission (its expressions are in the
// Status group, whose jq program an admission never runs).

#include <optional>
#include <string>
#include <vector>

#include "definitions/compiled_definition.h"

namespace karta {

// A condition as the conditionsDefinition's field names read it; a field that is not a string is absent.
struct ObservedCondition {
  std::string type;
  std::optional<std::string> status, reason, message;
};

struct WorkloadStatus {
  // Every status that matched, in kPublishedStatusOrder (what kli prints); empty when none did.
  std::vector<ResourceStatus> matched;
  // The first of `matched`, or Undefined when nothing matched or there is no statusDefinition.
  ResourceStatus state = ResourceStatus::Undefined;
  std::optional<std::string> phase;          // what phaseDefinition.path gave, when a string
  std::vector<ObservedCondition> conditions;  // as listed in the object
  std::vector<std::string> notes;             // expressions that failed, naming their field
};

// The published matcher semantics:
// - the statuses of a mapping are OR'd: one matcher that holds is enough;
// - a matcher holds when everything it names holds: `byPhase` (the phase equal), every `byConditions`
//   entry (a condition of that type exists; its status, and its reason, equal when given non-empty), and
//   `byExpression` (the first output of `(<expression>) | tostring` equals `expectedResult`). A matcher
//   that names nothing holds (as in Go);
// - conditions are looked up by type, and of two with one type the later counts (Go keeps a map).
// An expression that fails matches nothing and leaves a note (Go gives up on the whole status there).
WorkloadStatus evaluate_status(DefinitionEvaluation& evaluation);

// The statuses as kli lists them: the matched ones, or ["Undefined"].
std::vector<std::string> status_names(const WorkloadStatus& status);

// jq's `tostring`: a string as it is, anything else as compact JSON (integral numbers without ".0").
std::string jq_tostring(const json& value);

}  // namespace karta
