#pragma once

// Where, in one admitted object, a definition's pod templates are: one PodTemplateLocation per instance
// (a JobSet's leader and worker replicated jobs, a PyTorchJob's Master and Worker).

#include <optional>
#include <string>
#include <vector>

#include "definitions/compiled_definition.h"

namespace karta {

struct PodTemplateLocation {
  // Written out so that a value-initialized one (`emplace_back()`, `= PodTemplateLocation()`) is not
  // first cleared whole, 1.4 KB of inline pointer storage, before its members are constructed.
  PodTemplateLocation() noexcept {}

  std::string component;  // the definition's component name
  std::string instance;   // instance id: "leader", "Worker", or the component name
  SpecKind kind = SpecKind::None;
  // The template itself: a PodTemplateSpec, a PodSpec, or (fragmented) the object holding the labels map.
  JsonPointer location;
  // What `location` reaches in the object, when the locator already holds it (native paths): readers
  // start there instead of walking the pointer from the root again.
  std::optional<JsonElement> element;
  // Maps that receive labels and annotations; may be absent from the object (then created).
  std::optional<JsonPointer> labels;
  std::optional<JsonPointer> annotations;
  // The pod spec, when there is one: scheduler name, tolerations and node selector go inside it.
  std::optional<JsonPointer> pod_spec;
  // What labels, annotations and pod_spec reach in the object, where the locator holds the template
  // (`element`) and finds there an object (never null): readers and the patch builder start from these
  // instead of walking the pointers again. Unset: not known, absent, or not an object.
  std::optional<JsonElement> labels_found, annotations_found, pod_spec_found;
  // Fragmented definitions name each piece instead.
  std::optional<JsonPointer> scheduler_name, tolerations, node_selector, resources, containers, container;
  std::vector<JsonPointer> additional_containers;  // present ones only
  std::optional<JsonPointer> gpu_request;           // the gpuRequestPath extension, when present
  std::int64_t replicas = 1;  // pods of this instance, from scaleDefinition.replicasPath
};

struct WorkloadLayout {
  std::vector<PodTemplateLocation> templates;
  // What was odd about the object (an evaluation error, a count mismatch); logged, never fatal.
  std::vector<std::string> notes;
};

WorkloadLayout locate_pod_templates(DefinitionEvaluation& evaluation);

}  // namespace karta
