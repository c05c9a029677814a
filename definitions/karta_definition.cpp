#include "definitions/karta_definition.h"

#include <map>
#include <set>

#include "definitions/api/published_api.h"
#include "definitions/extensions_annotation.h"
#include "definitions/object_reader.h"
#include "k8s/openapi_schema.h"

namespace karta {

using definition_reading::index_field;
using definition_reading::ObjectReader;
using definition_reading::read_extensions;

namespace {

struct StatusKey {
  ResourceStatus status;
  const char* name;  // "Running"
  const char* key;   // "running"
  bool resource_interface;  // also in the older ResourceInterface form
};

constexpr StatusKey kStatuses[] = {
    {ResourceStatus::Initializing, "Initializing", "initializing", true},
    {ResourceStatus::Running, "Running", "running", true},
    {ResourceStatus::Completed, "Completed", "completed", true},
    {ResourceStatus::Failed, "Failed", "failed", true},
    {ResourceStatus::Degraded, "Degraded", "degraded", true},
    {ResourceStatus::Suspended, "Suspended", "suspended", false},
    {ResourceStatus::Suspending, "Suspending", "suspending", false},
    {ResourceStatus::Resuming, "Resuming", "resuming", false},
    {ResourceStatus::Undefined, "Undefined", "", false},
};

// Reads the published form of one definition; `form` says which fields exist.
class DefinitionReader {
 public:
  DefinitionReader(DefinitionForm form, std::vector<DefinitionFault>& faults) : form_(form), faults_(faults) {}

  bool karta() const { return form_ == DefinitionForm::Karta; }

  GroupVersionKind gvk(const json& value, const std::string& path) {
    ObjectReader reader(value, path, faults_);
    GroupVersionKind gvk;
    gvk.group = reader.string("group", true).value_or("");
    gvk.version = reader.string("version", true).value_or("");
    gvk.kind = reader.string("kind", true).value_or("");
    return gvk;
  }

  FragmentedPodSpecDefinition fragmented(const json& value, const std::string& path) {
    ObjectReader reader(value, path, faults_);
    FragmentedPodSpecDefinition f;
    f.labels = reader.jq("labelsPath");
    f.annotations = reader.jq("annotationsPath");
    f.scheduler_name = reader.jq("schedulerNamePath");
    f.resources = reader.jq("resourcesPath");
    f.resource_claims = reader.jq("resourceClaimsPath");
    f.pod_affinity = reader.jq("podAffinityPath");
    f.node_affinity = reader.jq("nodeAffinityPath");
    f.containers = reader.jq("containersPath");
    f.container = reader.jq("containerPath");
    f.priority_class_name = reader.jq("priorityClassNamePath");
    f.image = reader.jq("imagePath");
    return f;
  }

  SpecDefinition spec(const json& value, const std::string& path) {
    ObjectReader reader(value, path, faults_);
    SpecDefinition spec;
    spec.pod_template_spec = reader.jq("podTemplateSpecPath");
    spec.pod_spec = reader.jq("podSpecPath");
    spec.metadata = reader.jq("metadataPath");
    if (const json* fragmented = reader.object("fragmentedPodSpecDefinition")) {
      spec.fragmented = this->fragmented(*fragmented, reader.field("fragmentedPodSpecDefinition"));
    }
    int kinds = (spec.pod_template_spec ? 1 : 0) + (spec.pod_spec ? 1 : 0) + (spec.fragmented ? 1 : 0);
    if (kinds > 1) {
      reader.fault(path, "holds more than one of podTemplateSpecPath, podSpecPath and fragmentedPodSpecDefinition; "
                         "a component has one pod spec definition");
    }
    if (spec.metadata && !spec.pod_spec) reader.fault(reader.field("metadataPath"), "goes with podSpecPath only");
    return spec;
  }

  ScaleDefinition scale(const json& value, const std::string& path) {
    ObjectReader reader(value, path, faults_);
    return {reader.jq("replicasPath"), reader.jq("minReplicasPath"), reader.jq("maxReplicasPath")};
  }

  StatusRule rule(const json& value, const std::string& path) {
    ObjectReader reader(value, path, faults_);
    StatusRule rule;
    if (const json* conditions = reader.array("byConditions")) {
      for (std::size_t i = 0; i < conditions->size(); ++i) {
        ObjectReader condition((*conditions)[i], index_field(reader.field("byConditions"), i), faults_);
        ConditionMatch match;
        match.type = condition.string("type", true).value_or("");
        match.status = condition.string("status");
        match.reason = condition.string("reason");
        rule.by_conditions.push_back(std::move(match));
      }
    }
    if (auto phase = reader.string("byPhase"); phase && !phase->empty()) rule.by_phase = phase;
    if (const json* expression = reader.object("byExpression")) {
      ObjectReader check(*expression, reader.field("byExpression"), faults_);
      auto text = check.jq("expression", true);
      auto expected = check.string("expectedResult", true);
      if (text && expected) rule.by_expression = ExpressionCheck{*text, *expected};
    }
    return rule;
  }

  StatusDefinition status(const json& value, const std::string& path) {
    ObjectReader reader(value, path, faults_);
    StatusDefinition status;
    if (const json* conditions = reader.object("conditionsDefinition")) {
      ObjectReader c(*conditions, reader.field("conditionsDefinition"), faults_);
      ConditionsDefinition definition;
      if (auto p = c.jq("path", true)) definition.path = *p;
      // The CRD's defaults, as the API server fills them in.
      definition.type_field = c.string("typeFieldName").value_or("type");
      definition.status_field = c.string("statusFieldName").value_or("status");
      definition.message_field = c.string("messageFieldName").value_or("message");
      definition.reason_field = c.string("reasonFieldName").value_or("reason");
      status.conditions = definition;
    }
    if (const json* phase = reader.object("phaseDefinition")) {
      ObjectReader p(*phase, reader.field("phaseDefinition"), faults_);
      status.phase = p.jq("path", true);
    }
    if (const json* mappings = reader.object("statusMappings", true)) {
      ObjectReader m(*mappings, reader.field("statusMappings"), faults_);
      for (const auto& entry : kStatuses) {
        if (*entry.key == '\0' || (!karta() && !entry.resource_interface)) continue;
        const json* rules = m.array(entry.key);
        if (rules == nullptr) continue;
        auto& list = status.mappings[entry.status];
        for (std::size_t i = 0; i < rules->size(); ++i) {
          list.push_back(rule((*rules)[i], index_field(m.field(entry.key), i)));
        }
      }
    }
    return status;
  }

  std::vector<SuspendAction> actions(const json& list, const std::string& path) {
    std::vector<SuspendAction> actions;
    if (list.empty()) ObjectReader(json::object(), "", faults_).fault(path, "needs at least one action");
    for (std::size_t i = 0; i < list.size(); ++i) {
      ObjectReader reader(list[i], index_field(path, i), faults_);
      auto target = reader.jq("path", true);
      auto value = reader.string("value", true);
      if (!target || !value) continue;
      SuspendAction action{*target, *value, nullptr};
      try {
        action.parsed_value = json::parse(*value);
      } catch (const json::exception&) {
        reader.fault(reader.field("value"), "`" + *value + "` is not JSON text (write \"true\", \"0\", "
                                            "\"\\\"paused\\\"\" or \"null\")");
        continue;
      }
      actions.push_back(std::move(action));
    }
    return actions;
  }

  SuspendDefinition suspend(const json& value, const std::string& path) {
    ObjectReader reader(value, path, faults_);
    SuspendDefinition suspend;
    if (const json* list = reader.array("suspendActions", true)) suspend.suspend_actions = actions(*list, reader.field("suspendActions"));
    if (const json* list = reader.array("resumeActions", true)) suspend.resume_actions = actions(*list, reader.field("resumeActions"));
    return suspend;
  }

  PodSelector pod_selector(const json& value, const std::string& path) {
    ObjectReader reader(value, path, faults_);
    PodSelector selector;
    if (const json* instance = reader.object("componentInstanceSelector")) {
      ObjectReader r(*instance, reader.field("componentInstanceSelector"), faults_);
      selector.instance_id_path = r.jq("idPath", true);
    }
    if (const json* type = reader.object("componentTypeSelector")) {
      ObjectReader r(*type, reader.field("componentTypeSelector"), faults_);
      ComponentTypeSelector t;
      t.key_path = r.jq("keyPath");
      t.value = r.string("value");
      if (karta()) t.match_labels = r.string_map("matchLabels");
      // The CRD's CEL rules.
      if (!r.has("keyPath") && !r.has("matchLabels")) r.fault(reader.field("componentTypeSelector"), "at least one of keyPath or matchLabels must be set");
      if (r.has("value") && !r.has("keyPath")) r.fault(reader.field("componentTypeSelector"), "value requires keyPath");
      selector.component_type = std::move(t);
    }
    if (const json* replica = reader.object("replicaSelector")) {
      ObjectReader r(*replica, reader.field("replicaSelector"), faults_);
      selector.replica_key_path = r.jq("keyPath", true);
    }
    return selector;
  }

  Component component(const json& value, const std::string& path, bool is_root) {
    ObjectReader reader(value, path, faults_);
    Component component;
    component.name = reader.string("name", true, /*allow_empty=*/false).value_or("");
    if (const json* kind = reader.object("kind")) component.kind = gvk(*kind, reader.field("kind"));
    component.owner_ref = reader.string("ownerRef");
    if (const json* spec = reader.object("specDefinition")) component.spec = this->spec(*spec, reader.field("specDefinition"));
    if (const json* scale = reader.object("scaleDefinition")) component.scale = this->scale(*scale, reader.field("scaleDefinition"));
    if (const json* status = reader.object("statusDefinition")) {
      component.status = this->status(*status, reader.field("statusDefinition"));
    }
    if (karta()) {
      if (const json* suspend = reader.object("suspendDefinition")) {
        component.suspend = this->suspend(*suspend, reader.field("suspendDefinition"));
      }
    }
    component.instance_id = reader.jq("instanceIdPath");
    if (const json* selector = reader.object("podSelector")) {
      component.pod_selector = pod_selector(*selector, reader.field("podSelector"));
    }
    if (!reader.is_object()) return component;
    // The published validator's rules.
    if (is_root) {
      const auto& k = component.kind;
      if (!k || k->version.empty() || k->kind.empty() || (k->group.empty() && k->kind != "Pod")) {
        reader.fault(reader.field("kind"), "the root component needs a full kind: group, version and kind (only Pod "
                                           "has an empty group)");
      }
      if (component.owner_ref) reader.fault(reader.field("ownerRef"), "the root component has no owner");
      if (!component.status) reader.fault(reader.field("statusDefinition"), "is required on the root component");
    } else if (!component.owner_ref || component.owner_ref->empty()) {
      reader.fault(reader.field("ownerRef"), "is required on a child component (the name of its owner)");
    }
    bool has_instance_selector = component.pod_selector && component.pod_selector->instance_id_path;
    if (component.instance_id && !has_instance_selector) {
      reader.fault(reader.field("podSelector"), "needs componentInstanceSelector with instanceIdPath (how a pod "
                                                "names its instance)");
    }
    if (!component.instance_id && has_instance_selector) {
      reader.fault(reader.field("instanceIdPath"), "is required with podSelector.componentInstanceSelector");
    }
    return component;
  }

  std::optional<TopologyConstraint> topology(ObjectReader& parent) {
    const json* value = parent.object("topology");
    if (value == nullptr) return std::nullopt;
    ObjectReader reader(*value, parent.field("topology"), faults_);
    TopologyConstraint t;
    t.topology_name = reader.string("topologyName", true).value_or("");
    t.required_level = reader.string("requiredTopologyLevel", true).value_or("");
    t.preferred_level = reader.string("preferredTopologyLevel", true).value_or("");
    return t;
  }

  GangScheduling gang(const json& value, const std::string& path) {
    ObjectReader reader(value, path, faults_);
    GangScheduling gang;
    if (karta()) {
      if (const json* group = reader.object("podGroup")) {
        ObjectReader g(*group, reader.field("podGroup"), faults_);
        PodGroupDefinition pod_group;
        pod_group.name = g.string("name", true).value_or("");
        pod_group.topology = topology(g);
        if (const json* subs = g.array("subGroups")) {
          for (std::size_t i = 0; i < subs->size(); ++i) {
            ObjectReader s((*subs)[i], index_field(g.field("subGroups"), i), faults_);
            GangSubGroup sub;
            sub.component_name = s.string("componentName", true).value_or("");
            sub.topology = topology(s);
            pod_group.members.push_back(std::move(sub));
          }
        }
        gang.pod_groups.push_back(std::move(pod_group));
      }
    }
    // The deprecated form, the only one of ResourceInterface (where it is required).
    if (const json* groups = reader.array("podGroups", !karta())) {
      for (std::size_t i = 0; i < groups->size(); ++i) {
        ObjectReader g((*groups)[i], index_field(reader.field("podGroups"), i), faults_);
        PodGroupDefinition pod_group;
        pod_group.deprecated_form = true;
        pod_group.name = g.string("name", true).value_or("");
        if (const json* members = g.array("members", true)) {
          for (std::size_t m = 0; m < members->size(); ++m) {
            ObjectReader r((*members)[m], index_field(g.field("members"), m), faults_);
            GangSubGroup member;
            member.component_name = r.string("componentName", true).value_or("");
            member.filters = r.jq_list("filters");
            member.group_by_key_paths = r.jq_list("groupByKeyPaths");
            pod_group.members.push_back(std::move(member));
          }
        }
        gang.pod_groups.push_back(std::move(pod_group));
      }
    }
    return gang;
  }

 private:
  DefinitionForm form_;
  std::vector<DefinitionFault>& faults_;
};

// Component names unique, owners that exist and chains of owners without a cycle.
void structure_rules(const KartaDefinition& d, std::vector<DefinitionFault>& faults) {
  std::map<std::string, std::string> fields;  // component name -> its field
  for (const Component* c : d.components()) {
    std::string field = d.component_field(*c);
    if (!fields.emplace(c->name, field).second) {
      faults.push_back({field + ".name", "\"" + c->name + "\" is already the name of " + fields[c->name]});
    }
  }
  if (!faults.empty()) return;  // owners are looked up by name: with two of a name, they cannot be
  std::map<std::string, std::string> owner;
  for (const auto& c : d.children) {
    if (!c.owner_ref) continue;
    std::string field = d.component_field(c) + ".ownerRef";
    if (*c.owner_ref == c.name) {
      faults.push_back({field, "a component cannot own itself"});
    } else if (fields.count(*c.owner_ref) == 0) {
      faults.push_back({field, "\"" + *c.owner_ref + "\" names no component"});
    } else {
      owner[c.name] = *c.owner_ref;
    }
  }
  for (const auto& c : d.children) {
    std::set<std::string> seen{c.name};
    std::string at = c.name;
    while (owner.count(at) != 0) {
      at = owner[at];
      if (!seen.insert(at).second) {
        faults.push_back({d.component_field(c) + ".ownerRef", "the ownership of \"" + c.name + "\" runs in a cycle"});
        break;
      }
    }
  }
  if (d.gang) {
    for (const auto& group : d.gang->pod_groups) {
      for (std::size_t m = 0; m < group.members.size(); ++m) {
        if (fields.count(group.members[m].component_name) != 0) continue;
        std::string field = group.deprecated_form ? "spec.optimizationInstructions.gangScheduling.podGroups[\"" +
                                                        group.name + "\"].members[" + std::to_string(m) + "]"
                                                  : "spec.optimizationInstructions.gangScheduling.podGroup.subGroups[" +
                                                        std::to_string(m) + "]";
        faults.push_back({field + ".componentName", "\"" + group.members[m].component_name + "\" names no component"});
      }
    }
  }
}

std::optional<DefinitionForm> form_of(const json& document) {
  if (!document.is_object()) return std::nullopt;
  auto api_version = document.value("apiVersion", json()).is_string() ? document["apiVersion"].get<std::string>() : "";
  auto kind = document.value("kind", json()).is_string() ? document["kind"].get<std::string>() : "";
  if (api_version == "run.ai/v1alpha1" && kind == "Karta") return DefinitionForm::Karta;
  if (api_version == "optimization.nvidia.com/v1alpha1" && kind == "ResourceInterface") {
    return DefinitionForm::ResourceInterface;
  }
  return std::nullopt;
}

}  // namespace

const char* status_name(ResourceStatus status) {
  for (const auto& entry : kStatuses) {
    if (entry.status == status) return entry.name;
  }
  return "Undefined";
}

const char* status_mapping_key(ResourceStatus status) {
  for (const auto& entry : kStatuses) {
    if (entry.status == status) return entry.key;
  }
  return "";
}

std::vector<const Component*> KartaDefinition::components() const {
  std::vector<const Component*> all{&root};
  for (const auto& child : children) all.push_back(&child);
  return all;
}

const Component* KartaDefinition::find_component(const std::string& name) const {
  for (const Component* component : components()) {
    if (component->name == name) return component;
  }
  return nullptr;
}

std::string KartaDefinition::component_field(const Component& component) const {
  if (&component == &root) return "spec.structureDefinition.rootComponent";
  for (std::size_t i = 0; i < children.size(); ++i) {
    if (&children[i] == &component) return index_field("spec.structureDefinition.childComponents", i);
  }
  return "spec.structureDefinition";
}

bool is_definition_object(const json& document) { return form_of(document).has_value(); }

DefinitionParse parse_karta_definition(const json& original, const std::string& source) {
  DefinitionParse result;
  auto& faults = result.faults;
  auto form = form_of(original);
  if (!form) {
    std::string api_version = original.is_object() && original.value("apiVersion", json()).is_string()
                                  ? original["apiVersion"].get<std::string>() : "?";
    std::string kind = original.is_object() && original.value("kind", json()).is_string()
                           ? original["kind"].get<std::string>() : "?";
    faults.push_back({"kind", "expected run.ai/v1alpha1 Karta (or optimization.nvidia.com/v1alpha1 "
                              "ResourceInterface), not " + api_version + " " + kind});
    return result;
  }
  // As the API server stores it: a null where the CRD does not allow one removed, or replaced by the
  // field's default, and every default filled in; then checked against the published CRD as the API
  // server checks it.
  const auto schema = *form == DefinitionForm::Karta ? karta_schema() : resource_interface_schema();
  json document = original;
  apply_schema_defaults(*schema, document);
  for (auto& violation : validate_against_schema(*schema, document)) {
    faults.push_back({std::move(violation.field), std::move(violation.message)});
  }
  // A definition the API server would refuse is read all the same, so that its other faults (its jq,
  // its paths) are reported in the same run; what the reader finds wrong then only repeats the schema's
  // faults, and is dropped.
  const bool schema_faulty = !faults.empty();
  std::vector<DefinitionFault> repeated;
  std::vector<DefinitionFault>& reader_faults = schema_faulty ? repeated : faults;

  KartaDefinition definition;
  definition.source = source;
  definition.text = original.dump();
  definition.form = *form;
  DefinitionReader read(*form, reader_faults);
  {
    ObjectReader top(document, "", reader_faults);
    top.string("apiVersion", true);
    top.string("kind", true);
    const json* metadata = top.object("metadata");
    if (metadata != nullptr && metadata->contains("name") && (*metadata)["name"].is_string()) {
      definition.name = (*metadata)["name"].get<std::string>();
    }
    top.member("status");  // written by controllers; not ours to read
    if (const json* spec = top.object("spec", true)) {
      ObjectReader s(*spec, "spec", reader_faults);
      if (const json* structure = s.object("structureDefinition", true)) {
        ObjectReader st(*structure, "spec.structureDefinition", reader_faults);
        if (const json* root = st.object("rootComponent", true)) {
          definition.root = read.component(*root, st.field("rootComponent"), true);
        }
        if (const json* children = st.array("childComponents")) {
          for (std::size_t i = 0; i < children->size(); ++i) {
            definition.children.push_back(read.component((*children)[i], index_field(st.field("childComponents"), i), false));
          }
        }
        if (const json* kinds = st.array("additionalChildKinds")) {
          for (std::size_t i = 0; i < kinds->size(); ++i) {
            definition.additional_child_kinds.push_back(read.gvk((*kinds)[i], index_field(st.field("additionalChildKinds"), i)));
          }
        }
      }
      if (const json* instructions = s.object("optimizationInstructions")) {
        ObjectReader oi(*instructions, "spec.optimizationInstructions", reader_faults);
        if (const json* gang = oi.object("gangScheduling")) definition.gang = read.gang(*gang, oi.field("gangScheduling"));
      }
    }
    if (metadata != nullptr) read_extensions(*metadata, definition, faults);
  }  // readers report unknown fields as they go out of scope
  if (!schema_faulty) {
    if (faults.empty()) structure_rules(definition, faults);
  } else if (repeated.empty()) {
    // The structure rules may find what the schema already said at the same place (two components of
    // one name are also a duplicate entry of the list, keyed by name): only the rest is new.
    std::vector<DefinitionFault> structure;
    structure_rules(definition, structure);
    const std::size_t schema_count = faults.size();
    for (auto& fault : structure) {
      bool repeats = false;
      for (std::size_t i = 0; i < schema_count && !repeats; ++i) {
        const std::string& at = faults[i].field;
        repeats = fault.field == at ||
                  (fault.field.starts_with(at) && (fault.field[at.size()] == '.' || fault.field[at.size()] == '['));
      }
      if (!repeats) faults.push_back(std::move(fault));
    }
  }
  if (definition.name.empty() && definition.root.kind) definition.name = definition.root.kind->kind;
  if (faults.empty()) {
    result.definition = std::move(definition);
  } else if (definition.root.kind) {
    result.partial = std::move(definition);
  }
  return result;
}

}  // namespace karta
