#include "validate/definition_validation.h"

#include <map>
#include <set>

#include "definitions/jq_program.h"
#include "validate/jq_safety.h"

namespace karta {
namespace {

// The only core kinds a root may name with an empty group.
bool is_core_kind(const std::string& kind) { return kind == "Pod" || kind == "ReplicationController"; }

struct CheckedPath {
  const JqField* field;
  ExpectedShape shape;
};

void structure_rules(const KartaDefinition& d, DefinitionReport& report) {
  const std::string root_field = "spec.structureDefinition.rootComponent";
  if (d.root.kind.group.empty() && !is_core_kind(d.root.kind.kind)) {
    report.faults.push_back(root_field + ".kind.group: is required (only core kinds such as Pod have an empty group)");
  }
  std::map<std::string, std::string> fields;  // component name -> its field
  fields[d.root.name] = root_field;
  for (std::size_t i = 0; i < d.children.size(); ++i) {
    std::string field = "spec.structureDefinition.childComponents[" + std::to_string(i) + "]";
    const Component& c = d.children[i];
    if (!fields.emplace(c.name, field).second) {
      report.faults.push_back(field + ".name: \"" + c.name + "\" is already the name of " + fields[c.name]);
    }
  }
  for (std::size_t i = 0; i < d.children.size(); ++i) {
    const Component& c = d.children[i];
    std::string field = "spec.structureDefinition.childComponents[" + std::to_string(i) + "]";
    if (c.owner_ref && fields.count(*c.owner_ref) == 0) {
      report.faults.push_back(field + ".ownerRef: \"" + *c.owner_ref + "\" names no component");
    }
    if (c.owner_ref && *c.owner_ref == c.name) report.faults.push_back(field + ".ownerRef: a component cannot own itself");
  }
  // Every chain of owners must reach the root.
  std::map<std::string, std::string> owner;
  for (const auto& c : d.children) {
    if (c.owner_ref) owner[c.name] = *c.owner_ref;
  }
  for (std::size_t i = 0; i < d.children.size(); ++i) {
    std::set<std::string> seen{d.children[i].name};
    std::string at = d.children[i].name;
    while (owner.count(at) != 0) {
      at = owner[at];
      if (!seen.insert(at).second) {
        report.faults.push_back("spec.structureDefinition.childComponents[" + std::to_string(i) +
                                "].ownerRef: the ownership of \"" + d.children[i].name + "\" runs in a cycle");
        break;
      }
    }
  }
  for (const Component* c : d.components()) {
    const std::string& field = fields[c->name];
    bool has_selector = !c->pod_selector.is_null();
    if (c->instance_id && !has_selector) {
      report.faults.push_back(field + ".podSelector: is required with instanceIdPath (how the pods of an instance "
                                      "are selected)");
    }
  }
  if (d.gang) {
    for (std::size_t g = 0; g < d.gang->pod_groups.size(); ++g) {
      const auto& group = d.gang->pod_groups[g];
      for (std::size_t m = 0; m < group.members.size(); ++m) {
        if (fields.count(group.members[m].component_name) == 0) {
          report.faults.push_back("spec.optimizationInstructions.gangScheduling: member \"" +
                                  group.members[m].component_name + "\" of pod group \"" + group.name +
                                  "\" names no component");
        }
      }
    }
  }
}

std::vector<CheckedPath> paths_to_check(const KartaDefinition& d) {
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
    }
  }
  return paths;
}

// The last segment of a field ("...scaleDefinition.replicasPath" -> "replicasPath") for messages.
std::string field_name(const std::string& field) {
  auto dot = field.rfind('.');
  std::string name = dot == std::string::npos ? field : field.substr(dot + 1);
  auto bracket = name.find('[');
  return bracket == std::string::npos ? name : name.substr(0, bracket);
}

}  // namespace

DefinitionReport validate_definition(const json& document, const CrdLookup& crds) {
  DefinitionReport report;
  DefinitionParse parsed = parse_karta_definition(document, "definition");
  for (const auto& fault : parsed.faults) report.faults.push_back(fault.to_string());
  if (!parsed.definition) return report;
  const KartaDefinition& d = *parsed.definition;
  structure_rules(d, report);

  // jq: length, the allow-list, then compilation (only of what the allow-list admits).
  const std::vector<JqField> fields = jq_fields(d);
  std::vector<const JqField*> safe;
  for (const auto& field : fields) {
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
    if (faults.empty()) safe.push_back(&field);
  }
  for (const JqField* field : safe) {
    if (auto error = jq_compile_error(field->expression)) {
      report.faults.push_back(field->field + ": " + field->expression + ": does not compile: " + *error);
    }
  }

  // Paths against the CRD of the root kind.
  const CrdSchema* crd = crds ? crds(d.root.kind) : nullptr;
  if (crd == nullptr) {
    report.warnings.push_back("no CustomResourceDefinition known for " + d.root.kind.to_string() +
                              ": paths not verified against a schema");
    return report;
  }
  for (const auto& [field, shape] : paths_to_check(d)) {
    for (const auto& finding : check_path_against_schema(*crd, field->expression, shape, field_name(field->field))) {
      (finding.fault ? report.faults : report.warnings).push_back(field->field + ": " + finding.message);
    }
  }
  return report;
}

}  // namespace karta
