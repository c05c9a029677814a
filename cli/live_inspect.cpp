#include "cli/live_inspect.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <tuple>

#include "definitions/pod_attribution.h"
#include "definitions/status.h"
#include "definitions/workload.h"
#include "json/json_document.h"
#include "k8s/resources.h"
#include "kube/api_client.h"
#include "kube/discovery.h"
#include "kube/kube_connection.h"
#include "kube/list_pages.h"
#include "runtime/admission_state_loader.h"

namespace karta {
namespace {

// The workload's phase as kli prints it: every status that matched, in the published order, joined by
// commas ("Undefined" when none did).
std::string workload_phase(DefinitionEvaluation& evaluation) {
  std::string phase;
  for (const auto& name : status_names(evaluate_status(evaluation))) phase += (phase.empty() ? "" : ", ") + name;
  return phase;
}

std::string origin_of(const KartaDefinition& definition) {
  if (definition.source.starts_with("builtin:")) return "catalog";
  if (definition.source.starts_with("cluster:")) return "cluster";
  return "file";
}

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

std::size_t display_width(const std::string& s) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

// Rows laid out as kubectl's tab writer lays them out (printers.GetNewTabWriter: minimum width 6,
// padding 3): every cell but the last of a row padded to its column's width; trailing blanks trimmed.
std::string align(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    for (std::size_t c = 0; c + 1 < row.size(); ++c) {
      if (widths.size() <= c) widths.resize(c + 1, 6);
      widths[c] = std::max(widths[c], display_width(row[c]) + 3);
    }
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(widths[c] - display_width(row[c]), ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

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

std::string cpu_quantity(double cores) { return decimal_quantity(std::llround(cores * 1000), -3); }

std::string memory_quantity(double bytes) {
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

std::string age_of(const std::string& created, std::chrono::system_clock::time_point now) {
  auto at = parse_timestamp(created);
  if (!at) return "<unknown>";
  return human_duration(std::chrono::duration_cast<std::chrono::seconds>(now - *at));
}

// ---- The cluster ----

kube::KubeConnection connect(const LiveOptions& options) {
  if (options.in_cluster) return kube::in_cluster_connection();
  std::string file = options.kubeconfig;
  if (file.empty()) {
    const char* env = std::getenv("KUBECONFIG");
    const char* home = std::getenv("HOME");
    if (env != nullptr && *env != '\0') {
      file = std::string(env).substr(0, std::string(env).find(':'));
    } else {
      file = std::string(home != nullptr ? home : "") + "/.kube/config";
    }
  }
  return kube::load_kubeconfig(file);
}

std::string where(const kube::ApiResource& resource, const std::string& namespace_name) {
  if (!resource.namespaced) return "";
  return namespace_name.empty() ? " in any namespace" : " in namespace " + namespace_name;
}

// An API error as the user should read it: what was asked, where, and the server's reason.
std::string api_failure(const std::string& verb, const std::string& what, const std::string& place,
                        const kube::ApiError& e) {
  if (e.status() == 404) return what + " not found" + place;
  if (e.status() == 403) return "not allowed to " + verb + " " + what + place + ": " + e.message();
  return "cannot " + verb + " " + what + place + ": " + e.what();
}

class FailedCommand : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The connection, discovery and definitions a live command works with.
struct Cluster {
  kube::ApiClient client;
  kube::Discovery discovery{client};
  std::shared_ptr<AdmissionState> state;
  std::vector<std::string> notes;
  std::string namespace_name;

  explicit Cluster(const LiveOptions& options) : client(connect(options)) {
    namespace_name = !options.namespace_name.empty()               ? options.namespace_name
                     : !client.connection().default_namespace.empty() ? client.connection().default_namespace
                                                                       : "default";
    // The cluster's Karta objects over the built-in catalog and --definitions, as `serve` merges them.
    ClusterSources sources;
    if (auto kartas = discovery.resolve("run.ai", "v1alpha1", "Karta")) {
      try {
        kube::list_all(client, kartas->collection_path(), {}, [&](kube::ListPage& page) {
          for (auto& item : page.items) sources.kartas[metadata_string(item, "name")] = std::move(item);
        });
      } catch (const kube::ApiError& e) {
        notes.push_back("the cluster's Karta objects were not read (" + api_failure("list", "kartas.run.ai", "", e) +
                        "): only the built-in catalog and --definitions are used");
      }
    }
    AdmissionStateLoader loader(std::vector<std::filesystem::path>(options.definitions.begin(), options.definitions.end()),
                                options.policy, 1);
    state = loader.load(sources, &notes);
  }

  const std::vector<std::string>& gpu_names() const { return state->policy.gpu.resource_names; }

  bool covered(const GroupVersionKind& kind) const {
    for (const auto& definition : state->catalog.definitions()) {
      const auto& root = definition->root_kind();
      if (root.group == kind.group && root.kind == kind.kind) return true;
    }
    return false;
  }

  // Owners read through discovery; one that is gone, or of a kind no longer served, ends the chain. One
  // that may not be read ends it too, with a note: its pods are left out, as the published CLI leaves them.
  OwnerWalk owner_walk() {
    return OwnerWalk([this](const OwnerReference& ref, const std::string& namespace_name) -> std::optional<json> {
      auto resource = discovery.resolve(ref.kind.group, ref.kind.version, ref.kind.kind);
      if (!resource) return std::nullopt;
      try {
        return client.get(resource->collection_path(namespace_name) + "/" + ref.name);
      } catch (const kube::ApiError& e) {
        if (e.status() == 404) return std::nullopt;
        if (e.status() != 403) throw;
        notes.push_back("objects owned by " + resource->group_resource() + " \"" + ref.name + "\"" +
                        where(*resource, namespace_name) + " are left out: " + api_failure("get", "it", "", e));
        return std::nullopt;
      }
    });
  }
};

// A label selector for each pod-bearing component when every one has matchLabels (the server then
// sends only their pods); else one LIST of every pod.
std::vector<std::string> pod_label_selectors(const CompiledDefinition& definition) {
  std::vector<std::string> selectors;
  for (const auto& plan : definition.components()) {
    if (plan.spec_kind == SpecKind::None) continue;
    const auto& selector = plan.component->pod_selector;
    if (!selector || !selector->component_type || selector->component_type->match_labels.empty()) return {""};
    std::string text;
    for (const auto& [key, value] : selector->component_type->match_labels) text += (text.empty() ? "" : ",") + key + "=" + value;
    if (std::find(selectors.begin(), selectors.end(), text) == selectors.end()) selectors.push_back(text);
  }
  return selectors.empty() ? std::vector<std::string>{""} : selectors;
}

void print_notes(const std::vector<std::string>& notes, std::ostream& err) {
  for (const auto& note : notes) err << "note: " << note << "\n";
}

}  // namespace

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

std::string render_live_workload(const json& view, std::chrono::system_clock::time_point now) {
  std::ostringstream out;
  std::string namespace_name = view["namespace"].get<std::string>();
  out << view["kind"].get<std::string>() << "/" << view["name"].get<std::string>() << "   namespace: "
      << (namespace_name.empty() ? "<none>" : namespace_name) << "   definition: " << view["definition"].get<std::string>()
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

int inspect_live(const LiveOptions& options, std::ostream& out, std::ostream& err) {
  auto slash = options.target.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == options.target.size()) {
    err << "karta-webhook: inspect wants KIND/NAME (jobset/demo), not \"" << options.target << "\"\n";
    return 1;
  }
  const std::string kind_name = options.target.substr(0, slash), name = options.target.substr(slash + 1);
  Cluster cluster(options);
  const std::string& ns = cluster.namespace_name;
  auto resource = cluster.discovery.resolve(kind_name);
  if (!resource) {
    print_notes(cluster.notes, err);
    err << "karta-webhook: the server doesn't have a resource type \"" << kind_name << "\"\n";
    return 1;
  }
  // The definition of the resolved version, or of another version of the kind that the cluster serves.
  const CompiledDefinition* definition = cluster.state->catalog.find({resource->group, resource->version, resource->kind});
  for (const auto& candidate : cluster.state->catalog.definitions()) {
    if (definition != nullptr) break;
    const auto& kind = candidate->root_kind();
    if (kind.group != resource->group || kind.kind != resource->kind) continue;
    if (auto served = cluster.discovery.resolve(kind.group, kind.version, kind.kind)) {
      resource = served;
      definition = candidate.get();
    }
  }
  if (definition == nullptr) {
    print_notes(cluster.notes, err);
    err << "karta-webhook: no Karta definition for " << resource->kind << " (" << resource->api_version()
        << "): neither the built-in catalog, --definitions nor the cluster's Kartas describe it\n";
    return 1;
  }
  const std::string what = resource->group_resource() + " \"" + name + "\"";
  json object;
  std::vector<json> pods;
  try {
    object = cluster.client.get(resource->collection_path(ns) + "/" + name);
  } catch (const kube::ApiError& e) {
    print_notes(cluster.notes, err);
    err << "karta-webhook: " << api_failure("get", what, where(*resource, ns), e) << "\n";
    return 1;
  }
  try {
    std::set<std::string> seen;
    for (const auto& selector : pod_label_selectors(*definition)) {
      kube::ListOptions list_options{selector, options.page_size};
      kube::list_all(cluster.client, "/api/v1/namespaces/" + ns + "/pods", list_options, [&](kube::ListPage& page) {
        for (auto& pod : page.items) {
          if (seen.insert(metadata_string(pod, "name")).second) pods.push_back(std::move(pod));
        }
      });
    }
  } catch (const kube::ApiError& e) {
    print_notes(cluster.notes, err);
    err << "karta-webhook: " << api_failure("list", "pods", " in namespace " + ns, e) << "\n";
    return 1;
  }
  OwnerWalk walk = cluster.owner_walk();
  const std::string uid = metadata_string(object, "uid");
  std::vector<json> owned;
  for (auto& pod : pods) {
    if (walk.owned_by(pod, uid)) owned.push_back(std::move(pod));
  }
  json view = describe_live_workload(object, *definition, origin_of(definition->definition()), owned, cluster.gpu_names());
  if (options.output == "json") {
    out << view.dump(2) << "\n";
  } else {
    out << render_live_workload(view, options.now);
  }
  print_notes(cluster.notes, err);
  return 0;
}

int list_live(const LiveOptions& options, std::ostream& out, std::ostream& err) {
  Cluster cluster(options);
  const std::string ns = options.all_namespaces ? "" : cluster.namespace_name;
  OwnerWalk walk = cluster.owner_walk();
  auto covered = [&](const GroupVersionKind& kind) { return cluster.covered(kind); };
  json items = json::array();
  for (const auto& definition : cluster.state->catalog.definitions()) {
    const GroupVersionKind& kind = definition->root_kind();
    auto resource = cluster.discovery.resolve(kind.group, kind.version, kind.kind);
    if (!resource || !resource->supports("list")) {
      cluster.notes.push_back(kind.kind + " (" + kind.api_version() + ") is not served by the cluster: skipped");
      continue;
    }
    std::vector<json> objects;
    try {
      kube::list_all(cluster.client, resource->collection_path(ns), {"", options.page_size}, [&](kube::ListPage& page) {
        for (auto& item : page.items) objects.push_back(std::move(item));
      });
    } catch (const kube::ApiError& e) {
      cluster.notes.push_back(api_failure("list", resource->group_resource(), where(*resource, ns), e) + ": skipped");
      continue;
    }
    for (const auto& object : objects) {
      // A Job of a JobSet, a Pod of a Deployment: part of a workload listed on its own row.
      if (walk.nested(object, covered)) continue;
      JsonDocument document = JsonDocument::from(object);
      DefinitionEvaluation evaluation(*definition, document.root());
      WorkloadAnalysis analysis = analyze_workload(evaluation, cluster.gpu_names());
      json components = json::array();
      for (const auto& t : analysis.layout.templates) components.push_back({{"name", t.instance}, {"replicas", t.replicas}});
      items.push_back({{"namespace", metadata_string(object, "namespace")}, {"name", metadata_string(object, "name")}, {"kind", kind.kind},
                       {"apiVersion", kind.api_version()}, {"phase", workload_phase(evaluation)},
                       {"components", components}, {"gpus", analysis.total_gpus},
                       {"createdAt", metadata_string(object, "creationTimestamp")},
                       {"definition", definition->definition().name}, {"origin", origin_of(definition->definition())}});
    }
  }
  std::stable_sort(items.begin(), items.end(), [](const json& a, const json& b) {
    return std::tie(a["namespace"], a["name"], a["kind"]) < std::tie(b["namespace"], b["name"], b["kind"]);
  });
  if (options.output == "json") {
    out << json{{"items", items}, {"count", items.size()}}.dump(2) << "\n";
  } else if (items.empty()) {
    err << (options.all_namespaces ? "No workloads found in any namespace.\n" : "No workloads found in namespace " + ns + ".\n");
  } else {
    std::vector<std::vector<std::string>> rows{{"NAMESPACE", "NAME", "KIND", "PHASE", "COMPONENTS", "GPU", "AGE"}};
    for (const auto& item : items) {
      std::string components;
      for (const auto& c : item["components"]) {
        components += (components.empty() ? "" : ", ") + c["name"].get<std::string>() + "(" +
                      std::to_string(c["replicas"].get<std::int64_t>()) + ")";
      }
      rows.push_back({item["namespace"].get<std::string>(), item["name"].get<std::string>(),
                      item["kind"].get<std::string>(), item["phase"].get<std::string>(), components,
                      format_count(item["gpus"].get<double>()), age_of(item["createdAt"].get<std::string>(), options.now)});
    }
    out << align(rows);
  }
  print_notes(cluster.notes, err);
  return 0;
}

LiveCommands::LiveCommands(CLI::App& app, CLI::App& inspect) : inspect_(&inspect) {
  auto add_cluster_options = [](CLI::App& command, LiveOptions& options) {
    command.add_option("--kubeconfig", options.kubeconfig, "Kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
        ->check(CLI::ExistingFile);
    command.add_flag("--in-cluster", options.in_cluster, "Use the pod's own API server and service account");
    command.add_option("--chunk-size", options.page_size, "LIST in pages of this many objects (0: one answer)")
        ->capture_default_str();
  };
  inspect.add_option("target", inspect_options_.target, "KIND/NAME of a live workload: jobset/demo, jobsets.jobset.x-k8s.io/demo");
  inspect.add_option("-n,--namespace", inspect_options_.namespace_name, "Namespace (default: the kubeconfig context's)");
  add_cluster_options(inspect, inspect_options_);
  inspect.footer(inspect.get_footer() + "\n  karta-webhook inspect jobset/demo -n research --kubeconfig ~/.kube/config");

  list_ = app.add_subcommand("list", "List the cluster's workloads of every kind that has a definition");
  list_->footer("Example:\n  karta-webhook list -n research\n  karta-webhook list -A --output json");
  list_->add_option("-n,--namespace", list_options_.namespace_name, "Namespace (default: the kubeconfig context's)");
  list_->add_flag("-A,--all-namespaces", list_options_.all_namespaces, "Every namespace");
  list_->add_option("-o,--output", list_options_.output, "text or json")
      ->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  add_cluster_options(*list_, list_options_);
}

std::optional<int> LiveCommands::run(const std::vector<std::string>& definitions, const std::string& policy,
                                     const std::string& output, bool inspect_file_given, std::ostream& out,
                                     std::ostream& err) {
  LiveOptions* options = nullptr;
  if (*list_) options = &list_options_;
  if (*inspect_) {
    if (inspect_options_.target.empty() == !inspect_file_given) {
      err << "karta-webhook: inspect wants either -f MANIFEST or KIND/NAME of a live workload\n";
      return 1;
    }
    if (inspect_file_given) return std::nullopt;
    options = &inspect_options_;
    options->output = output;
  }
  if (options == nullptr) return std::nullopt;
  options->definitions = definitions;
  options->policy = policy;
  options->now = std::chrono::system_clock::now();
  try {
    return options == &list_options_ ? list_live(*options, out, err) : inspect_live(*options, out, err);
  } catch (const std::exception& e) {
    err << "karta-webhook: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace karta
