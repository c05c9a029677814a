#include "cli/commands.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "admission/admission_service.h"
#include "admission/namespace_labels.h"
#include "cli/audit.h"
#include "cli/build_commit.h"
#include "cli/catalog_export.h"
#include "cli/generate.h"
#include "cli/inspect.h"
#include "cli/live_inspect.h"
#include "cli/trainer_runtimes.h"
#include "cli/validate_command.h"
#include "definitions/suspend.h"
#include "json/documents.h"
#include "k8s/terminal_text.h"
#include "policy/policy.h"
#include "runtime/logging.h"
#include "runtime/webhook.h"
#include "server/cpu_budget.h"
#include "validate/crd_schema_set.h"

namespace karta {
namespace {


struct CommonOptions {
  std::vector<std::string> definitions;
  std::string policy;
  std::string namespaces;  // --namespaces FILE: the labels of namespaces, for tenant rules (live commands: else the cluster's)
  std::vector<std::string> crds;  // --crds DIR (mutate, inspect -f): served versions equivalent to a defined one
  std::string log_format = "json";
  std::string log_level = "info";
};

void configure_logging(const CommonOptions& options) { karta::configure_logging(options.log_format, options.log_level); }

void add_common_options(CLI::App& command, CommonOptions& options) {
  command.add_option("--definitions", options.definitions,
                     "Directory of Karta definitions (*.yaml, *.json) added to, or overriding, the built-in catalog")
      ->check(CLI::ExistingDirectory);
  command.add_option("--policy", options.policy, "Policy file: what to inject (see README)")->check(CLI::ExistingFile);
}

// The namespaces whose labels tenant rules and scheduling.queue.namespaceLabel read: the offline commands
// know no others; the live ones (audit, inspect KIND/NAME, list) read the cluster's when none are given.
void add_namespaces_option(CLI::App& command, CommonOptions& options) {
  command.add_option("--namespaces", options.namespaces,
                     "Namespaces whose labels the policy's tenant rules read: a YAML stream of Namespace objects, "
                     "or a v1 List (kubectl get ns -o yaml > ns.yaml)")
      ->check(CLI::ExistingFile);
}

// The CustomResourceDefinitions whose served versions an offline command finds as the server does.
void add_crds_option(CLI::App& command, CommonOptions& options) {
  command.add_option("--crds", options.crds,
                     "Directory of CustomResourceDefinitions: an object in a served version whose schema is a defined "
                     "version's is handled as that version, as the webhook's matchPolicy: Equivalent has the API "
                     "server send it")
      ->check(CLI::ExistingDirectory);
}

// Each served version of a defined kind whose schema is the defined version's (descriptions aside): the
// API server converts such an object to the version the webhook registers (matchPolicy: Equivalent;
// without a conversion webhook only apiVersion changes), so offline it is found as that version.
void add_equivalent_versions(Catalog& catalog, const CrdSchemaSet& crds) {
  for (const auto& [served, schema] : crds.entries()) {
    const CompiledDefinition* found = catalog.find(served);
    if ((found != nullptr && found->root_kind() == served) || !schema->schema.is_object()) continue;
    bool equivalent = false;
    for (const auto& [other, other_schema] : crds.entries()) {
      if (other.group != served.group || other.kind != served.kind || other.version == served.version) continue;
      const CompiledDefinition* definition = catalog.find(other);
      if (definition != nullptr && definition->root_kind() == other && other_schema->schema == schema->schema) {
        catalog.add_equivalent(served, other);
        equivalent = true;
        break;
      }
    }
    // A definition's equivalentVersions are the published CRD's; the CRDs given, those of the cluster, decide.
    if (!equivalent && found != nullptr) catalog.remove_equivalent(served);
  }
}

std::shared_ptr<AdmissionState> load_state(const CommonOptions& options, std::size_t concurrency) {
  std::vector<std::filesystem::path> directories(options.definitions.begin(), options.definitions.end());
  auto state = load_admission_state(directories, options.policy, concurrency);
  if (!options.crds.empty()) {
    CrdSchemaSet crds;
    for (const auto& directory : options.crds) crds.add_directory(directory);
    add_equivalent_versions(state->catalog, crds);
  }
  if (!options.namespaces.empty()) {
    state->namespaces = std::make_shared<NamespaceFile>(NamespaceFile::load(options.namespaces));
  }
  return state;
}

// -f FILE of mutate and inspect, as kubectl's: given more than once, the files are read in that order.
// One file per -f, so that `inspect -f job.yaml demo/x` does not take a live target for a file.
void add_filename_option(CLI::App& command, std::vector<std::string>& files) {
  command.add_option("-f,--filename", files, "YAML or JSON manifest, several documents allowed; -f may be given "
                                             "more than once (the files are read in that order)")
      ->allow_extra_args(false)->check(CLI::ExistingFile);
}

// --print-policy NAMESPACE: which rule applies there and the policy it gives, as one document.
int print_policy(const CommonOptions& common, const std::string& namespace_name, std::ostream& out) {
  auto state = load_state(common, 1);
  TenantDecision decision = decide_tenant(*state, namespace_name);
  out << "# namespace " << terminal_text(namespace_name) << ": ";
  if (decision.choice.rule == nullptr) {
    out << "the global policy (no tenant rule matches)\n";
  } else {
    std::size_t index = static_cast<std::size_t>(decision.choice.rule - state->policy.tenants.data());
    out << "tenant " << terminal_text(decision.choice.tenant()) << " (tenants[" << index << "])"
        << (decision.choice.exempt() ? ": exempt, nothing injected and nothing enforced" : "") << "\n";
  }
  if (!decision.unknown_labels_warning.empty()) out << "# warning: " << terminal_text(decision.unknown_labels_warning) << "\n";
  if (decision.choice.exempt()) return 0;
  const json& document = decision.choice.rule == nullptr ? state->policy.document : decision.choice.rule->document;
  out << document.dump(2) << "\n";
  return 0;
}

int serve(const CommonOptions& common, WebhookConfig config) {
  configure_logging(common);
  config.definition_directories.assign(common.definitions.begin(), common.definitions.end());
  config.policy_file = common.policy;
  Webhook webhook(std::move(config));
  webhook.listen();
  webhook.run();
  return 0;
}

int mutate_offline(const CommonOptions& common, const std::vector<std::string>& manifests, std::ostream& out) {
  auto state = load_state(common, 1);
  for (const auto& document : read_all_documents(manifests)) {
    AdmissionRequest request = request_for_object(document.value);
    AdmissionResult result = AdmissionService::mutate(request, *state);
    // An object that asks the API server for a name (generateName) is shown by its prefix, as audit shows it.
    std::string own = request.name;
    if (const json& metadata = document.value.value("metadata", json::object()); own.empty() && metadata.is_object() &&
        metadata.value("generateName", json()).is_string()) {
      own = metadata["generateName"].get<std::string>() + "*";
    }
    std::string name = request.namespace_name.empty() ? own : request.namespace_name + "/" + own;
    out << "# " << terminal_text(document.source + ": " + request.kind.to_string() + " " + name) << ": ";
    if (result.outcome.starts_with("skipped")) {
      out << "not mutated (" << result.outcome.substr(8) << ")\n";
      continue;
    }
    out << result.decision.patch_operations() << " patch operations\n";
    if (!state->policy.tenants.empty()) {
      out << "# tenant: " << terminal_text(result.tenant.display_name()) << "\n";
    }
    for (const auto& note : result.notes) out << "# note: " << terminal_text(note) << "\n";
    out << result.decision.patch.value().dump(2) << "\n";
  }
  return 0;
}

int inspect_offline(const CommonOptions& common, const std::vector<std::string>& manifests, const std::string& output,
                    std::ostream& out) {
  auto state = load_state(common, 1);
  json reports = json::array();
  const std::vector<SourceDocument> documents = read_all_documents(manifests);
  std::vector<json> objects;
  for (const auto& document : documents) objects.push_back(document.value);
  TrainerRuntimes runtimes(objects);  // those of every file: `-f trainjob.yaml -f runtime.yaml` counts the runtime's nodes
  for (const auto& document : documents) {
    AdmissionRequest request = request_for_object(document.value);
    const CompiledDefinition* definition = state->catalog.find(request.kind);
    if (definition == nullptr) {
      const std::string why = TrainerRuntimes::is_runtime(document.value)
                                  ? "a runtime of Kubeflow Trainer: it runs no pods itself, the TrainJobs that name it do"
                                  : "no definition for this kind";
      if (output == "text") {
        out << "# " << terminal_text(document.source + ": " + request.kind.to_string() + " " + request.name)
            << ": " << why << "\n\n";
      } else {
        // Said, not left out: a script must tell "no workload" from "a workload of a kind not covered".
        reports.push_back({{"apiVersion", request.kind.api_version()}, {"kind", request.kind.kind},
                           {"namespace", request.namespace_name}, {"name", request.name}, {"source", document.source},
                           {"covered", false}, {"why", why}});
      }
      continue;
    }
    // The GPUs counted are the resources the workload's tenant names.
    const TenantDecision tenant = decide_tenant(*state, request.namespace_name);
    const auto with_runtime = runtimes.with_runtime_nodes(document.value);
    json report = inspect_workload(with_runtime ? with_runtime->first : document.value, *definition,
                                   tenant.choice.settings(state->policy).gpu.resource_names);
    if (with_runtime) report["notes"].push_back(with_runtime->second);
    report["source"] = document.source;
    report["covered"] = true;
    if (auto field = tenant.choice.json_field(state->policy)) {
      report["tenant"] = std::move(*field);
      if (output == "text") {
        out << "# tenant: " << terminal_text(tenant.choice.display_name()) << (tenant.choice.exempt() ? " (exempt)" : "") << "\n";
      }
    }
    if (output == "text" && !tenant.unknown_labels_warning.empty()) {
      out << "# warning: " << terminal_text(tenant.unknown_labels_warning) << "\n";
    }
    if (output == "json") {
      reports.push_back(std::move(report));
    } else {
      out << render_inspection(report) << "\n";
    }
  }
  if (output == "json") out << reports.dump(2) << "\n";
  return 0;
}

// One merge patch per object of the file, one line each, for `kubectl patch --type=merge -p`. A kind
// without a definition or without a suspendDefinition is an error naming the document.
int suspend_offline(const CommonOptions& common, const std::string& manifest, SuspendDirection direction,
                    std::ostream& out) {
  auto state = load_state(common, 1);
  for (const auto& document : read_documents(manifest)) {
    AdmissionRequest request = request_for_object(document.value);
    const CompiledDefinition* definition = state->catalog.find(request.kind);
    if (definition == nullptr) {
      throw SuspendError(document.source + ": " + request.kind.to_string() + " has no definition");
    }
    try {
      out << suspend_merge_patch(document.value, *definition, direction).dump() << "\n";
    } catch (const SuspendError& e) {
      throw SuspendError(document.source + ": " + e.what());
    }
  }
  return 0;
}

// `suspend` or `resume` (the verb), which read the same file and print the same kind of patch.
CLI::App* add_suspend_command(CLI::App& app, const std::string& verb, std::string& manifest, CommonOptions& common) {
  auto* command = app.add_subcommand(
      verb, "Print the merge patch that does `" + verb + "` on each workload of a file, from its definition's suspendDefinition");
  command->footer("Example:\n  kubectl patch jobset demo --type=merge -p \"$(karta-webhook " + verb + " -f job.yaml)\"\n"
                  "Prints one patch per object; exits 1 for a kind that has no suspendDefinition.");
  command->add_option("-f,--filename", manifest, "YAML or JSON manifest, several documents allowed")
      ->required()->check(CLI::ExistingFile);
  add_common_options(*command, common);
  return command;
}

// kubectl runs any `kubectl-NAME` program on the PATH for `kubectl NAME ...`, with argv[0] that program's
// path: linked as kubectl-karta, the binary is the `kubectl karta` plugin, and its help says so.
constexpr const char* kPluginFile = "kubectl-karta";

void name_for_kubectl(CLI::App& command) {
  auto renamed = [](std::string text) {
    const std::string from = "karta-webhook", to = "kubectl karta";
    for (std::size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size()) text.replace(at, from.size(), to);
    return text;
  };
  command.footer(renamed(command.get_footer()));
  command.description(renamed(command.get_description()));
  for (CLI::App* sub : command.get_subcommands({})) name_for_kubectl(*sub);
}

}  // namespace

int run_command_line(int argc, char** argv, std::ostream& out, std::ostream& err) {
  const bool kubectl_plugin = argc > 0 && std::filesystem::path(argv[0]).filename() == kPluginFile;
  CLI::App app{"karta-webhook: a Kubernetes admission webhook that labels, annotates and schedules the pod "
               "templates of any workload kind described by a Karta definition."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "karta-webhook 0.1.0 (commit " + std::string(build_commit()) + ")");

  CommonOptions common;
  WebhookConfig config;
  ServerOptions& server_options = config.server;
  // One thread per CPU (server/cpu_budget.h): with the server pinned to its CPU and the load generator on
  // another (scripts/load-test.sh), more threads served no more and queued requests behind each other:
  // 4 per CPU gave a p99 of 12.3 ms where 1 per CPU gave 1.2 ms at the same rate (bench/README.md).
  server_options.threads = default_server_threads();
  TlsFiles& tls = config.tls;
  auto* serve_command = app.add_subcommand("serve", "Serve /mutate and /validate over HTTPS");
  serve_command->footer(
      "Example:\n  karta-webhook serve --tls-cert-file certs/out/tls.crt --tls-private-key-file certs/out/tls.key "
      "--policy examples/policy.yaml --port 8443");
  serve_command->add_option("--tls-cert-file", tls.certificate, "PEM certificate chain")->required()->check(CLI::ExistingFile);
  serve_command->add_option("--tls-private-key-file", tls.private_key, "PEM private key")->required()->check(CLI::ExistingFile);
  serve_command->add_option("--port", server_options.port, "HTTPS port")->capture_default_str();
  serve_command->add_option("--bind-address", server_options.bind_address, "Address to listen on")->capture_default_str();
  serve_command->add_option("--threads", server_options.threads, "Worker threads (default: one per available CPU, capped by the cgroup CPU quota)")->capture_default_str()->check(CLI::Range(1, 256));
  std::int64_t shutdown_delay_ms = 0, drain_timeout_ms = 30'000;
  serve_command->add_option("--shutdown-delay-ms", shutdown_delay_ms,
                            "After SIGTERM, stay unready this long before closing the listener")->capture_default_str();
  serve_command->add_option("--drain-timeout-ms", drain_timeout_ms, "Longest wait for open requests after SIGTERM")
      ->capture_default_str();
  serve_command->add_option("--log-format", common.log_format, "json or text")
      ->check(CLI::IsMember({"json", "text"}))->capture_default_str();
  serve_command->add_option("--log-level", common.log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))->capture_default_str();
  add_common_options(*serve_command, common);
  std::string kubeconfig, kube_context;
  bool in_cluster = false;
  serve_command->add_option("--kubeconfig", kubeconfig,
                            "Watch Karta objects and CRDs through the API server of this kubeconfig's current context")
      ->check(CLI::ExistingFile);
  serve_command->add_option("--context", kube_context, "The --kubeconfig context to use (default: its current-context)")
      ->needs("--kubeconfig");
  serve_command->add_flag("--in-cluster", in_cluster,
                          "Watch Karta objects and CRDs through the pod's own API server and service account");
  std::vector<std::string> serve_crds;
  serve_command->add_option("--crds", serve_crds, "Directory of CustomResourceDefinitions that Karta definitions are "
                                                  "checked against")->check(CLI::ExistingDirectory);

  std::vector<std::string> manifests;
  auto* mutate_command = app.add_subcommand("mutate", "Print the patch the webhook would send for each object of a file");
  mutate_command->footer("Examples:\n  karta-webhook mutate -f examples/jobset-demo.yaml --policy examples/policy.yaml\n"
                         "  karta-webhook mutate -f examples/jobset-demo.yaml -f more-jobs.yaml --policy examples/policy.yaml\n"
                         "  karta-webhook mutate -f examples/jobset-demo.yaml --policy examples/tenants-policy.yaml "
                         "--namespaces examples/namespaces.yaml\n"
                         "  karta-webhook mutate --policy examples/tenants-policy.yaml --namespaces examples/namespaces.yaml "
                         "--print-policy research");
  add_filename_option(*mutate_command, manifests);
  std::string print_policy_namespace;
  mutate_command->add_option("--print-policy", print_policy_namespace,
                             "Print the tenant rule that applies in this namespace and the policy it gives (the global "
                             "policy with the rule's sections merged in), instead of patches");
  add_common_options(*mutate_command, common);
  add_namespaces_option(*mutate_command, common);
  add_crds_option(*mutate_command, common);

  std::vector<std::string> validate_files;
  std::vector<std::string> validate_crds;
  std::string validate_policy_file, validate_namespaces;
  auto* validate_command = app.add_subcommand("validate", "Check Karta definitions (structure, safe jq, paths against "
                                                          "CRDs) or a policy file");
  validate_command->footer("Examples:\n  karta-webhook validate -f definitions/catalog/jobset.x-k8s.io-jobset-v1alpha2.yaml "
                           "--crds tests/corpus/crds\n"
                           "  karta-webhook validate --policy examples/tenants-policy.yaml --namespaces examples/namespaces.yaml\n"
                           "Exits 1 when any definition has a fault, or when the policy would not load.");
  auto* validate_filename = validate_command->add_option("-f,--filename", validate_files,
                               "YAML or JSON files of Karta objects, or directories of them; several allowed")
      ->check(CLI::ExistingPath);
  auto* validate_policy_option = validate_command->add_option("--policy", validate_policy_file,
      "Policy file to check as serve loads it")->check(CLI::ExistingFile)->excludes(validate_filename);
  validate_command->add_option("--namespaces", validate_namespaces,
      "With --policy: namespaces (kubectl get ns -o yaml) to print the tenant each gets")
      ->check(CLI::ExistingFile)->needs(validate_policy_option);
  validate_command->add_option("--crds", validate_crds, "Directory of CustomResourceDefinition files")
      ->check(CLI::ExistingDirectory);

  std::vector<std::string> inspect_manifests;
  std::string inspect_output = "text";
  auto* inspect_command = app.add_subcommand("inspect", "Show a live workload, or each workload of a file, as its definition sees it");
  inspect_command->footer("Example:\n  karta-webhook inspect -f examples/jobset-demo.yaml\n"
                          "  karta-webhook inspect -f examples/jobset-demo.yaml --output json\n"
                          "  karta-webhook inspect -f trainjob.yaml -f runtime.yaml   (a TrainJob counts its runtime's nodes)");
  add_filename_option(*inspect_command, inspect_manifests);
  inspect_command->add_option("-o,--output", inspect_output, "text or json")
      ->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  add_common_options(*inspect_command, common);
  add_namespaces_option(*inspect_command, common);
  add_crds_option(*inspect_command, common);
  LiveCommands live(app, *inspect_command);
  add_common_options(live.list(), common);
  add_namespaces_option(live.list(), common);

  std::string suspend_manifest, resume_manifest;
  auto* suspend_command = add_suspend_command(app, "suspend", suspend_manifest, common);
  auto* resume_command = add_suspend_command(app, "resume", resume_manifest, common);
  AuditCommand audit(app);
  add_common_options(audit.command(), common);
  add_namespaces_option(audit.command(), common);
  GenerateCommand generate(app);
  CatalogExportCommand catalog_export(app);

  if (kubectl_plugin) {
    name_for_kubectl(app);
    app.name("kubectl karta");
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e, out, err);
  }

  try {
    if (*serve_command) {
      server_options.shutdown_delay = std::chrono::milliseconds(shutdown_delay_ms);
      server_options.drain_timeout = std::chrono::milliseconds(drain_timeout_ms);
      config.crd_directories.assign(serve_crds.begin(), serve_crds.end());
      if (!kubeconfig.empty()) {
        config.cluster = kube::load_kubeconfig(kube::kubeconfig_files(kubeconfig), kube_context);
      } else if (in_cluster) {
        config.cluster = kube::in_cluster_connection();
      }
      return serve(common, std::move(config));
    }
    if (auto code = live.run(common.definitions, common.policy, common.namespaces, inspect_output, !inspect_manifests.empty(), out, err)) return *code;
    if (*mutate_command) {
      if (!print_policy_namespace.empty()) return print_policy(common, print_policy_namespace, out);
      if (manifests.empty()) throw InputError("mutate: -f MANIFEST or --print-policy NAMESPACE is needed");
      return mutate_offline(common, manifests, out);
    }
    if (*inspect_command) return inspect_offline(common, inspect_manifests, inspect_output, out);
    if (*validate_command) {
      if (!validate_policy_file.empty()) return validate_policy(validate_policy_file, validate_namespaces, out);
      if (validate_files.empty()) throw InputError("validate: -f FILE (Karta definitions) or --policy FILE is needed");
      return validate_offline(validate_files, validate_crds, out);
    }
    if (*suspend_command) return suspend_offline(common, suspend_manifest, SuspendDirection::Suspend, out);
    if (*resume_command) return suspend_offline(common, resume_manifest, SuspendDirection::Resume, out);
    if (audit.chosen()) return audit.run(*load_state(common, 1), out, err);
    if (generate.chosen()) return generate.run(out, err);
    if (catalog_export.chosen()) return catalog_export.run(out, err);
  } catch (const std::exception& e) {
    err << "karta-webhook: " << error_text(e) << "\n";
    return 1;
  }
  return 0;
}

}  // namespace karta
