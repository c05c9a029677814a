// Drafting a Karta from a CRD (karta_draft.h says what is inferred from what): the child components here,
// the root's status and suspend in root_draft.cpp, the YAML written line by line by draft_yaml.
// Longer than 500 lines because each inference from a CRD's schema (pod templates, pod specs, pods spelt
// out around a container, counts, gang sizes, instance ids, pod labels from descriptions) is read from the
// schema's shape here, beside the others it must not overlap with.

#include "generate/karta_draft.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

#include "generate/component_names.h"
#include "generate/draft_yaml.h"
#include "generate/fragmented_draft.h"
#include "generate/pod_counts.h"
#include "generate/pod_places.h"
#include "generate/pod_resources.h"
#include "generate/root_draft.h"
#include "json/documents.h"
#include "k8s/terminal_text.h"
#include "validate/crd_schema_nodes.h"

namespace karta {
namespace {

using draft_yaml::code;
using draft_yaml::lower;
using draft_yaml::quoted;
using draft_yaml::scalar;
using draft_yaml::Yaml;

using crd_schema_nodes::member;
using crd_schema_nodes::property;
using crd_schema_nodes::property_names;
using crd_schema_nodes::type_of;

// The label key a description says the operator puts on the pods ("Pods of a task carry the label
// `volcano.sh/task-spec`, set to the task's name"): a prefixed label key in backquotes or double quotes, in
// a description that speaks of pods and of a label; "" when there is none, or more than one.
std::string described_pod_label(const std::string& description) {
  const std::string text = lower(description);
  if (text.find("label") == std::string::npos || text.find("pod") == std::string::npos) return "";
  static const std::regex kQuotedKey(R"([`"]([a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)[`"])");
  std::set<std::string> keys;
  for (auto it = std::sregex_iterator(description.begin(), description.end(), kQuotedKey); it != std::sregex_iterator();
       ++it)
    keys.insert((*it)[1].str());
  return keys.size() == 1 ? *keys.begin() : "";
}


class Drafter {
 public:
  Drafter(const json& crd, std::string version, const json& schema)
      : crd_(crd), version_(std::move(version)), schema_(schema) {
    const json& spec = crd["spec"];
    group_ = spec["group"].get<std::string>();
    kind_ = spec["names"]["kind"].get<std::string>();
    crd_name_ = crd.value("metadata", json::object()).value("name", lower(kind_) + "." + group_);
    root_name_ = lower(kind_);
  }

  std::string draft() {
    if (const std::string why = runs_no_pods(); !why.empty())
      throw InputError("CustomResourceDefinition " + crd_name_ + " version " + version_ + ": " + kind_ + " " + why +
                       ": it runs no pods itself, so it is not drafted as a workload; draft the kind that names it");
    PodPlaces found = find_pod_places(schema_);
    for (PodPlace& place : found.places) undeclared_metadata(place);
    components_ = name_components(found.places, root_name_);
    gang_size_ = gang_size_field(found);
    groups_ = found.groups;
    header(found);
    y_.line(0, "apiVersion: run.ai/v1alpha1");
    y_.line(0, "kind: Karta");
    y_.line(0, "metadata:");
    y_.line(2, "name: " + scalar(root_name_ + "-" + lower(version_)));
    extensions();
    y_.line(0, "spec:");
    y_.line(2, "structureDefinition:");
    y_.line(4, "rootComponent:");
    y_.line(6, "name: " + scalar(root_name_));
    y_.line(6, "kind: {group: " + scalar(group_) + ", version: " + scalar(version_) + ", kind: " + scalar(kind_) + "}");
    draft_status(y_, schema_);
    draft_suspend(y_, schema_);
    if (components_.empty()) {
      unknown_pods();
      return y_.str();
    }
    y_.line(4, "childComponents:");
    for (const DraftComponent& component : components_) child(component);
    gang();
    return y_.str();
  }

 private:
  // Why the kind runs no pods of its own, "" when it may: a kind named for a runtime or a template (Kubeflow
  // Trainer's TrainingRuntime, Argo's WorkflowTemplate) whose schema has no `.status`, as nothing of its
  // own runs: other objects name it and run its pods.
  std::string runs_no_pods() const {
    if (property(schema_, "status") != nullptr) return "";
    for (const char* suffix : {"Runtime", "Template"})
      if (kind_.ends_with(suffix))
        return std::string("is a ") + (suffix[0] == 'R' ? "runtime" : "template") +
               " that other objects name (its name says so, and its schema has no status)";
    return "";
  }

  // A pod template whose schema declares no `metadata.labels` (nor keeps unknown fields there): labels
  // written there the API server would prune (a structural schema keeps declared fields only), so the draft
  // takes its pod spec, whose metadata is found as a pod spec's is, and says why.
  void undeclared_metadata(PodPlace& place) {
    if (place.shape != PodShape::PodTemplateSpec) return;
    const json& node = *place.steps.back().node;
    if (crd_schema_nodes::keeps_metadata_labels(node)) return;
    pruned_.insert(jq_path(place.steps));
    place.shape = PodShape::PodSpec;
    place.steps.push_back({SchemaStep::Kind::Field, "spec", false, property(node, "spec")});
  }

  // A kind with no pod place: the root, with a count and what is left to say where its pods are.
  void unknown_pods() {
    y_.comment(4, "fill in: the pods are unknown. The schema holds no pod template, pod spec or pod spelt out with");
    y_.comment(4, "its labels (a pod spec without a schema, or spelt as a container, is not one), so no child");
    y_.comment(4, "component is drafted: add one for each kind of pod the operator creates, with its specDefinition.");
    const json* spec = property(schema_, "spec");
    if (spec == nullptr) return;
    if (const auto fields = crd_schema_nodes::inline_pod_fields(*spec); !fields.empty()) {
      std::string names;
      for (const auto& field : fields) names += (names.empty() ? "" : ", ") + field;
      y_.comment(4, "`.spec` holds some fields of a pod (" + terminal_text(names) +
                        "): the operator's pods are built from them");
    }
    for (const char* name : {"replicas", "instances", "numNodes"}) {
      const json* count = property(*spec, name);
      if (count == nullptr || (type_of(*count) != "integer" && type_of(*count) != "int-or-string")) continue;
      y_.comment(4, "`.spec." + std::string(name) + "` is an integer: the pods' count, scaleDefinition.replicasPath: \".spec." +
                        name + " // 1\" of the component you add");
      break;
    }
  }

  void header(const PodPlaces& found) {
    const bool storage = version_ == storage_version(crd_);
    y_.comment(0, "Drafted by `karta-webhook generate` from the CustomResourceDefinition " + terminal_text(crd_name_) +
                      ", version " + terminal_text(version_) + (storage ? " (its storage version)" : "") + ".");
    y_.comment(0, "Each value was inferred from the CRD's schema; the comment above it says from what. Check them");
    y_.comment(0, "against the operator, then `karta-webhook validate` this file and `inspect -f` it on a sample.");
    y_.comment(0, "The schema cannot say:");
    y_.comment(0, "- which kind the operator creates from each pod place (a Pod is assumed), nor which of them run");
    y_.comment(0, "  together (a mode field that turns components on and off is not read);");
    y_.comment(0, gang_size_.empty() ? "- the labels the operator puts on its pods (an idPath below is a placeholder), "
                                       "and gang scheduling (none)."
                                     : "- the labels the operator puts on its pods (an idPath below is a placeholder), "
                                       "and which pods form the gang (all, below).");
    for (const SchemaSteps& shared : found.shared)
      y_.comment(0, "Not a pod: " + code(jq_path(shared)) + " holds pod fields shared by the components below it.");
    for (const SchemaSteps& group : found.groups)
      y_.comment(0, "Not a pod of its own: " + code(jq_path(group)) +
                        " overrides fields of the pod that holds it, as a group of it.");
    for (const NotAPod& field : found.not_pods)
      y_.comment(0, "Not a pod: " + code(jq_path(field.steps)) +
                        (field.patches ? " patches pods that another object describes."
                                       : " holds defaults for the pods of others."));
  }

  void extensions() {
    std::vector<std::string> lines;
    bool spelt = false, containers = false, requests = false;
    for (const DraftComponent& component : components_) {
      const json& node = *component.place->steps.back().node;
      std::vector<std::string> fields;
      if (component.place->shape == PodShape::Fragmented) {
        if (const PodField tolerations = pod_field(*component.place, "tolerations"); tolerations.node != nullptr)
          fields.push_back("tolerationsPath: " + scalar(component.field(tolerations.path)));
        if (const PodField selector = pod_field(*component.place, "nodeSelector"); selector.node != nullptr)
          fields.push_back("nodeSelectorPath: " + scalar(component.field(selector.path)));
        spelt = spelt || !fields.empty();
        if (const auto gpu = quantity_request_fields(node); !gpu.empty()) {
          fields.push_back("gpuRequestPath: " + scalar(component.field("." + gpu[0])));
          requests = true;
        }
      }
      if (const auto extra = additional_container_fields(*component.place); !extra.empty()) {
        fields.push_back("additionalContainerPaths:");
        for (const auto& name : extra) fields.push_back("  - " + scalar(component.field("." + name)));
        containers = true;
      }
      if (fields.empty()) continue;
      lines.push_back("  " + component.name + ":");
      for (const auto& field : fields) lines.push_back("    " + field);
    }
    const std::string workload_labels = workload_pod_labels();
    const std::vector<std::string> equivalents = equivalent_versions(crd_, version_);
    if (lines.empty() && workload_labels.empty() && gang_size_.empty() && equivalents.empty()) return;
    y_.line(2, "annotations:");
    if (!equivalents.empty())
      y_.comment(4, "equivalentVersions: the CRD serves them with " + version_ + "'s schema: read as " + version_);
    if (!workload_labels.empty()) {
      y_.comment(4, code(workload_labels) + " is the labels map of an object of `.spec` named for its pods'");
      y_.comment(4, "metadata: the labels of every pod, where the workload's own labels go");
    }
    if (!gang_size_.empty())
      y_.comment(4, code(gang_size_) + " is the gang size the operator schedules by: a gang policy writes it");
    if (spelt) {
      y_.comment(4, "tolerations and nodeSelector of pods spelt out field by field have no field in the published");
      y_.comment(4, "fragmentedPodSpecDefinition: karta-webhook reads them from its extensions annotation");
    }
    if (containers)
      y_.comment(4, "additionalContainerPaths: objects of a pod spec that each hold a container of its own (image, "
                    "resources), whose GPUs count");
    if (requests)
      y_.comment(4, "gpuRequestPath: a `{name, quantity}` request of each pod, a GPU when `name` is one");
    y_.line(4, "karta-webhook.io/extensions: |");
    if (!workload_labels.empty()) y_.line(6, "workloadPodLabelsPath: " + scalar(workload_labels));
    if (!gang_size_.empty()) y_.line(6, "gangMinMemberPath: " + scalar(gang_size_));
    if (!equivalents.empty()) {
      std::string list;
      for (const std::string& v : equivalents) list += (list.empty() ? "" : ", ") + scalar(v);
      y_.line(6, "equivalentVersions: [" + list + "]");
    }
    if (lines.empty()) return;
    y_.line(6, "components:");
    for (const auto& text : lines) y_.line(6, text);
  }

  // `.spec.podMetadata.labels`: the labels of an object of `.spec` that is named for the metadata of its
  // pods (Argo's podMetadata, "metadata that should be applied to workflow pods"), outside every place.
  std::string workload_pod_labels() const {
    const json* spec = property(schema_, "spec");
    if (spec == nullptr) return "";
    const std::string name = pod_metadata_field(*spec);
    if (name.empty()) return "";
    return jq_path({{SchemaStep::Kind::Field, "spec", false, spec},
                    {SchemaStep::Kind::Field, name, false, property(*spec, name)},
                    {SchemaStep::Kind::Field, "labels", false, nullptr}});
  }

  void child(const DraftComponent& component) {
    const PodPlace& place = *component.place;
    const SchemaSteps& steps = place.steps;
    const std::string at = jq_path(steps);
    const json& node = *steps.back().node;
    switch (place.shape) {
      case PodShape::PodTemplateSpec:
        y_.comment(6, code(at) + " is a PodTemplateSpec: an object whose `spec` has `containers`");
        break;
      case PodShape::PodSpec:
        y_.comment(6, code(at) + " is a PodSpec: an object with `containers`");
        if (const std::string parent = jq_path(steps, steps.size() - 1); pruned_.count(parent) != 0) {
          y_.comment(6, code(parent) + " is a pod template whose schema declares no `metadata.labels`: the API server");
          y_.comment(6, "would prune labels put there, so its pod spec is described. If the operator copies the");
          y_.comment(6, "object's own labels to its pods, add `metadataPath: .metadata`");
        }
        break;
      case PodShape::Fragmented: {
        if (!place.overlay.empty()) {
          y_.comment(6, code(at) + " has `resources` of its own beside the PodSpec " + code(place.overlay) +
                            ": the operator builds the pod");
          y_.comment(6, "from it and lays the PodSpec over, whose scheduling fields and container are read there; "
                        "unsure: check it");
          break;
        }
        std::string fields;
        for (const auto& field : crd_schema_nodes::inline_pod_fields(node))
          fields += (fields.empty() ? "" : ", ") + field;
        if (property(node, "podLabels") == nullptr && property(node, "labels") != nullptr) fields = "labels, " + fields;
        if (!place.containers.empty()) {
          std::string names;
          for (const auto& name : place.containers) names += (names.empty() ? "" : " or ") + code(name);
          y_.comment(6, code(at) + " holds a container of its own (" + names + ") beside fields of its pod (" +
                            terminal_text(fields.empty() ? "metadata" : fields) + ")");
          if (place.containers.size() > 1 || steps.back().kind != SchemaStep::Kind::Field)
            y_.comment(6, "only those with a container make a pod: every path below keeps them, with " +
                              code(component.select));
        } else if (const std::string resources = resources_field(node); property(node, "image") != nullptr &&
                                                                        !resources.empty() && fields.empty()) {
          y_.comment(6, code(at) + " gives the image and the resources (" + code(resources) +
                            ") of each of its pods, and has no pod template");
        } else {
          y_.comment(6, code(at) + " spells a pod out field by field (" + terminal_text(fields) +
                            ") and has no pod template");
        }
        break;
      }
    }
    y_.comment(6, component.named_after.empty() ? "named `pod`: no field on the way to it names it"
                                                : "named after " + component.named_after);
    y_.line(6, "- name: " + scalar(component.name));
    y_.comment(8, "assumed: the CRD does not say which kind the operator creates for these pods");
    y_.line(8, "kind: {group: \"\", version: v1, kind: Pod}");
    y_.line(8, "ownerRef: " + scalar(root_name_));
    y_.line(8, "specDefinition:");
    if (place.shape == PodShape::PodTemplateSpec) {
      y_.line(10, "podTemplateSpecPath: " + scalar(at));
    } else if (place.shape == PodShape::PodSpec) {
      y_.line(10, "podSpecPath: " + scalar(at));
      metadata(component);
    } else {
      draft_fragmented(y_, component);
    }
    instance_ids(component);
    draft_scale(y_, component, components_, groups_, schema_);
  }

  // The nearest object, from the pod spec up to its list element, that holds `labels` and `annotations`:
  // the map the operator copies onto the pods, as KServe's components and LLMInferenceService's spec do.
  void metadata(const DraftComponent& component) {
    const SchemaSteps& steps = component.place->steps;
    const std::size_t c = innermost_collection(steps);
    const std::size_t lowest = c == std::string::npos ? 1 : c + 1;
    for (std::size_t k = steps.size(); k >= lowest && k > 0; --k) {
      const json& node = *steps[k - 1].node;
      if (property(node, "labels") == nullptr || property(node, "annotations") == nullptr) continue;
      const std::string path = jq_path(steps, k);
      if (auto owner = metadata_owners_.find(path); owner != metadata_owners_.end()) {
        y_.comment(10, "no metadataPath: " + code(path) +
                           ", the nearest object with `labels` and `annotations`, is "
                           "already component " +
                           terminal_text(owner->second) + "'s");
        return;
      }
      metadata_owners_[path] = component.name;
      y_.comment(10, code(path) + " is the nearest object with `labels` and `annotations`: its pods' metadata");
      y_.line(10, "metadataPath: " + scalar(path));
      return;
    }
    y_.comment(10, "no metadataPath: no object from the pod spec up holds `labels` and `annotations`");
  }

  void instance_ids(const DraftComponent& component) {
    const SchemaSteps& steps = component.place->steps;
    const std::size_t c = innermost_collection(steps);
    if (c == std::string::npos) return;
    const std::string collection = jq_path(steps, c);
    if (steps[c].kind == SchemaStep::Kind::Values) {
      y_.comment(8, code(collection) + " is a map: its keys name the instances (in sorted order, as `[]` walks it)");
      y_.line(8,
              "instanceIdPath: " + scalar(collection + (c > 0 && steps[c - 1].optional ? " // {}" : "") + " | keys[]"));
      return instance_selector(steps, c);
    }
    const json& element = *steps[c].node;
    std::string key;
    if (const json* name = property(element, "name"); name != nullptr && type_of(*name) == "string") {
      key = "name";
    } else {
      std::vector<std::string> names;
      const json* required = member(element, "required");
      for (const std::string& field : property_names(element)) {
        const json* value = property(element, field);
        if (field.ends_with("Name") && type_of(*value) == "string" && required != nullptr && required->is_array() &&
            std::find(required->begin(), required->end(), field) != required->end())
          names.push_back(field);
      }
      if (names.size() == 1) key = names[0];
    }
    if (key.empty()) {
      y_.comment(8, "no instanceIdPath: the items of " + code(collection) + " have no `name`; instances are numbered");
      return;
    }
    const std::string path = c + 1 == steps.size() ? component.field("." + key) : jq_path(steps, c + 1) + "." + key;
    y_.comment(8, code(collection) + " is a list of objects keyed by " + code(key) + ": it names the instances");
    y_.line(8, "instanceIdPath: " + scalar(path));
    instance_selector(steps, c);
  }

  // An instance id needs a pod's way to name its instance (the published rules), which only the operator's
  // labels can give: the label a description on the way to the pods names, else a placeholder, said to be
  // one.
  void instance_selector(const SchemaSteps& steps, std::size_t collection) {
    y_.line(8, "podSelector:");
    y_.line(10, "componentInstanceSelector:");
    const std::size_t from = collection > 0 ? collection - 1 : 0;
    for (std::size_t k = from; k < steps.size(); ++k) {
      const json* description = member(*steps[k].node, "description");
      if (description == nullptr || !description->is_string()) continue;
      const std::string key = described_pod_label(description->get<std::string>());
      if (key.empty()) continue;
      y_.comment(12, "the description of " + code(jq_path(steps, k + 1)) + " says the pods carry the label " +
                         code(key));
      y_.line(12, "idPath: " + quoted(".metadata.labels[" + quoted(key) + "]"));
      return;
    }
    y_.comment(12, "placeholder: the CRD does not say which label the operator puts on the pods; replace it");
    y_.line(12, "idPath: " + quoted(".metadata.labels[" + quoted(group_ + "/instance") + "]"));
  }

  // An integer gang size of the whole workload (`minAvailable`, `minMember`, or a `minReplicas` that is no
  // scale bound: no `replicas` or `maxReplicas` beside it) in `.spec` or in an object of it, up to three
  // fields deep and outside every pod place (Volcano's .spec.minAvailable, Kubeflow's
  // .spec.runPolicy.schedulingPolicy.minAvailable): the operator gang-schedules the pods, so the draft has
  // one pod group of every component. The shallowest wins.
  std::string gang_size_field(const PodPlaces& found) const {
    std::set<const json*> places;
    for (const PodPlace& place : found.places) places.insert(place.steps.back().node);
    const json* spec = property(schema_, "spec");
    if (spec == nullptr) return "";
    std::vector<SchemaSteps> level{{{SchemaStep::Kind::Field, "spec", false, spec}}};
    for (int depth = 0; depth < 3 && !level.empty(); ++depth) {
      std::vector<SchemaSteps> next;
      for (const SchemaSteps& steps : level) {
        const json& node = *steps.back().node;
        for (const char* name : {"minAvailable", "minMember", "minReplicas"}) {
          // An integer only: a PodDisruptionBudget's minAvailable, an integer or a percentage, is no gang.
          if (const json* field = property(node, name); field == nullptr || type_of(*field) != "integer") continue;
          if (std::string(name) == "minReplicas" &&
              (property(node, "replicas") != nullptr || property(node, "maxReplicas") != nullptr))
            continue;
          return jq_path(steps) + "." + name;
        }
        for (const std::string& name : property_names(node)) {
          const json* child = property(node, name);
          if (type_of(*child) != "object" || places.count(child) != 0) continue;
          SchemaSteps deeper = steps;
          deeper.push_back({SchemaStep::Kind::Field, name, false, child});
          next.push_back(std::move(deeper));
        }
      }
      level = std::move(next);
    }
    return "";
  }

  void gang() {
    const std::string& size = gang_size_;
    if (size.empty()) return;
    y_.line(2, "optimizationInstructions:");
    y_.line(4, "gangScheduling:");
    y_.comment(6, code(size) + " is an integer gang size: the operator runs the pods as one gang. Its minimum is");
    y_.comment(6, "that size where the object sets it (gangMinMemberPath above), else the pods of the components below");
    y_.line(6, "podGroup:");
    y_.line(8, "name: " + scalar(root_name_));
    y_.line(8, "subGroups:");
    for (const DraftComponent& component : components_) y_.line(10, "- componentName: " + scalar(component.name));
  }

  const json& crd_;
  std::string version_;
  const json& schema_;
  std::string group_, kind_, crd_name_, root_name_;
  std::vector<DraftComponent> components_;
  std::string gang_size_;  // the path of the gang size field, "" when none
  std::vector<SchemaSteps> groups_;  // PodPlaces::groups: pods spelt out again in a list of a place
  std::map<std::string, std::string> metadata_owners_;
  std::set<std::string> pruned_;  // pod templates whose metadata the schema does not declare
  Yaml y_;
};

}  // namespace

std::string storage_version(const json& crd) {
  const json spec = crd.value("spec", json::object());
  if (spec.contains("versions") && spec["versions"].is_array()) {
    for (const json& version : spec["versions"])
      if (version.is_object() && version.value("storage", false) && version.value("name", json()).is_string())
        return version["name"].get<std::string>();
    if (spec["versions"].size() == 1 && spec["versions"][0].value("name", json()).is_string())
      return spec["versions"][0]["name"].get<std::string>();
  }
  if (spec.value("version", json()).is_string()) return spec["version"].get<std::string>();
  return "";
}

const json* version_schema(const json& crd, const std::string& version) {
  const json& spec = crd["spec"];
  const json* shared = nullptr;
  if (spec.contains("validation") && spec["validation"].is_object() && spec["validation"].contains("openAPIV3Schema"))
    shared = &spec["validation"]["openAPIV3Schema"];
  if (spec.contains("versions") && spec["versions"].is_array()) {
    for (const json& entry : spec["versions"]) {
      if (!entry.is_object() || entry.value("name", json()) != version) continue;
      if (entry.contains("served") && entry["served"] == false) return nullptr;
      if (entry.contains("schema") && entry["schema"].is_object() && entry["schema"].contains("openAPIV3Schema"))
        return entry["schema"]["openAPIV3Schema"].is_object() ? &entry["schema"]["openAPIV3Schema"] : nullptr;
      return shared != nullptr && shared->is_object() ? shared : nullptr;
    }
  }
  if (spec.value("version", json()) == version && shared != nullptr && shared->is_object()) return shared;
  return nullptr;
}

std::string draft_karta(const json& crd, const std::optional<std::string>& version) {
  if (!crd.is_object() || crd.value("kind", json()) != "CustomResourceDefinition" || !crd.contains("spec") ||
      !crd["spec"].is_object())
    throw InputError("not a CustomResourceDefinition");
  const json& spec = crd["spec"];
  const std::string name = crd.value("metadata", json::object()).value("name", json("(unnamed)")).is_string()
                               ? crd["metadata"].value("name", "(unnamed)")
                               : "(unnamed)";
  if (!spec.value("group", json()).is_string() || !spec.value("names", json()).is_object() ||
      !spec["names"].value("kind", json()).is_string())
    throw InputError("CustomResourceDefinition " + name + ": spec.group and spec.names.kind are required");
  const std::string chosen = version ? *version : storage_version(crd);
  if (chosen.empty())
    throw InputError("CustomResourceDefinition " + name + ": it has no storage version; give --version");
  const json* schema = version_schema(crd, chosen);
  if (schema == nullptr)
    throw InputError("CustomResourceDefinition " + name + ": no served version " + chosen + " with a schema");
  return Drafter(crd, chosen, *schema).draft();
}

}  // namespace karta
