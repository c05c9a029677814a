#include "cli/catalog_export.h"

#include <CLI/CLI.hpp>

#include "definitions/builtin_catalog.h"
#include "json/documents.h"
#include "k8s/terminal_text.h"
#include "kube/api_client.h"
#include "kube/kube_connection.h"
#include "kube/list_pages.h"

namespace karta {
namespace {

// KAI Scheduler v0.17.0's own groupers: the table of NewDefaultPluginsHub in
// pkg/podgrouper/podgrouper/hub/hub.go, which GetPodGrouperPlugin looks a kind up in, first by its exact
// group, version and kind, then with the version "*". A kind found there never reaches the Karta fallback.
// (The five run.ai workload kinds, listed there with version "*", are Run:ai's and not in our catalog.)
struct NativeGrouper {
  const char* group;
  const char* version;  // "*": every version
  const char* kind;
};
constexpr NativeGrouper kNativeGroupers[] = {
    {"apps", "v1", "Deployment"},
    {"machinelearning.seldon.io", "v1alpha2", "SeldonDeployment"},
    {"machinelearning.seldon.io", "v1", "SeldonDeployment"},
    {"kubevirt.io", "v1", "VirtualMachineInstance"},
    {"kubeflow.org", "v1", "TFJob"},
    {"kubeflow.org", "v1", "PyTorchJob"},
    {"kubeflow.org", "v1", "XGBoostJob"},
    {"kubeflow.org", "v1", "JAXJob"},
    {"kubeflow.org", "v1", "MPIJob"},
    {"kubeflow.org", "v2beta1", "MPIJob"},
    {"kubeflow.org", "v1beta1", "Notebook"},
    {"batch", "v1", "Job"},
    {"apps", "v1", "StatefulSet"},
    {"apps", "v1", "ReplicaSet"},
    {"run.ai", "v1", "RunaiJob"},
    {"", "v1", "Pod"},
    {"amlarc.azureml.com", "v1alpha1", "AmlJob"},
    {"serving.knative.dev", "v1", "Service"},
    {"batch", "v1", "CronJob"},
    {"workspace.devfile.io", "v1alpha2", "DevWorkspace"},
    {"ray.io", "v1alpha1", "RayCluster"},
    {"ray.io", "v1alpha1", "RayJob"},
    {"ray.io", "v1alpha1", "RayService"},
    {"ray.io", "v1", "RayCluster"},
    {"ray.io", "v1", "RayJob"},
    {"ray.io", "v1", "RayService"},
    {"kubeflow.org", "v1alpha1", "ScheduledWorkflow"},
    {"tekton.dev", "v1", "PipelineRun"},
    {"tekton.dev", "v1", "TaskRun"},
    {"egx.nvidia.io", "v1", "SPOTRequest"},
    {"leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet"},
    {"jobset.x-k8s.io", "v1alpha2", "JobSet"},
    {"grove.io", "v1alpha1", "PodGangSet"},
    {"grove.io", "v1alpha1", "PodCliqueSet"},
    {"argoproj.io", "v1alpha1", "Workflow"},
    {"trainer.kubeflow.org", "v1alpha1", "TrainJob"},
    {"nvidia.com", "*", "DynamoGraphDeployment"},
};

std::string key_of(const GroupVersionKind& kind) { return kind.group + "/" + kind.version + "/" + kind.kind; }

// The root kind a Karta document defines, read leniently (the catalog is checked by its own tests).
GroupVersionKind root_kind(const json& karta) {
  const json::json_pointer at("/spec/structureDefinition/rootComponent/kind");
  if (!karta.contains(at) || !karta.at(at).is_object()) return {};
  const json& kind = karta.at(at);
  return {kind.value("group", ""), kind.value("version", ""), kind.value("kind", "")};
}

// The kinds the cluster's Kartas define (group/version/Kind), read with one paged LIST.
std::set<std::string> cluster_defined_kinds(kube::ApiClient& client) {
  std::set<std::string> defined;
  kube::list_all(client, "/apis/run.ai/v1alpha1/kartas", {}, [&](kube::ListPage& page) {
    for (const json& item : page.items) {
      const GroupVersionKind kind = root_kind(item);
      if (!kind.kind.empty()) defined.insert(key_of(kind));
    }
  });
  return defined;
}

}  // namespace

bool kai_groups_natively(const GroupVersionKind& kind) {
  for (const NativeGrouper& native : kNativeGroupers) {
    if (kind.group == native.group && kind.kind == native.kind &&
        (kind.version == native.version || std::string_view(native.version) == "*"))
      return true;
  }
  return false;
}

void write_catalog_export(const std::set<std::string>& defined, std::ostream& out) {
  out << "# karta-webhook's built-in definitions for the kinds KAI Scheduler v0.17 has no grouper of its own for,\n"
         "# labelled as its generic Karta fallback finds them (karta-webhook catalog export).\n";
  for (const EmbeddedDefinitionFile& file : builtin_catalog_files()) {
    for (const SourceDocument& document : parse_documents(file.text, "definitions/catalog/" + std::string(file.name))) {
      json karta = document.value;
      const GroupVersionKind kind = root_kind(karta);
      if (kind.kind.empty() || kai_groups_natively(kind) || defined.count(key_of(kind)) != 0) continue;
      karta["metadata"]["labels"]["run.ai/karta-group"] = kind.group;
      karta["metadata"]["labels"]["run.ai/karta-version"] = kind.version;
      karta["metadata"]["labels"]["run.ai/karta-kind"] = kind.kind;
      out << "---\n# " << document.source << "\n" << karta.dump(2) << "\n";
    }
  }
}

CatalogExportCommand::CatalogExportCommand(CLI::App& app) {
  CLI::App* catalog = app.add_subcommand("catalog", "The built-in catalog of definitions");
  catalog->require_subcommand(1);
  export_ = catalog->add_subcommand(
      "export", "Print the built-in definitions KAI Scheduler has no grouper for, as Karta objects it finds");
  export_->footer(
      "Examples:\n"
      "  karta-webhook catalog export > kai-kartas.yaml && kubectl apply -f kai-kartas.yaml\n"
      "  karta-webhook catalog export --kubeconfig ~/.kube/config   # leaves out kinds the cluster defines\n"
      "Each Karta carries run.ai/karta-group, -version and -kind, by which KAI's pod grouper finds it.");
  export_
      ->add_option("--kubeconfig", kubeconfig_,
                   "List the cluster's Kartas and leave out every kind one of them defines already")
      ->check(CLI::ExistingFile);
  export_->add_option("--context", context_, "The kubeconfig context to use (default: its current-context)");
  export_->add_flag("--in-cluster", in_cluster_, "List the cluster's Kartas with the pod's own service account");
}

bool CatalogExportCommand::chosen() const { return export_->parsed(); }

int CatalogExportCommand::run(std::ostream& out, std::ostream& err) const {
  try {
    std::set<std::string> defined;
    if (!kubeconfig_.empty() || !context_.empty() || in_cluster_) {
      kube::KubeConnection connection =
          in_cluster_ ? kube::in_cluster_connection() : kube::load_kubeconfig(kube::kubeconfig_files(kubeconfig_), context_);
      kube::ApiClient client(std::move(connection));
      defined = cluster_defined_kinds(client);
    }
    write_catalog_export(defined, out);
    return 0;
  } catch (const std::runtime_error& e) {
    err << "karta-webhook catalog export: " << error_text(e) << "\n";
    return 1;
  }
}

}  // namespace karta
