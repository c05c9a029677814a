#pragma once

// Where an admission request is decided: decodes the review, admits what is out of scope cheaply, hands
// the rest to mutate/ or validate/, and encodes the answer. Knows the AdmissionReview protocol, not HTTP:
// runtime/admission_http.h maps each ReviewReply to its HTTP status.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "admission/admission_review.h"
#include "admission/metrics.h"
#include "admission/namespace_labels.h"
#include "definitions/catalog.h"
#include "policy/policy.h"
#include "validate/crd_schema.h"

namespace karta {

// The longest one review waits on the API server (for the CRD of a Karta's kind, on /validate) when the
// call names no shorter timeout (runtime/admission_http.h, review_budget).
inline constexpr std::chrono::milliseconds kDefaultReviewBudget{3'000};

// Everything a decision depends on, swapped as one piece when definitions or the policy reload.
struct AdmissionState {
  Catalog catalog;
  Policy policy;
  // The first 16 hex digits of the SHA-256 of the policy file's bytes as loaded (`sha256sum` prints the
  // same), "none" without --policy: exported so that replicas serving different policies show
  // (karta_policy_info, runtime/admission_state_loader.h).
  std::string policy_digest = "none";
  // CRD schemas that Karta definitions are checked against (--crds, or the API server in a cluster).
  std::shared_ptr<const CrdSchemaSet> crds;
  // In a cluster: the CRD schema of a kind outside `crds` (one that no loaded definition uses), fetched
  // from the API server when a Karta of it is validated, by the review's deadline
  // (runtime/cluster_schemas.h): the schema, none (no CRD serves the kind), or why it could not be read.
  std::function<CrdFetch(const GroupVersionKind&, std::chrono::steady_clock::time_point deadline)> fetch_crd;
  // Karta objects in the cluster by the root kind they define ("group/version/Kind" -> object name):
  // KAI errors out on two definitions of one kind, so a second one is refused.
  std::map<std::string, std::string> cluster_kartas;
  // Where the labels of a workload's namespace are learnt, when the policy needs them (tenant rules with a
  // namespaceSelector, scheduling.queue.namespaceLabel). Null: nowhere, every namespace's are unknown.
  std::shared_ptr<const NamespaceLabels> namespaces;
};

// The root kind a Karta object defines (spec.structureDefinition.rootComponent.kind), read leniently:
// validation reports what is wrong with it.
std::optional<GroupVersionKind> defined_kind(const json& karta);

// How a decision reads the namespace's labels. Offline (the default): what state.namespaces knows, and
// labels it does not know are decided without, with a warning. In serve (AdmissionService::answer): a
// namespace the store has not heard of yet makes the decision wait (AdmissionResult::awaiting_namespace),
// `awaited` is what that wait came to, and labels that stay unknown get the policy's
// namespaceLabels.whenUnknown.
struct LabelSource {
  bool serving = false;
  const NamespaceLookup* awaited = nullptr;
};

// The policy that applies to a workload in one namespace, and what deciding it met.
struct TenantDecision {
  TenantChoice choice;
  std::optional<LabelMap> labels;  // the namespace's, when learnt
  std::string unknown_labels_warning;  // the policy needed the labels and they are unknown: why, and what applied
  bool awaiting = false;  // serving: not decided, the store has not heard of the namespace yet
  std::string refusal;    // serving, whenUnknown deny: the labels mattered and are unknown; the denial's message
};
TenantDecision decide_tenant(const AdmissionState& state, const std::string& namespace_name, LabelSource source = {});

// True for run.ai/v1alpha1 Karta and optimization.nvidia.com/v1alpha1 ResourceInterface requests.
bool is_definition_kind(const GroupVersionKind& kind);

// /mutate, /validate, and /validate-policy (the webhook's own policy ConfigMap, admission/policy_configmap.h).
enum class AdmissionEndpoint { Mutate, Validate, ValidatePolicy };
const char* endpoint_name(AdmissionEndpoint endpoint);

struct AdmissionResult {
  AdmissionDecision decision;
  std::vector<std::string> notes;  // odd shapes met on the way; logged
  std::string outcome;             // short word for logs and metrics: patched, allowed, denied, skipped
  std::vector<std::string> violations{};  // validate: the label policy's findings, in audit mode as in enforce
  // validate of a Karta under definitionPolicy.mode warn: the faults admitted, and the kind the Karta
  // defines ("group/version/Kind"), for the metric.
  std::size_t definition_faults_admitted = 0;
  std::string defined_kind{};
  // The catalog's key of the object's kind, once mutate or validate has looked it up (null: not looked
  // up, or not registered), so the metric does not look it up again.
  const std::string* kind_key = nullptr;
  TenantChoice tenant{};  // the tenant rule that applied (none: the global policy), once decided
  // The policy needed the namespace's labels and they were unknown (counted in
  // karta_namespace_labels_unknown_total; the warning or the denial says so to the user).
  bool namespace_labels_unknown = false;
  // Serving: not decided yet, the namespace's labels are to be awaited (LabelSource).
  bool awaiting_namespace = false;
};

// What one call of /mutate or /validate comes to: the response review, or why its envelope was refused.
// A malformed envelope is refused, not denied, so that the cluster's failurePolicy decides (README,
// "Admission contract").
struct ReviewReply {
  enum class Status {
    Answered,              // a well-formed review: `body` is the response AdmissionReview
    UnsupportedMediaType,  // the body is not declared as JSON
    Malformed,             // not an admission.k8s.io/v1 AdmissionReview, no request.uid, a field of the wrong type
    NotReady,              // the definitions and the policy are not loaded yet
    InternalError,         // a bug, not bad input
    // Not answered yet: the labels of the namespace in `body` are to be awaited (NamespaceLabels::await),
    // and the review answered again with what that wait came to.
    AwaitingNamespace,
  };
  Status status = Status::Answered;
  std::string body;  // the response AdmissionReview (JSON), or the reason (one line of text)
};

// What the wait for a review's namespace labels came to, for answering it again: the lookup, and when the
// review arrived (its duration counts the wait).
struct AwaitedNamespace {
  NamespaceLookup lookup;
  std::chrono::steady_clock::time_point arrived;
};

class AdmissionService {
 public:
  void update(std::shared_ptr<const AdmissionState> state) {
    metrics_.set_definitions_loaded(state ? state->catalog.size() : 0);
    metrics_.set_policy_digest(state ? state->policy_digest : "none");
    std::lock_guard lock(state_mutex_);
    state_.swap(state);  // the old state is released outside the lock, when `state` goes
  }
  Metrics& metrics() { return metrics_; }
  std::shared_ptr<const AdmissionState> state() const {
    std::lock_guard lock(state_mutex_);
    return state_;
  }
  bool ready() const { return state() != nullptr; }

  // One review for /mutate or /validate, with its declared media type ("" counts as JSON), as serve decides
  // it. A well-formed review gets a review back (Answered), allowed or denied, unless the labels of its
  // namespace are to be awaited first (AwaitingNamespace); with `awaited`, it is answered. What it waits
  // for from the API server (a Karta's CRD) ends at `deadline` (unset: kDefaultReviewBudget from now).
  ReviewReply answer(AdmissionEndpoint endpoint, std::string_view content_type, std::string_view body,
                     const AwaitedNamespace* awaited = nullptr,
                     std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt) const;

  // The decision for one decoded request; the offline commands call these too.
  static AdmissionResult mutate(const AdmissionRequest& request, const AdmissionState& state, LabelSource labels = {});
  static AdmissionResult validate(const AdmissionRequest& request, const AdmissionState& state, LabelSource labels = {},
                                  std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt);

 private:
  // A mutex, not std::atomic<std::shared_ptr>: libstdc++ 12's atomic shared_ptr unlocks after a load with
  // a relaxed store, so the load's read of the pointer and the next store's write are formally a data
  // race (ThreadSanitizer reports it; scripts/tsan.sh). Held for one pointer copy and a reference count.
  mutable std::mutex state_mutex_;
  std::shared_ptr<const AdmissionState> state_;
  mutable Metrics metrics_;
};

}  // namespace karta
