#include "definitions/extensions_annotation.h"

// The annotation's value is YAML text inside the object, so it is parsed here, not by the API server:
// its faults name the annotation and the place inside it.

#include <string>
#include <utility>

#include "definitions/object_reader.h"
#include "json/documents.h"

namespace karta::definition_reading {

// The extensions annotation: YAML text naming the workload's shared pod-label map, and components with
// the fields of ours they have.
void read_extensions(const json& metadata, KartaDefinition& d, std::vector<DefinitionFault>& faults) {
  if (!metadata.is_object()) return;
  auto annotations = metadata.find("annotations");
  if (annotations == metadata.end() || !annotations->is_object()) return;
  auto text = annotations->find(kExtensionsAnnotation);
  if (text == annotations->end()) return;
  const std::string where = std::string("metadata.annotations[\"") + kExtensionsAnnotation + "\"]";
  if (!text->is_string()) {
    faults.push_back({where, std::string("must be a string, not ") + text->type_name()});
    return;
  }
  json value;
  try {
    auto docs = parse_documents(text->get<std::string>(), "its value");
    if (docs.size() != 1) {
      faults.push_back({where, "must hold one YAML document, not " + std::to_string(docs.size())});
      return;
    }
    value = std::move(docs[0].value);
  } catch (const InputError& e) {
    faults.push_back({where, std::string("is not valid YAML (") + e.what() + ")"});
    return;
  }
  ObjectReader top(value, where, faults);
  d.workload_pod_labels = top.jq("workloadPodLabelsPath");
  d.queue_path = top.jq("queuePath");
  d.gang_min_member = top.jq("gangMinMemberPath");
  const json* components = top.object("components", !d.workload_pod_labels && !d.queue_path && !d.gang_min_member);
  if (components == nullptr) return;
  for (const auto& [name, fields] : components->items()) {
    std::string at = where + ".components." + name;
    Component* component = nullptr;
    if (d.root.name == name) component = &d.root;
    for (auto& child : d.children) {
      if (child.name == name) component = &child;
    }
    ObjectReader reader(fields, at, faults);
    auto extra = reader.jq_list("additionalContainerPaths");
    auto tolerations = reader.jq("tolerationsPath");
    auto node_selector = reader.jq("nodeSelectorPath");
    auto gpu_request = reader.jq("gpuRequestPath");
    if (component == nullptr) {
      reader.fault(at, "names no component of this definition");
      continue;
    }
    if (!extra.empty()) {
      if (!component->spec) {
        reader.fault(reader.field("additionalContainerPaths"), "needs a specDefinition on component \"" + name + "\"");
      } else {
        component->spec->additional_containers = std::move(extra);
      }
    }
    if (gpu_request) {
      if (!component->spec) {
        reader.fault(reader.field("gpuRequestPath"), "needs a specDefinition on component \"" + name + "\"");
      } else {
        component->spec->gpu_request = std::move(gpu_request);
      }
    }
    if (tolerations || node_selector) {
      if (!component->spec || !component->spec->fragmented) {
        reader.fault(at, "tolerationsPath and nodeSelectorPath go with a fragmentedPodSpecDefinition only (a pod "
                         "template or pod spec has its own)");
      } else {
        component->spec->fragmented->tolerations = tolerations;
        component->spec->fragmented->node_selector = node_selector;
      }
    }
  }
}

}  // namespace karta::definition_reading
