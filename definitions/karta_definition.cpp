#include "definitions/karta_definition.h"

#include <algorithm>
#include <set>

namespace karta {
namespace {

constexpr const char* kSharedPhases[] = {"Initializing", "Running", "Completed", "Failed", "Degraded"};

const char* type_name(const json& value) { return value.type_name(); }

// Reads one JSON object field by field; fields nobody asked for are reported as unknown.
class ObjectReader {
 public:
  ObjectReader(const json& value, std::string path, std::vector<DefinitionFault>& faults)
      : value_(value), path_(std::move(path)), faults_(faults) {
    if (!value_.is_object()) {
      fault(path_, std::string("must be an object, not ") + type_name(value_));
    }
  }
  ObjectReader(const ObjectReader&) = delete;
  ObjectReader& operator=(const ObjectReader&) = delete;
  ~ObjectReader() { report_unknown_fields(); }

  bool is_object() const { return value_.is_object(); }
  std::string field(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  // The member, or nullptr when absent or null. A missing required member is a fault.
  const json* member(const std::string& key, bool required = false) {
    known_.insert(key);
    if (!value_.is_object()) return nullptr;
    auto it = value_.find(key);
    if (it == value_.end() || it->is_null()) {
      if (required) fault(field(key), "is required");
      return nullptr;
    }
    return &*it;
  }

  std::optional<std::string> string(const std::string& key, bool required = false,
                                    bool allow_empty = false) {
    const json* value = member(key, required);
    if (value == nullptr) return std::nullopt;
    if (!value->is_string()) {
      fault(field(key), std::string("must be a string, not ") + type_name(*value));
      return std::nullopt;
    }
    if (!allow_empty && value->get_ref<const std::string&>().empty()) {
      fault(field(key), "must not be empty");
      return std::nullopt;
    }
    return value->get<std::string>();
  }

  std::optional<JqField> jq(const std::string& key, bool required = false) {
    auto text = string(key, required);
    if (!text) return std::nullopt;
    return JqField{field(key), *text};
  }

  const json* object(const std::string& key, bool required = false) {
    const json* value = member(key, required);
    if (value != nullptr && !value->is_object()) {
      fault(field(key), std::string("must be an object, not ") + type_name(*value));
      return nullptr;
    }
    return value;
  }

  const json* array(const std::string& key, bool required = false) {
    const json* value = member(key, required);
    if (value != nullptr && !value->is_array()) {
      fault(field(key), std::string("must be a list, not ") + type_name(*value));
      return nullptr;
    }
    return value;
  }

  void fault(std::string where, std::string message) {
    faults_.push_back({std::move(where), std::move(message)});
  }

 private:
  void report_unknown_fields() {
    if (!value_.is_object()) return;
    for (const auto& [key, unused] : value_.items()) {
      if (known_.count(key) != 0) continue;
      std::string message = "unknown field";
      const std::string* closest = nullptr;
      // Suggest only near misses: up to a third of the name may differ ("podTemplatePath").
      std::size_t best = std::max<std::size_t>(3, key.size() / 3) + 1;
      for (const auto& candidate : known_) {
        std::size_t distance = edit_distance(key, candidate);
        if (distance < best) best = distance, closest = &candidate;
      }
      if (closest != nullptr) message += "; did you mean \"" + *closest + "\"?";
      fault(field(key), message);
    }
  }

  const json& value_;
  std::string path_;
  std::vector<DefinitionFault>& faults_;
  std::set<std::string> known_;
};

GroupVersionKind read_gvk(const json& value, const std::string& path, std::vector<DefinitionFault>& faults) {
  ObjectReader reader(value, path, faults);
  GroupVersionKind gvk;
  gvk.group = reader.string("group", false, /*allow_empty=*/true).value_or("");
  gvk.version = reader.string("version", true).value_or("");
  gvk.kind = reader.string("kind", true).value_or("");
  return gvk;
}

FragmentedPodSpecDefinition read_fragmented(const json& value, const std::string& path,
                                            std::vector<DefinitionFault>& faults) {
  ObjectReader reader(value, path, faults);
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
  f.tolerations = reader.jq("tolerationsPath");
  f.node_selector = reader.jq("nodeSelectorPath");
  return f;
}

SpecDefinition read_spec(const json& value, const std::string& path, std::vector<DefinitionFault>& faults) {
  ObjectReader reader(value, path, faults);
  SpecDefinition spec;
  spec.pod_template_spec = reader.jq("podTemplateSpecPath");
  spec.pod_spec = reader.jq("podSpecPath");
  spec.metadata = reader.jq("metadataPath");
  if (const json* extra = reader.array("additionalContainerPaths")) {
    for (std::size_t i = 0; i < extra->size(); ++i) {
      std::string where = reader.field("additionalContainerPaths") + "[" + std::to_string(i) + "]";
      if (!(*extra)[i].is_string() || (*extra)[i].get<std::string>().empty()) {
        reader.fault(where, "must be a jq path expression (a non-empty string)");
        continue;
      }
      spec.additional_containers.push_back({where, (*extra)[i].get<std::string>()});
    }
  }
  if (const json* fragmented = reader.object("fragmentedPodSpecDefinition")) {
    spec.fragmented = read_fragmented(*fragmented, reader.field("fragmentedPodSpecDefinition"), faults);
  }
  int kinds = (spec.pod_template_spec ? 1 : 0) + (spec.pod_spec ? 1 : 0) + (spec.fragmented ? 1 : 0);
  if (reader.is_object() && kinds != 1) {
    reader.fault(path, kinds == 0 ? "needs one of podTemplateSpecPath, podSpecPath, fragmentedPodSpecDefinition"
                                  : "must hold exactly one of podTemplateSpecPath, podSpecPath, "
                                    "fragmentedPodSpecDefinition");
  }
  if (spec.metadata && !spec.pod_spec) {
    reader.fault(reader.field("metadataPath"), "goes with podSpecPath only");
  }
  return spec;
}

ScaleDefinition read_scale(const json& value, const std::string& path, std::vector<DefinitionFault>& faults) {
  ObjectReader reader(value, path, faults);
  return {reader.jq("replicasPath"), reader.jq("minReplicasPath"), reader.jq("maxReplicasPath")};
}

StatusRule read_rule(const json& value, const std::string& path, std::vector<DefinitionFault>& faults) {
  ObjectReader reader(value, path, faults);
  StatusRule rule;
  if (const json* conditions = reader.array("byConditions")) {
    for (std::size_t i = 0; i < conditions->size(); ++i) {
      ObjectReader condition((*conditions)[i], reader.field("byConditions") + "[" + std::to_string(i) + "]",
                             faults);
      rule.by_conditions.push_back(
          {condition.string("type", true).value_or(""), condition.string("status", true).value_or("")});
    }
  }
  rule.by_phase = reader.string("byPhase");
  if (const json* expression = reader.object("byExpression")) {
    ObjectReader check(*expression, reader.field("byExpression"), faults);
    auto text = check.jq("expression", true);
    const json* expected = check.member("expectedResult");
    if (text) rule.by_expression = ExpressionCheck{*text, expected ? *expected : json(true)};
  }
  if (reader.is_object() && rule.by_conditions.empty() && !rule.by_phase && !rule.by_expression) {
    reader.fault(path, "needs byConditions, byPhase or byExpression");
  }
  return rule;
}

StatusDefinition read_status(const json& value, const std::string& path, std::vector<DefinitionFault>& faults) {
  ObjectReader reader(value, path, faults);
  StatusDefinition status;
  if (const json* conditions = reader.object("conditionsDefinition")) {
    ObjectReader c(*conditions, reader.field("conditionsDefinition"), faults);
    ConditionsDefinition definition;
    if (auto p = c.jq("path", true)) definition.path = *p;
    definition.type_field = c.string("typeFieldName").value_or("type");
    definition.status_field = c.string("statusFieldName").value_or("status");
    definition.message_field = c.string("messageFieldName").value_or("message");
    status.conditions = definition;
  }
  if (const json* phase = reader.object("phaseDefinition")) {
    ObjectReader p(*phase, reader.field("phaseDefinition"), faults);
    status.phase = p.jq("path", true);
  }
  if (const json* mappings = reader.object("statusMappings")) {
    for (const auto& [shared_phase, rules] : mappings->items()) {
      std::string where = reader.field("statusMappings") + "." + shared_phase;
      if (std::find(std::begin(kSharedPhases), std::end(kSharedPhases), shared_phase) == std::end(kSharedPhases)) {
        reader.fault(where, "is not a shared phase (Initializing, Running, Completed, Failed, Degraded)");
        continue;
      }
      if (!rules.is_array()) {
        reader.fault(where, std::string("must be a list of rules, not ") + type_name(rules));
        continue;
      }
      auto& list = status.mappings[shared_phase];
      for (std::size_t i = 0; i < rules.size(); ++i) {
        list.push_back(read_rule(rules[i], where + "[" + std::to_string(i) + "]", faults));
      }
    }
  }
  return status;
}

Component read_component(const json& value, const std::string& path, bool is_root,
                         std::vector<DefinitionFault>& faults) {
  ObjectReader reader(value, path, faults);
  Component component;
  component.name = reader.string("name", true).value_or("");
  if (const json* kind = reader.object("kind", true)) component.kind = read_gvk(*kind, reader.field("kind"), faults);
  component.owner_ref = reader.string("ownerRef");
  if (const json* spec = reader.object("specDefinition")) {
    component.spec = read_spec(*spec, reader.field("specDefinition"), faults);
  }
  if (const json* scale = reader.object("scaleDefinition")) {
    component.scale = read_scale(*scale, reader.field("scaleDefinition"), faults);
  }
  if (const json* status = reader.object("statusDefinition")) {
    component.status = read_status(*status, reader.field("statusDefinition"), faults);
  }
  component.instance_id = reader.jq("instanceIdPath");
  if (const json* selector = reader.object("podSelector")) component.pod_selector = *selector;
  if (is_root && component.owner_ref) reader.fault(reader.field("ownerRef"), "the root component has no owner");
  if (!is_root && !component.owner_ref && reader.is_object()) reader.fault(reader.field("ownerRef"), "is required");
  if (is_root && !component.status && reader.is_object()) {
    reader.fault(reader.field("statusDefinition"), "is required on the root component");
  }
  return component;
}

GangScheduling read_gang(const json& value, const std::string& path, std::vector<DefinitionFault>& faults) {
  ObjectReader reader(value, path, faults);
  GangScheduling gang;
  auto read_members = [&](const json& list, const std::string& where, const char* name_field) {
    std::vector<GangSubGroup> members;
    for (std::size_t i = 0; i < list.size(); ++i) {
      ObjectReader member(list[i], where + "[" + std::to_string(i) + "]", faults);
      GangSubGroup sub{member.string(name_field, true).value_or(""), nullptr};
      if (const json* topology = member.member("topology")) sub.topology = *topology;
      members.push_back(std::move(sub));
    }
    return members;
  };
  if (const json* group = reader.object("podGroup")) {
    ObjectReader g(*group, reader.field("podGroup"), faults);
    PodGroupDefinition pod_group;
    pod_group.name = g.string("name").value_or("");
    if (const json* topology = g.member("topology")) pod_group.topology = *topology;
    if (const json* subs = g.array("subGroups")) {
      pod_group.members = read_members(*subs, g.field("subGroups"), "componentName");
    }
    gang.pod_groups.push_back(std::move(pod_group));
  }
  if (const json* groups = reader.array("podGroups")) {  // deprecated form
    for (std::size_t i = 0; i < groups->size(); ++i) {
      ObjectReader g((*groups)[i], reader.field("podGroups") + "[" + std::to_string(i) + "]", faults);
      PodGroupDefinition pod_group;
      pod_group.name = g.string("name").value_or("");
      if (const json* topology = g.member("topology")) pod_group.topology = *topology;
      if (const json* members = g.array("members")) {
        pod_group.members = read_members(*members, g.field("members"), "componentName");
      }
      gang.pod_groups.push_back(std::move(pod_group));
    }
  }
  return gang;
}

}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

GroupVersionKind GroupVersionKind::from_api_version(const std::string& api_version, const std::string& kind) {
  auto slash = api_version.find('/');
  if (slash == std::string::npos) return {"", api_version, kind};
  return {api_version.substr(0, slash), api_version.substr(slash + 1), kind};
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

bool is_definition_object(const json& document) {
  if (!document.is_object()) return false;
  auto api_version = document.value("apiVersion", json()).is_string() ? document["apiVersion"].get<std::string>() : "";
  auto kind = document.value("kind", json()).is_string() ? document["kind"].get<std::string>() : "";
  return (api_version == "run.ai/v1alpha1" && kind == "Karta") ||
         (api_version == "optimization.nvidia.com/v1alpha1" && kind == "ResourceInterface");
}

DefinitionParse parse_karta_definition(const json& document, const std::string& source) {
  DefinitionParse result;
  auto& faults = result.faults;
  KartaDefinition definition;
  definition.source = source;
  definition.text = document.dump();
  {
    ObjectReader top(document, "", faults);
    auto api_version = top.string("apiVersion", true);
    auto kind = top.string("kind", true);
    if (api_version && kind && !is_definition_object(document)) {
      top.fault("kind", "expected run.ai/v1alpha1 Karta (or optimization.nvidia.com/v1alpha1 ResourceInterface), "
                        "not " + *api_version + " " + *kind);
    }
    if (const json* metadata = top.object("metadata")) {
      if (metadata->contains("name") && (*metadata)["name"].is_string()) {
        definition.name = (*metadata)["name"].get<std::string>();
      }
    }
    top.member("status");  // written by controllers; ignored
    if (const json* spec = top.object("spec", true)) {
      ObjectReader s(*spec, "spec", faults);
      if (const json* structure = s.object("structureDefinition", true)) {
        ObjectReader st(*structure, "spec.structureDefinition", faults);
        if (const json* root = st.object("rootComponent", true)) {
          definition.root = read_component(*root, st.field("rootComponent"), true, faults);
        }
        if (const json* children = st.array("childComponents")) {
          for (std::size_t i = 0; i < children->size(); ++i) {
            definition.children.push_back(read_component(
                (*children)[i], st.field("childComponents") + "[" + std::to_string(i) + "]", false, faults));
          }
        }
        if (const json* kinds = st.array("additionalChildKinds")) {
          for (std::size_t i = 0; i < kinds->size(); ++i) {
            definition.additional_child_kinds.push_back(
                read_gvk((*kinds)[i], st.field("additionalChildKinds") + "[" + std::to_string(i) + "]", faults));
          }
        }
      }
      if (const json* instructions = s.object("optimizationInstructions")) {
        ObjectReader oi(*instructions, "spec.optimizationInstructions", faults);
        if (const json* gang = oi.object("gangScheduling")) {
          definition.gang = read_gang(*gang, oi.field("gangScheduling"), faults);
        }
      }
    }
  }  // readers report unknown fields as they go out of scope
  if (definition.name.empty()) definition.name = definition.root.kind.kind;
  if (faults.empty()) result.definition = std::move(definition);
  return result;
}

std::vector<JqField> jq_fields(const KartaDefinition& definition) {
  std::vector<JqField> fields;
  auto add = [&](const std::optional<JqField>& field) {
    if (field) fields.push_back(*field);
  };
  for (const Component* c : definition.components()) {
    if (c->spec) {
      add(c->spec->pod_template_spec);
      add(c->spec->pod_spec);
      add(c->spec->metadata);
      for (const auto& extra : c->spec->additional_containers) fields.push_back(extra);
      if (const auto& f = c->spec->fragmented) {
        for (const auto* field : {&f->labels, &f->annotations, &f->scheduler_name, &f->resources, &f->resource_claims,
                                  &f->pod_affinity, &f->node_affinity, &f->containers, &f->container,
                                  &f->priority_class_name, &f->image, &f->tolerations, &f->node_selector}) {
          add(*field);
        }
      }
    }
    add(c->instance_id);
    if (c->scale) {
      add(c->scale->replicas);
      add(c->scale->min_replicas);
      add(c->scale->max_replicas);
    }
    if (c->status) {
      if (c->status->conditions) fields.push_back(c->status->conditions->path);
      add(c->status->phase);
      for (const auto& [phase, rules] : c->status->mappings) {
        for (const auto& rule : rules) {
          if (rule.by_expression) fields.push_back(rule.by_expression->expression);
        }
      }
    }
  }
  return fields;
}

}  // namespace karta
