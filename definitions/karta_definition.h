#pragma once

// The Karta definition model and its strict parser. The model is the published API: run.ai/v1alpha1
// Karta (NVIDIA Workload Map, formerly Karta), and its older form optimization.nvidia.com/v1alpha1
// ResourceInterface, exactly as their CRDs (definitions/api/) define them. What karta-webhook needs
// beyond that API sits in one annotation on the Karta (kExtensionsAnnotation), never in `spec`, where
// the published CRD would prune it. docs/definitions.md describes the format.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "k8s/edit_distance.h"  // edit_distance, which callers of this header use
#include "k8s/group_version_kind.h"

namespace karta {

using json = nlohmann::json;

// Which published form a definition object is written in.
enum class DefinitionForm {
  Karta,              // run.ai/v1alpha1 Karta
  ResourceInterface,  // optimization.nvidia.com/v1alpha1 ResourceInterface (no suspend, no podGroup, five statuses)
};

// The annotation on a Karta that holds karta-webhook's extensions, as YAML (docs/definitions.md):
//   workloadPodLabelsPath: ..., queuePath: ..., gangMinMemberPath: ...,
//   components: {<component>: {additionalContainerPaths: [...], tolerationsPath: ..., nodeSelectorPath: ...,
//                               gpuRequestPath: ...}}
inline constexpr const char* kExtensionsAnnotation = "karta-webhook.io/extensions";

// One place of a definition that holds a jq expression, named as the user wrote it.
struct JqField {
  std::string field;       // "spec.structureDefinition.childComponents[0].specDefinition.podTemplateSpecPath"
  std::string expression;  // ".spec.replicatedJobs[].template.spec.template"
};

struct FragmentedPodSpecDefinition {
  // The published fields.
  std::optional<JqField> labels, annotations, scheduler_name, resources, resource_claims, pod_affinity,
      node_affinity, containers, container, priority_class_name, image;
  // karta-webhook's extensions (kExtensionsAnnotation): where the GPU tolerations and node selector go.
  std::optional<JqField> tolerations, node_selector;
};

struct SpecDefinition {
  std::optional<JqField> pod_template_spec;
  std::optional<JqField> pod_spec;
  std::optional<JqField> metadata;  // with pod_spec only
  std::optional<FragmentedPodSpecDefinition> fragmented;
  // karta-webhook's extension (kExtensionsAnnotation): containers the framework adds to the pod from
  // elsewhere in the object (KServe's `.spec.predictor.model`), counted with the pod's own. Output i
  // belongs to instance i.
  std::vector<JqField> additional_containers;
  // karta-webhook's extension (kExtensionsAnnotation): a {name, quantity} object asking for `quantity` of
  // the resource `name` per pod, outside any ResourceRequirements (SparkPodSpec's `gpu`). Output i belongs
  // to instance i.
  std::optional<JqField> gpu_request;
};

struct ScaleDefinition {
  std::optional<JqField> replicas, min_replicas, max_replicas;
};

// The statuses of the published API (ResourceStatus), in the order they are declared there.
enum class ResourceStatus { Initializing, Running, Completed, Failed, Degraded, Suspended, Suspending, Resuming, Undefined };

// The order in which the published Go implementation (StatusMappings.Entries()) tries the statuses and
// lists the ones that match: kli prints them in this order, and its first is the state karta-webhook
// reports when several match (docs/definitions.md, "Status").
inline constexpr ResourceStatus kPublishedStatusOrder[] = {
    ResourceStatus::Resuming, ResourceStatus::Suspending,   ResourceStatus::Suspended, ResourceStatus::Running,
    ResourceStatus::Failed,   ResourceStatus::Completed,    ResourceStatus::Initializing, ResourceStatus::Degraded};

// "Running"; and the statusMappings key, "running".
const char* status_name(ResourceStatus status);
const char* status_mapping_key(ResourceStatus status);

struct ConditionsDefinition {
  JqField path;
  std::string type_field = "type";  // the CRD's defaults
  std::string status_field = "status";
  std::string message_field = "message";
  std::string reason_field = "reason";
};

// byExpression: holds when `(<expression>) | tostring == <expected_result>`.
struct ExpressionCheck {
  JqField expression;
  std::string expected_result;
};

// A condition of `type` must be present, with `status` and `reason` when they are given.
struct ConditionMatch {
  std::string type;
  std::optional<std::string> status;
  std::optional<std::string> reason;
};

// A matcher holds when every criterion it names holds.
struct StatusRule {
  std::vector<ConditionMatch> by_conditions;
  std::optional<std::string> by_phase;
  std::optional<ExpressionCheck> by_expression;
};

struct StatusDefinition {
  std::optional<ConditionsDefinition> conditions;
  std::optional<JqField> phase;
  std::map<ResourceStatus, std::vector<StatusRule>> mappings;  // status -> matchers (any holds)
};

// suspendDefinition: each action assigns `value` (JSON text) at the jq path `path`, in order.
struct SuspendAction {
  JqField path;
  std::string value;  // JSON text: "true", "0", "\"paused\"", "null"
  json parsed_value;  // `value` parsed
};

struct SuspendDefinition {
  std::vector<SuspendAction> suspend_actions, resume_actions;
};

// componentTypeSelector: a pod belongs to the component when every condition given holds.
struct ComponentTypeSelector {
  std::optional<JqField> key_path;                  // jq on the pod; exists, or equals `value`
  std::optional<std::string> value;                 // with key_path only
  std::map<std::string, std::string> match_labels;  // every label equal
};

// podSelector: how the pods of a component are told apart. Every path is evaluated on a pod.
struct PodSelector {
  std::optional<JqField> instance_id_path;  // componentInstanceSelector.idPath
  std::optional<ComponentTypeSelector> component_type;
  std::optional<JqField> replica_key_path;  // replicaSelector.keyPath
};

struct Component {
  std::string name;
  std::optional<GroupVersionKind> kind;  // optional on a child: a virtual component
  std::optional<std::string> owner_ref;
  std::optional<SpecDefinition> spec;
  std::optional<ScaleDefinition> scale;
  std::optional<StatusDefinition> status;
  std::optional<SuspendDefinition> suspend;
  std::optional<JqField> instance_id;
  std::optional<PodSelector> pod_selector;
};

struct TopologyConstraint {
  std::string topology_name, required_level, preferred_level;
};

// A member of a pod group: podGroup.subGroups[] or, in the deprecated form, podGroups[].members[].
struct GangSubGroup {
  std::string component_name;
  std::optional<TopologyConstraint> topology;  // subGroups[] only
  std::vector<JqField> filters;                // members[] only: jq on pods, ANDed
  std::vector<JqField> group_by_key_paths;     // members[] only: jq on pods
};

struct PodGroupDefinition {
  std::string name;
  std::optional<TopologyConstraint> topology;  // podGroup only
  std::vector<GangSubGroup> members;
  bool deprecated_form = false;  // read from podGroups[]
};

struct GangScheduling {
  std::vector<PodGroupDefinition> pod_groups;  // podGroup first, then podGroups[] in order
};

struct KartaDefinition {
  std::string name;    // metadata.name
  std::string source;  // where it was read from
  std::string text;    // the document as compact JSON: identifies the definition for caching
  DefinitionForm form = DefinitionForm::Karta;
  Component root;
  std::vector<Component> children;
  std::vector<GroupVersionKind> additional_child_kinds;
  std::optional<GangScheduling> gang;
  // karta-webhook's extension (`workloadPodLabelsPath` in the extensions annotation): the one label map the
  // kind's operator copies onto every pod of the workload, such as Milvus's .spec.components.podLabels.
  // Labels that are the same on every pod go there when the object holds no pod template to carry them.
  std::optional<JqField> workload_pod_labels;
  // karta-webhook's extensions for a kind whose own controller reads a queue or a gang size from the
  // object (`queuePath`, `gangMinMemberPath`): where the policy's resolved queue is written too (Volcano's
  // .spec.queue, Spark's .spec.batchSchedulerOptions.queue), and the gang size the controller itself
  // uses (Volcano's .spec.minAvailable), which the gang annotation then carries instead of the pod count.
  std::optional<JqField> queue_path;
  std::optional<JqField> gang_min_member;
  // karta-webhook's extension (`equivalentVersions`): versions the kind's CRD serves with the root
  // version's schema (Kubeflow's Notebook: v1beta1 and v1alpha1 beside v1). An object in one of them is
  // read with this definition, as the webhook's matchPolicy: Equivalent has the API server send it.
  std::vector<std::string> equivalent_versions;

  // The root's kind; the parser guarantees it is set.
  const GroupVersionKind& root_kind() const { return *root.kind; }
  // Root first, then the children in file order.
  std::vector<const Component*> components() const;
  const Component* find_component(const std::string& name) const;
  // "spec.structureDefinition.rootComponent", "spec.structureDefinition.childComponents[2]".
  std::string component_field(const Component& component) const;
};

// What is wrong with a definition and where.
struct DefinitionFault {
  std::string field;    // "spec.structureDefinition.rootComponent.kind.version"
  std::string message;  // "is required"
  std::string to_string() const { return field + ": " + message; }
  bool operator==(const DefinitionFault&) const = default;
};

struct DefinitionParse {
  std::optional<KartaDefinition> definition;  // set when there are no faults
  std::vector<DefinitionFault> faults;
  // With faults, the definition as far as it could be read (when its root has a kind): never loaded, but
  // its jq and its paths can still be checked, so that every fault is reported in one run.
  std::optional<KartaDefinition> partial;
};

// True for the kinds this project reads as definitions (Karta, ResourceInterface).
bool is_definition_object(const json& document);

// Reads a Karta or ResourceInterface object as the API server stores it (a null where the CRD allows
// none removed, or defaulted when the field has a default; every default filled in): first against the
// published CRD's schema of its form (types, required fields, enums, unknown fields with a did-you-mean,
// CEL rules), as the API server would, then
// the rules of the published validator (one root with a full kind and a status definition, owners that
// exist, no cycle, at most one spec definition, instanceIdPath with componentInstanceSelector), then the
// extensions annotation. Every fault is reported, not only the first: a schema fault does not stop the
// reading (see DefinitionParse::partial).
DefinitionParse parse_karta_definition(const json& document, const std::string& source);

// What a jq field is evaluated on.
enum class JqSubject { Object, Pod };

struct DefinitionJqField {
  const JqField* field;
  JqSubject input;
};

// Every jq expression of a definition, with the field it sits in: those read from the workload first
// (as jq_fields()), then those evaluated on pods (pod selectors, gang filters and group-by paths).
std::vector<JqField> jq_fields(const KartaDefinition& definition);
std::vector<DefinitionJqField> all_jq_fields(const KartaDefinition& definition);

}  // namespace karta
