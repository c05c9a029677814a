#include "cli/live_inspect.h"

#include <algorithm>
#include <ostream>
#include <map>
#include <set>
#include <tuple>
#include <variant>

#include "cli/cluster_namespaces.h"
#include "cli/live_inspect_internal.h"
#include "cli/trainer_runtimes.h"
#include "definitions/pod_attribution.h"
#include "definitions/workload.h"
#include "json/json_document.h"
#include "k8s/terminal_text.h"
#include "kube/api_client.h"
#include "kube/api_path.h"
#include "kube/discovery.h"
#include "kube/kube_connection.h"
#include "kube/list_pages.h"
#include "runtime/admission_state_loader.h"

namespace karta {

using live_inspect::age_of;
using live_inspect::align;
using live_inspect::workload_phase;

namespace {

std::string origin_of(const KartaDefinition& definition) {
  if (definition.source.starts_with("builtin:")) return "catalog";
  if (definition.source.starts_with("cluster:")) return "cluster";
  return "file";
}

// ---- The cluster ----

kube::KubeConnection connect(const LiveOptions& options) {
  if (options.in_cluster) return kube::in_cluster_connection();
  return kube::load_kubeconfig(kube::kubeconfig_files(options.kubeconfig), options.context);
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

// A name taken from the cluster, quoted for a note. It may hold any bytes (an ownerReference's name,
// control characters included): print_notes() escapes every note for the terminal, once.
std::string quoted(const std::string& name) { return "\"" + name + "\""; }

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
  std::size_t page_size = 0;
  std::map<std::string, TenantDecision> tenants;  // by namespace
  // The object whose owner chain owner_walk() is climbing ("Pod \"p\" in namespace ns"), for its notes.
  std::string climbing;
  // The runtimes TrainJobs leave their node count to, each read once; cli/trainer_runtimes decides what
  // counts, as for `inspect -f`.
  TrainerRuntimes runtimes{[this](const TrainerRuntimeRef& ref) { return read_runtime(ref); }};

  explicit Cluster(const LiveOptions& options) : client(connect(options)) {
    namespace_name = !options.namespace_name.empty()               ? options.namespace_name
                     : !client.connection().default_namespace.empty() ? client.connection().default_namespace
                                                                       : "default";
    // The cluster's Karta objects over the built-in catalog and --definitions, as `serve` merges them.
    ClusterSources sources;
    if (auto kartas = discovery.resolve("run.ai", "v1alpha1", "Karta")) {
      try {
        kube::list_all(client, kartas->collection_path(), {}, [&](kube::ListPage& page) {
          for (auto& item : page.items) {
            // The name first: json's operator= takes its argument by value and C++17 evaluates the right
            // side first, so `kartas[name(item)] = std::move(item)` would key every Karta by "".
            std::string name = metadata_string(item, "name");
            sources.kartas[name] = std::move(item);
          }
        });
      } catch (const kube::ApiError& e) {
        notes.push_back("the cluster's Karta objects were not read (" + api_failure("list", "kartas.run.ai", "", e) +
                        "): only the built-in catalog and --definitions are used");
      }
    }
    AdmissionStateLoader loader(std::vector<std::filesystem::path>(options.definitions.begin(), options.definitions.end()),
                                options.policy, 1);
    state = loader.load(sources, &notes);
    if (!options.namespaces.empty()) {
      state->namespaces = std::make_shared<NamespaceFile>(NamespaceFile::load(options.namespaces));
    }
    page_size = options.page_size;
  }

  // The tenant of a workload in `namespace_name`, decided as serve decides it. The labels its rules read
  // come from --namespaces, else from the cluster: the one namespace, or every one ("", list -A), read
  // once. Labels that cannot be learnt are named in a note, once per namespace.
  const TenantDecision& tenant(const std::string& namespace_name, bool all_namespaces) {
    if (auto known = tenants.find(namespace_name); known != tenants.end()) return known->second;
    // A cluster-scoped object has no namespace to read labels of.
    if (!state->namespaces && state->policy.needs_namespace_labels() && !namespace_name.empty()) {
      state->namespaces = read_cluster_namespaces(client, all_namespaces ? "" : namespace_name, page_size).labels;
    }
    const TenantDecision& decision = tenants.emplace(namespace_name, decide_tenant(*state, namespace_name)).first->second;
    if (!decision.unknown_labels_warning.empty()) notes.push_back(decision.unknown_labels_warning);
    return decision;
  }

  // The GPU resources counted in a namespace: its tenant's, else the global policy's.
  const std::vector<std::string>& gpu_names(const TenantDecision& decision) const {
    return decision.choice.settings(state->policy).gpu.resource_names;
  }

  bool covered(const GroupVersionKind& kind) const {
    for (const auto& definition : state->catalog.definitions()) {
      const auto& root = definition->root_kind();
      if (root.group == kind.group && root.kind == kind.kind) return true;
    }
    return false;
  }

  // Owners read through discovery; one of a kind no longer served ends the chain. One that cannot be
  // read (gone, forbidden, failing, or a name the client refuses to send) ends it too, with a note on the
  // object being climbed; the command goes on with the other objects. Each owner is asked for once.
  OwnerWalk owner_walk() {
    return OwnerWalk([this](const OwnerReference& ref, const std::string& namespace_name) -> std::optional<json> {
      try {
        auto resource = discovery.resolve(ref.kind.group, ref.kind.version, ref.kind.kind);
        if (!resource) return std::nullopt;
        return client.get(resource->object_path(namespace_name, ref.name));
      } catch (const kube::ApiError& e) {
        notes.push_back("the owner chain of " + climbing + " ends at " + ref.kind.kind +
                        " " + quoted(ref.name) + ", which could not be read: " +
                        (e.status() == 404 ? std::string("not found") : std::string(e.what())));
        return std::nullopt;
      }
    });
  }

  // A runtime of Kubeflow Trainer, or why it could not be read: the status code and the server's words,
  // bounded and escaped (escaping them again where the note is printed leaves them as they are).
  std::variant<json, std::string> read_runtime(const TrainerRuntimeRef& ref) {
    const GroupVersionKind kind = GroupVersionKind::from_api_version(ref.api_version, ref.kind);
    try {
      auto resource = discovery.resolve(kind.group, kind.version, kind.kind);
      if (!resource) return "the cluster does not serve " + ref.kind + " of " + bounded_text(ref.api_version, 64);
      return client.get(resource->object_path(ref.namespace_name, ref.name));
    } catch (const kube::ApiError& e) {
      if (e.status() == 0) return "no answer: " + bounded_text(e.message(), 256);
      std::string why = "HTTP " + std::to_string(e.status());
      if (!e.reason().empty()) why += " " + bounded_text(e.reason(), 64);
      if (!e.message().empty()) why += ": " + bounded_text(e.message(), 256);  // an RBAC denial is whole
      return why;
    } catch (const std::exception& e) {  // credentials that cannot be read, ...: this TrainJob only
      return bounded_text(e.what(), 256);
    }
  }

  // Names `object` in the notes of the owner walk that follows.
  void climb_from(const json& object) {
    const std::string ns = metadata_string(object, "namespace");
    climbing = string_or_empty(member_or_null(object, "kind")) + " " +
               quoted(metadata_string(object, "name")) + (ns.empty() ? "" : " in namespace " + ns);
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

// One note for every kind with a definition that the cluster does not serve: most clusters run a few
// of the catalog's frameworks, and a line per kind buried the table. A kind name that two definitions
// share (MPIJob's two versions; Volcano's Job and batch Job) is told apart by its apiVersion, whether or
// not the other is served: a bare "Job" would read as batch's. Sorted by kind, so a reader finds a name.
std::string unserved_kinds_note(std::vector<GroupVersionKind> kinds, const Catalog& catalog) {
  std::sort(kinds.begin(), kinds.end(), [](const GroupVersionKind& a, const GroupVersionKind& b) {
    return std::tie(a.kind, a.group, a.version) < std::tie(b.kind, b.group, b.version);
  });
  std::map<std::string, int> uses;
  for (const auto& definition : catalog.definitions()) ++uses[definition->root_kind().kind];
  std::string names;
  for (const auto& kind : kinds) {
    names += (names.empty() ? "" : ", ") + kind.kind + (uses[kind.kind] > 1 ? " (" + kind.api_version() + ")" : "");
  }
  return std::to_string(kinds.size()) + (kinds.size() == 1 ? " kind with a definition is" : " kinds with a definition are") +
         " not served by the cluster, skipped (--show-unserved lists each): " + names;
}

void print_notes(const std::vector<std::string>& notes, std::ostream& err) {
  for (const auto& note : notes) err << "note: " << terminal_text(note) << "\n";
}

}  // namespace

int inspect_live(const LiveOptions& options, std::ostream& out, std::ostream& err) {
  auto slash = options.target.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == options.target.size()) {
    err << "karta-webhook: inspect wants KIND/NAME (jobset/demo), not \"" << terminal_text(options.target) << "\"\n";
    return 1;
  }
  const std::string kind_name = options.target.substr(0, slash), name = options.target.substr(slash + 1);
  Cluster cluster(options);
  const std::string& ns = cluster.namespace_name;
  std::optional<kube::ApiResource> resource;
  try {
    resource = cluster.discovery.resolve(kind_name);
  } catch (const kube::ApiError& e) {
    print_notes(cluster.notes, err);
    err << "karta-webhook: " << terminal_text(e.what()) << "\n";
    return 1;
  }
  // kubectl warns of the group versions it passed over, as memcache.go's "couldn't get resource list".
  for (const auto& failure : cluster.discovery.failures()) {
    err << "warning: couldn't get resource list for " << terminal_text(failure.group_version + ": " + failure.error)
        << "\n";
  }
  if (!resource) {
    print_notes(cluster.notes, err);
    err << "karta-webhook: the server doesn't have a resource type \"" << terminal_text(kind_name) << "\"\n";
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
    err << "karta-webhook: no Karta definition for " << terminal_text(resource->kind + " (" + resource->api_version())
        << "): neither the built-in catalog, --definitions nor the cluster's Kartas describe it\n";
    return 1;
  }
  const std::string what = resource->group_resource() + " \"" + name + "\"";
  json object;
  try {
    object = cluster.client.get(resource->object_path(ns, name));
  } catch (const kube::ApiError& e) {
    print_notes(cluster.notes, err);
    err << "karta-webhook: " << terminal_text(api_failure("get", what, where(*resource, ns), e)) << "\n";
    return 1;
  }
  // The namespace's pods, page by page: each is kept only when its owner chain reaches the workload, so
  // what the command holds is a page and the workload's pods, however many pods the namespace has.
  OwnerWalk walk = cluster.owner_walk();
  const std::string uid = metadata_string(object, "uid");
  std::vector<json> owned;
  try {
    std::set<std::string> seen;
    for (const auto& selector : pod_label_selectors(*definition)) {
      kube::ListOptions list_options{selector, options.page_size};
      kube::list_all(cluster.client, kube::resource_path("", "v1", "pods", ns), list_options, [&](kube::ListPage& page) {
        for (auto& pod : page.items) {
          if (!seen.insert(metadata_string(pod, "name")).second) continue;
          cluster.climb_from(pod);
          if (walk.owned_by(pod, uid)) owned.push_back(std::move(pod));
        }
      });
    }
  } catch (const kube::ApiError& e) {
    print_notes(cluster.notes, err);
    err << "karta-webhook: " << terminal_text(api_failure("list", "pods", " in namespace " + ns, e)) << "\n";
    return 1;
  }
  const TenantDecision& tenant = cluster.tenant(ns, false);
  // A TrainJob that leaves its node count to its runtime is counted with the runtime's nodes.
  const auto with_runtime = cluster.runtimes.with_runtime_nodes(object);
  json view = describe_live_workload(with_runtime ? with_runtime->first : object, *definition,
                                     origin_of(definition->definition()), owned, cluster.gpu_names(tenant));
  if (with_runtime) view["notes"].push_back(with_runtime->second);
  if (auto field = tenant.choice.json_field(cluster.state->policy)) {
    view["tenant"] = std::move(*field);
    view["exempt"] = tenant.choice.exempt();
  }
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
  json unchecked = json::array();  // objects too deep to read: each named, the others listed
  std::vector<GroupVersionKind> unserved;  // a cluster serves a few of the catalog's kinds: one note for the rest
  // One listed object: its row, unless it is part of a workload listed on its own row (a Job of a JobSet,
  // a Pod of a Deployment) or too deep to read (then named as unchecked).
  auto add_row = [&](const CompiledDefinition& definition, const json& object) {
    const GroupVersionKind& kind = definition.root_kind();
    cluster.climb_from(object);
    if (walk.nested(object, covered)) return;
    const auto with_runtime = cluster.runtimes.with_runtime_nodes(object);
    if (with_runtime) {
      cluster.notes.push_back(kind.kind + " " + metadata_string(object, "namespace") + "/" +
                              metadata_string(object, "name") + ": " + with_runtime->second);
    }
    std::optional<JsonDocument> document;
    try {
      document.emplace(JsonDocument::from(with_runtime ? with_runtime->first : object));
    } catch (const JsonParseError& e) {
      if (!e.too_deep()) throw;
      const std::string name = metadata_string(object, "namespace").empty()
                                   ? metadata_string(object, "name")
                                   : metadata_string(object, "namespace") + "/" + metadata_string(object, "name");
      std::string why = std::string("not checked: the object is ") + e.what() + ", deeper than the webhook reads an object";
      cluster.notes.push_back(kind.kind + " " + name + " (" + kind.api_version() + ") " + why);
      unchecked.push_back({{"namespace", metadata_string(object, "namespace")}, {"name", metadata_string(object, "name")},
                           {"kind", kind.kind}, {"apiVersion", kind.api_version()}, {"why", why}});
      return;
    }
    DefinitionEvaluation evaluation(definition, document->root());
    const TenantDecision& tenant = cluster.tenant(metadata_string(object, "namespace"), options.all_namespaces);
    WorkloadAnalysis analysis = analyze_workload(evaluation, cluster.gpu_names(tenant));
    json components = json::array();
    for (const auto& t : analysis.layout.templates) components.push_back({{"name", t.instance}, {"replicas", t.replicas}});
    items.push_back({{"namespace", metadata_string(object, "namespace")}, {"name", metadata_string(object, "name")}, {"kind", kind.kind},
                     {"apiVersion", kind.api_version()}, {"phase", workload_phase(evaluation)},
                     {"components", components}, {"gpus", analysis.total_gpus},
                     {"createdAt", metadata_string(object, "creationTimestamp")},
                     {"definition", definition.definition().name}, {"origin", origin_of(definition.definition())}});
    if (auto field = tenant.choice.json_field(cluster.state->policy)) items.back()["tenant"] = std::move(*field);
  };
  for (const auto& definition : cluster.state->catalog.definitions()) {
    const GroupVersionKind& kind = definition->root_kind();
    std::optional<kube::ApiResource> resource;
    try {
      resource = cluster.discovery.resolve(kind.group, kind.version, kind.kind);
    } catch (const kube::ApiError& e) {
      cluster.notes.push_back(kind.kind + " (" + kind.api_version() + ") could not be discovered: " +
                              e.what() + ": skipped");
      continue;
    }
    if (!resource || !resource->supports("list")) {
      unserved.push_back(kind);
      continue;
    }
    // Each page as it comes: what the command holds of the cluster is a page and the rows, whatever the
    // collection's size.
    std::size_t listed = 0;
    try {
      kube::list_all(cluster.client, resource->collection_path(ns), {"", options.page_size}, [&](kube::ListPage& page) {
        for (const auto& object : page.items) add_row(*definition, object);
        listed = page.items_so_far;
      });
    } catch (const kube::ApiError& e) {
      cluster.notes.push_back(api_failure("list", resource->group_resource(), where(*resource, ns), e) +
                              (listed == 0 ? ": skipped" : ": the rest skipped, after " + std::to_string(listed) + " listed"));
    }
  }
  std::stable_sort(items.begin(), items.end(), [](const json& a, const json& b) {
    return std::tie(a["namespace"], a["name"], a["kind"]) < std::tie(b["namespace"], b["name"], b["kind"]);
  });
  if (options.output == "json") {
    json listed{{"items", items}, {"count", items.size()}};
    if (!unchecked.empty()) {  // only then, so that a complete list reads as it always has
      listed["unchecked"] = unchecked;
      listed["complete"] = false;
    }
    out << listed.dump(2) << "\n";
  } else if (items.empty()) {
    err << (options.all_namespaces ? "No workloads found in any namespace.\n"
                                   : "No workloads found in namespace " + terminal_text(ns) + ".\n");
  } else {
    // With tenant rules, the tenant of each row after its namespace ("-": the global policy).
    const bool tenants = !cluster.state->policy.tenants.empty();
    std::vector<std::vector<std::string>> rows{{"NAMESPACE", "NAME", "KIND", "PHASE", "COMPONENTS", "GPU", "AGE"}};
    if (tenants) rows[0].insert(rows[0].begin() + 1, "TENANT");
    for (const auto& raw_item : items) {
      const json item = terminal_strings(raw_item);  // names and phases are the cluster's text
      std::string components;
      for (const auto& c : item["components"]) {
        components += (components.empty() ? "" : ", ") + c["name"].get<std::string>() + "(" +
                      std::to_string(c["replicas"].get<std::int64_t>()) + ")";
      }
      rows.push_back({item["namespace"].get<std::string>(), item["name"].get<std::string>(),
                      item["kind"].get<std::string>(), item["phase"].get<std::string>(), components,
                      format_count(item["gpus"].get<double>()), age_of(item["createdAt"].get<std::string>(), options.now)});
      if (tenants) rows.back().insert(rows.back().begin() + 1, item["tenant"].is_null() ? "-" : item["tenant"].get<std::string>());
    }
    out << align(rows);
  }
  if (options.show_unserved) {
    for (const auto& kind : unserved) {
      cluster.notes.push_back(kind.kind + " (" + kind.api_version() + ") is not served by the cluster: skipped");
    }
  } else if (!unserved.empty()) {
    cluster.notes.push_back(unserved_kinds_note(unserved, cluster.state->catalog));
  }
  if (!unchecked.empty()) {
    cluster.notes.push_back("the list is incomplete: " + std::to_string(unchecked.size()) +
                            (unchecked.size() == 1 ? " workload was" : " workloads were") + " not checked");
  }
  print_notes(cluster.notes, err);
  return 0;
}

LiveCommands::LiveCommands(CLI::App& app, CLI::App& inspect) : inspect_(&inspect) {
  auto add_cluster_options = [](CLI::App& command, LiveOptions& options) {
    command.add_option("--kubeconfig", options.kubeconfig, "Kubeconfig file (default: the files of $KUBECONFIG, merged as kubectl merges them, else ~/.kube/config)")
        ->check(CLI::ExistingFile);
    command.add_option("--context", options.context, "The kubeconfig context to use (default: its current-context)");
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
  list_->add_flag("--show-unserved", list_options_.show_unserved,
                  "Note each kind with a definition that the cluster does not serve on a line of its own");
  list_->add_option("-o,--output", list_options_.output, "text or json")
      ->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  add_cluster_options(*list_, list_options_);
}

std::optional<int> LiveCommands::run(const std::vector<std::string>& definitions, const std::string& policy,
                                     const std::string& namespaces, const std::string& output, bool inspect_file_given, std::ostream& out,
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
  options->namespaces = namespaces;
  options->now = std::chrono::system_clock::now();
  try {
    return options == &list_options_ ? list_live(*options, out, err) : inspect_live(*options, out, err);
  } catch (const std::exception& e) {
    err << "karta-webhook: " << error_text(e) << "\n";
    return 1;
  }
}

}  // namespace karta
