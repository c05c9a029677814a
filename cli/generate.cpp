#include "cli/generate.h"

#include <CLI/CLI.hpp>

#include "generate/karta_draft.h"
#include "json/documents.h"
#include "k8s/terminal_text.h"
#include "kube/api_client.h"
#include "kube/api_path.h"
#include "kube/kube_connection.h"

namespace karta {

GenerateCommand::GenerateCommand(CLI::App& app) {
  command_ =
      app.add_subcommand("generate", "Draft a Karta from a CustomResourceDefinition, in a file or in the cluster");
  command_->footer(
      "Examples:\n"
      "  karta-webhook generate -f tests/corpus/crds/pytorchjob.yaml > pytorchjob.karta.yaml\n"
      "  karta-webhook generate trainers.acme.example.com --kubeconfig ~/.kube/config --version v1\n"
      "Prints the Karta for the CRD's storage version (or --version); each inferred value has a comment saying\n"
      "what it was inferred from. Check it, then: karta-webhook validate -f pytorchjob.karta.yaml --crds DIR");
  command_->add_option("name", name_, "Name of a CustomResourceDefinition in the cluster (plural.group)");
  command_->add_option("-f,--filename", file_, "File holding the CustomResourceDefinition")->check(CLI::ExistingFile);
  command_->add_option("--version", version_, "The version to draft (default: the storage version)");
  command_
      ->add_option("--kubeconfig", kubeconfig_,
                   "Read the CRD from the cluster of this kubeconfig's current context (default: $KUBECONFIG's "
                   "files, else ~/.kube/config)")
      ->check(CLI::ExistingFile);
  command_->add_option("--context", context_, "The kubeconfig context to use (default: its current-context)");
  command_->add_flag("--in-cluster", in_cluster_, "Read the CRD with the pod's own service account");
}

bool GenerateCommand::chosen() const { return command_->parsed(); }

int GenerateCommand::run(std::ostream& out, std::ostream& err) const {
  try {
    if (file_.empty() == name_.empty()) throw InputError("give either -f CRD.yaml or the name of a CRD in the cluster");
    if (!file_.empty() && (!kubeconfig_.empty() || !context_.empty() || in_cluster_))
      throw InputError("-f reads a file: --kubeconfig, --context and --in-cluster go with a CRD's name");
    json crd;
    std::string where;
    if (!file_.empty()) {
      std::size_t found = 0;
      for (const SourceDocument& document : read_documents(file_)) {
        if (!document.value.is_object() || document.value.value("kind", json()) != "CustomResourceDefinition") continue;
        if (++found == 1) {
          crd = document.value;
          where = document.source;
        }
      }
      if (found != 1)
        throw InputError(file_ + ": holds " + std::to_string(found) +
                         " CustomResourceDefinitions; generate drafts one");
    } else {
      kube::KubeConnection connection =
          in_cluster_ ? kube::in_cluster_connection() : kube::load_kubeconfig(kube::kubeconfig_files(kubeconfig_), context_);
      kube::ApiClient client(std::move(connection));
      crd = client.get(kube::resource_path("apiextensions.k8s.io", "v1", "customresourcedefinitions", "", name_));
      where = "customresourcedefinitions/" + name_;
    }
    try {
      out << draft_karta(crd, version_.empty() ? std::nullopt : std::optional<std::string>(version_));
    } catch (const InputError& e) {
      throw InputError(where + ": " + e.what());
    }
    return 0;
  } catch (const std::runtime_error& e) {  // InputError, ApiError, KubeConfigError
    err << "karta-webhook generate: " << error_text(e) << "\n";
    return 1;
  }
}

}  // namespace karta
