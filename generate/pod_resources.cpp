#include "generate/pod_resources.h"

#include "validate/crd_schema_nodes.h"

namespace karta {

using crd_schema_nodes::property;
using crd_schema_nodes::property_names;
using crd_schema_nodes::type_of;

std::vector<std::string> additional_container_fields(const PodPlace& place) {
  std::vector<std::string> fields;
  if (place.shape != PodShape::PodSpec) return fields;
  const nlohmann::json& node = *place.steps.back().node;
  for (const std::string& name : property_names(node))
    if (is_container_schema(*property(node, name))) fields.push_back(name);
  return fields;
}

std::vector<std::string> quantity_request_fields(const nlohmann::json& node) {
  std::vector<std::string> fields;
  for (const std::string& name : property_names(node)) {
    const nlohmann::json* request = property(node, name);
    const nlohmann::json* resource = property(*request, "name");
    const nlohmann::json* quantity = property(*request, "quantity");
    if (resource == nullptr || quantity == nullptr || type_of(*resource) != "string") continue;
    const std::string type = type_of(*quantity);
    if (type == "integer" || type == "int-or-string") fields.push_back(name);
  }
  return fields;
}

}  // namespace karta
