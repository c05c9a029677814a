#pragma once

// The mutating decision as a pure function: an object and its definition in, a JSON Patch out.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "definitions/compiled_definition.h"
#include "policy/policy.h"

namespace karta {

using json = nlohmann::json;

struct MutationOutcome {
  json patch = json::array();      // RFC 6902 operations; empty when the object already conforms
  std::size_t templates = 0;       // pod templates located in the object
  std::vector<std::string> notes;  // odd shapes and evaluation errors: logged, never a denial
};

// Applies the policy to every pod template the definition locates in `object`. Idempotent: the patched
// object, mutated again, gives an empty patch.
MutationOutcome mutate_workload(const json& object, const CompiledDefinition& definition, const Policy& policy);

}  // namespace karta
