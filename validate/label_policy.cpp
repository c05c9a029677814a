#include "validate/label_policy.h"

#include <algorithm>

#include "definitions/compiled_definition.h"

namespace karta {
namespace {

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
    if (!std::regex_search(text, pattern)) {
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
