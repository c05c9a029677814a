#pragma once

// `karta-webhook inspect KIND/NAME -n NS` and `karta-webhook list`: workloads read from the cluster and
// shown as the published Workload Map CLI shows them (`kli describe`, `kli get`): the tree component ->
// instance -> pod with ready/desired counts, GPUs and nodes, the phase, and a resources table; or one
// row per workload. The pods are the namespace's whose owner chain reaches the workload, placed with
// the definition's podSelector (definitions/pod_attribution.h); pods it does not place are listed too.

#include <chrono>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "definitions/compiled_definition.h"

namespace karta {

using json = nlohmann::json;

// One live workload, as `inspect --output json` prints it: identity, definition and its origin, phase,
// components (an instance per child when the component has instance ids), each with desired, current
// and ready replicas, requests, nodes and pods; the pods no selector places, with why; the totals.
// `pods` are the workload's (owner chain already checked).
json describe_live_workload(const json& object, const CompiledDefinition& definition, const std::string& origin,
                            const std::vector<json>& pods, const std::vector<std::string>& gpu_names);

// The view as text, laid out as `kli describe` lays it out (columns as kubectl's tab writer aligns them),
// every string of the view escaped for the terminal (k8s/terminal_text.h).
std::string render_live_workload(const json& view, std::chrono::system_clock::time_point now);

// How kubectl prints an age (k8s.io/apimachinery duration.HumanDuration): "20s", "3m", "5h12m", "3d4h".
std::string human_duration(std::chrono::seconds age);

// The options of the live commands, bound to the command line by LiveCommands.
struct LiveOptions {
  std::string target;          // inspect: KIND/NAME
  std::string namespace_name;  // "": the kubeconfig context's namespace, else "default"
  bool all_namespaces = false;  // list -A
  bool show_unserved = false;   // list: a note per kind the cluster does not serve, not one for them all
  std::string kubeconfig;      // "": the files of $KUBECONFIG, merged, else ~/.kube/config
  std::string context;         // "": the kubeconfig's current-context
  bool in_cluster = false;
  std::vector<std::string> definitions;  // directories over the built-in catalog
  std::string policy;                    // its gpu.resourceNames count as GPUs (the tenant's, with tenant rules)
  std::string namespaces;                // "": the labels tenant rules read are the cluster's; else this file's
  std::string output = "text";           // text or json
  std::size_t page_size = 100;           // LIST pages (--chunk-size, as kubectl's; kube::kListPageSize)
  std::chrono::system_clock::time_point now = std::chrono::system_clock::now();
};

// Both exit 0 on success and 1 with a message on `err` naming the resource and namespace on failure
// (403, 404, a kind the cluster does not serve or that has no definition). Notes go to `err`.
int inspect_live(const LiveOptions& options, std::ostream& out, std::ostream& err);
int list_live(const LiveOptions& options, std::ostream& out, std::ostream& err);

// The live flags of `inspect` (KIND/NAME, -n, --kubeconfig, --in-cluster) and the `list` command.
class LiveCommands {
 public:
  LiveCommands(CLI::App& app, CLI::App& inspect);
  CLI::App& list() { return *list_; }
  // After parsing: the exit code when a live command ran, nullopt when the file-based inspect (-f) or
  // another command is to run.
  std::optional<int> run(const std::vector<std::string>& definitions, const std::string& policy,
                         const std::string& namespaces, const std::string& output, bool inspect_file_given,
                         std::ostream& out, std::ostream& err);

 private:
  CLI::App* inspect_;
  CLI::App* list_;
  LiveOptions inspect_options_, list_options_;
};

}  // namespace karta
