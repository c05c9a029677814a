#include "generate/pod_counts.h"

#include <cctype>
#include <string>
#include <vector>

#include "generate/pod_places.h"
#include "validate/crd_schema_nodes.h"

namespace karta {
namespace {

using crd_schema_nodes::property;
using crd_schema_nodes::type_of;
using draft_yaml::code;
using draft_yaml::lower;
using draft_yaml::scalar;
using draft_yaml::Yaml;
using json = nlohmann::json;

constexpr std::size_t kNone = std::string::npos;

bool is_integer(const json* node) {
  if (node == nullptr) return false;
  const std::string type = type_of(*node);
  return type == "integer" || type == "int-or-string";
}

// Templates that run when invoked (Argo's): the pod's place is an element of a list of `.spec` whose
// items have a `name` and `steps` or a `dag` that invoke others by name, from a string `.spec.entrypoint`.
bool invoked_templates(const PodPlace& place, const json& schema) {
  const SchemaSteps& steps = place.steps;
  if (steps.size() != 3 || steps[0].kind != SchemaStep::Kind::Field || steps[0].name != "spec" ||
      steps[1].kind != SchemaStep::Kind::Field || steps[2].kind != SchemaStep::Kind::Items)
    return false;
  const json& item = *steps[2].node;
  const json* spec = property(schema, "spec");
  const json* entrypoint = spec != nullptr ? property(*spec, "entrypoint") : nullptr;
  return entrypoint != nullptr && type_of(*entrypoint) == "string" && property(item, "name") != nullptr &&
         (property(item, "steps") != nullptr || property(item, "dag") != nullptr);
}

// The calls of each template, from the entrypoint three calls deep, as the catalog's Argo Workflow counts
// them: each template with a container or a script runs once a call, times the call's withItems.
void draft_invocations(Yaml& out, const DraftComponent& component) {
  const SchemaSteps& steps = component.place->steps;
  const std::string templates = "$s" + jq_path({steps[1]}) + "[]?";
  const std::string call = "(. as [$name, $times] | " + templates +
                           " | select(.name == $name) | ((.steps // [])[][]?, (.dag.tasks // [])[]) | [.template, "
                           "($times | tonumber) * ((.withItems // [null]) | length)])";
  const std::string reached = "[$entry, ($entry | " + call + "), ($entry | " + call + " | " + call + "), ($entry | " +
                              call + " | " + call + " | " + call + ")]";
  out.line(8, "scaleDefinition:");
  out.comment(10, code(jq_path(steps)) + " are templates run when `.spec.entrypoint`, or a step or DAG task reached");
  out.comment(10, "from it, names them (three calls deep), once a call, times its `withItems`; 0 when never called");
  out.line(10, "replicasPath: " + scalar(".spec as $s | [$s.entrypoint, 1] as $entry | " + reached + " as $reached | " +
                                         component.stream() + " | .name as $n | [$reached[] | select(.[0] == $n) | "
                                         ".[1]] | add // 0"));
}

// The schema's default of an integer field, as jq text; "1" when it has none.
std::string integer_default(const json& field) {
  const json* fallback = crd_schema_nodes::member(field, "default");
  return fallback != nullptr && fallback->is_number_integer() ? fallback->dump() : "1";
}

struct MultiNode {
  std::string object, count, fallback;  // `multinode`, `nodeCount`, the schema's default else "1"
};

// An object of `node` named multi-node (any case) with an integer count of nodes: `nodeCount`, else
// `parallelism.pipeline`; none when there is none.
MultiNode multi_node(const json& node) {
  for (const std::string& name : crd_schema_nodes::property_names(node)) {
    if (lower(name) != "multinode") continue;
    const json* object = property(node, name);
    const json* parallelism = property(*object, "parallelism");
    for (const auto& [count, field] : {std::pair<std::string, const json*>{"nodeCount", property(*object, "nodeCount")},
                                       {"parallelism.pipeline", parallelism != nullptr ? property(*parallelism, "pipeline") : nullptr}}) {
      if (!is_integer(field)) continue;
      return {name, count, integer_default(*field)};
    }
  }
  return {};
}

// A count of pods that an allocation object of `.spec` may raise while `enabled` (SparkApplication's
// `.spec.dynamicAllocation` with `initialExecutors` and `minExecutors`, named for the `executor`'s pods):
// then the larger of the count and the initial (else least) number it names; "" when none names the pods.
std::string dynamic_count(const json& schema, const SchemaSteps& steps, const std::string& count,
                          std::vector<std::string>& comments) {
  const json* spec = property(schema, "spec");
  if (spec == nullptr || steps.back().kind != SchemaStep::Kind::Field || steps.back().name.empty()) return "";
  std::string plural = steps.back().name + "s";
  plural[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(plural[0])));
  for (const std::string& name : crd_schema_nodes::property_names(*spec)) {
    const json* allocation = property(*spec, name);
    const json* enabled = property(*allocation, "enabled");
    if (enabled == nullptr || type_of(*enabled) != "boolean") continue;
    const std::string at = jq_path({{SchemaStep::Kind::Field, "spec", false, spec}, {SchemaStep::Kind::Field, name, false, allocation}});
    std::string start;
    for (const char* prefix : {"initial", "min"})
      if (is_integer(property(*allocation, prefix + plural))) start += (start.empty() ? "" : " // ") + at + "." + prefix + plural;
    if (start.empty()) continue;
    comments.push_back(code(at) + " allocates these pods while " + code(at + ".enabled") + ": then the larger of " +
                       code(count) + " and " + code(start) + " at the start");
    return "if " + at + ".enabled // false then [" + count + " // 0, " + start + " // 0] | max else " + count + " // 1 end";
  }
  return "";
}

// The count of a place whose own list of groups, when not empty, runs instead of it (Milvus's
// `components.proxy.groups[]`, each group with its `replicas`); "" when it has no such list.
std::string group_count(const SchemaSteps& steps, const std::vector<SchemaSteps>& groups, const std::string& count,
                        std::vector<std::string>& comments) {
  for (const SchemaSteps& group : groups) {
    if (group.size() != steps.size() + 2 || group[steps.size() - 1].node != steps.back().node ||
        group[steps.size()].kind != SchemaStep::Kind::Field || group.back().kind != SchemaStep::Kind::Items ||
        !is_integer(property(*group.back().node, "replicas")))
      continue;
    const std::string list = jq_path(group, steps.size() + 1);
    const std::string own = count.empty() ? "1" : count + " // 1";
    comments.push_back(code(list + "[]") + " are groups of these pods, which run instead of them when there are any, "
                       "each `replicas` times (1 when absent)");
    return "if (" + list + " // [] | length) > 0 then ([" + list + "[] | .replicas // 1 | tonumber] | add) else " + own +
           " end";
  }
  return "";
}

}  // namespace

void draft_scale(Yaml& out, const DraftComponent& component, const std::vector<DraftComponent>& all,
                 const std::vector<SchemaSteps>& groups, const json& schema) {
  const PodPlace& place = *component.place;
  if (invoked_templates(place, schema)) return draft_invocations(out, component);
  const SchemaSteps& steps = place.steps;
  const std::size_t c = innermost_collection(steps);
  const std::size_t lowest = c == kNone ? 1 : c + 1;
  const std::size_t highest = steps.size();
  // Paths from the list element or map value the pod belongs to (relative), else from the root.
  auto path = [&](std::size_t k, const std::string& field) {
    return (c == kNone ? jq_path(steps, k) : relative_path(steps, c + 1, k)) + "." + field;
  };
  auto absolute = [&](std::size_t k, const std::string& field) { return jq_path(steps, k) + "." + field; };
  // What walks the places: a list's items as the component streams them; a map's values in sorted key
  // order, as the engine walks `[]` on a map.
  std::string base;
  if (c != kNone && c + 1 == steps.size() && steps[c].kind == SchemaStep::Kind::Items) {
    base = component.stream();
  } else if (c != kNone) {
    base = collection_stream(steps, c);
    if (c + 1 == steps.size() && !component.select.empty()) base += " | " + component.select;
  }
  // The deepest integer of these names, from the pod up to its list element: {k, name}, k 0 when none.
  auto deepest = [&](const std::vector<std::string>& names, std::size_t top) -> std::pair<std::size_t, std::string> {
    for (std::size_t k = top; k >= lowest && k > 0; --k)
      for (const std::string& field : names)
        if (is_integer(property(*steps[k - 1].node, field))) return {k, field};
    return {0, ""};
  };
  std::vector<std::string> comments, factors;
  std::string count;
  if (auto [k, field] = deepest({"replicas", "instances", "numNodes"}, highest); k != 0) {
    comments.push_back(code(absolute(k, field)) + " is an integer beside the pod; 1 when absent");
    count = path(k, field);
  } else if (auto [k2, min] = deepest({"minReplicas"}, highest); k2 != 0) {
    comments.push_back(code(absolute(k2, min)) + " is the least number of pods, which run at admission; 1 when absent");
    count = path(k2, min);
  }
  std::string dynamic = c == kNone && !count.empty() ? dynamic_count(schema, steps, count, comments) : "";
  if (dynamic.empty() && c == kNone) dynamic = group_count(steps, groups, count, comments);
  for (std::size_t k = lowest; k <= highest; ++k) {
    for (const char* field : {"parallelism", "numOfHosts"}) {
      if (!is_integer(property(*steps[k - 1].node, field))) continue;
      comments.push_back(code(absolute(k, field)) + " is the pods of each replica; 1 when absent");
      factors.push_back("(" + path(k, field) + " // 1 | tonumber)");
    }
    // A replica spread over nodes, a pod each: an object named multi-node with the count of its nodes
    // (Dynamo's `multinode.nodeCount`) or of its pipeline stages (NIMService's `multiNode.parallelism.pipeline`).
    if (const MultiNode spread = multi_node(*steps[k - 1].node); !spread.object.empty()) {
      const std::string object = path(k, spread.object), nodes = object + "." + spread.count;
      comments.push_back(code(absolute(k, spread.object + "." + spread.count)) + " is the nodes of each replica, a pod "
                         "each, when " + code(absolute(k, spread.object)) + " is set; " + spread.fallback + " when absent");
      factors.push_back("(if " + object + " then " + nodes + " // " + spread.fallback + " else 1 end | tonumber)");
    }
    // A group of `size` pods around the places below it: one of each group is the leader's, when one of
    // them is named for a leader.
    if (k == highest || !is_integer(property(*steps[k - 1].node, "size")) || steps[k].kind != SchemaStep::Kind::Field)
      continue;
    if (lower(steps[k].name).starts_with("leader")) {
      comments.push_back(code(absolute(k, "size")) + " is the pods of each group: one of them is this leader");
      continue;
    }
    std::string leader;
    for (const DraftComponent& other : all) {
      const SchemaSteps& theirs = other.place->steps;
      if (&other == &component || theirs.size() <= k || theirs[k - 1].node != steps[k - 1].node ||
          theirs[k].kind != SchemaStep::Kind::Field || !lower(theirs[k].name).starts_with("leader"))
        continue;
      leader = theirs[k].name;
      break;
    }
    const std::string size = "(" + path(k, "size") + " // 1 | tonumber)";
    if (leader.empty()) {
      comments.push_back(code(absolute(k, "size")) + " is the pods of each group; 1 when absent");
      factors.push_back(size);
    } else {
      comments.push_back(code(absolute(k, "size")) + " is the pods of each group, the leader (" +
                         code(absolute(k, leader)) + ") one of them when set");
      factors.push_back("(" + size + " - (if " + path(k, leader) + " then 1 else 0 end) | tonumber)");
    }
  }
  // Above the list the pods' place is an item of: copies of a template holding the list (PodCliqueSet's
  // `.spec.replicas` of `.spec.template`), and groups beside the list that name its items and copy their
  // pods (its `podCliqueScalingGroups[]`: `cliqueNames` and `replicas`).
  std::string bindings, per_item;
  if (c != kNone && c >= 1 && steps[c].kind == SchemaStep::Kind::Items && steps[c - 1].kind == SchemaStep::Kind::Field) {
    for (std::size_t k = 1; k < c; ++k) {
      const json* replicas = property(*steps[k - 1].node, "replicas");
      if (steps[k].kind != SchemaStep::Kind::Field || steps[k].name != "template" || !is_integer(replicas)) continue;
      const std::string fallback = integer_default(*replicas);
      comments.push_back(code(absolute(k, "replicas")) + " is the copies of " + code(jq_path(steps, k + 1)) +
                         ", which holds these pods; " + fallback + " when absent");
      bindings += "(" + absolute(k, "replicas") + " // " + fallback + ") as $copies | ";
      factors.push_back("($copies | tonumber)");
      break;
    }
    const json& holder = c >= 2 ? *steps[c - 2].node : schema;
    const std::string list = steps[c - 1].name;
    const std::string names = (list.ends_with("s") ? list.substr(0, list.size() - 1) : list) + "Names";
    for (const std::string& field : crd_schema_nodes::property_names(holder)) {
      const json* group = crd_schema_nodes::member(*property(holder, field), "items");
      if (property(*steps[c].node, "name") == nullptr || group == nullptr || !group->is_object() ||
          !is_integer(property(*group, "replicas")) || property(*group, names) == nullptr)
        continue;
      const std::string at = (c >= 2 ? jq_path(steps, c - 1) : "") + "." + field;
      comments.push_back(code(at + "[]." + names) + " names items of " + code(jq_path(steps, c)) +
                         ": each group naming one copies its pods `replicas` times; 1 when none names it");
      bindings += at + " as $groups | ";
      per_item = ".name as $n | ";
      factors.push_back("([$groups[]? | select(any(." + names + "[]?; . == $n)) | .replicas // 1 | tonumber] | add // 1 | tonumber)");
      break;
    }
  }
  std::vector<std::string> bounds;
  for (const char* key : {"minReplicas", "maxReplicas"}) {
    auto [k, field] = deepest({key}, highest);
    if (k == 0) continue;
    bounds.push_back("# " + code(absolute(k, field)) + " is an integer beside the pod: a scale bound");
    bounds.push_back(field + "Path: " + scalar((base.empty() ? "" : base + " | ") + path(k, field)));
  }
  const bool counts = !count.empty() || !dynamic.empty();
  if (!counts && factors.empty() && bounds.empty()) return;
  out.line(8, "scaleDefinition:");
  for (const auto& text : comments) out.comment(10, text);
  if (counts || !factors.empty()) {
    std::string product;
    const std::string counted = dynamic.empty() ? count + " // 1" : dynamic;
    if (factors.empty()) {
      product = counted;
    } else {
      if (counts) product = "(" + counted + " | tonumber)";
      for (const auto& factor : factors) product += (product.empty() ? "" : " * ") + factor;
    }
    out.line(10, "replicasPath: " + scalar(bindings + (base.empty() ? "" : base + " | ") + per_item + product));
  }
  for (const auto& text : bounds) out.line(10, text);
}

}  // namespace karta
