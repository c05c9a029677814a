#include "validate/scheduling_choices.h"

#include "json/json_members.h"
#include "k8s/terminal_text.h"

namespace karta {
namespace {

// The string a place holds, or "" (absent, or not a string: the API server's or the kind's own business).
std::string string_in(JsonElement object, const JsonPointer& map, std::string_view key) {
  return string_member(find_at(object, map), key);
}

// Collects the findings of one check.
class Findings {
 public:
  Findings(const AllowedChoices& allowed, std::string resolved, const char* choice, const std::string& tenant)
      : allowed_(allowed), resolved_(std::move(resolved)), choice_(choice), tenant_(tenant) {}
  void check(const std::string& named, const std::string& place) {
    if (named.empty() || allowed_.permits(named, resolved_)) return;
    found_.push_back(place + ": " + choice_ + " \"" + bounded_text(named) + "\" is not one " + tenant_ +
                     " may name (" + allowed_.describe(resolved_) + ")");
  }
  void into(ValidationOutcome& outcome) const {
    if (found_.empty()) return;
    outcome.violations.insert(outcome.violations.end(), found_.begin(), found_.end());
    if (allowed_.enforcement == ChoiceEnforcement::Audit) {
      for (const auto& finding : found_) outcome.warnings.push_back("scheduling choices (audit): " + finding);
      return;
    }
    outcome.allowed = false;
    for (const auto& finding : found_) outcome.message += (outcome.message.empty() ? "" : "; ") + finding;
  }

 private:
  const AllowedChoices& allowed_;
  std::string resolved_;
  const char* choice_;
  const std::string& tenant_;
  std::vector<std::string> found_;
};

}  // namespace

ValidationOutcome check_scheduling_choices(DefinitionEvaluation& evaluation, const WorkloadLayout& layout,
                                           const Policy& policy, const std::map<std::string, std::string>* namespace_labels,
                                           const std::string& tenant) {
  ValidationOutcome outcome;
  const JsonElement object = evaluation.object();
  const JsonPointer workload_labels("/metadata/labels");
  const SchedulingPolicy& scheduling = policy.scheduling;
  if (scheduling.queues.restricted() && !scheduling.queue_label.empty()) {
    Findings queues(scheduling.queues, scheduling.resolved_queue(namespace_labels), "queue", tenant);
    const std::string& label = scheduling.queue_label;
    queues.check(string_in(object, workload_labels, label), "workload label " + label);
    for (const auto& t : layout.templates) {
      if (t.labels) queues.check(string_in(object, *t.labels, label), t.instance + " pod template label " + label);
    }
    const CompiledDefinition& definition = evaluation.definition();
    if (definition.queue_path() != kNoExpression) {
      const ExpressionOutcome& places = evaluation.outcome(definition.queue_path());
      for (const JsonPointer& place : places.pointers) {
        if (place.empty()) continue;
        queues.check(string_in(object, place.parent_pointer(), place.back()),
                     definition.definition().queue_path->field + " (" + place.to_string() + ")");
      }
    }
    queues.into(outcome);
  }
  const PriorityPolicy& priority = policy.priority;
  if (priority.classes.restricted()) {
    Findings classes(priority.classes, priority.class_name, "priority class", tenant);
    classes.check(string_in(object, workload_labels, kPriorityClassLabel), std::string("workload label ") + kPriorityClassLabel);
    for (const auto& t : layout.templates) {
      if (t.labels) {
        classes.check(string_in(object, *t.labels, kPriorityClassLabel),
                      t.instance + " pod template label " + kPriorityClassLabel);
      }
      if (t.pod_spec) {
        classes.check(string_in(object, *t.pod_spec, kPriorityClassLabel), t.instance + " pod spec priorityClassName");
      }
    }
    classes.into(outcome);
  }
  return outcome;
}

ValidationOutcome combine(ValidationOutcome first, ValidationOutcome second) {
  if (!second.allowed) {
    first.message += (first.message.empty() ? "" : "; ") + second.message;
    first.allowed = false;
  }
  first.warnings.insert(first.warnings.end(), second.warnings.begin(), second.warnings.end());
  first.violations.insert(first.violations.end(), second.violations.begin(), second.violations.end());
  return first;
}

}  // namespace karta
