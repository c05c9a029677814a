// Where a definition lets the webhook write (crd_schema.h, check_write_path): the paths of the extensions
// annotation whose places /mutate writes to, walked step by step through the CRD's schema, each place on
// the way looked at for what a pod or a container is (crd_schema_nodes.h). Apart from the Checker, which
// reads any jq best effort: a place written to is checked only when the path is plain, so that what is
// checked is exactly where the webhook writes.

#include <optional>
#include <set>
#include <variant>

#include "definitions/api/published_api.h"
#include "definitions/simple_path.h"
#include "validate/crd_schema.h"
#include "validate/crd_schema_checker.h"
#include "validate/crd_schema_nodes.h"

namespace karta {
namespace {

using crd_schema_checking::render;
using crd_schema_checking::Steps;
using crd_schema_nodes::describe;
using crd_schema_nodes::flag;
using crd_schema_nodes::is_opaque_object;
using crd_schema_nodes::is_pod_spec;
using crd_schema_nodes::is_pod_template;
using crd_schema_nodes::is_scalar;
using crd_schema_nodes::map_values;
using crd_schema_nodes::member;
using crd_schema_nodes::property;
using crd_schema_nodes::property_names;
using crd_schema_nodes::type_of;

// Every field of a Kubernetes PodSpec or Container but `name` (which many a CRD's reference to a queue
// has: `queueRef.name`), from the core Pod schema the binary carries: a value written below one of them
// reaches what a pod runs, as what or where (image, command, env, securityContext, volumes, nodeName,
// serviceAccountName, priorityClassName, ...).
const std::set<std::string>& pod_field_names() {
  static const std::set<std::string> names = [] {
    std::set<std::string> found;
    const json* spec = property(core_pod_schema(), "spec");
    const json* containers = spec != nullptr ? property(*spec, "containers") : nullptr;
    const json* container = containers != nullptr ? member(*containers, "items") : nullptr;
    for (const json* node : {spec, container}) {
      if (node == nullptr) continue;
      for (const std::string& name : property_names(*node)) found.insert(name);
    }
    found.erase("name");
    return found;
  }();
  return names;
}

// An object that says what a container runs: an image with its command, arguments or environment (a
// Container, KServe's predictors, Milvus's components, NIMService's spec).
bool holds_container_fields(const json& node) {
  return property(node, "image") != nullptr &&
         (property(node, "command") != nullptr || property(node, "args") != nullptr || property(node, "env") != nullptr);
}

}  // namespace

std::vector<SchemaFinding> check_write_path(const CrdSchema& crd, std::string_view expression, WrittenShape shape,
                                            std::string_view field) {
  const std::string name(field);
  const std::string kind = crd.kind.kind;
  const std::string in_pod = ": " + name + " is written by the webhook, and may name no field of a pod, a container "
                             "or the object's metadata";
  if (!crd.schema.is_object()) return {};  // check_path_against_schema says it is not checked
  std::optional<SimplePath> path = SimplePath::parse(expression);
  if (!path) {
    std::string shown(expression.substr(0, 200));
    return {{true, "`" + shown + (expression.size() > 200 ? "...`" : "`") + " is not a plain path: " + name +
                       " is written by the webhook, and must be made of fields, `[N]` and `[]` only, so that where "
                       "it writes can be checked"}};
  }
  const Steps& steps = path->steps();
  const json* node = &crd.schema;
  Steps walked;
  auto fault = [&](std::string why) { return std::vector<SchemaFinding>{{true, std::move(why)}}; };
  auto whole = "`" + render(steps) + "`";
  for (std::size_t k = 0;; ++k) {
    const std::string here = "`" + render(walked) + "`";
    if (is_pod_template(*node)) return fault(whole + " is inside the pod template at " + here + in_pod);
    if (is_pod_spec(*node)) return fault(whole + " is inside the pod spec at " + here + in_pod);
    if (shape == WrittenShape::String && holds_container_fields(*node)) {
      return fault(whole + " is inside " + here + ", which holds a container's fields (image, command, args, env)" +
                   in_pod);
    }
    if (k == steps.size()) break;
    const SimplePath::Step& step = steps[k];
    const json* next = nullptr;
    if (const auto* named = std::get_if<SimplePath::Field>(&step)) {
      const bool object_root = node == &crd.schema || flag(*node, "x-kubernetes-embedded-resource");
      if (object_root && named->name == "metadata") return fault(whole + " is in the object's metadata" + in_pod);
      if (object_root && (named->name == "apiVersion" || named->name == "kind")) {
        return fault(whole + " is the object's type" + in_pod);
      }
      if (pod_field_names().count(named->name) > 0) {
        return fault(whole + " goes through `" + named->name + "`, a field of a pod or container" + in_pod);
      }
      next = property(*node, named->name);
      if (next == nullptr) next = map_values(*node);
    } else {
      const json* items = member(*node, "items");
      next = items != nullptr && items->is_object() ? items : map_values(*node);
    }
    walked.push_back(step);
    if (next == nullptr) {
      // A field the schema lacks, or a step a scalar cannot take, is check_path_against_schema's to name
      // (with a did-you-mean); a place the schema leaves open is one nobody can check.
      if (is_scalar(type_of(*node)) || !is_opaque_object(*node)) return {};
      return fault(whole + " is not described by " + kind + "'s schema below " + here + ": " + name +
                   " is written by the webhook, and must name a field the schema declares");
    }
    node = next;
  }
  const std::string type = type_of(*node);
  if (shape == WrittenShape::String && type != "string") {
    return fault(whole + " is " + describe(type) + ": " + name + " is written by the webhook, and must name a string field");
  }
  if (shape == WrittenShape::StringMap) {
    const json* values = map_values(*node);
    if (type != "object" || values == nullptr || type_of(*values) != "string") {
      return fault(whole + " is not a map of strings: " + name +
                   " is written by the webhook, and must name a map of strings");
    }
  }
  return {};
}

}  // namespace karta
