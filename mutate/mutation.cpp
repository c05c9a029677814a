#include "mutate/mutation.h"

#include "definitions/pod_template_locator.h"
#include "mutate/json_patch_builder.h"

namespace karta {
namespace {

void note_blocked(PatchChange change, const JsonPatchBuilder& patch, const PodTemplateLocation& where,
                  std::vector<std::string>& notes) {
  if (change == PatchChange::Blocked) {
    notes.push_back(where.component + " " + where.instance + ": " + patch.blocked_reason() + "; left as is");
  }
}

void apply_map(JsonPatchBuilder& patch, const json::json_pointer& map, const std::map<std::string, std::string>& entries,
               bool overwrite, const PodTemplateLocation& where, std::vector<std::string>& notes) {
  for (const auto& [key, value] : entries) {
    PatchChange change = patch.set_member(map, key, value, overwrite);
    note_blocked(change, patch, where, notes);
    if (change == PatchChange::Blocked) return;  // one note per map is enough
  }
}

}  // namespace

MutationOutcome mutate_workload(const json& object, const CompiledDefinition& definition, const Policy& policy) {
  MutationOutcome outcome;
  DefinitionEvaluation evaluation(definition, object);
  WorkloadLayout layout = locate_pod_templates(evaluation);
  outcome.notes = std::move(layout.notes);
  outcome.templates = layout.templates.size();

  JsonPatchBuilder patch(object);
  const PodTemplatePolicy& pod_policy = policy.pod_templates;
  for (const PodTemplateLocation& t : layout.templates) {
    if (t.labels && !pod_policy.labels.empty()) {
      apply_map(patch, *t.labels, pod_policy.labels, pod_policy.overwrite, t, outcome.notes);
    }
    if (t.annotations && !pod_policy.annotations.empty()) {
      apply_map(patch, *t.annotations, pod_policy.annotations, pod_policy.overwrite, t, outcome.notes);
    }
  }
  outcome.patch = patch.operations();
  return outcome;
}

}  // namespace karta
