#include "cli/live_inspect.h"

// The view of a live workload, built from the object and its pods and laid out as text: everything of
// `inspect KIND/NAME` that needs no cluster, apart from the reading of the cluster (cli/live_inspect.cpp)
// so that it is tested on its own (tests/unit-live-inspect.cpp).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/live_inspect_internal.h"
#include "definitions/pod_attribution.h"
#include "definitions/status.h"
#include "definitions/workload.h"
#include "json/json_document.h"
#include "k8s/quantity.h"
#include "k8s/resources.h"
#include "policy/tenant_rules.h"
#include "k8s/terminal_text.h"

namespace karta {

using live_inspect::age_of;
using live_inspect::align;
using live_inspect::workload_phase;

namespace {

// ---- Pods ----

bool condition_is(const json& pod, const char* type, const char* status, std::string* reason = nullptr) {
  const json& conditions = member_or_null(member_or_null(pod, "status"), "conditions");
  if (!conditions.is_array()) return false;
  for (const json& condition : conditions) {
    if (string_or_empty(member_or_null(condition, "type")) != type) continue;
    if (string_or_empty(member_or_null(condition, "status")) != status) return false;
    if (reason) *reason = string_or_empty(member_or_null(condition, "reason"));
    return true;
  }
  return false;
}

// Why a pod is not ready, as the published CLI says it: the scheduler's reason, the pod's, or the
// Ready condition's.
std::string not_ready_reason(const json& pod) {
  std::string reason;
  if (condition_is(pod, "PodScheduled", "False", &reason) && !reason.empty()) return reason;
  if (std::string r = string_or_empty(member_or_null(member_or_null(pod, "status"), "reason")); !r.empty()) return r;
  if (condition_is(pod, "Ready", "False", &reason)) return reason;
  return "";
}

json resources_json(const PodRequests& r) { return {{"gpus", r.gpus}, {"cpu", r.cpu}, {"memoryBytes", r.memory_bytes}}; }

PodRequests scaled(const PodRequests& r, double n) { return {r.gpus * n, r.cpu * n, r.memory_bytes * n}; }
void add_to(PodRequests& total, const PodRequests& r) {
  total.gpus += r.gpus;
  total.cpu += r.cpu;
  total.memory_bytes += r.memory_bytes;
}

json pod_row(const json& pod, const std::vector<std::string>& gpu_names) {
  bool ready = condition_is(pod, "Ready", "True");
  std::string node = string_or_empty(member_or_null(member_or_null(pod, "spec"), "nodeName"));
  std::string phase = string_or_empty(member_or_null(member_or_null(pod, "status"), "phase"));
  json row = {{"name", metadata_string(pod, "name")}, {"phase", phase.empty() ? "Unknown" : phase}, {"ready", ready},
              {"node", node.empty() ? json(nullptr) : json(node)},
              {"resources", resources_json(pod_requests(member_or_null(pod, "spec"), gpu_names))}};
  if (!ready) {
    if (std::string reason = not_ready_reason(pod); !reason.empty()) row["reason"] = reason;
  }
  return row;
}

// A component or an instance of one: what the spec asks for, and the pods placed on it.
struct Tally {
  std::int64_t desired = 0, current = 0, ready = 0;
  PodRequests requests;
  std::set<std::string> nodes;
  json pods = json::array();

  void attach(json row) {
    ++current;
    if (row["ready"].get<bool>()) ++ready;
    if (row["node"].is_string()) nodes.insert(row["node"].get<std::string>());
    pods.push_back(std::move(row));
  }
  void absorb(const Tally& other) {
    desired += other.desired, current += other.current, ready += other.ready;
    add_to(requests, other.requests);
    nodes.insert(other.nodes.begin(), other.nodes.end());
  }
  json to_json(const std::string& name) const {
    return {{"name", name}, {"replicas", {{"desired", desired}, {"current", current}, {"ready", ready}}},
            {"resources", resources_json(requests)}, {"nodes", nodes}, {"pods", pods}};
  }
};

// ---- Text ----

std::string gpu_cell(const json& resources) {
  double gpus = resources["gpus"].get<double>();
  return gpus == 0 ? "" : "gpu: " + format_count(gpus);
}

std::string branch(bool last) { return last ? "`-- " : "|-- "; }
std::string indent(bool last) { return last ? "    " : "|   "; }

std::string joined(const json& strings, const char* separator) {
  std::string out;
  for (const auto& s : strings) out += (out.empty() ? "" : separator) + s.get<std::string>();
  return out;
}

std::string pod_status(const json& pod) {
  std::string status = pod["phase"].get<std::string>();
  if (pod.contains("reason")) status += " (" + pod["reason"].get<std::string>() + ")";
  return status;
}

void pod_rows(const json& pods, const std::string& prefix, bool more_follow, std::vector<std::vector<std::string>>& rows) {
  for (std::size_t i = 0; i < pods.size(); ++i) {
    const json& pod = pods[i];
    bool last = i + 1 == pods.size() && !more_follow;
    rows.push_back({prefix + branch(last) + pod["name"].get<std::string>(), pod_status(pod), gpu_cell(pod["resources"]),
                    pod["node"].is_string() ? pod["node"].get<std::string>() : "<none>"});
  }
}

void component_rows(const json& components, const std::string& prefix, std::vector<std::vector<std::string>>& rows) {
  for (std::size_t i = 0; i < components.size(); ++i) {
    const json& c = components[i];
    bool last = i + 1 == components.size();
    const json& replicas = c["replicas"];
    rows.push_back({prefix + branch(last) + c["name"].get<std::string>(),
                    std::to_string(replicas["ready"].get<std::int64_t>()) + "/" +
                        std::to_string(replicas["desired"].get<std::int64_t>()) + " ready",
                    gpu_cell(c["resources"]), joined(c["nodes"], ",")});
    bool has_instances = c.contains("instances") && !c["instances"].empty();
    pod_rows(c["pods"], prefix + indent(last), has_instances, rows);
    if (has_instances) component_rows(c["instances"], prefix + indent(last), rows);
  }
}

// resource.Quantity's canonical form, as the published CLI prints requests: CPU from millicores in
// decimal SI ("500m", "2", "1k"); memory in binary SI when it is a whole number of Ki, else decimal SI.
std::string decimal_quantity(std::int64_t mantissa, int exponent) {
  if (mantissa == 0) return "0";
  while (mantissa % 1000 == 0 && exponent < 18) mantissa /= 1000, exponent += 3;
  static const std::map<int, const char*> kSuffixes = {{-3, "m"}, {0, ""}, {3, "k"}, {6, "M"}, {9, "G"},
                                                        {12, "T"}, {15, "P"}, {18, "E"}};
  return std::to_string(mantissa) + kSuffixes.at(exponent);
}

// A figure past what an int64 holds (a quantity past 2^63-1 units is held at that bound, and sums and
// replicas grow it further) is printed as the bound, marked: never wrapped to a negative number.
std::string cpu_quantity(double cores) {
  if (!fits_int64(cores * 1000)) return ">=" + decimal_quantity(INT64_MAX, -3);
  return decimal_quantity(std::llround(cores * 1000), -3);
}

std::string memory_quantity(double bytes) {
  if (!fits_int64(bytes)) return ">=" + decimal_quantity(INT64_MAX, 0);
  std::int64_t mantissa = std::llround(bytes);
  if (mantissa == 0) return "0";
  static const char* kBinary[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  int power = 0;
  while (mantissa % 1024 == 0 && power < 6) mantissa /= 1024, ++power;
  if (power > 0) return std::to_string(mantissa) + kBinary[power];
  return decimal_quantity(mantissa, 0);
}

std::optional<std::chrono::system_clock::time_point> parse_timestamp(const std::string& rfc3339) {
  std::tm tm{};
  char zone = 0;
  if (std::sscanf(rfc3339.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &zone) != 7 || zone != 'Z') {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

}  // namespace

namespace live_inspect {

// The workload's phase as kli prints it: every status that matched, in the published order, joined by
// commas ("Undefined" when none did).
std::string workload_phase(DefinitionEvaluation& evaluation) {
  std::string phase;
  for (const auto& name : status_names(evaluate_status(evaluation))) phase += (phase.empty() ? "" : ", ") + name;
  return phase;
}

// Rows laid out as kubectl's tab writer lays them out (printers.GetNewTabWriter: minimum width 6,
// padding 3): every cell but the last of a row padded to its column's width; trailing blanks trimmed.
std::string align(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    for (std::size_t c = 0; c + 1 < row.size(); ++c) {
      if (widths.size() <= c) widths.resize(c + 1, 6);
      widths[c] = std::max(widths[c], terminal_width(row[c]) + 3);
    }
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(widths[c] - terminal_width(row[c]), ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string age_of(const std::string& created, std::chrono::system_clock::time_point now) {
  auto at = parse_timestamp(created);
  if (!at) return "<unknown>";
  return human_duration(std::chrono::duration_cast<std::chrono::seconds>(now - *at));
}

}  // namespace live_inspect

std::string human_duration(std::chrono::seconds age) {
  long long seconds = age.count();
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 120) return std::to_string(seconds) + "s";
  long long minutes = seconds / 60;
  if (minutes < 10) {
    long long s = seconds % 60;
    return std::to_string(minutes) + "m" + (s == 0 ? "" : std::to_string(s) + "s");
  }
  if (minutes < 180) return std::to_string(minutes) + "m";
  long long hours = minutes / 60;
  if (hours < 8) {
    long long m = minutes % 60;
    return std::to_string(hours) + "h" + (m == 0 ? "" : std::to_string(m) + "m");
  }
  if (hours < 48) return std::to_string(hours) + "h";
  if (hours < 24 * 8) {
    long long h = hours % 24;
    return std::to_string(hours / 24) + "d" + (h == 0 ? "" : std::to_string(h) + "h");
  }
  if (hours < 24 * 365 * 2) return std::to_string(hours / 24) + "d";
  if (hours < 24 * 365 * 8) {
    long long d = (hours / 24) % 365;
    return std::to_string(hours / 24 / 365) + "y" + (d == 0 ? "" : std::to_string(d) + "d");
  }
  return std::to_string(hours / 24 / 365) + "y";
}

json describe_live_workload(const json& object, const CompiledDefinition& definition, const std::string& origin,
                            const std::vector<json>& pods, const std::vector<std::string>& gpu_names) {
  JsonDocument document = JsonDocument::from(object);
  DefinitionEvaluation evaluation(definition, document.root());
  WorkloadAnalysis analysis = analyze_workload(evaluation, gpu_names);
  json view = {{"apiVersion", string_or_empty(member_or_null(object, "apiVersion"))}, {"kind", string_or_empty(member_or_null(object, "kind"))},
               {"namespace", metadata_string(object, "namespace")}, {"name", metadata_string(object, "name")},
               {"createdAt", metadata_string(object, "creationTimestamp")}, {"definition", definition.definition().name},
               {"origin", origin}, {"phase", workload_phase(evaluation)}, {"components", json::array()},
               {"unplaced", json::array()}, {"notes", analysis.layout.notes}};

  // Pods in name order, so that a second run reads the same.
  std::vector<std::size_t> order(pods.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](auto a, auto b) { return metadata_string(pods[a], "name") < metadata_string(pods[b], "name"); });
  std::vector<PodPlacement> placements = attribute_pods(definition, analysis.layout, pods);

  Tally total;
  for (const auto& plan : definition.components()) {
    if (plan.spec_kind == SpecKind::None) continue;
    const std::string& name = plan.component->name;
    std::map<std::string, Tally> instances;  // by id, in id order as the published tree sorts them
    for (std::size_t t = 0; t < analysis.layout.templates.size(); ++t) {
      const auto& location = analysis.layout.templates[t];
      if (location.component != name) continue;
      Tally& instance = instances[location.instance];
      instance.desired += location.replicas;
      add_to(instance.requests, scaled(analysis.per_pod[t], static_cast<double>(location.replicas)));
    }
    for (std::size_t i : order) {
      const PodPlacement& p = placements[i];
      if (p.component != &plan) continue;
      json row = pod_row(pods[i], gpu_names);
      if (p.replica_key) row["replica"] = *p.replica_key;
      instances[p.instance].attach(std::move(row));
      for (const auto& note : p.notes) view["notes"].push_back("pod " + metadata_string(pods[i], "name") + ": " + note);
    }
    Tally component;
    json instance_views = json::array();
    for (const auto& [id, instance] : instances) {
      component.absorb(instance);
      instance_views.push_back(instance.to_json(id));
    }
    json component_view;
    if (plan.component->instance_id) {
      component_view = component.to_json(name);
      component_view["instances"] = std::move(instance_views);
    } else {
      for (const auto& [id, instance] : instances) {
        for (const auto& pod : instance.pods) component.pods.push_back(pod);
      }
      component_view = component.to_json(name);
    }
    component_view["kind"] = plan.component->kind ? plan.component->kind->to_string() : "";
    view["components"].push_back(std::move(component_view));
    total.absorb(component);
  }
  for (std::size_t i : order) {
    if (placements[i].component != nullptr) continue;
    json row = pod_row(pods[i], gpu_names);
    row["why"] = placements[i].unplaced_reason;
    view["unplaced"].push_back(std::move(row));
  }
  view["totals"] = {{"replicas", {{"desired", total.desired}, {"current", total.current}, {"ready", total.ready}}},
                    {"resources", resources_json(total.requests)}};
  return view;
}

std::string render_live_workload(const json& raw_view, std::chrono::system_clock::time_point now) {
  const json view = terminal_strings(raw_view);  // names, reasons and notes are the cluster's text
  std::ostringstream out;
  std::string namespace_name = view["namespace"].get<std::string>();
  out << view["kind"].get<std::string>() << "/" << view["name"].get<std::string>() << "   namespace: "
      << (namespace_name.empty() ? "<none>" : namespace_name);
  if (view.contains("tenant")) {  // with tenant rules: the one whose policy applies here
    out << "   tenant: " << tenant_display_name(view["tenant"])
        << (view.value("exempt", false) ? " (exempt)" : "");
  }
  out << "   definition: " << view["definition"].get<std::string>()
      << " (" << view["origin"].get<std::string>() << ")   age: " << age_of(view["createdAt"].get<std::string>(), now)
      << "\n";
  if (!view["components"].empty()) {
    std::vector<std::vector<std::string>> rows;
    component_rows(view["components"], "", rows);
    out << "\n" << align(rows);
  }
  if (!view["unplaced"].empty()) {
    std::vector<std::vector<std::string>> rows;
    const json& pods = view["unplaced"];
    for (std::size_t i = 0; i < pods.size(); ++i) {
      const json& pod = pods[i];
      rows.push_back({branch(i + 1 == pods.size()) + pod["name"].get<std::string>(), pod_status(pod),
                      gpu_cell(pod["resources"]), pod["node"].is_string() ? pod["node"].get<std::string>() : "<none>",
                      pod["why"].get<std::string>()});
    }
    out << "\nPods of this workload no podSelector places:\n" << align(rows);
  }
  out << "\nPhase: " << view["phase"].get<std::string>() << "\n";

  std::vector<std::vector<std::string>> table{{"COMPONENT", "REPLICAS", "GPU", "CPU", "MEMORY"}};
  std::int64_t replicas = 0;
  auto add_row = [&](const json& row) {
    std::int64_t desired = row["replicas"]["desired"].get<std::int64_t>();
    replicas += desired;
    const json& r = row["resources"];
    table.push_back({row["name"].get<std::string>(), std::to_string(desired), format_count(r["gpus"].get<double>()),
                     cpu_quantity(r["cpu"].get<double>()), memory_quantity(r["memoryBytes"].get<double>())});
  };
  for (const auto& component : view["components"]) {
    // A component with instance ids only groups them: its instances are the rows, so they sum to TOTAL.
    if (component.contains("instances") && !component["instances"].empty()) {
      for (const auto& instance : component["instances"]) add_row(instance);
    } else {
      add_row(component);
    }
  }
  const json& totals = view["totals"]["resources"];
  table.push_back({"TOTAL", std::to_string(replicas), format_count(totals["gpus"].get<double>()),
                   cpu_quantity(totals["cpu"].get<double>()), memory_quantity(totals["memoryBytes"].get<double>())});
  out << "\nResources:\n" << align(table);
  for (const auto& note : view["notes"]) out << "note: " << note.get<std::string>() << "\n";
  return out.str();
}

}  // namespace karta
