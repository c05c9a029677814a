#pragma once

// `karta-webhook audit`: what the webhook would do to the workloads that already exist, in a cluster
// or in manifests. Admission only sees what is created or changed after the webhook is installed; the
// audit shows, before the label policy goes from audit to enforce, which running workloads it would
// deny, and what the webhook would add to each (queue labels, scheduler, GPU tolerations). It runs the
// webhook's own decisions (AdmissionService::mutate and ::validate), so it skips what they skip: objects
// whose controller's kind has a definition, and exempt namespaces.

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "admission/admission_service.h"
#include "kube/api_client.h"
#include "kube/list_pages.h"
#include "runtime/admission_state_loader.h"

namespace CLI {
class App;
}

namespace karta {

using json = nlohmann::json;

struct AuditOptions {
  std::string namespace_name;  // "" for all namespaces
  std::size_t page_size = kube::kListPageSize;
  // Called after each LIST page: "JobSet (jobset.x-k8s.io/v1alpha2): 1500 listed, page 3".
  std::function<void(const std::string& line)> progress;
  // The flags that named the audited cluster, as given ("--kubeconfig F --context C", "--in-cluster"):
  // each uncovered kind's `generate` command carries them, so it reads the CRD from the same cluster.
  std::string cluster_flags;
};

// The report (README.md, "Audit", documents it; scripts rely on it):
// {"source": "...", "labelPolicy": "enforce|audit|off",
//  "kinds": [{"apiVersion", "kind", "resource", "listed", "pages"} or {"apiVersion", "kind", "note"}],
//  "tenants": [{"name", "labelPolicy": "enforce|audit|off|exempt"}] (with tenant rules only),
//  "workloads": [{"apiVersion", "kind", "namespace", "name", "source" (files only),
//                 "tenant" (with tenant rules: the rule's name, null for the global policy),
//                 "labelPolicy" (the tenant's mode), "enforced" (the tenant's mode is enforce),
//                 "admission": "denied|warned|allowed" (what /validate answers for the mutated object),
//                 "violations": ["workload: label \"team\" missing", ...],
//                 "drift": [{"key": "label:KEY", "value", "policy"}] (values the webhook wrote, per its
//                          kWrittenAnnotation, that the policy now writes otherwise; only when some),
//                 "patch": {"operations": N, "set": [RFC 6902 operations]}}],
//  "notSent": [{"namespace", "workloads", "why"}] (what the shipped registrations never send),
//  "unknownNamespaces": [names] (the policy needed their labels, unknown: the audit is incomplete),
//  "drifted": N (workloads with drift),
//  "summary": [{"apiVersion", "kind", "namespace", "workloads", "skipped", "violating", "violations",
//               "patched", "operations"}],
//  "totals": {"workloads", "skipped", "violating", "violations", "patched", "operations"},
//  "definitions": [{"name", "faults": ["field: what is wrong", ...], "loaded": bool}] (cluster only: each
//                  Karta of the cluster with faults, as /validate finds them; "loaded": whether the
//                  audit, like serve, uses it),
//  "uncovered": [{"crd", "group", "kind", "versions", "version", "places": [{"shape", "path"}], "command"}]
//                (cluster only: each served CRD whose schema holds pods and that no definition covers,
//                 generate/coverage.h),
//  "enforced": bool (the global policy's mode is enforce; each workload's tenant decides its own),
//  "unchecked": [{"apiVersion", "kind", "namespace", "name", "source" (files only), "why"}] (each object
//               that could not be audited: nested deeper than the webhook reads; the rest is audited),
//  "complete": bool (false when a kind could not be listed or an object was not checked)}
// Workloads are listed only when they have a violation, a denial or a patch; every one audited is
// counted in the summary. Labels are checked on the object as mutated, as /validate sees it. "skipped" counts objects owned by a controller whose kind has a definition.
class AuditReport {
 public:
  AuditReport(std::string source, std::shared_ptr<const AdmissionState> state);

  // Audits one object (read from `source`, for files).
  void add(const json& object, const std::string& source = "");
  // A kind of the catalog: listed, or not (its `note` or `error` says why; an error makes the audit
  // incomplete).
  void add_kind(json entry, bool listed);
  // The cluster's Kartas as loading found them; those with faults are reported.
  void add_definitions(const std::vector<ClusterKartaCheck>& checks);
  // The served kinds with pods and no definition (generate/coverage.h).
  void set_uncovered(json uncovered) { uncovered_ = std::move(uncovered); }
  bool enforced() const;  // the label policy is on, in enforce mode

  json to_json() const;
  // Exit status: 1 when the webhook would deny something that exists (a workload's tenant enforces and
  // the workload, as mutated, violates it, or definitionPolicy enforces and a Karta has faults), 2 when a
  // kind could not be listed, an object could not be checked or a namespace's labels the policy reads are
  // unknown (the audit is incomplete), else 0. (run() also gives 2 when there is no report at all.)
  int exit_code() const;

 private:
  std::shared_ptr<const AdmissionState> state_;
  std::string source_;
  json kinds_ = json::array();
  json definitions_ = json::array();
  json uncovered_ = json::array();
  json workloads_ = json::array();
  std::map<std::string, json> summary_;  // by "apiVersion kind namespace"
  json unchecked_ = json::array();
  std::map<std::string, json> not_sent_;  // by namespace: {"namespace", "workloads", "why"}
  std::set<std::string> unknown_namespaces_;  // whose labels the policy needed and the audit did not know
  bool incomplete_ = false;
  bool denied_ = false;  // a workload the webhook would deny
  std::size_t drifted_ = 0;  // workloads with a value the webhook wrote that the policy now writes otherwise
};

// Reads the cluster's Kartas and CustomResourceDefinitions and merges the Kartas over `state`'s catalog
// as `serve` does (runtime/admission_state_loader.h), reporting their faults; one that cannot be read is
// an error entry among the kinds (the audit is then incomplete, and only `state`'s definitions are used).
// Then LISTs every kind the merged catalog defines through `client` (in pages; kinds the cluster does not
// serve are noted, one version per group and kind: the cluster's preferred among those defined) and
// audits each object. ApiErrors of discovery pass through; a LIST that fails (403, say) is noted and the audit goes
// on with the other kinds.
AuditReport audit_cluster(kube::ApiClient& client, const AdmissionState& state, const AuditOptions& options);

// Audits every object of the files (multi-document YAML or JSON; a directory stands for its *.yaml,
// *.yml and *.json files).
AuditReport audit_files(const std::vector<std::string>& files, const AdmissionState& state);

// The report as text: each workload with its violations and what the patch sets, then the summary table;
// every string of the report escaped for the terminal (k8s/terminal_text.h).
std::string render_audit(const json& report);

// The `audit` subcommand and its flags; --definitions and --policy are the caller's (shared with the
// other subcommands).
class AuditCommand {
 public:
  explicit AuditCommand(CLI::App& app);
  CLI::App& command() { return *command_; }
  bool chosen() const;
  int run(const AdmissionState& state, std::ostream& out, std::ostream& err) const;

 private:
  AuditReport audit_connected_cluster(const AdmissionState& state, std::ostream& err) const;

  CLI::App* command_;
  std::string kubeconfig_;
  std::string context_;
  bool in_cluster_ = false;
  std::string namespace_name_;
  std::string output_ = "text";
  std::size_t page_size_ = kube::kListPageSize;
  std::vector<std::string> files_;
};

}  // namespace karta
