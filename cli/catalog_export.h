#pragma once

// `karta-webhook catalog export`: the built-in catalog's definitions as Karta objects KAI Scheduler can
// use. KAI groups the pods of a kind it has no grouper of its own for from a Karta object in the cluster
// (its pod grouper's generic Karta fallback, `--generic-karta-fallback`, default true), found by the labels
// run.ai/karta-group, run.ai/karta-version and run.ai/karta-kind. So the export holds the kinds of our
// catalog without a native KAI grouper, each labelled so, and none that KAI groups natively (a Karta for
// those would be ignored). With a cluster (--kubeconfig, --context, --in-cluster) it lists the cluster's
// Kartas and leaves out every kind one of them already defines: KAI refuses two definitions of one kind.

#include <ostream>
#include <set>
#include <string>

#include "k8s/group_version_kind.h"

namespace CLI {
class App;
}

namespace karta {

// Whether KAI Scheduler v0.17 groups `kind` with a grouper of its own (kai-scheduler/KAI-Scheduler v0.17.0,
// pkg/podgrouper/podgrouper/hub/hub.go), rather than from a Karta.
bool kai_groups_natively(const GroupVersionKind& kind);

// The export: each exported Karta as a JSON document (YAML's subset) after `---`, with a comment naming
// the catalog file. `defined` holds the kinds ("group/version/Kind") the cluster's Kartas define already.
void write_catalog_export(const std::set<std::string>& defined, std::ostream& out);

class CatalogExportCommand {
 public:
  explicit CatalogExportCommand(CLI::App& app);
  bool chosen() const;
  int run(std::ostream& out, std::ostream& err) const;

 private:
  CLI::App* export_ = nullptr;
  std::string kubeconfig_;
  std::string context_;
  bool in_cluster_ = false;
};

}  // namespace karta
