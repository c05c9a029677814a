#include "validate/label_policy.h"

#include <algorithm>

#include "definitions/compiled_definition.h"

namespace karta {
namespace {

void check_labels(const json* labels, const LabelRules& rules, const std::string& place,
                  std::vector<std::string>& findings) {
  auto value_of = [&](const std::string& key) -> const json* {
    if (labels == nullptr || !labels->is_object()) return nullptr;
    auto it = labels->find(key);
    return it == labels->end() ? nullptr : &*it;
  };
  for (const auto& key : rules.required) {
    if (value_of(key) == nullptr) findings.push_back(place + ": label \"" + key + "\" missing");
  }
  for (std::size_t i = 0; i < rules.allowed.size(); ++i) {
    const auto& [key, pattern] = rules.allowed[i];
    const json* value = value_of(key);
    if (value == nullptr) continue;  // absence is the business of `required`
    std::string text = value->is_string() ? value->get<std::string>() : value->dump();
    if (!std::regex_search(text, pattern)) {
      findings.push_back(place + ": label \"" + key + "\" value \"" + text + "\" does not match " +
                         rules.allowed_patterns[i].second);
    }
  }
}

}  // namespace

ValidationOutcome check_label_policy(const json& object, const WorkloadLayout& layout, const LabelPolicy& policy,
                                     const std::string& namespace_name) {
  ValidationOutcome outcome;
  if (!policy.enabled) return outcome;
  const auto& exempt = policy.exempt_namespaces;
  if (std::find(exempt.begin(), exempt.end(), namespace_name) != exempt.end()) return outcome;

  std::vector<std::string> findings;
  check_labels(find_at(object, json::json_pointer("/metadata/labels")), policy.workload, "workload", findings);
  for (const auto& t : layout.templates) {
    const json* labels = t.labels ? find_at(object, *t.labels) : nullptr;
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
