#pragma once

// What the shipped webhook registrations (manifests/base/webhooks.yaml) never send to the webhook, for the
// offline views that decide as the cluster does (audit). tests/unit-manifests-webhooks.cpp holds the
// manifests to these names, so the two cannot drift apart.

#include <array>
#include <map>
#include <string>
#include <string_view>

namespace karta {

// Every webhook's namespaceSelector: kubernetes.io/metadata.name NotIn these.
inline constexpr std::array<std::string_view, 2> kUnsentNamespaces{"kube-system", "karta-system"};
// A namespace labelled so is sent to no webhook; a workload labelled so is not sent to the mutating one
// (its objectSelector), and is still validated.
inline constexpr std::string_view kOptOutLabel = "karta.run.ai/webhook";
inline constexpr std::string_view kOptOutValue = "disabled";

// Why the shipped registrations send no review of a workload in `namespace_name` (its labels, when known),
// or "" when they send it.
inline std::string unsent_namespace_reason(const std::string& namespace_name,
                                           const std::map<std::string, std::string>* namespace_labels) {
  for (std::string_view unsent : kUnsentNamespaces) {
    if (namespace_name == unsent) return "the webhooks' namespaceSelector excludes namespace " + namespace_name;
  }
  if (namespace_labels != nullptr) {
    auto label = namespace_labels->find(std::string(kOptOutLabel));
    if (label != namespace_labels->end() && label->second == kOptOutValue) {
      return "namespace " + namespace_name + " is labelled " + std::string(kOptOutLabel) + "=" + std::string(kOptOutValue);
    }
  }
  return "";
}

}  // namespace karta
