#pragma once

// The webhook's own policy ConfigMap, checked when it is applied (/validate-policy): the policy in its
// data.policy.yaml is read with the loader that reads it at start-up and on reload, so a change that
// would not load is denied with that loader's message, before any replica reads it.

#include "admission/admission_service.h"

namespace karta {

// The key of the policy ConfigMap that the Deployment mounts as the --policy file.
inline constexpr const char* kPolicyConfigMapKey = "policy.yaml";

// The decision for a ConfigMap sent to /validate-policy: allowed when its data.policy.yaml loads
// (a policy that says `nothing: true` too, with a warning), denied (422) otherwise, naming the ConfigMap
// and the key, the line, the column and the field. Not a ConfigMap, or a DELETE: allowed with a note.
AdmissionResult check_policy_configmap(const AdmissionRequest& request);

}  // namespace karta
