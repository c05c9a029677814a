#include "generate/fragmented_draft.h"

#include <string>
#include <vector>

#include "generate/pod_places.h"
#include "validate/crd_schema_nodes.h"

namespace karta {
namespace {

using crd_schema_nodes::property;
using crd_schema_nodes::property_names;
using crd_schema_nodes::type_of;
using draft_yaml::code;
using draft_yaml::lower;
using draft_yaml::scalar;
using draft_yaml::Yaml;
using json = nlohmann::json;

// What sizes a pod outside a ResourceRequirements, which no field of the published
// fragmentedPodSpecDefinition reads: said, so that whoever completes the draft knows it goes uncounted.
void unread_resources(Yaml& out, const DraftComponent& component, const json& node) {
  std::string sizes;
  for (const char* name : {"cores", "coreRequest", "memory"})
    if (property(node, name) != nullptr) sizes += std::string(sizes.empty() ? "" : ", ") + "`" + name + "`";
  if (!sizes.empty())
    out.comment(12, "not read: " + sizes + " of " + code(jq_path(component.place->steps)) +
                        " size the pod's CPU and memory outside a ResourceRequirements");
}

// The pod's labels and annotations: those of an object named for its pods' metadata beside a PodSpec laid
// over it (Dynamo's `extraPodMetadata`: the service's own `labels` go to its Services too), else its own
// maps, else those of its `metadata` (Argo's templates).
void labels_and_annotations(Yaml& out, const DraftComponent& component, const json& node) {
  auto field = [&](const char* name, const std::string& path) {
    out.line(12, std::string(name) + ": " + scalar(component.field(path)));
  };
  if (const std::string meta = pod_metadata_field(node); !component.place->overlay.empty() && !meta.empty()) {
    field("labelsPath", "." + meta + ".labels");
    if (property(*property(node, meta), "annotations") != nullptr) field("annotationsPath", "." + meta + ".annotations");
    return;
  }
  const json* metadata = property(node, "metadata");
  auto in_metadata = [&](const char* name) { return metadata != nullptr && property(*metadata, name) != nullptr; };
  const bool own = property(node, "podLabels") != nullptr || property(node, "labels") != nullptr;
  if (property(node, "podLabels") != nullptr)
    field("labelsPath", ".podLabels");
  else if (own)
    field("labelsPath", ".labels");
  else if (in_metadata("labels"))
    field("labelsPath", ".metadata.labels");
  else
    out.comment(12, "no labelsPath: " + code(jq_path(component.place->steps)) + " holds no labels for its pods");
  if (property(node, "podAnnotations") != nullptr)
    field("annotationsPath", ".podAnnotations");
  else if (own && property(node, "annotations") != nullptr)
    field("annotationsPath", ".annotations");
  else if (!own && in_metadata("annotations"))
    field("annotationsPath", ".metadata.annotations");
}

}  // namespace

std::string resources_field(const json& node) {
  if (property(node, "resources") != nullptr) return "resources";
  for (const std::string& name : property_names(node)) {
    const json* field = property(node, name);
    if (name.starts_with("resources") && property(*field, "limits") != nullptr && property(*field, "requests") != nullptr)
      return name;
  }
  return "";
}

std::string pod_metadata_field(const json& node) {
  for (const std::string& name : property_names(node)) {
    const std::string lowered = lower(name);
    const json* field = property(node, name);
    if (lowered.find("pod") != std::string::npos && lowered.ends_with("metadata") &&
        property(*field, "labels") != nullptr && property(*field, "annotations") != nullptr)
      return name;
  }
  return "";
}

PodField pod_field(const PodPlace& place, const std::string& name) {
  const json& node = *place.steps.back().node;
  if (const json* own = property(node, name)) return {"." + name, own};
  const json* overlay = place.overlay.empty() ? nullptr : property(node, place.overlay);
  const json* laid = overlay == nullptr ? nullptr : property(*overlay, name);
  if (laid == nullptr) return {};
  return {jq_path({{SchemaStep::Kind::Field, place.overlay, false, nullptr}, {SchemaStep::Kind::Field, name, false, nullptr}}),
          laid};
}

void draft_fragmented(Yaml& out, const DraftComponent& component) {
  const PodPlace& place = *component.place;
  const json& node = *place.steps.back().node;
  out.line(10, "fragmentedPodSpecDefinition:");
  auto field = [&](const char* name, const std::string& path) {
    out.line(12, std::string(name) + ": " + scalar(component.field(path)));
  };
  labels_and_annotations(out, component, node);
  std::string container;
  if (!place.containers.empty()) {
    for (const auto& name : place.containers)
      container += (container.empty() ? "" : " // ") + jq_path({{SchemaStep::Kind::Field, name, false, nullptr}});
    if (place.containers.size() > 1) container = "(" + container + ")";
  } else if (const json* overlay = place.overlay.empty() ? nullptr : property(node, place.overlay)) {
    for (const std::string& name : property_names(*overlay))
      if (container.empty() && is_container_schema(*property(*overlay, name))) container = pod_field(place, name).path;
  }
  if (!container.empty()) field("containerPath", container);
  if (const PodField scheduler = pod_field(place, "schedulerName"); scheduler.node != nullptr)
    field("schedulerNamePath", scheduler.path);
  if (const std::string resources = resources_field(node); !resources.empty()) field("resourcesPath", "." + resources);
  if (const PodField affinity = pod_field(place, "affinity"); affinity.node != nullptr) {
    if (property(*affinity.node, "nodeAffinity") != nullptr) field("nodeAffinityPath", affinity.path + ".nodeAffinity");
    if (property(*affinity.node, "podAffinity") != nullptr) field("podAffinityPath", affinity.path + ".podAffinity");
  }
  if (const PodField priority = pod_field(place, "priorityClassName"); priority.node != nullptr)
    field("priorityClassNamePath", priority.path);
  if (const json* image = property(node, "image"); container.empty() && image != nullptr && type_of(*image) == "string")
    field("imagePath", ".image");
  unread_resources(out, component, node);
}

}  // namespace karta
