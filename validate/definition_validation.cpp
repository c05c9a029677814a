#include "validate/definition_validation.h"

#include "definitions/api/published_api.h"
#include "definitions/jq_program.h"
#include "k8s/name_syntax.h"
#include "k8s/terminal_text.h"
#include "validate/jq_lexer.h"
#include "validate/jq_safety.h"

namespace karta {
namespace {

struct CheckedPath {
  const JqField* field;
  ExpectedShape shape;
};

// The paths read from the workload, with the shape the place they reach must have.
std::vector<CheckedPath> object_paths(const KartaDefinition& d) {
  std::vector<CheckedPath> paths;
  auto add = [&](const std::optional<JqField>& f, ExpectedShape shape) {
    if (f) paths.push_back({&*f, shape});
  };
  for (const Component* c : d.components()) {
    if (c->spec) {
      add(c->spec->pod_template_spec, ExpectedShape::PodTemplateSpec);
      add(c->spec->pod_spec, ExpectedShape::PodSpec);
      add(c->spec->metadata, ExpectedShape::ObjectWithLabels);
      for (const auto& extra : c->spec->additional_containers) paths.push_back({&extra, ExpectedShape::Object});
      add(c->spec->gpu_request, ExpectedShape::Object);  // the extensions annotation's gpuRequestPath
      if (const auto& f = c->spec->fragmented) {
        add(f->labels, ExpectedShape::StringMap);
        add(f->annotations, ExpectedShape::StringMap);
        add(f->scheduler_name, ExpectedShape::String);
        add(f->resources, ExpectedShape::Object);
        add(f->resource_claims, ExpectedShape::List);
        add(f->pod_affinity, ExpectedShape::Object);
        add(f->node_affinity, ExpectedShape::Object);
        add(f->containers, ExpectedShape::List);
        add(f->container, ExpectedShape::Object);
        add(f->priority_class_name, ExpectedShape::String);
        add(f->image, ExpectedShape::String);
        add(f->tolerations, ExpectedShape::List);
        add(f->node_selector, ExpectedShape::StringMap);
      }
    }
    add(c->instance_id, ExpectedShape::Any);
    if (c->scale) {
      add(c->scale->replicas, ExpectedShape::Integer);
      add(c->scale->min_replicas, ExpectedShape::Integer);
      add(c->scale->max_replicas, ExpectedShape::Integer);
    }
    if (c->status) {
      if (c->status->conditions) paths.push_back({&c->status->conditions->path, ExpectedShape::List});
      add(c->status->phase, ExpectedShape::Any);
      for (const auto& [status, rules] : c->status->mappings) {
        for (const auto& rule : rules) {
          if (rule.by_expression) paths.push_back({&rule.by_expression->expression, ExpectedShape::Any});
        }
      }
    }
    if (c->suspend) {
      for (const auto* actions : {&c->suspend->suspend_actions, &c->suspend->resume_actions}) {
        for (const auto& action : *actions) paths.push_back({&action.path, ExpectedShape::Any});
      }
    }
  }
  // The extensions annotation's workloadPodLabelsPath and queuePath are written to: their shape is
  // check_write_path's to check (write_paths below), with where they lead.
  add(d.workload_pod_labels, ExpectedShape::Any);
  add(d.queue_path, ExpectedShape::Any);
  add(d.gang_min_member, ExpectedShape::Integer);  // gangMinMemberPath: read only
  return paths;
}

struct WritePath {
  const JqField* field;
  WrittenShape shape;
};

// The paths /mutate writes to (mutate/mutation.cpp): the extensions annotation's queuePath (the resolved
// queue) and workloadPodLabelsPath (the labels every pod gets). Every other path is read, or locates a
// pod template, a pod spec or a pod's pieces, whose shapes object_paths checks.
std::vector<WritePath> write_paths(const KartaDefinition& d) {
  std::vector<WritePath> paths;
  if (d.queue_path) paths.push_back({&*d.queue_path, WrittenShape::String});
  if (d.workload_pod_labels) paths.push_back({&*d.workload_pod_labels, WrittenShape::StringMap});
  return paths;
}

// The last segment of a field ("...scaleDefinition.replicasPath" -> "replicasPath") for messages.
std::string field_name(const std::string& field) {
  auto dot = field.rfind('.');
  std::string name = dot == std::string::npos ? field : field.substr(dot + 1);
  auto bracket = name.find('[');
  return bracket == std::string::npos ? name : name.substr(0, bracket);
}

// Core v1 Pod, for the paths that definitions evaluate on pods.
const CrdSchema& pod_schema() {
  static const CrdSchema schema{{"", "v1", "Pod"}, "pods", core_pod_schema()};
  return schema;
}

}  // namespace

DefinitionReport validate_definition(const json& document, const CrdLookup& crds, bool compile) {
  DefinitionReport report;
  DefinitionParse parsed = parse_karta_definition(document, "definition");
  for (const auto& fault : parsed.faults) report.faults.push_back(fault.to_string());
  const std::optional<KartaDefinition>& read = parsed.definition ? parsed.definition : parsed.partial;
  if (!read) return report;
  const KartaDefinition& d = *read;

  // A pod carries only labels of Kubernetes' syntax, so a matchLabels key or value outside it selects no
  // pod (the published validator's rule; the CRD only says "string"). One fault for the key, one for the
  // value.
  for (const Component* c : d.components()) {
    if (!c->pod_selector || !c->pod_selector->component_type) continue;
    const std::string labels = d.component_field(*c) + ".podSelector.componentTypeSelector.matchLabels";
    for (const auto& [key, value] : c->pod_selector->component_type->match_labels) {
      const std::string field = labels + "[\"" + key + "\"]";
      if (auto error = label_key_error(key); !error.empty())
        report.faults.push_back(field + ": key is not a valid label key: " + error);
      if (auto error = label_value_error(value); !error.empty())
        report.faults.push_back(field + ": value \"" + value + "\" is not a valid label value: " + error);
    }
  }

  // What `karta-webhook generate` leaves to fill in, which loads but tells nothing: an empty statusMappings
  // (every workload's status Undefined), and the label it writes as a placeholder for the instance of a pod,
  // `<group>/instance` of the root's group, which no operator is known to set.
  if (d.root.status && d.root.status->mappings.empty())
    report.warnings.push_back(d.component_field(d.root) +
                              ".statusDefinition.statusMappings: is empty, so every workload's status is Undefined: "
                              "map the phases or conditions its operator sets");
  const std::string placeholder = ".metadata.labels[\"" + d.root_kind().group + "/instance\"]";
  for (const Component* c : d.components()) {
    if (!c->pod_selector || !c->pod_selector->instance_id_path ||
        c->pod_selector->instance_id_path->expression != placeholder)
      continue;
    report.warnings.push_back(c->pod_selector->instance_id_path->field + ": reads the label `" +
                              terminal_text(d.root_kind().group.substr(0, 253)) +
                              "/instance`, the placeholder `karta-webhook generate` writes: replace it with the "
                              "label the operator puts on each instance's pods");
  }

  // jq: length, the allow-list, then compilation (only of what the allow-list admits).
  const std::vector<DefinitionJqField> fields = all_jq_fields(d);
  std::vector<DefinitionJqField> safe;
  for (const auto& entry : fields) {
    const JqField& field = *entry.field;
    if (field.expression.size() > kMaxExpressionLength) {
      report.faults.push_back(field.field + ": expression is " + std::to_string(field.expression.size()) +
                              " characters; at most " + std::to_string(kMaxExpressionLength) + " are allowed");
      continue;
    }
    auto faults = jq_safety_faults(field.expression);
    for (const auto& fault : faults) {
      report.faults.push_back(field.field + ": " + field.expression + ": " + fault.message);
    }
    for (const auto& warning : jq_safety_warnings(field.expression)) {
      report.warnings.push_back(field.field + ": " + warning);
    }
    if (faults.empty()) safe.push_back(entry);
  }
  // Compiling is the dear part of validation: libjq compiles its whole builtin library with every program
  // (about 20 ms), so one compile per expression made `validate` of the catalog take seconds. The safe
  // expressions are compiled together first, each a parenthesized term on lines of its own (a `#` comment
  // ends at its line); only when that fails, or an expression's brackets do not nest, is each compiled
  // alone, to say which one does not.
  if (compile && !safe.empty()) {
    std::string together;
    bool nested = true;
    for (const auto& entry : safe) {
      nested = nested && !tokenize_jq(entry.field->expression).error;
      together += (together.empty() ? "(\n" : ",\n(\n") + entry.field->expression + "\n)";
    }
    if (!nested || jq_compile_error(together)) {
      for (const auto& entry : safe) {
        if (auto error = jq_compile_error(entry.field->expression)) {
          report.faults.push_back(entry.field->field + ": " + entry.field->expression + ": does not compile: " + *error);
        }
      }
    }
  }

  // Paths evaluated on pods, against the core Pod schema.
  for (const auto& entry : safe) {
    if (entry.input != JqSubject::Pod) continue;
    for (const auto& finding :
         check_path_against_schema(pod_schema(), entry.field->expression, ExpectedShape::Any, field_name(entry.field->field))) {
      (finding.fault ? report.faults : report.warnings).push_back(entry.field->field + ": " + finding.message);
      if (finding.fault) ++report.path_faults;
    }
  }

  // Paths read from the workload, against the CRD of the root kind.
  const CrdSchema* crd = crds ? crds(d.root_kind()) : nullptr;
  if (crd == nullptr) {
    // Every CRD's group has a dot (the API server refuses any other): a kind whose group has none (batch
    // Job, apps Deployment, the core Pod) is built in, and no schema will ever say where a path the
    // webhook writes to leads (the Job's would reach its containers' image as readily as anything).
    if (d.root_kind().group.find('.') == std::string::npos) {
      for (const auto& [field, shape] : write_paths(d)) {
        report.faults.push_back(field->field + ": " + d.root_kind().to_string() +
                                " is a built-in kind, with no CustomResourceDefinition schema to check it against: " +
                                field_name(field->field) + " is written by the webhook, and is allowed only on a "
                                "kind whose CRD schema shows where it leads");
      }
    }
    report.unknown_crd_warning = report.warnings.size();
    report.warnings.push_back("no CustomResourceDefinition known for " + d.root_kind().to_string() +
                              ": paths not verified against a schema");
    return report;
  }
  for (const auto& [field, shape] : object_paths(d)) {
    for (const auto& finding : check_path_against_schema(*crd, field->expression, shape, field_name(field->field))) {
      (finding.fault ? report.faults : report.warnings).push_back(field->field + ": " + finding.message);
      if (finding.fault) ++report.path_faults;
    }
  }
  // An equivalent version is read with the root version's paths: the CRD must serve it with the same schema.
  for (std::size_t i = 0; i < d.equivalent_versions.size(); ++i) {
    GroupVersionKind served = d.root_kind();
    served.version = d.equivalent_versions[i];
    const std::string field = std::string("metadata.annotations[\"") + kExtensionsAnnotation +
                              "\"].equivalentVersions[" + std::to_string(i) + "]: ";
    const CrdSchema* other = crds(served);
    if (other == nullptr) {
      report.faults.push_back(field + "no CustomResourceDefinition serves " + served.to_string() +
                              ": an equivalent version must be one the CRD serves");
    } else if (other->schema != crd->schema) {
      report.faults.push_back(field + "the CRD's schema of " + served.version + " differs from " +
                              d.root_kind().version + "'s: an object in " + served.version + " would be read with " +
                              d.root_kind().version + "'s paths");
    }
  }
  // Not path faults: a definition that would write where it must not is never loaded, under warn too.
  for (const auto& [field, shape] : write_paths(d)) {
    for (const auto& finding : check_write_path(*crd, field->expression, shape, field_name(field->field))) {
      report.faults.push_back(field->field + ": " + finding.message);
    }
  }
  return report;
}

}  // namespace karta
