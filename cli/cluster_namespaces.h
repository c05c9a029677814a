#pragma once

// The labels of the cluster's namespaces, for the live commands (audit, inspect KIND/NAME, list) whose
// policy reads them (tenant rules with a namespaceSelector, scheduling.queue.namespaceLabel): read from
// the API server as `serve` learns them (runtime/namespace_watch.h), so that a command gives the tenant
// and the GPUs that serve would for the same labels.

#include <cstddef>
#include <memory>
#include <string>

#include "admission/namespace_labels.h"
#include "kube/api_client.h"

namespace karta {

// One namespace (GET /api/v1/namespaces/NAME), or every one (a paged LIST) when `namespace_name` is "".
// When the server does not answer (403, 404, a failed connection) or answers with what is not a
// Namespace, the labels are unknown and every lookup says why
// (the error, as the API server gave it), which decide_tenant() turns into its warning.
struct NamespacesRead {
  std::shared_ptr<const NamespaceLabels> labels;
  std::string error;  // "": read; else why not ("could not get namespace \"x\": ..."), the cluster's text unescaped
};
NamespacesRead read_cluster_namespaces(kube::ApiClient& client, const std::string& namespace_name, std::size_t page_size);

}  // namespace karta
