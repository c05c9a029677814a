#pragma once

// A workload's phase in the shared vocabulary (Initializing, Running, Completed, Failed, Degraded),
// from its definition's statusDefinition.

#include <string>

#include "definitions/compiled_definition.h"

namespace karta {

// Mappings are tried in the order Failed, Completed, Degraded, Running, Initializing; the first whose
// rules hold wins. With no statusDefinition, or when none holds, the phase is Initializing.
std::string evaluate_phase(DefinitionEvaluation& evaluation);

}  // namespace karta
