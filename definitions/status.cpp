#include "definitions/status.h"

namespace karta {
namespace {

// The conditions list: the expression's single array output, or its outputs one by one.
std::vector<json> conditions_of(const ExpressionOutcome& outcome) {
  if (outcome.values.size() == 1 && outcome.values[0].is_array()) {
    return {outcome.values[0].begin(), outcome.values[0].end()};
  }
  return outcome.values;
}

bool condition_holds(const std::vector<json>& conditions, const ConditionsDefinition& definition,
                     const ConditionMatch& match) {
  for (const auto& c : conditions) {
    if (!c.is_object()) continue;
    auto type = c.find(definition.type_field);
    auto status = c.find(definition.status_field);
    if (type == c.end() || status == c.end() || !type->is_string()) continue;
    std::string status_text = status->is_string() ? status->get<std::string>() : status->dump();
    if (type->get<std::string>() == match.type && status_text == match.status) return true;
  }
  return false;
}

}  // namespace

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
  for (const auto& [shared_phase, rules] : plan->mappings) {
    for (const auto& rule_plan : rules) {
      const StatusRule& rule = *rule_plan.rule;
      bool holds = true;
      for (const auto& match : rule.by_conditions) {
        holds = holds && plan->status->conditions && condition_holds(conditions, *plan->status->conditions, match);
      }
      if (holds && rule.by_phase) holds = phase && *phase == *rule.by_phase;
      if (holds && rule.by_expression) {
        const auto& outcome = evaluation.outcome(rule_plan.expression);
        holds = !outcome.values.empty() && outcome.values[0] == rule.by_expression->expected_result;
      }
      if (holds) return shared_phase;
    }
  }
  return "Initializing";
}

}  // namespace karta
