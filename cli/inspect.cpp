#include "cli/inspect.h"

#include <cstdint>
#include <iomanip>
#include <sstream>

#include "definitions/status.h"
#include "definitions/suspend.h"
#include "definitions/workload.h"
#include "k8s/quantity.h"
#include "k8s/terminal_text.h"

namespace karta {
namespace {

std::string text_at(const json& object, const char* key) {
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return "";
  auto it = metadata->find(key);
  return it != metadata->end() && it->is_string() ? it->get<std::string>() : "";
}

// Past what an int64 holds, a figure prints as that bound, marked, as `inspect KIND/NAME` prints it.
std::string cpu_text(double cores) {
  if (cores == 0) return "0";
  if (!fits_int64(cores * 1000)) return ">=" + std::to_string(INT64_MAX) + "m";
  if (cores < 1 || std::nearbyint(cores) != cores) return format_count(std::round(cores * 1000)) + "m";
  return format_count(cores);
}

std::string memory_text(double bytes) {
  if (bytes == 0) return "0";
  if (!fits_int64(bytes)) return ">=" + std::to_string(INT64_MAX);
  static const std::pair<const char*, double> kUnits[] = {{"Ti", 1099511627776.0}, {"Gi", 1073741824.0},
                                                          {"Mi", 1048576.0}, {"Ki", 1024.0}};
  for (const auto& [unit, size] : kUnits) {
    if (bytes >= size) {
      std::ostringstream out;
      double value = bytes / size;
      out << (std::nearbyint(value) == value ? format_count(value) : (std::ostringstream() << std::setprecision(3) << value).str())
          << unit;
      return out.str();
    }
  }
  return format_count(bytes);
}

json conditions_json(const std::vector<ObservedCondition>& conditions) {
  json list = json::array();
  auto text = [](const std::optional<std::string>& v) { return v ? json(*v) : json(nullptr); };
  for (const auto& c : conditions) {
    list.push_back({{"type", c.type}, {"status", text(c.status)}, {"reason", text(c.reason)}, {"message", text(c.message)}});
  }
  return list;
}

// The status part of the report: the state, every matched status (kli's list), what the status
// definition read, and whether the spec holds the suspend actions' values.
void add_status(json& report, DefinitionEvaluation& evaluation) {
  WorkloadStatus status = evaluate_status(evaluation);
  report["state"] = status_name(status.state);
  report["statuses"] = status_names(status);
  report["phase"] = status.phase ? json(*status.phase) : json(nullptr);
  report["conditions"] = conditions_json(status.conditions);
  auto suspended = is_suspended(evaluation);
  report["suspended"] = suspended ? json(*suspended) : json(nullptr);
  for (auto& note : status.notes) report["notes"].push_back(std::move(note));
}

std::string optional_text(const json& value) { return value.is_string() ? value.get<std::string>() : ""; }

void render_status(std::ostringstream& out, const json& report) {
  std::string statuses;
  for (const auto& s : report["statuses"]) statuses += (statuses.empty() ? "" : ",") + s.get<std::string>();
  out << "statuses: " << statuses;
  if (report["phase"].is_string()) out << "  phase: " << report["phase"].get<std::string>();
  const json& suspended = report["suspended"];
  out << "  suspended: " << (suspended.is_null() ? "cannot be" : suspended.get<bool>() ? "yes" : "no") << "\n";
  for (const auto& c : report["conditions"]) {
    out << "  condition " << c["type"].get<std::string>() << "=" << optional_text(c["status"]);
    if (c["reason"].is_string()) out << "  " << c["reason"].get<std::string>();
    if (c["message"].is_string()) out << ": " << c["message"].get<std::string>();
    out << "\n";
  }
}

std::string plural(std::int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

json inspect_workload(const json& object, const CompiledDefinition& definition, const std::vector<std::string>& gpu_names) {
  JsonDocument document = JsonDocument::from(object);
  DefinitionEvaluation evaluation(definition, document.root());
  WorkloadAnalysis analysis = analyze_workload(evaluation, gpu_names);
  const auto& kind = definition.root_kind();
  json report = {{"apiVersion", kind.api_version()}, {"kind", kind.kind}, {"namespace", text_at(object, "namespace")},
                 {"name", text_at(object, "name")}, {"components", json::array()}, {"notes", analysis.layout.notes}};
  add_status(report, evaluation);
  if (report["name"] == "" && !text_at(object, "generateName").empty()) report["name"] = text_at(object, "generateName") + "*";
  std::int64_t pods = 0;
  double gpus = 0, cpu = 0, memory = 0;
  for (const auto& plan : definition.components()) {
    if (plan.spec_kind == SpecKind::None) continue;
    json component = {{"name", plan.component->name}, {"kind", plan.component->kind ? plan.component->kind->to_string() : ""},
                      {"instances", json::array()}};
    for (std::size_t i = 0; i < analysis.layout.templates.size(); ++i) {
      const auto& t = analysis.layout.templates[i];
      if (t.component != plan.component->name) continue;
      const PodRequests& r = analysis.per_pod[i];
      double n = static_cast<double>(t.replicas);
      component["instances"].push_back({{"instance", t.instance}, {"location", t.location.to_string()},
                                        {"replicas", t.replicas}, {"gpusPerPod", r.gpus}, {"gpus", r.gpus * n},
                                        {"cpuPerPod", r.cpu}, {"cpu", r.cpu * n},
                                        {"memoryBytesPerPod", r.memory_bytes}, {"memoryBytes", r.memory_bytes * n}});
      pods = checked_add(pods, t.replicas).value_or(INT64_MAX);  // a sum past 2^63-1 is shown as that
      gpus += r.gpus * n;
      cpu += r.cpu * n;
      memory += r.memory_bytes * n;
    }
    report["components"].push_back(std::move(component));
  }
  report["totals"] = {{"pods", pods}, {"gpus", gpus}, {"cpu", cpu}, {"memoryBytes", memory}};
  return report;
}

std::string render_inspection(const json& raw_report) {
  const json report = terminal_strings(raw_report);  // names, instance ids, conditions and notes are the manifest's
  std::ostringstream out;
  std::string name = report["name"].get<std::string>();
  if (!report["namespace"].get<std::string>().empty()) name = report["namespace"].get<std::string>() + "/" + name;
  out << report["kind"].get<std::string>() << " " << name << " (" << report["apiVersion"].get<std::string>()
      << ")  state: " << report["state"].get<std::string>() << "\n";
  render_status(out, report);
  const json& components = report["components"];
  std::vector<std::vector<std::string>> rows{{"ROLE", "COMPONENT", "REPLICAS", "GPU/POD", "GPU", "CPU", "MEMORY"}};
  for (std::size_t c = 0; c < components.size(); ++c) {
    const json& component = components[c];
    bool last_component = c + 1 == components.size();
    out << (last_component ? "└── " : "├── ") << component["name"].get<std::string>() << " ("
        << component["kind"].get<std::string>() << ")";
    if (component["instances"].empty()) out << ": none in this object";
    out << "\n";
    const json& instances = component["instances"];
    for (std::size_t i = 0; i < instances.size(); ++i) {
      const json& in = instances[i];
      std::int64_t replicas = in["replicas"].get<std::int64_t>();
      out << (last_component ? "    " : "│   ") << (i + 1 == instances.size() ? "└── " : "├── ")
          << in["instance"].get<std::string>() << " " << plural(replicas, "replica", "replicas") << " "
          << format_count(in["gpus"].get<double>()) << " GPU\n";
      rows.push_back({in["instance"].get<std::string>(), component["name"].get<std::string>(), std::to_string(replicas),
                      format_count(in["gpusPerPod"].get<double>()), format_count(in["gpus"].get<double>()),
                      cpu_text(in["cpu"].get<double>()), memory_text(in["memoryBytes"].get<double>())});
    }
  }
  const json& totals = report["totals"];
  rows.push_back({"total", "", std::to_string(totals["pods"].get<std::int64_t>()), "",
                  format_count(totals["gpus"].get<double>()), cpu_text(totals["cpu"].get<double>()),
                  memory_text(totals["memoryBytes"].get<double>())});
  out << "\n" << render_columns(rows);
  for (const auto& note : report["notes"]) out << "note: " << note.get<std::string>() << "\n";
  return out.str();
}

std::string render_columns(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], terminal_width(row[i]));
  }
  std::string text;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - terminal_width(row[i]) + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    text += line + "\n";
  }
  return text;
}

}  // namespace karta
