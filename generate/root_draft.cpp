#include "generate/root_draft.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "generate/pod_places.h"
#include "k8s/terminal_text.h"
#include "validate/crd_schema_nodes.h"

namespace karta {

using json = nlohmann::json;
using crd_schema_nodes::member;
using crd_schema_nodes::property;
using crd_schema_nodes::property_names;
using crd_schema_nodes::type_of;
using draft_yaml::code;
using draft_yaml::lower;
using draft_yaml::scalar;
using draft_yaml::Yaml;

namespace {

const json* schema_at(const json& root, std::initializer_list<const char*> fields) {
  const json* node = &root;
  for (const char* field : fields) {
    node = property(*node, field);
    if (node == nullptr) return nullptr;
  }
  return node;
}

// The phase: a string enum of .status named phase, state or status, else one whose name ends so
// (jobDeploymentStatus), else one so named in an object of .status (Volcano's .status.state.phase); else a
// string named phase, state or status without listed values, in .status or in an object of it
// (SparkApplication's .status.applicationState.state). The names of the fields from .status on.
std::pair<std::vector<std::string>, const json*> phase_field(const json& status) {
  auto string_field = [](const json& in, const std::string& name, bool with_enum) -> const json* {
    const json* field = property(in, name);
    if (field == nullptr || type_of(*field) != "string") return nullptr;
    return (member(*field, "enum") != nullptr) == with_enum ? field : nullptr;
  };
  auto nested = [&](bool with_enum) -> std::pair<std::vector<std::string>, const json*> {
    for (const std::string& outer : property_names(status)) {
      const json* object = property(status, outer);
      if (type_of(*object) != "object") continue;
      for (const char* name : {"phase", "state", "status"})
        if (const json* field = string_field(*object, name, with_enum)) return {{outer, name}, field};
    }
    return {{}, nullptr};
  };
  for (const char* name : {"phase", "state", "status"})
    if (const json* field = string_field(status, name, true)) return {{name}, field};
  for (const std::string& name : property_names(status))
    if (name.ends_with("Phase") || name.ends_with("State") || name.ends_with("Status"))
      if (const json* field = string_field(status, name, true)) return {{name}, field};
  if (auto found = nested(true); found.second != nullptr) return found;
  for (const char* name : {"phase", "state", "status"})
    if (const json* field = string_field(status, name, false)) return {{name}, field};
  return nested(false);
}

std::string status_for(const std::string& value) {
  static const std::vector<std::pair<std::string, std::set<std::string>>> kStates = {
      {"running",
       {"running", "healthy", "ready", "active", "available", "successful", "serving", "deployed", "completing"}},
      {"initializing",
       {"pending", "initializing", "creating", "starting", "provisioning", "waiting", "scheduling", "deploying"}},
      {"completed", {"succeeded", "completed", "complete", "finished", "done"}},
      {"failed", {"failed", "error", "failure"}},
      {"degraded", {"degraded", "unhealthy", "unavailable", "restarting"}},
      {"suspended", {"suspended", "paused", "stopped"}},
      {"suspending", {"suspending", "stopping", "pausing"}},
      {"resuming", {"resuming"}},
  };
  const std::string key = lower(value);
  for (const auto& [state, names] : kStates)
    if (names.count(key) != 0) return state;
  return "";
}

}  // namespace

void draft_status(Yaml& out, const json& schema) {
  static const json kNothing = json::object();
  const json* status_node = property(schema, "status");
  const json& status = status_node != nullptr ? *status_node : kNothing;
  const json* conditions = property(status, "conditions");
  const json* items = conditions != nullptr ? member(*conditions, "items") : nullptr;
  const bool has_conditions = items != nullptr && items->is_object() && property(*items, "type") != nullptr &&
                              property(*items, "status") != nullptr;
  auto [phase_names, phase] = phase_field(status);
  SchemaSteps phase_steps{{SchemaStep::Kind::Field, "status", false, nullptr}};
  for (const auto& name : phase_names) phase_steps.push_back({SchemaStep::Kind::Field, name, false, nullptr});
  const std::string phase_path = jq_path(phase_steps);
  out.line(6, "statusDefinition:");
  if (has_conditions) {
    out.comment(8, code(".status.conditions") + " is a list of Kubernetes conditions (type, status)");
    out.line(8, "conditionsDefinition:");
    out.line(10, "path: .status.conditions");
  }
  std::vector<std::pair<std::string, std::vector<std::string>>> mappings;
  std::vector<std::string> unmapped;
  if (phase != nullptr) {
    std::vector<std::string> values;
    if (const json* listed = member(*phase, "enum"); listed != nullptr && listed->is_array())
      for (const json& value : *listed)
        if (value.is_string()) values.push_back(value.get<std::string>());
    std::string text;
    for (const auto& value : values) text += (text.empty() ? "" : ", ") + value;
    out.comment(
        8, code(phase_path) + " is a string" +
               (values.empty() ? " whose values the schema does not list" : " of the values " + terminal_text(text)));
    out.line(8, "phaseDefinition:");
    out.line(10, "path: " + scalar(phase_path));
    for (const auto& value : values) {
      const std::string state = status_for(value);
      if (state.empty()) {
        unmapped.push_back(value);
        continue;
      }
      auto it = std::find_if(mappings.begin(), mappings.end(), [&](const auto& m) { return m.first == state; });
      if (it == mappings.end())
        mappings.push_back({state, {value}});
      else
        it->second.push_back(value);
    }
  }
  if (mappings.empty()) {
    out.comment(8, std::string(has_conditions || phase != nullptr
                                   ? "the schema lists no condition types or phase values: map them by hand,"
                                   : "the schema shows no conditions and no phase: map the status by hand,") +
                       " e.g. running: [{byConditions: [{type: Ready, status: \"True\"}]}]");
    out.line(8, "statusMappings: {}");
  } else {
    out.comment(8, "each value mapped to the status its name says; check them against the operator");
    out.line(8, "statusMappings:");
    for (const auto& [state, phases] : mappings) {
      out.line(10, state + ":");
      for (const auto& value : phases) out.line(12, "- byPhase: " + scalar(value));
    }
  }
  if (!unmapped.empty()) {
    std::string text;
    for (const auto& value : unmapped) text += (text.empty() ? "" : ", ") + value;
    out.comment(8, "not mapped (no status evidently matches): " + terminal_text(text));
  }
}

void draft_suspend(Yaml& out, const json& schema) {
  std::string path;
  if (const json* field = schema_at(schema, {"spec", "suspend"}); field != nullptr && type_of(*field) == "boolean") {
    path = ".spec.suspend";
  } else if (const json* spec = property(schema, "spec")) {
    for (const std::string& name : property_names(*spec)) {
      const json* inner = property(*spec, name);
      const json* field = inner != nullptr && type_of(*inner) == "object" ? property(*inner, "suspend") : nullptr;
      if (field != nullptr && type_of(*field) == "boolean") {
        path = jq_path({{SchemaStep::Kind::Field, "spec", false, spec},
                        {SchemaStep::Kind::Field, name, false, inner},
                        {SchemaStep::Kind::Field, "suspend", false, field}});
        break;
      }
    }
  }
  if (path.empty()) return;
  out.comment(6, code(path) + " is a boolean: set to suspend, cleared to resume");
  out.line(6, "suspendDefinition:");
  out.line(8, "suspendActions: [{path: " + scalar(path) + ", value: \"true\"}]");
  out.line(8, "resumeActions: [{path: " + scalar(path) + ", value: \"false\"}]");
}

}  // namespace karta
