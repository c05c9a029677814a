#include "definitions/status.h"

#include <cmath>
#include <map>

namespace karta {
namespace {

// A field of a condition when it is a string: Go reads the fields with a string type assertion, so a
// boolean `status: true` is no status at all.
std::optional<std::string> string_field(const json& condition, const std::string& name) {
  auto it = condition.find(name);
  if (it == condition.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

// The conditions list: each output of the path is a list (normally one), flattened.
std::vector<ObservedCondition> read_conditions(const ExpressionOutcome& outcome, const ConditionsDefinition& names) {
  std::vector<ObservedCondition> conditions;
  for (const auto& output : outcome.values) {
    if (!output.is_array()) continue;
    for (const auto& c : output) {
      if (!c.is_object()) continue;
      conditions.push_back({string_field(c, names.type_field).value_or(""), string_field(c, names.status_field),
                            string_field(c, names.reason_field), string_field(c, names.message_field)});
    }
  }
  return conditions;
}

using ConditionsByType = std::map<std::string, const ObservedCondition*>;

ConditionsByType by_type(const std::vector<ObservedCondition>& conditions) {
  ConditionsByType map;
  for (const auto& c : conditions) map[c.type] = &c;  // the later of one type wins, as in Go's map
  return map;
}

// An expected value given as "" is not given (Go dereferences the pointer to "" and skips it).
bool expected_holds(const std::optional<std::string>& expected, const std::optional<std::string>& actual) {
  return !expected || expected->empty() || *expected == actual.value_or("");
}

bool conditions_hold(const StatusRule& rule, const ConditionsByType& conditions) {
  for (const auto& match : rule.by_conditions) {
    auto it = conditions.find(match.type);
    if (it == conditions.end()) return false;
    if (!expected_holds(match.status, it->second->status) || !expected_holds(match.reason, it->second->reason)) {
      return false;
    }
  }
  return true;
}

class StatusMatcher {
 public:
  StatusMatcher(DefinitionEvaluation& evaluation, WorkloadStatus& status)
      : evaluation_(evaluation), status_(status), conditions_(by_type(status.conditions)) {}

  bool holds(const StatusRulePlan& plan) {
    const StatusRule& rule = *plan.rule;
    if (rule.by_phase && !rule.by_phase->empty() && status_.phase != *rule.by_phase) return false;
    if (!conditions_hold(rule, conditions_)) return false;
    if (!rule.by_expression) return true;
    const auto& outcome = evaluation_.outcome(plan.expression);
    if (outcome.error) {
      status_.notes.push_back(rule.by_expression->expression.field + ": " + *outcome.error);
      return false;
    }
    return !outcome.values.empty() && jq_tostring(outcome.values[0]) == rule.by_expression->expected_result;
  }

 private:
  DefinitionEvaluation& evaluation_;
  WorkloadStatus& status_;
  ConditionsByType conditions_;
};

void read_observed(DefinitionEvaluation& evaluation, const StatusPlan& plan, WorkloadStatus& status) {
  if (plan.phase != kNoExpression) {
    const auto& outcome = evaluation.outcome(plan.phase);
    if (outcome.error) status.notes.push_back(plan.status->phase->field + ": " + *outcome.error);
    if (!outcome.values.empty() && outcome.values[0].is_string()) status.phase = outcome.values[0].get<std::string>();
  }
  if (plan.conditions != kNoExpression) {
    const auto& outcome = evaluation.outcome(plan.conditions);
    if (outcome.error) status.notes.push_back(plan.status->conditions->path.field + ": " + *outcome.error);
    status.conditions = read_conditions(outcome, *plan.status->conditions);
  }
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

WorkloadStatus evaluate_status(DefinitionEvaluation& evaluation) {
  WorkloadStatus status;
  const auto& plan = evaluation.definition().status();
  if (!plan) return status;
  read_observed(evaluation, *plan, status);
  StatusMatcher matcher(evaluation, status);
  for (const auto& [candidate, rules] : plan->mappings) {  // already in kPublishedStatusOrder
    for (const auto& rule : rules) {
      if (matcher.holds(rule)) {
        status.matched.push_back(candidate);
        break;
      }
    }
  }
  if (!status.matched.empty()) status.state = status.matched.front();
  return status;
}

std::vector<std::string> status_names(const WorkloadStatus& status) {
  if (status.matched.empty()) return {status_name(ResourceStatus::Undefined)};
  std::vector<std::string> names;
  for (ResourceStatus s : status.matched) names.push_back(status_name(s));
  return names;
}

}  // namespace karta
