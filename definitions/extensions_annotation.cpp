#include "definitions/extensions_annotation.h"

// The annotation's value is YAML text inside the object, so it is parsed here, not by the API server:
// its faults name the annotation and the place inside it.

#include <algorithm>
#include <regex>
#include <string>
#include <utility>

#include "definitions/object_reader.h"
#include "json/documents.h"
#include "k8s/terminal_text.h"

namespace karta::definition_reading {

namespace {

// `equivalentVersions`: a list of Kubernetes version names, none the root's own, none twice.
void read_equivalent_versions(ObjectReader& top, KartaDefinition& d) {
  const json* list = top.array("equivalentVersions");
  if (list == nullptr) return;
  static const std::regex version_name("v[1-9][0-9]{0,8}((alpha|beta)[1-9][0-9]{0,8})?");
  for (std::size_t i = 0; i < list->size(); ++i) {
    const json& item = (*list)[i];
    const std::string at = index_field(top.field("equivalentVersions"), i);
    if (!item.is_string() || !std::regex_match(item.get_ref<const std::string&>(), version_name)) {
      top.fault(at, "must be a Kubernetes version name (v1, v1beta1, v2alpha3), not " +
                        (item.is_string() ? "`" + bounded_text(item.get<std::string>(), 64) + "`" : std::string(item.type_name())));
      continue;
    }
    const std::string version = item.get<std::string>();
    if (d.root.kind && version == d.root.kind->version) {
      top.fault(at, "is the root kind's own version, " + version);
    } else if (std::find(d.equivalent_versions.begin(), d.equivalent_versions.end(), version) !=
               d.equivalent_versions.end()) {
      top.fault(at, "names " + version + " twice");
    } else {
      d.equivalent_versions.push_back(version);
    }
  }
}

}  // namespace

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
  read_equivalent_versions(top, d);
  const json* components = top.object("components", !d.workload_pod_labels && !d.queue_path &&
                                                         !d.gang_min_member && d.equivalent_versions.empty());
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
