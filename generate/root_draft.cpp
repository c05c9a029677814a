#include "generate/root_draft.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "generate/pod_places.h"
#include "json/documents.h"
#include "k8s/terminal_text.h"
#include "validate/crd_schema_nodes.h"
#include "validate/crd_schema_set.h"

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
      {"failed", {"failed", "error", "failure", "terminated"}},
      {"degraded", {"degraded", "unhealthy", "unavailable", "restarting"}},
      {"suspended", {"suspended", "paused", "stopped", "aborted"}},
      {"suspending", {"suspending", "stopping", "pausing", "aborting"}},
      {"resuming", {"resuming"}},
  };
  const std::string key = lower(value);
  for (const auto& [state, names] : kStates)
    if (names.count(key) != 0) return state;
  return "";
}

// The condition types a status is read from, with the published matcher each gets: the types the schema
// lists (an enum of `type`), else the common ones, assumed.
const std::vector<std::pair<std::string, std::string>>& common_condition_types() {
  static const std::vector<std::pair<std::string, std::string>> kTypes = {
      {"Failed", "failed"},       {"Complete", "completed"}, {"Completed", "completed"}, {"Succeeded", "completed"},
      {"Suspended", "suspended"}, {"Ready", "running"},      {"Available", "running"}};
  return kTypes;
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
  // Each status with its matchers, in the order first mapped.
  std::vector<std::pair<std::string, std::vector<std::string>>> mappings;
  auto map = [&](const std::string& state, const std::string& matcher) {
    auto it = std::find_if(mappings.begin(), mappings.end(), [&](const auto& m) { return m.first == state; });
    if (it == mappings.end())
      mappings.push_back({state, {matcher}});
    else
      it->second.push_back(matcher);
  };
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
      if (state.empty())
        unmapped.push_back(value);
      else
        map(state, "byPhase: " + scalar(value));
    }
  }
  // Conditions: the types the schema lists, else (when no phase value mapped) the common ones, assumed.
  std::string by_conditions;
  if (has_conditions) {
    std::set<std::string> listed;
    if (const json* types = member(*property(*items, "type"), "enum"); types != nullptr && types->is_array())
      for (const json& type : *types)
        if (type.is_string()) listed.insert(type.get<std::string>());
    if (!listed.empty() || mappings.empty()) {
      for (const auto& [type, state] : common_condition_types()) {
        if (!listed.empty() && listed.count(type) == 0) continue;
        map(state, "byConditions: [{type: " + type + ", status: \"True\"}]");
        by_conditions += (by_conditions.empty() ? "" : ", ") + type;
      }
    }
    if (!by_conditions.empty())
      by_conditions = (listed.empty() ? "assumed: the common condition types (" : "the condition types the schema lists (") +
                      by_conditions + ")";
  }
  if (mappings.empty()) {
    out.comment(8, "fill in: " + std::string(phase != nullptr ? "the schema lists no phase values to map,"
                                                                  : "the schema shows no conditions and no phase,") +
                       " so nothing says when the workload runs, completes or fails; map them by hand,");
    out.comment(8, "e.g. running: [{byConditions: [{type: Ready, status: \"True\"}]}] or [{byPhase: Running}]");
    out.line(8, "statusMappings: {}");
  } else {
    out.comment(8, "each value mapped to the status its name says; check them against the operator");
    if (!by_conditions.empty()) out.comment(8, by_conditions);
    if (by_conditions.starts_with("assumed"))
      out.comment(8, "the schema lists no condition types: keep those the operator sets, drop the others");
    out.line(8, "statusMappings:");
    for (const auto& [state, matchers] : mappings) {
      out.line(10, state + ":");
      for (const auto& matcher : matchers) out.line(12, "- " + matcher);
    }
  }
  if (!unmapped.empty()) {
    std::string text;
    for (const auto& value : unmapped) text += (text.empty() ? "" : ", ") + value;
    out.comment(8, "not mapped (no status evidently matches): " + terminal_text(text));
  }
}

namespace {

// A boolean of `.spec` that stops the workload when set: by its name (suspend, paused, ...), else by its
// description ("...suspend...", "...pause..."); else a `suspend` one object further down (Ray's
// .spec.submitterConfig...). The path and what said so.
std::pair<std::string, std::string> suspend_field(const json& schema) {
  static const std::vector<std::string> kNames = {"suspend", "suspended", "paused", "pause", "stopped", "stop"};
  const json* spec = property(schema, "spec");
  if (spec == nullptr) return {};
  auto path = [&](std::vector<std::pair<std::string, const json*>> fields) {
    SchemaSteps steps{{SchemaStep::Kind::Field, "spec", false, spec}};
    for (const auto& [name, node] : fields) steps.push_back({SchemaStep::Kind::Field, name, false, node});
    return jq_path(steps);
  };
  auto boolean = [](const json* field) { return field != nullptr && type_of(*field) == "boolean"; };
  for (const std::string& name : kNames)
    if (const json* field = property(*spec, name); boolean(field))
      return {path({{name, field}}), "is a boolean named for stopping the workload"};
  for (const std::string& name : property_names(*spec)) {
    const json* field = property(*spec, name);
    const json* description = boolean(field) ? member(*field, "description") : nullptr;
    if (description == nullptr || !description->is_string()) continue;
    const std::string text = lower(description->get<std::string>());
    if (text.find("suspend") != std::string::npos || text.find("pause") != std::string::npos)
      return {path({{name, field}}), "is a boolean whose description says it suspends or pauses the workload"};
  }
  for (const std::string& name : property_names(*spec)) {
    const json* inner = property(*spec, name);
    const json* field = inner != nullptr && type_of(*inner) == "object" ? property(*inner, "suspend") : nullptr;
    if (boolean(field)) return {path({{name, inner}, {"suspend", field}}), "is a boolean named for stopping the workload"};
  }
  return {};
}

}  // namespace

void draft_suspend(Yaml& out, const json& schema) {
  const auto [path, why] = suspend_field(schema);
  if (path.empty()) {
    out.comment(6, "no suspendDefinition: `.spec` has no boolean named or described for suspending (suspend, paused, "
                   "...)");
    return;
  }
  out.comment(6, code(path) + " " + why + ": set to suspend, cleared to resume");
  out.line(6, "suspendDefinition:");
  out.line(8, "suspendActions: [{path: " + scalar(path) + ", value: \"true\"}]");
  out.line(8, "resumeActions: [{path: " + scalar(path) + ", value: \"false\"}]");
}

std::vector<std::string> equivalent_versions(const json& crd, const std::string& version) {
  std::vector<std::string> found;
  std::vector<std::shared_ptr<const CrdSchema>> served;
  try {
    served = CrdSchemaSet::parse_crd(crd);
  } catch (const InputError&) {
    return found;  // draft_karta says what is wrong with the CRD
  }
  const auto drafted = std::find_if(served.begin(), served.end(), [&](const auto& s) { return s->kind.version == version; });
  if (drafted == served.end() || !(*drafted)->schema.is_object()) return found;
  for (const auto& other : served)
    if (other->kind.version != version && other->schema == (*drafted)->schema) found.push_back(other->kind.version);
  return found;
}

}  // namespace karta
