#include "definitions/karta_definition.h"

// Every jq expression of a parsed definition (jq_fields, all_jq_fields): a walk over the model, not part
// of reading it, so it is apart from the parser. Definition validation (validate/definition_validation.cpp)
// checks each expression it lists.

#include <optional>
#include <vector>

namespace karta {

std::vector<DefinitionJqField> all_jq_fields(const KartaDefinition& definition) {
  std::vector<DefinitionJqField> fields;
  auto add = [&](const std::optional<JqField>& field, JqSubject input = JqSubject::Object) {
    if (field) fields.push_back({&*field, input});
  };
  for (const Component* c : definition.components()) {
    if (c->spec) {
      add(c->spec->pod_template_spec);
      add(c->spec->pod_spec);
      add(c->spec->metadata);
      if (const auto& f = c->spec->fragmented) {
        for (const auto* field : {&f->labels, &f->annotations, &f->scheduler_name, &f->resources, &f->resource_claims,
                                  &f->pod_affinity, &f->node_affinity, &f->containers, &f->container,
                                  &f->priority_class_name, &f->image, &f->tolerations, &f->node_selector}) {
          add(*field);
        }
      }
      for (const auto& extra : c->spec->additional_containers) fields.push_back({&extra, JqSubject::Object});
      if (c->spec->gpu_request) fields.push_back({&*c->spec->gpu_request, JqSubject::Object});
    }
    add(c->instance_id);
    if (c->scale) {
      add(c->scale->replicas);
      add(c->scale->min_replicas);
      add(c->scale->max_replicas);
    }
    if (c->status) {
      if (c->status->conditions) fields.push_back({&c->status->conditions->path, JqSubject::Object});
      add(c->status->phase);
      for (const auto& [status, rules] : c->status->mappings) {
        for (const auto& rule : rules) {
          if (rule.by_expression) fields.push_back({&rule.by_expression->expression, JqSubject::Object});
        }
      }
    }
    if (c->suspend) {
      for (const auto* actions : {&c->suspend->suspend_actions, &c->suspend->resume_actions}) {
        for (const auto& action : *actions) fields.push_back({&action.path, JqSubject::Object});
      }
    }
  }
  for (const Component* c : definition.components()) {
    if (!c->pod_selector) continue;
    add(c->pod_selector->instance_id_path, JqSubject::Pod);
    if (c->pod_selector->component_type) add(c->pod_selector->component_type->key_path, JqSubject::Pod);
    add(c->pod_selector->replica_key_path, JqSubject::Pod);
  }
  add(definition.workload_pod_labels);
  add(definition.queue_path);
  add(definition.gang_min_member);
  if (definition.gang) {
    for (const auto& group : definition.gang->pod_groups) {
      for (const auto& member : group.members) {
        for (const auto& f : member.filters) fields.push_back({&f, JqSubject::Pod});
        for (const auto& f : member.group_by_key_paths) fields.push_back({&f, JqSubject::Pod});
      }
    }
  }
  return fields;
}

std::vector<JqField> jq_fields(const KartaDefinition& definition) {
  std::vector<JqField> fields;
  for (const auto& f : all_jq_fields(definition)) fields.push_back(*f.field);
  return fields;
}

}  // namespace karta
