#pragma once

// `karta-webhook generate`: drafts a Karta (generate/karta_draft.h) from a CustomResourceDefinition read
// from a file (-f) or, by name, from the cluster (--kubeconfig, --in-cluster, or $KUBECONFIG /
// ~/.kube/config as kubectl finds them), and prints it.

#include <ostream>
#include <string>

namespace CLI {
class App;
}

namespace karta {

class GenerateCommand {
 public:
  explicit GenerateCommand(CLI::App& app);
  bool chosen() const;
  // Prints the draft to `out`; exits 1 (with the reason on `err`) when there is none.
  int run(std::ostream& out, std::ostream& err) const;

 private:
  CLI::App* command_;
  std::string file_;
  std::string name_;
  std::string version_;
  std::string kubeconfig_;
  std::string context_;
  bool in_cluster_ = false;
};

}  // namespace karta
