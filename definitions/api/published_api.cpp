// Parsing the embedded CRDs and Pod schema of definitions/api/ (see published_api.h).

#include "definitions/api/published_api.h"

#include <mutex>
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

// The schemas parsed while a PublishedSchemaHold lives, and how many holds live.
struct HeldSchemas {
  std::mutex mutex;
  std::size_t holds = 0;
  std::shared_ptr<const json> karta;
  std::shared_ptr<const json> resource_interface;
};

HeldSchemas& held_schemas() {
  static HeldSchemas held;
  return held;
}

// The schema in `slot`, parsed from `text` unless a hold kept it. While a hold lives it is parsed under
// the lock, so that two threads that ask at once parse it once; with none, each caller parses its own
// copy without waiting for another's.
std::shared_ptr<const json> schema_in(std::shared_ptr<const json> HeldSchemas::*slot, std::string_view text,
                                      const char* source) {
  HeldSchemas& held = held_schemas();
  std::unique_lock lock(held.mutex);
  std::shared_ptr<const json>& kept = held.*slot;
  if (kept) return kept;
  if (held.holds == 0) {
    lock.unlock();
    return std::make_shared<const json>(served_schema(text, source));
  }
  kept = std::make_shared<const json>(served_schema(text, source));
  return kept;
}

}  // namespace

PublishedSchemaHold::PublishedSchemaHold() {
  HeldSchemas& held = held_schemas();
  std::lock_guard lock(held.mutex);
  ++held.holds;
}

PublishedSchemaHold::~PublishedSchemaHold() {
  HeldSchemas& held = held_schemas();
  std::lock_guard lock(held.mutex);
  if (--held.holds > 0) return;
  held.karta.reset();
  held.resource_interface.reset();
}

std::shared_ptr<const json> karta_schema() {
  return schema_in(&HeldSchemas::karta, embedded::run_ai_kartas_yaml(), "definitions/api/run.ai_kartas.yaml");
}

std::shared_ptr<const json> resource_interface_schema() {
  return schema_in(&HeldSchemas::resource_interface, embedded::optimization_nvidia_com_resourceinterfaces_yaml(),
                   "definitions/api/optimization.nvidia.com_resourceinterfaces.yaml");
}

const json& core_pod_schema() {
  static const json schema = json::parse(embedded::pod_v1_json());
  return schema;
}

}  // namespace karta
