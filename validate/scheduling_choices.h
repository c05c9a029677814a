#pragma once

// The boundary between tenants sharing GPUs: the queues and priority classes a workload names itself must
// be ones its tenant permits (scheduling.queue.allowed, priority.allowed; policy/policy.h, AllowedChoices).
// KAI Scheduler turns a queue into quota and a priority class into preemption, so a workload of one team
// that names another team's queue takes that team's GPUs. Checked on /validate, after mutation, wherever
// KAI or the kind's own scheduler reads a choice:
// - the queue: the workload's queue label, every pod template's queue label, and the kind's own queue
//   field (the definition's queuePath: Volcano's .spec.queue, Spark's batchSchedulerOptions.queue);
// - the priority class: the workload's priorityClassName label, every pod template's priorityClassName
//   label, and every pod spec's priorityClassName (KAI's order: owner label, pod label, pod spec).

#include <map>
#include <string>

#include "definitions/compiled_definition.h"
#include "definitions/pod_template_locator.h"
#include "policy/policy.h"
#include "validate/validation_outcome.h"

namespace karta {

// Every choice `object` names that `policy` does not permit, each with its place. Under enforcement
// `enforce`, and under `replace` (the mutating webhook replaces such a choice: one that reaches
// /validate was not replaced, so it is denied all the same), the outcome denies with them all; under
// `audit` each is a warning. `tenant` names who decides ("tenant research", "the global policy").
ValidationOutcome check_scheduling_choices(DefinitionEvaluation& evaluation, const WorkloadLayout& layout,
                                           const Policy& policy, const std::map<std::string, std::string>* namespace_labels,
                                           const std::string& tenant);

// One outcome from two checks of one object: denied when either denies, with both messages.
ValidationOutcome combine(ValidationOutcome first, ValidationOutcome second);

}  // namespace karta
