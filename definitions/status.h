#pragma once

// A workload's phase in the published vocabulary (Initializing, Running, Completed, Failed, Degraded,
// Suspended, Suspending, Resuming),
// from its definition's statusDefinition.

#include <string>

#include "definitions/compiled_definition.h"

namespace karta {

// Mappings are tried in the order Failed, Completed, Suspended, Suspending, Resuming, Degraded, Running,
// Initializing; the first whose matchers hold wins. A matcher holds when all it names hold: every
// byConditions entry (a condition of that type, with that status and reason when given), byPhase, and
// byExpression (`(<expression>) | tostring == <expectedResult>`). With no statusDefinition, or when none
// holds, the phase is Initializing.
std::string evaluate_phase(DefinitionEvaluation& evaluation);

// jq's `tostring`: a string as it is, anything else as compact JSON (integral numbers without ".0").
std::string jq_tostring(const json& value);

}  // namespace karta
