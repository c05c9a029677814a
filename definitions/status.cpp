#include "definitions/status.h"

#include <cmath>

namespace karta {
namespace {

// The conditions list: the expression's single array output, or its outputs one by one.
std::vector<json> conditions_of(const ExpressionOutcome& outcome) {
  if (outcome.values.size() == 1 && outcome.values[0].is_array()) {
    return {outcome.values[0].begin(), outcome.values[0].end()};
  }
  return outcome.values;
}

// A field of a condition as text: strings as they are, anything else as JSON ("True" and true alike
// compare as written).
std::optional<std::string> text_field(const json& condition, const std::string& name) {
  auto it = condition.find(name);
  if (it == condition.end() || it->is_null()) return std::nullopt;
  return it->is_string() ? it->get<std::string>() : it->dump();
}

bool condition_holds(const std::vector<json>& conditions, const ConditionsDefinition& definition,
                     const ConditionMatch& match) {
  for (const auto& c : conditions) {
    if (!c.is_object()) continue;
    if (text_field(c, definition.type_field) != match.type) continue;
    if (match.status && text_field(c, definition.status_field) != *match.status) continue;
    if (match.reason && text_field(c, definition.reason_field) != *match.reason) continue;
    return true;
  }
  return false;
}

}  // namespace

std::string jq_tostring(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  // jq prints integral numbers without a fraction: 2.0 | tostring is "2".
  if (value.is_number_float()) {
    double d = value.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e17) return std::to_string(static_cast<long long>(d));
  }
  return value.dump();
}

std::string evaluate_phase(DefinitionEvaluation& evaluation) {
  const auto& plan = evaluation.definition().status();
  if (!plan) return "Initializing";
  std::vector<json> conditions;
  if (plan->conditions != kNoExpression) conditions = conditions_of(evaluation.outcome(plan->conditions));
  std::optional<std::string> phase;
  if (plan->phase != kNoExpression) {
    const auto& outcome = evaluation.outcome(plan->phase);
    if (!outcome.values.empty() && outcome.values[0].is_string()) phase = outcome.values[0].get<std::string>();
  }
  for (const auto& [status, rules] : plan->mappings) {
    for (const auto& rule_plan : rules) {
      const StatusRule& rule = *rule_plan.rule;
      // An empty matcher matches nothing.
      bool holds = !rule.by_conditions.empty() || rule.by_phase || rule.by_expression;
      for (const auto& match : rule.by_conditions) {
        holds = holds && plan->status->conditions && condition_holds(conditions, *plan->status->conditions, match);
      }
      if (holds && rule.by_phase) holds = phase && *phase == *rule.by_phase;
      if (holds && rule.by_expression) {
        const auto& outcome = evaluation.outcome(rule_plan.expression);
        holds = !outcome.values.empty() && jq_tostring(outcome.values[0]) == rule.by_expression->expected_result;
      }
      if (holds) return status_name(status);
    }
  }
  return "Initializing";
}

}  // namespace karta
