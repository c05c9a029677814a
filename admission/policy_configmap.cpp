#include "admission/policy_configmap.h"

#include "json/json_members.h"
#include "k8s/terminal_text.h"
#include "policy/policy.h"

namespace karta {

AdmissionResult check_policy_configmap(const AdmissionRequest& request) {
  AdmissionResult result{AdmissionDecision::allow(), {}, "allowed"};
  // Registered for CREATE and UPDATE of one ConfigMap; what else comes (a wider registration) is let be.
  if (request.kind.group != "" || request.kind.kind != "ConfigMap" || !request.object ||
      (request.operation != "CREATE" && request.operation != "UPDATE")) {
    result.outcome = "skipped:not-a-policy-change";
    result.notes.push_back("/validate-policy checks CREATE and UPDATE of a ConfigMap; " +
                           bounded_text(request.operation) + " of " + bounded_text(request.kind.to_string()) +
                           " allowed unchecked");
    return result;
  }
  const std::string where = "ConfigMap " + bounded_text(request.namespace_name, 64) + "/" +
                            bounded_text(request.name.empty() ? string_member(object_member(*request.object, "metadata"), "name")
                                                              : request.name,
                                         256);
  const auto data = object_member(*request.object, "data");
  const auto text = data ? member(*data, kPolicyConfigMapKey) : std::nullopt;
  const auto policy_text = text ? string_of(*text) : std::nullopt;
  if (!policy_text) {
    result.decision = AdmissionDecision::invalid(
        where + " has no data." + kPolicyConfigMapKey + ": the webhook reads its policy from that key (to load no " +
        "policy on purpose, write `nothing: true` there)");
    result.outcome = "denied";
    return result;
  }
  try {
    const Policy policy = load_policy_text(*policy_text, where + " data." + kPolicyConfigMapKey);
    result.decision.warnings = policy.warnings;  // rules that may overlap: applied, and said (kubectl prints them)
    if (policy.says_nothing) {
      result.decision.warnings.push_back(where + " says nothing: true: once loaded, nothing will be injected and "
                                         "nothing enforced");
    }
  } catch (const InputError& e) {
    result.decision = AdmissionDecision::invalid(e.what());
    result.outcome = "denied";
  }
  return result;
}

}  // namespace karta
