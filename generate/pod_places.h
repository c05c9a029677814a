#pragma once

// Where a CustomResourceDefinition's schema holds pods: every place shaped like a PodTemplateSpec, like a
// PodSpec, or spelling a pod out field by field: a labels map beside resources, tolerations, node selector,
// ... with no template (Milvus's components, NIMService's spec, SparkApplication's driver and executor); a
// container of the pod's own beside such fields (Argo's templates with `container` or `script`); an
// image with the resources of each of a count of nodes (TrainJob's trainer); or an object with resources
// of its own beside a PodSpec that only adds to the pod (Dynamo v1alpha1's services). What a pod looks like is the validator's
// knowledge (validate/crd_schema_nodes.h), so a place found here is one `validate` accepts. `generate`
// drafts a Karta from these places; `audit` lists the served kinds that have some and no definition.

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace karta {

using json = nlohmann::json;

struct SchemaStep {
  enum class Kind { Field, Items, Values };  // `.name`, a list's items, a map's values
  Kind kind = Kind::Field;
  std::string name;            // Field only
  bool optional = false;       // Field: not in its object's `required`
  const json* node = nullptr;  // the schema reached by this step
};
using SchemaSteps = std::vector<SchemaStep>;

enum class PodShape { PodTemplateSpec, PodSpec, Fragmented };

struct PodPlace {
  PodShape shape = PodShape::PodTemplateSpec;
  SchemaSteps steps;  // from the root of the object
  // Fragmented only: the fields of the place that each hold the pod's one container (Argo's template
  // `container` and `script`), in name order; a pod runs whichever is set.
  std::vector<std::string> containers;
  // Fragmented only: a field of the place holding a PodSpec that the operator lays over the pod it builds
  // from the place (Dynamo v1alpha1's `extraPodSpec` beside the service's own `resources` and `replicas`):
  // the pod's scheduling fields and container are read there, its resources and labels in the place.
  std::string overlay;
};

// Places found below a field whose name says they are not pods of their own: `...Patches` (TrainJob's
// runtimePatches: changes to pods that another object describes) and `...Defaults` (Argo's
// templateDefaults: values every template takes).
struct NotAPod {
  SchemaSteps steps;  // to the field
  bool patches = false;
};

struct PodPlaces {
  std::vector<PodPlace> places;
  // Objects with pod fields of their own that hold fragmented places below them: defaults shared by
  // those (Milvus's .spec.components), not pods themselves.
  std::vector<SchemaSteps> shared;
  // Pods spelt out in a list or map inside a fragmented place (Milvus's `.spec.components.proxy.groups[]`):
  // groups of that place, not places of their own.
  std::vector<SchemaSteps> groups;
  std::vector<NotAPod> not_pods;
};

// The places of an openAPIV3Schema (the object's root), in field-name order; `metadata` and `status` of
// the root are not looked into, nor the inside of a place.
PodPlaces find_pod_places(const json& schema);

// The first `count` steps (all when larger) as a jq path: `.spec.replicatedJobs[].template`; a list or
// map whose field is optional is iterated with `[]?`.
std::string jq_path(const SchemaSteps& steps, std::size_t count = static_cast<std::size_t>(-1));

// A core v1 Container's schema: an image, resources and volume mounts, and none of a pod's own fields.
bool is_container_schema(const json& node);

// The index of the innermost list or map step, or npos.
std::size_t innermost_collection(const SchemaSteps& steps);

// `.rest` of steps [from, to) as a relative path, "" when empty.
std::string relative_path(const SchemaSteps& steps, std::size_t from, std::size_t to);

// What iterates the collection at step `c` so that the i-th output belongs to the i-th place: a map's
// values in sorted key order, as the engine iterates `[]` on a map.
std::string collection_stream(const SchemaSteps& steps, std::size_t c);

// "PodTemplateSpec", "PodSpec", "fragmented pod".
const char* pod_shape_name(PodShape shape);

}  // namespace karta
