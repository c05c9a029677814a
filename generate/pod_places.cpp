#include "generate/pod_places.h"

#include <algorithm>
#include <cctype>

#include "validate/crd_schema_nodes.h"

namespace karta {
namespace {

using crd_schema_nodes::inline_pod_fields;
using crd_schema_nodes::is_pod_spec;
using crd_schema_nodes::is_pod_template;
using crd_schema_nodes::map_values;
using crd_schema_nodes::member;
using crd_schema_nodes::property;
using crd_schema_nodes::property_names;
using crd_schema_nodes::type_of;

constexpr std::size_t kMaxDepth = 32;
// Schema nodes visited at most: a schema is a tree as the API server serves it, but a file's YAML aliases
// can make one node reachable by exponentially many paths.
constexpr std::size_t kMaxVisits = 200000;

bool is_required(const json& node, const std::string& name) {
  const json* required = member(node, "required");
  return required != nullptr && required->is_array() &&
         std::find(required->begin(), required->end(), name) != required->end();
}

// A pod spelt out field by field: a labels map for its pods, and at least two pod-level fields beside it.
bool is_fragmented_pod(const json& node) {
  if (property(node, "podLabels") == nullptr && property(node, "labels") == nullptr) return false;
  std::size_t pod_fields = 0;
  for (const std::string& field : inline_pod_fields(node))
    if (field != "podLabels" && field != "podAnnotations") ++pod_fields;
  return pod_fields >= 2;
}

// A ResourceRequirements: `limits` and `requests`.
bool is_resources(const json* node) {
  return node != nullptr && property(*node, "limits") != nullptr && property(*node, "requests") != nullptr;
}

// A core v1 Container: an image, resources and volume mounts, and none of a pod's own fields (Milvus's
// components have all three, and tolerations, node selector, pod labels: they are pods).
bool is_container(const json& node) {
  const json* image = property(node, "image");
  return image != nullptr && type_of(*image) == "string" && is_resources(property(node, "resources")) &&
         property(node, "volumeMounts") != nullptr && inline_pod_fields(node) == std::vector<std::string>{"resources"} &&
         property(node, "labels") == nullptr;
}

// The fields of `node` that each hold one container, when `node` also holds fields of the pod around it
// (tolerations, node selector, ..., or metadata with labels): that pod spelt out around its container.
std::vector<std::string> container_fields(const json& node) {
  std::vector<std::string> fields;
  for (const std::string& name : property_names(node))
    if (is_container(*property(node, name))) fields.push_back(name);
  const json* metadata = property(node, "metadata");
  const bool pod_fields = !inline_pod_fields(node).empty() || (metadata != nullptr && property(*metadata, "labels"));
  return pod_fields ? fields : std::vector<std::string>{};
}

// Nodes given by their count, image and resources, with no labels of their own and no container around
// them (TrainJob's trainer: `numNodes`, `image`, `resourcesPerNode`): the resources field is `resources`
// or named after it. A pod spelt out with labels is is_fragmented_pod's.
bool is_node_fragment(const json& node) {
  const json* image = property(node, "image");
  if (image == nullptr || type_of(*image) != "string" || is_container(node) || property(node, "labels") != nullptr ||
      property(node, "podLabels") != nullptr)
    return false;
  bool counted = false;
  for (const char* count : {"replicas", "instances", "numNodes"})
    if (const json* field = property(node, count); field != nullptr && type_of(*field) == "integer") counted = true;
  if (!counted) return false;
  for (const std::string& name : property_names(node))
    if (name.starts_with("resources") && is_resources(property(node, name))) return true;
  return false;
}

// The field of `node` holding a PodSpec that adds to a pod `node` itself describes: `node` has resources
// of its own (Dynamo v1alpha1's service: `resources`, `replicas`, `extraPodSpec`), so the operator builds
// the pod from it and lays the PodSpec over; "" when none.
std::string overlaid_pod_spec(const json& node) {
  if (property(node, "resources") == nullptr || is_pod_spec(node)) return "";
  for (const std::string& name : property_names(node))
    if (const json* child = property(node, name); is_pod_spec(*child) && !is_pod_template(*child)) return name;
  return "";
}

bool is_plain_field(const std::string& name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  // jq 1.6 reads `.e1` as a number.
  return !(
      (name[0] == 'e' || name[0] == 'E') && name.size() > 1 &&
      std::all_of(name.begin() + 1, name.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }));
}

class Finder {
 public:
  PodPlaces found;

  void walk(const json& node, SchemaSteps& steps) {
    if (steps.size() > kMaxDepth || !node.is_object() || visits_++ >= kMaxVisits) return;
    if (!steps.empty()) {
      if (is_pod_template(node)) return found.places.push_back({PodShape::PodTemplateSpec, steps, {}, ""});
      if (is_pod_spec(node)) return found.places.push_back({PodShape::PodSpec, steps, {}, ""});
      if (auto containers = container_fields(node); !containers.empty())
        return found.places.push_back({PodShape::Fragmented, steps, std::move(containers), ""});
      if (is_node_fragment(node)) return found.places.push_back({PodShape::Fragmented, steps, {}, ""});
      if (auto overlay = overlaid_pod_spec(node); !overlay.empty())
        return found.places.push_back({PodShape::Fragmented, steps, {}, std::move(overlay)});
    }
    const bool fragmented = !steps.empty() && is_fragmented_pod(node);
    const std::size_t before = found.places.size();
    for (const std::string& name : property_names(node)) {
      if (steps.empty() && (name == "metadata" || name == "status" || name == "apiVersion" || name == "kind")) continue;
      const json* child = property(node, name);
      steps.push_back({SchemaStep::Kind::Field, name, !is_required(node, name), child});
      const std::size_t places_before = found.places.size();
      walk(*child, steps);
      const bool patches = name.ends_with("Patches"), defaults = name.ends_with("Defaults");
      if ((patches || defaults) && found.places.size() > places_before) {
        found.places.resize(places_before);
        found.not_pods.push_back({steps, patches});
      }
      steps.pop_back();
    }
    if (const json* items = member(node, "items"); items != nullptr && items->is_object()) {
      steps.push_back({SchemaStep::Kind::Items, "", false, items});
      walk(*items, steps);
      steps.pop_back();
    }
    if (const json* values = map_values(node)) {
      steps.push_back({SchemaStep::Kind::Values, "", false, values});
      walk(*values, steps);
      steps.pop_back();
    }
    if (!fragmented) return;
    // Pods spelt out again in a list or map below this one are groups of it (Milvus's
    // `components.proxy.groups[]`: each group's labels override the component's, whose fields reach every
    // group's pods), so this one is the pod. Pods below it in named fields are components it holds the
    // defaults of (Milvus's `.spec.components`), so it is not one.
    auto is_group = [&](const PodPlace& place) {
      return place.shape == PodShape::Fragmented &&
             std::any_of(place.steps.begin() + static_cast<std::ptrdiff_t>(steps.size()), place.steps.end(),
                         [](const SchemaStep& step) { return step.kind != SchemaStep::Kind::Field; });
    };
    const auto below = found.places.begin() + static_cast<std::ptrdiff_t>(before);
    if (below == found.places.end() || std::all_of(below, found.places.end(), is_group)) {
      for (auto it = below; it != found.places.end(); ++it) found.groups.push_back(it->steps);
      found.places.erase(below, found.places.end());
      found.places.push_back({PodShape::Fragmented, steps, {}, ""});
    } else {
      found.shared.push_back(steps);
    }
  }

 private:
  std::size_t visits_ = 0;
};

}  // namespace

PodPlaces find_pod_places(const json& schema) {
  Finder finder;
  SchemaSteps steps;
  finder.walk(schema, steps);
  return std::move(finder.found);
}

std::string jq_path(const SchemaSteps& steps, std::size_t count) {
  std::string out;
  count = std::min(count, steps.size());
  for (std::size_t i = 0; i < count; ++i) {
    const SchemaStep& step = steps[i];
    if (step.kind == SchemaStep::Kind::Field) {
      out += is_plain_field(step.name) ? "." + step.name
                                       : "." + json(step.name).dump(-1, ' ', false, json::error_handler_t::replace);
    } else {
      if (out.empty()) out = ".";
      out += (i > 0 && steps[i - 1].optional) ? "[]?" : "[]";
    }
  }
  return out.empty() ? "." : out;
}

bool is_container_schema(const json& node) { return is_container(node); }

std::size_t innermost_collection(const SchemaSteps& steps) {
  for (std::size_t i = steps.size(); i-- > 0;)
    if (steps[i].kind != SchemaStep::Kind::Field) return i;
  return std::string::npos;
}

std::string relative_path(const SchemaSteps& steps, std::size_t from, std::size_t to) {
  SchemaSteps part(steps.begin() + static_cast<std::ptrdiff_t>(from), steps.begin() + static_cast<std::ptrdiff_t>(to));
  return part.empty() ? "" : jq_path(part);
}

std::string collection_stream(const SchemaSteps& steps, std::size_t c) {
  if (steps[c].kind == SchemaStep::Kind::Items) return jq_path(steps, c + 1);
  std::string map = jq_path(steps, c);
  if (c > 0 && steps[c - 1].optional) map += " // {}";
  return map + " | .[keys[]]";
}

const char* pod_shape_name(PodShape shape) {
  switch (shape) {
    case PodShape::PodTemplateSpec:
      return "PodTemplateSpec";
    case PodShape::PodSpec:
      return "PodSpec";
    case PodShape::Fragmented:
      return "fragmented pod";
  }
  return "";
}

}  // namespace karta
