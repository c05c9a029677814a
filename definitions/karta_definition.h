#pragma once

// The Karta definition model (run.ai/v1alpha1 Karta, and the older optimization.nvidia.com/v1alpha1
// ResourceInterface) and its strict parser. docs/definitions.md describes the format.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace karta {

using json = nlohmann::json;

struct GroupVersionKind {
  std::string group;  // empty for the core group
  std::string version;
  std::string kind;

  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  std::string to_string() const { return api_version() + " " + kind; }
  bool operator==(const GroupVersionKind&) const = default;
  auto operator<=>(const GroupVersionKind&) const = default;

  // "apps/v1" + "Deployment"; "v1" is the core group.
  static GroupVersionKind from_api_version(const std::string& api_version, const std::string& kind);
};

// One place of a definition that holds a jq expression, named as the user wrote it.
struct JqField {
  std::string field;       // "spec.structureDefinition.childComponents[0].specDefinition.podTemplateSpecPath"
  std::string expression;  // ".spec.replicatedJobs[].template.spec.template"
};

struct FragmentedPodSpecDefinition {
  std::optional<JqField> labels, annotations, scheduler_name, resources, resource_claims, pod_affinity,
      node_affinity, containers, container, priority_class_name, image, tolerations, node_selector;
};

struct SpecDefinition {
  std::optional<JqField> pod_template_spec;
  std::optional<JqField> pod_spec;
  std::optional<JqField> metadata;  // with pod_spec only
  std::optional<FragmentedPodSpecDefinition> fragmented;
  // karta-webhook's extension: containers the framework adds to the pod from elsewhere in the object
  // (KServe's `.spec.predictor.model`), counted with the pod's own. Output i belongs to instance i.
  std::vector<JqField> additional_containers;
};

struct ScaleDefinition {
  std::optional<JqField> replicas, min_replicas, max_replicas;
};

struct ConditionsDefinition {
  JqField path;
  std::string type_field = "type";
  std::string status_field = "status";
  std::string message_field = "message";
};

struct ExpressionCheck {
  JqField expression;
  json expected_result;
};

struct ConditionMatch {
  std::string type;
  std::string status;
};

// A rule holds when every criterion it names holds.
struct StatusRule {
  std::vector<ConditionMatch> by_conditions;
  std::optional<std::string> by_phase;
  std::optional<ExpressionCheck> by_expression;
};

struct StatusDefinition {
  std::optional<ConditionsDefinition> conditions;
  std::optional<JqField> phase;
  std::map<std::string, std::vector<StatusRule>> mappings;  // shared phase -> rules (any holds)
};

struct Component {
  std::string name;
  GroupVersionKind kind;
  std::optional<std::string> owner_ref;
  std::optional<SpecDefinition> spec;
  std::optional<ScaleDefinition> scale;
  std::optional<StatusDefinition> status;
  std::optional<JqField> instance_id;
  json pod_selector;  // free-form; null when absent
};

struct GangSubGroup {
  std::string component_name;
  json topology;
};

struct PodGroupDefinition {
  std::string name;
  json topology;
  std::vector<GangSubGroup> members;  // subGroups[] (or members[] of the deprecated podGroups[])
};

struct GangScheduling {
  std::vector<PodGroupDefinition> pod_groups;
};

struct KartaDefinition {
  std::string name;    // metadata.name
  std::string source;  // where it was read from
  std::string text;    // the document as compact JSON: identifies the definition for caching
  Component root;
  std::vector<Component> children;
  std::vector<GroupVersionKind> additional_child_kinds;
  std::optional<GangScheduling> gang;

  // Root first, then the children in file order.
  std::vector<const Component*> components() const;
  const Component* find_component(const std::string& name) const;
};

// What is wrong with a definition and where.
struct DefinitionFault {
  std::string field;    // "spec.structureDefinition.rootComponent.kind.version"
  std::string message;  // "is required"
  std::string to_string() const { return field + ": " + message; }
};

struct DefinitionParse {
  std::optional<KartaDefinition> definition;  // set when there are no faults
  std::vector<DefinitionFault> faults;
};

// True for the kinds this project reads as definitions.
bool is_definition_object(const json& document);

// Reads a Karta or ResourceInterface object strictly: an unknown field, a missing required field or a
// value of the wrong type is a fault naming the field. Every fault is reported, not only the first.
DefinitionParse parse_karta_definition(const json& document, const std::string& source);

// Levenshtein distance, for did-you-mean suggestions in messages.
std::size_t edit_distance(std::string_view a, std::string_view b);

// Every jq expression of a definition, with the field it sits in.
std::vector<JqField> jq_fields(const KartaDefinition& definition);

}  // namespace karta
