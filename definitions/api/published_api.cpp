// Parsing the embedded CRDs and Pod schema of definitions/api/ (see published_api.h).

#include "definitions/api/published_api.h"

#include <stdexcept>
#include <string>

#include "json/documents.h"

namespace karta {
namespace {

// The openAPIV3Schema of the one served version of the CustomResourceDefinition in `text`.
json served_schema(std::string_view text, const std::string& source) {
  const json* found = nullptr;
  std::size_t served = 0;
  auto documents = parse_documents(text, source);
  if (documents.size() != 1 || documents[0].value.value("kind", "") != "CustomResourceDefinition") {
    throw std::logic_error(source + ": expected one CustomResourceDefinition");
  }
  const json& crd = documents[0].value;
  const json& spec = crd.contains("spec") ? crd["spec"] : crd;
  if (!spec.is_object() || !spec.contains("versions") || !spec["versions"].is_array()) {
    throw std::logic_error(source + ": no spec.versions");
  }
  for (const auto& version : spec["versions"]) {
    if (!version.value("served", false)) continue;
    ++served;
    auto schema = version.find("schema");
    if (schema != version.end() && schema->is_object() && schema->contains("openAPIV3Schema")) {
      found = &(*schema)["openAPIV3Schema"];
    }
  }
  if (served != 1 || found == nullptr || !found->is_object()) {
    throw std::logic_error(source + ": expected exactly one served version with an openAPIV3Schema");
  }
  return *found;
}

}  // namespace

const json& karta_schema() {
  static const json schema = served_schema(embedded::run_ai_kartas_yaml(), "definitions/api/run.ai_kartas.yaml");
  return schema;
}

const json& resource_interface_schema() {
  static const json schema = served_schema(embedded::optimization_nvidia_com_resourceinterfaces_yaml(),
                                           "definitions/api/optimization.nvidia.com_resourceinterfaces.yaml");
  return schema;
}

const json& core_pod_schema() {
  static const json schema = json::parse(embedded::pod_v1_json());
  return schema;
}

}  // namespace karta
