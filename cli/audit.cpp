#include "cli/audit.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string_view>

#include <CLI/CLI.hpp>

#include "cli/cluster_namespaces.h"
#include "cli/inspect.h"
#include "generate/coverage.h"
#include "json/documents.h"
#include "json/json_document.h"
#include "k8s/terminal_text.h"
#include "kube/discovery.h"
#include "kube/json_fields.h"
#include "kube/kube_connection.h"
#include "kube/list_pages.h"
#include "policy/tenant_rules.h"
#include "runtime/cluster_schemas.h"
#include "validate/crd_schema_set.h"

namespace karta {
namespace {

json& summary_row(std::map<std::string, json>& summary, const GroupVersionKind& kind, const std::string& namespace_name) {
  json& row = summary[kind.api_version() + " " + kind.kind + " " + namespace_name];
  if (row.is_null()) {
    row = {{"apiVersion", kind.api_version()}, {"kind", kind.kind}, {"namespace", namespace_name},
           {"workloads", 0}, {"skipped", 0}, {"violating", 0}, {"violations", 0}, {"patched", 0}, {"operations", 0}};
  }
  return row;
}

void count(json& row, const char* key, std::size_t n = 1) { row[key] = row[key].get<std::size_t>() + n; }

const char* policy_mode(const LabelPolicy& policy) {
  if (!policy.enabled) return "off";
  return policy.mode == LabelPolicyMode::Enforce ? "enforce" : "audit";
}

// One patch operation as a line: "add /spec/template/spec/schedulerName \"kai-scheduler\"".
std::string operation_text(const json& operation) {
  std::string text = operation.value("op", "") + " " + operation.value("path", "");
  if (operation.contains("value")) text += " " + operation["value"].dump();
  return text;
}

// The catalog's definitions by group and kind, each with the versions defined: a cluster serves the
// same objects in every version of a resource, so one version is listed.
std::map<std::pair<std::string, std::string>, std::vector<GroupVersionKind>> kinds_by_group(const Catalog& catalog) {
  std::map<std::pair<std::string, std::string>, std::vector<GroupVersionKind>> kinds;
  for (const auto& definition : catalog.definitions()) {
    const GroupVersionKind& kind = definition->root_kind();
    kinds[{kind.group, kind.kind}].push_back(kind);
  }
  return kinds;
}

}  // namespace

AuditReport::AuditReport(std::string source, std::shared_ptr<const AdmissionState> state)
    : state_(std::move(state)), source_(std::move(source)) {}

void AuditReport::add(const json& object, const std::string& source) {
  AdmissionRequest request;
  try {
    request = request_for_object(object);
  } catch (const JsonParseError& e) {
    // One object the webhook could not read either (the API server stores up to 10,000 levels; a
    // review is read to 1,000): reported on its own, and the rest audited.
    if (!e.too_deep()) throw;
    json unread = {{"apiVersion", kube::string_at(object, "apiVersion")},
                   {"kind", kube::string_at(object, "kind")},
                   {"namespace", kube::metadata_string(object, "namespace")},
                   {"name", kube::metadata_string(object, "name")},
                   {"why", std::string("not checked: the object is ") + e.what() +
                               ", deeper than the webhook reads an object"}};
    if (!source.empty()) unread["source"] = source;
    unchecked_.push_back(std::move(unread));
    incomplete_ = true;
    return;
  }
  if (is_definition_kind(request.kind)) return;
  // The webhook's own decisions: what it skips (no definition, owned by a kind with one) is skipped here.
  AdmissionResult mutated = AdmissionService::mutate(request, *state_);
  if (mutated.outcome == "skipped:no-definition") return;
  json& row = summary_row(summary_, request.kind, request.namespace_name);
  if (mutated.outcome.starts_with("skipped")) {
    count(row, "skipped");
    return;
  }
  AdmissionResult validated = AdmissionService::validate(request, *state_);
  if (validated.outcome == "denied") denied_ = true;  // the label policy (the tenant's) enforces and is violated
  count(row, "workloads");
  const JsonPatch& patch = mutated.decision.patch;
  if (validated.violations.empty() && patch.empty()) return;
  std::string name = request.name;
  if (std::string prefix = kube::metadata_string(object, "generateName"); name.empty() && !prefix.empty()) {
    name = prefix + "*";
  }
  json workload = {{"apiVersion", request.kind.api_version()},
                   {"kind", request.kind.kind},
                   {"namespace", request.namespace_name},
                   {"name", name}};
  if (!source.empty()) workload["source"] = source;
  // With tenant rules, the one whose policy applied (null: the global policy).
  if (auto field = mutated.tenant.json_field(state_->policy)) workload["tenant"] = std::move(*field);
  workload["violations"] = validated.violations;
  workload["patch"] = {{"operations", patch.size()}, {"set", patch.value()}};
  if (!validated.violations.empty()) {
    count(row, "violating");
    count(row, "violations", validated.violations.size());
  }
  if (!patch.empty()) {
    count(row, "patched");
    count(row, "operations", patch.size());
  }
  workloads_.push_back(std::move(workload));
}

void AuditReport::add_kind(json entry, bool listed) {
  if (!listed && entry.contains("error")) incomplete_ = true;
  kinds_.push_back(std::move(entry));
}

void AuditReport::add_definitions(const std::vector<ClusterKartaCheck>& checks) {
  for (const auto& check : checks) {
    if (!check.faults.empty()) definitions_.push_back({{"name", check.name}, {"faults", check.faults}, {"loaded", check.loaded}});
  }
}

bool AuditReport::enforced() const {
  return state_->policy.label_policy.enabled && state_->policy.label_policy.mode == LabelPolicyMode::Enforce;
}

json AuditReport::to_json() const {
  json summary = json::array();
  json totals = {{"workloads", 0}, {"skipped", 0}, {"violating", 0}, {"violations", 0}, {"patched", 0}, {"operations", 0}};
  for (const auto& [key, row] : summary_) {
    summary.push_back(row);
    for (auto& [name, value] : totals.items()) value = value.get<std::size_t>() + row[name].get<std::size_t>();
  }
  return {{"source", source_},       {"labelPolicy", policy_mode(state_->policy.label_policy)},
          {"kinds", kinds_},         {"workloads", workloads_},
          {"summary", summary},      {"totals", totals},
          {"definitions", definitions_}, {"uncovered", uncovered_}, {"enforced", enforced()},
          {"unchecked", unchecked_}, {"complete", !incomplete_}};
}

int AuditReport::exit_code() const {
  if (denied_) return 1;
  if (!definitions_.empty() && state_->policy.definition_policy.mode == DefinitionPolicyMode::Enforce) return 1;
  return incomplete_ ? 2 : 0;
}

namespace {

// A word as a POSIX shell reads it: as is when it is plain, else single-quoted (a ' as '\'').
std::string shell_word(const std::string& word) {
  auto plain = [](unsigned char c) {
    return std::isalnum(c) != 0 || std::string_view("_-./:=@%+,").find(static_cast<char>(c)) != std::string_view::npos;
  };
  if (!word.empty() && std::all_of(word.begin(), word.end(), plain)) return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// LISTs one collection the audit reads before the workloads (Kartas, CustomResourceDefinitions) and gives
// each page to on_page as it comes. Returns the entry that notes it among the kinds, and whether it was
// read whole; an error (the entry says what it costs) makes the audit incomplete.
std::pair<json, bool> list_each_page(kube::ApiClient& client, kube::Discovery& discovery, const GroupVersionKind& kind,
                                     const std::string& consequence, std::size_t page_size,
                                     const std::function<void(kube::ListPage& page)>& on_page) {
  json entry = {{"apiVersion", kind.api_version()}, {"kind", kind.kind}};
  auto resource = discovery.resolve(kind.group, kind.version, kind.kind);
  if (!resource) {
    entry["note"] = "not served by the cluster: none read";
    return {std::move(entry), false};
  }
  entry["resource"] = resource->plural;
  try {
    kube::ListSummary listed = kube::list_all(client, resource->collection_path(""),
                                              {.label_selector = "", .page_size = page_size}, on_page);
    entry["listed"] = listed.items;
    entry["pages"] = listed.pages;
    return {std::move(entry), true};
  } catch (const kube::ApiError& e) {
    if (e.cancelled()) throw;
    entry["error"] = consequence + ": " + e.what();
    return {std::move(entry), false};
  }
}

}  // namespace

AuditReport audit_cluster(kube::ApiClient& client, const AdmissionState& base, const AuditOptions& options) {
  // The cluster's definitions merged over the built-in catalog and --definitions, as `serve` merges them,
  // with the cluster's CRDs to check their paths against.
  auto merged = std::make_shared<AdmissionState>(base);
  AuditReport report("cluster " + client.connection().server_url(), merged);
  kube::Discovery discovery(client);
  std::map<std::string, json> kartas;
  auto [karta_entry, kartas_read] = list_each_page(
      client, discovery, {"run.ai", "v1alpha1", "Karta"},
      "the cluster's Kartas were not read, so only the built-in catalog and --definitions were used", options.page_size,
      [&](kube::ListPage& page) {
        for (json& item : page.items) {
          std::string name = kube::metadata_string(item, "name");  // the key first: the item is moved from
          kartas[name] = std::move(item);
        }
      });
  if (!kartas_read) kartas.clear();
  // The cluster's CRDs page by page, as `serve` holds them: the schema of a CRD is kept only in the groups
  // the definitions use, and of any other only the line that says it carries pods no definition covers.
  // What the audit holds is bounded by a page, not by the cluster's hundreds of CRDs.
  const std::set<std::string> groups = groups_used(base.catalog, kartas);
  auto schemas = base.crds ? std::make_shared<CrdSchemaSet>(*base.crds) : std::make_shared<CrdSchemaSet>();
  json uncovered = json::array();
  auto [crd_entry, crds_read] = list_each_page(
      client, discovery, {"apiextensions.k8s.io", "v1", "CustomResourceDefinition"},
      "the cluster's CustomResourceDefinitions were not read, so the paths of its Kartas were not checked",
      options.page_size, [&](kube::ListPage& page) {
        for (const json& crd : page.items) {
          if (groups.count(ClusterSchemas::group_of(kube::metadata_string(crd, "name"))) == 0) continue;
          try {
            schemas->add_crd(crd);
          } catch (const InputError&) {
            // Not usable for checking paths: a Karta of its kind is checked as one whose CRD is unknown.
          }
        }
        // Covered, for now, by the catalog without the cluster's Kartas: those are checked against the
        // schemas first, and the kinds they define are taken out below.
        for (json& kind : uncovered_kinds(page.items, [&](const GroupVersionKind& k) { return base.catalog.find(k) != nullptr; })) {
          uncovered.push_back(std::move(kind));
        }
      });
  if (!crds_read) {
    schemas = base.crds ? std::make_shared<CrdSchemaSet>(*base.crds) : std::make_shared<CrdSchemaSet>();
    uncovered = json::array();
  }
  report.add_kind(std::move(crd_entry), crds_read);
  report.add_kind(std::move(karta_entry), kartas_read);
  merged->crds = std::move(schemas);
  DefinitionCache cache(1);
  report.add_definitions(add_cluster_kartas(*merged, kartas, cache));
  const AdmissionState& state = *merged;
  json still_uncovered = json::array();
  for (json& kind : uncovered) {
    bool defined = false;
    for (const json& version : kind["versions"]) {
      GroupVersionKind served{kind["group"].get<std::string>(), version.get<std::string>(), kind["kind"].get<std::string>()};
      defined = defined || state.catalog.find(served) != nullptr;
    }
    if (!defined) still_uncovered.push_back(std::move(kind));
  }
  uncovered = std::move(still_uncovered);
  for (json& kind : uncovered) {
    kind["command"] = "karta-webhook generate " + kind["crd"].get<std::string>() +
                      (options.cluster_flags.empty() ? "" : " " + options.cluster_flags);
  }
  report.set_uncovered(std::move(uncovered));
  for (const auto& [group_kind, defined] : kinds_by_group(state.catalog)) {
    // The cluster's preferred version among those defined, else the first it serves.
    std::optional<kube::ApiResource> resource;
    for (const std::string& version : discovery.versions(group_kind.first)) {
      auto is_defined = [&](const GroupVersionKind& kind) { return kind.version == version; };
      if (std::none_of(defined.begin(), defined.end(), is_defined)) continue;
      if ((resource = discovery.resolve(group_kind.first, version, group_kind.second))) break;
    }
    if (!resource) {
      json entry = {{"apiVersion", defined.front().api_version()}, {"kind", group_kind.second}};
      std::string versions;
      for (const auto& kind : defined) versions += (versions.empty() ? "" : ", ") + kind.api_version();
      entry["note"] = "not served by the cluster (" + versions + "): skipped";
      report.add_kind(std::move(entry), false);
      continue;
    }
    json entry = {{"apiVersion", resource->api_version()}, {"kind", resource->kind}, {"resource", resource->plural}};
    const std::string label = resource->kind + " (" + resource->api_version() + ")";
    try {
      kube::ListSummary listed = kube::list_all(
          client, resource->collection_path(options.namespace_name),
          {.label_selector = "", .page_size = options.page_size}, [&](kube::ListPage& page) {
            for (const json& item : page.items) report.add(item);
            if (options.progress) {
              options.progress(label + ": " + std::to_string(page.items_so_far) + " listed, page " +
                               std::to_string(page.number));
            }
          });
      entry["listed"] = listed.items;
      entry["pages"] = listed.pages;
      report.add_kind(std::move(entry), true);
    } catch (const kube::ApiError& e) {
      if (e.cancelled()) throw;
      entry["error"] = e.what();
      report.add_kind(std::move(entry), false);
    }
  }
  return report;
}

AuditReport audit_files(const std::vector<std::string>& files, const AdmissionState& state) {
  std::string source = "files";
  for (const auto& file : files) source += " " + file;
  AuditReport report(source, std::make_shared<const AdmissionState>(state));
  for (const auto& file : expand_manifest_paths(files)) {
    for (const auto& document : read_documents(file)) report.add(document.value, document.source);
  }
  return report;
}

std::string render_audit(const json& raw_report) {
  const json report = terminal_strings(raw_report);  // names, label values and the server's errors are others' text
  std::ostringstream out;
  out << "audit of " << report["source"].get<std::string>() << " (label policy: "
      << report["labelPolicy"].get<std::string>() << ")\n";
  for (const json& kind : report["kinds"]) {
    out << "  " << kind["kind"].get<std::string>() << " (" << kind["apiVersion"].get<std::string>() << "): ";
    if (kind.contains("listed")) {
      out << kind["listed"].get<std::size_t>() << " listed in " << kind["pages"].get<std::size_t>() << " pages\n";
    } else {
      out << (kind.contains("error") ? "NOT LISTED: " + kind["error"].get<std::string>() : kind["note"].get<std::string>())
          << "\n";
    }
  }
  for (const json& definition : report["definitions"]) {
    out << "\nKarta " << definition["name"].get<std::string>()
        << (definition["loaded"].get<bool>() ? " (loaded: the paths at fault yield nothing)" : " (not loaded)") << "\n";
    for (const json& fault : definition["faults"]) out << "  fault: " << fault.get<std::string>() << "\n";
  }
  if (!report["uncovered"].empty()) {
    out << "\nKinds with pods and no definition (their pods get no queue label and no policy check):\n";
    for (const json& kind : report["uncovered"]) {
      std::string versions;
      for (const json& version : kind["versions"]) versions += (versions.empty() ? "" : ", ") + version.get<std::string>();
      out << "  " << kind["kind"].get<std::string>() << " (" << kind["group"].get<std::string>() << ", versions "
          << versions << "; CRD " << kind["crd"].get<std::string>() << ")\n";
      for (const json& place : kind["places"])
        out << "    " << place["shape"].get<std::string>() << " at " << place["path"].get<std::string>() << "\n";
      out << "    draft its Karta: " << kind["command"].get<std::string>() << "\n";
    }
  }
  for (const json& workload : report["workloads"]) {
    std::string name = workload["name"].get<std::string>();
    if (!workload["namespace"].get<std::string>().empty()) name = workload["namespace"].get<std::string>() + "/" + name;
    out << "\n" << workload["kind"].get<std::string>() << " " << name << " (" << workload["apiVersion"].get<std::string>()
        << ")";
    if (workload.contains("source")) out << "  " << workload["source"].get<std::string>();
    out << "\n";
    if (workload.contains("tenant")) {
      out << "  tenant: " << tenant_display_name(workload["tenant"]) << "\n";
    }
    for (const json& violation : workload["violations"]) {
      out << "  violation: " << violation.get<std::string>() << "\n";
    }
    const json& patch = workload["patch"];
    if (patch["operations"].get<std::size_t>() > 0) {
      out << "  patch: " << patch["operations"].get<std::size_t>() << " operations\n";
      for (const json& operation : patch["set"]) out << "    " << operation_text(operation) << "\n";
    }
  }
  std::vector<std::vector<std::string>> rows{
      {"KIND", "APIVERSION", "NAMESPACE", "WORKLOADS", "SKIPPED", "VIOLATING", "VIOLATIONS", "PATCHED", "OPERATIONS"}};
  auto numbers = [](const json& row) {
    std::vector<std::string> cells;
    for (const char* key : {"workloads", "skipped", "violating", "violations", "patched", "operations"}) {
      cells.push_back(std::to_string(row[key].get<std::size_t>()));
    }
    return cells;
  };
  for (const json& row : report["summary"]) {
    std::vector<std::string> cells{row["kind"].get<std::string>(), row["apiVersion"].get<std::string>(),
                                   row["namespace"].get<std::string>()};
    for (auto& cell : numbers(row)) cells.push_back(std::move(cell));
    rows.push_back(std::move(cells));
  }
  std::vector<std::string> total{"total", "", ""};
  for (auto& cell : numbers(report["totals"])) total.push_back(std::move(cell));
  rows.push_back(std::move(total));
  out << "\n" << render_columns(rows);
  const json& totals = report["totals"];
  std::size_t violating = totals["violating"].get<std::size_t>();
  out << totals["workloads"].get<std::size_t>() << " workloads audited, " << violating
      << " violate the label policy";
  if (violating > 0) out << (report["enforced"].get<bool>() ? " (enforce: the webhook would deny them)" : " (audit: admitted with warnings)");
  out << ", " << totals["patched"].get<std::size_t>() << " would be patched\n";
  for (const json& unread : report["unchecked"]) {
    std::string name = unread["name"].get<std::string>();
    if (!unread["namespace"].get<std::string>().empty()) name = unread["namespace"].get<std::string>() + "/" + name;
    out << "NOT CHECKED: " << unread["kind"].get<std::string>() << " " << name << " ("
        << unread["apiVersion"].get<std::string>() << "): " << unread["why"].get<std::string>() << "\n";
  }
  if (!report["complete"].get<bool>()) {
    bool unlisted = std::any_of(report["kinds"].begin(), report["kinds"].end(),
                                [](const json& kind) { return kind.contains("error"); });
    std::size_t unread = report["unchecked"].size();
    out << "the audit is incomplete: " << (unlisted ? "a kind could not be listed" : "")
        << (unlisted && unread > 0 ? ", and " : "")
        << (unread == 0 ? "" : std::to_string(unread) + (unread == 1 ? " object was" : " objects were") + " not checked")
        << "\n";
  }
  return out.str();
}

AuditCommand::AuditCommand(CLI::App& app) {
  command_ = app.add_subcommand("audit", "Report what the webhook would deny and patch in the workloads that exist");
  command_->footer(
      "Examples:\n  karta-webhook audit --kubeconfig ~/.kube/config --policy examples/policy.yaml\n"
      "  karta-webhook audit -f tests/corpus/samples --policy examples/policy.yaml --output json\n"
      "Exits 1 when the label policy enforces and a workload violates it, 2 when the audit is incomplete (a kind\n"
      "could not be listed, the cluster could not be reached, a manifest does not parse).");
  command_->add_option("--kubeconfig", kubeconfig_, "Audit the cluster of this kubeconfig's current context (default: $KUBECONFIG's files, else ~/.kube/config)")
      ->check(CLI::ExistingFile);
  command_->add_option("--context", context_, "The kubeconfig context to audit (default: its current-context)");
  command_->add_flag("--in-cluster", in_cluster_, "Audit the pod's own cluster, with its service account");
  command_->add_option("-n,--namespace", namespace_name_, "Only this namespace (default: all)");
  command_->add_option("-f,--filename", files_, "Audit manifests instead: YAML or JSON files, or directories of them")
      ->check(CLI::ExistingPath);
  command_->add_option("-o,--output", output_, "text or json")->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  command_->add_option("--page-size", page_size_, "Objects per LIST page")->capture_default_str()->check(CLI::Range(1, 10000));
}

bool AuditCommand::chosen() const { return command_->parsed(); }

AuditReport AuditCommand::audit_connected_cluster(const AdmissionState& state, std::ostream& err) const {
  kube::KubeConnection connection;
  if (in_cluster_) {
    connection = kube::in_cluster_connection();
  } else {
    try {
      connection = kube::load_kubeconfig(kube::kubeconfig_files(kubeconfig_), context_);
    } catch (const kube::NoKubeconfigError& e) {
      throw InputError("audit: no cluster (give --kubeconfig, --in-cluster or -f FILES): " + std::string(e.what()));
    }
  }
  kube::ApiClient client(std::move(connection));
  AuditOptions options;
  options.namespace_name = namespace_name_;
  options.page_size = page_size_;
  if (in_cluster_) {
    options.cluster_flags = "--in-cluster";
  } else {
    if (!kubeconfig_.empty()) options.cluster_flags = "--kubeconfig " + shell_word(kubeconfig_);
    if (!context_.empty()) {
      options.cluster_flags += (options.cluster_flags.empty() ? "" : " ") + ("--context " + shell_word(context_));
    }
  }
  // A progress line, rewritten in place, only for a person watching a terminal.
  bool terminal = isatty(STDERR_FILENO) == 1;
  if (terminal) options.progress = [&](const std::string& line) { err << "\r\033[K" << terminal_text(line) << std::flush; };
  // The namespaces' labels, when the policy's tenant rules or namespaceLabel read them, as serve watches them.
  std::optional<AdmissionState> with_namespaces;
  if (state.policy.needs_namespace_labels() && !state.namespaces) {
    NamespacesRead namespaces = read_cluster_namespaces(client, "", page_size_);
    with_namespaces = state;
    with_namespaces->namespaces = namespaces.labels;
    if (!namespaces.error.empty()) {
      err << "karta-webhook audit: namespaces not listed, tenant rules decided without their labels: "
          << terminal_text(namespaces.error) << "\n";
    }
  }
  AuditReport report = audit_cluster(client, with_namespaces ? *with_namespaces : state, options);
  if (terminal) err << "\r\033[K" << std::flush;
  return report;
}

int AuditCommand::run(const AdmissionState& state, std::ostream& out, std::ostream& err) const {
  if (!files_.empty() && (!kubeconfig_.empty() || !context_.empty() || in_cluster_)) {
    throw InputError("audit: -f and --kubeconfig/--context/--in-cluster exclude each other");
  }
  std::optional<AuditReport> report;
  try {
    report.emplace(files_.empty() ? audit_connected_cluster(state, err) : audit_files(files_, state));
  } catch (const std::runtime_error& e) {  // ApiError, KubeConfigError, InputError: no report at all
    err << "karta-webhook audit: " << error_text(e) << "\n";
    return 2;
  }
  json document = report->to_json();
  out << (output_ == "json" ? document.dump(2) + "\n" : render_audit(document));
  return report->exit_code();
}

}  // namespace karta
