#pragma once

// The platform's label policy on workloads: required keys and allowed values, on the workload and on
// every pod template its definition locates.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "definitions/pod_template_locator.h"
#include "policy/policy.h"
#include "validate/validation_outcome.h"

namespace karta {

// Every violation, each with its place ("worker pod template: label \"team\" missing"). Enforce mode
// denies with all of them in one message; audit mode admits and returns them as warnings. Exempt
// namespaces are not checked.
ValidationOutcome check_label_policy(JsonElement object, const WorkloadLayout& layout, const LabelPolicy& policy,
                                     const std::string& namespace_name);

}  // namespace karta
