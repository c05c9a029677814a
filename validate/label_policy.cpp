#include "validate/label_policy.h"

#include <algorithm>

#include <re2/re2.h>

#include "definitions/compiled_definition.h"
#include "k8s/name_syntax.h"

namespace karta {
namespace {

// Kubernetes' limit on a label value (apimachinery's IsValidLabelValue). The API server checks the labels
// of a pod template in a Pod, a Deployment or a Job, but not those nested in a custom resource.
constexpr std::size_t kMaxLabelValueLength = 63;

// Why `text` is not a valid label value, or "": the length first, without repeating the value (it may be
// megabytes long), then Kubernetes' character rules.
std::string label_value_violation(const std::string& text) {
  if (text.size() > kMaxLabelValueLength) {
    return "value is " + std::to_string(text.size()) + " characters; at most " +
           std::to_string(kMaxLabelValueLength) + " are allowed";
  }
  if (auto error = label_value_error(text); !error.empty()) return "value \"" + text + "\" " + error;
  return "";
}

void check_labels(std::optional<JsonElement> labels, const LabelRules& rules, const std::string& place,
                  std::vector<std::string>& findings) {
  auto value_of = [&](const std::string& key) -> std::optional<JsonElement> {
    return labels ? member(*labels, key) : std::nullopt;
  };
  for (const auto& key : rules.required) {
    if (!value_of(key)) findings.push_back(place + ": label \"" + key + "\" missing");
  }
  for (std::size_t i = 0; i < rules.allowed.size(); ++i) {
    const auto& [key, pattern] = rules.allowed[i];
    auto value = value_of(key);
    if (!value) continue;  // absence is the business of `required`
    std::string text = value->is_string() ? std::string(*string_of(*value)) : dump(*value);
    // A value Kubernetes would refuse is a violation whatever the pattern says, and is never searched.
    if (auto violation = label_value_violation(text); !violation.empty()) {
      findings.push_back(place + ": label \"" + key + "\" " + violation);
      continue;
    }
    // Searched, as std::regex_search did: a pattern matches the whole value only if it anchors.
    if (!RE2::PartialMatch(text, *pattern)) {
      findings.push_back(place + ": label \"" + key + "\" value \"" + text + "\" does not match " +
                         rules.allowed_patterns[i].second);
    }
  }
}

}  // namespace

ValidationOutcome check_label_policy(JsonElement object, const WorkloadLayout& layout, const LabelPolicy& policy,
                                     const std::string& namespace_name) {
  ValidationOutcome outcome;
  if (!policy.enabled) return outcome;
  const auto& exempt = policy.exempt_namespaces;
  if (std::find(exempt.begin(), exempt.end(), namespace_name) != exempt.end()) return outcome;

  std::vector<std::string> findings;
  check_labels(find_at(object, JsonPointer("/metadata/labels")), policy.workload, "workload", findings);
  for (const auto& t : layout.templates) {
    auto labels = t.labels ? find_at(object, *t.labels) : std::nullopt;
    check_labels(labels, policy.pod_templates, t.instance + " pod template", findings);
  }
  if (findings.empty()) return outcome;
  outcome.violations = findings;
  if (policy.mode == LabelPolicyMode::Audit) {
    for (const auto& finding : findings) outcome.warnings.push_back("label policy (audit): " + finding);
    return outcome;
  }
  outcome.allowed = false;
  outcome.message = "label policy: ";
  for (std::size_t i = 0; i < findings.size(); ++i) outcome.message += (i == 0 ? "" : "; ") + findings[i];
  return outcome;
}

}  // namespace karta
