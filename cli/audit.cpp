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

#include "admission/webhook_scope.h"
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
#include "mutate/mutation.h"
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

// A label or an annotation (`map`: "labels", "annotations") of the object's metadata: "" when absent or not
// a string.
std::string metadata_string_at(const json& object, const char* map, const std::string& key) {
  const json* members = find_json_at(object, json::json_pointer("/metadata/" + std::string(map)));
  if (members == nullptr || !members->is_object()) return "";
  auto found = members->find(key);
  return found != members->end() && found->is_string() ? found->get<std::string>() : "";
}

const char* policy_mode(const LabelPolicy& policy) {
  if (!policy.enabled) return "off";
  return policy.mode == LabelPolicyMode::Enforce ? "enforce" : "audit";
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
  if (state_->catalog.find(request.kind) == nullptr) return;  // the webhook's own skip: no definition
  // What the shipped registrations never send: neither patched nor checked in the cluster.
  std::optional<LabelMap> namespace_labels;
  if (state_->namespaces) namespace_labels = state_->namespaces->find(request.namespace_name).labels;
  if (std::string why = unsent_namespace_reason(request.namespace_name, namespace_labels ? &*namespace_labels : nullptr);
      !why.empty()) {
    json& unsent = not_sent_[request.namespace_name];
    if (unsent.is_null()) unsent = {{"namespace", request.namespace_name}, {"workloads", 0}, {"why", why}};
    count(unsent, "workloads");
    return;
  }
  // The webhook's own decisions: what it skips (owned by a kind with a definition, exempt) is skipped here.
  // A workload that opts out of mutation (its objectSelector) is validated as it is.
  const bool mutation_sent = metadata_string_at(object, "labels", std::string(kOptOutLabel)) != kOptOutValue;
  AdmissionResult mutated = mutation_sent ? AdmissionService::mutate(request, *state_)
                                          : AdmissionResult{AdmissionDecision::allow(), {}, "unchanged"};
  json& row = summary_row(summary_, request.kind, request.namespace_name);
  if (mutated.outcome.starts_with("skipped")) {
    count(row, "skipped");
    return;
  }
  const JsonPatch& patch = mutated.decision.patch;
  // /validate sees the object as the API server stores it, after the mutating webhook's patch.
  const json stored = patch.empty() ? object : object.patch(patch.value());
  AdmissionResult validated = AdmissionService::validate(request_for_object(stored), *state_);
  if (mutated.namespace_labels_unknown || validated.namespace_labels_unknown) {
    unknown_namespaces_.insert(request.namespace_name);
    incomplete_ = true;
  }
  if (validated.outcome == "denied") denied_ = true;  // the tenant's policy enforces and is violated
  count(row, "workloads");
  // Drift: a value the webhook wrote (its provenance annotation lists it) that the policy now writes otherwise.
  json drift = json::array();
  const std::string written = metadata_string_at(object, "annotations", kWrittenAnnotation);
  for (const std::string& entry : written_entries(written)) {
    const std::string key = entry.substr(entry.find(':') + 1);
    const std::string now = metadata_string_at(object, "labels", key), policy = metadata_string_at(stored, "labels", key);
    if (!now.empty() && now != policy) drift.push_back({{"key", entry}, {"value", now}, {"policy", policy}});
  }
  if (!drift.empty()) ++drifted_;
  if (validated.violations.empty() && patch.empty() && validated.outcome != "denied") return;
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
  if (auto field = validated.tenant.json_field(state_->policy)) workload["tenant"] = std::move(*field);
  // The tenant's own label policy decides, as /validate does.
  const LabelPolicy& label_policy = validated.tenant.settings(state_->policy).label_policy;
  workload["labelPolicy"] = policy_mode(label_policy);
  workload["enforced"] = label_policy.enabled && label_policy.mode == LabelPolicyMode::Enforce;
  workload["admission"] = validated.outcome == "denied"                ? "denied"
                          : validated.outcome == "allowed:warnings" ? "warned"
                                                                     : "allowed";
  workload["violations"] = validated.violations;
  if (!drift.empty()) workload["drift"] = std::move(drift);
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
  json report = {{"source", source_},       {"labelPolicy", policy_mode(state_->policy.label_policy)},
                 {"kinds", kinds_},         {"workloads", workloads_},
                 {"summary", summary},      {"totals", totals},
                 {"definitions", definitions_}, {"uncovered", uncovered_}, {"enforced", enforced()},
                 {"unchecked", unchecked_}, {"complete", !incomplete_}};
  // Each tenant's own mode: a workload's tenant decides whether the cluster denies or warns.
  if (!state_->policy.tenants.empty()) {
    json tenants = json::array();
    for (const TenantRule& rule : state_->policy.tenants) {
      tenants.push_back({{"name", rule.name},
                         {"labelPolicy", rule.exempt ? "exempt" : policy_mode(rule.policy->label_policy)}});
    }
    report["tenants"] = std::move(tenants);
  }
  json not_sent = json::array();
  for (const auto& [namespace_name, entry] : not_sent_) not_sent.push_back(entry);
  report["notSent"] = std::move(not_sent);
  report["unknownNamespaces"] = unknown_namespaces_;
  report["drifted"] = drifted_;
  return report;
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

AuditCommand::AuditCommand(CLI::App& app) {
  command_ = app.add_subcommand("audit", "Report what the webhook would deny and patch in the workloads that exist");
  command_->footer(
      "Examples:\n  karta-webhook audit --kubeconfig ~/.kube/config --policy examples/policy.yaml\n"
      "  karta-webhook audit -f tests/corpus/samples --policy examples/policy.yaml --output json\n"
      "Exits 1 when a workload's label policy enforces and it violates it, 2 when the audit is incomplete (a kind\n"
      "could not be listed, the labels of a namespace the policy reads are unknown, the cluster could not be\n"
      "reached, a manifest does not parse). Each workload's tenant decides its own mode.");
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
