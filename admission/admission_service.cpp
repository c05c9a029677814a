#include "admission/admission_service.h"

#include <chrono>

#include <spdlog/spdlog.h>

#include "admission/policy_configmap.h"
#include "definitions/pod_template_locator.h"
#include "k8s/name_syntax.h"
#include "k8s/terminal_text.h"
#include "mutate/json_patch_builder.h"
#include "mutate/mutation.h"
#include "validate/definition_validation.h"
#include "validate/label_policy.h"
#include "validate/scheduling_choices.h"

namespace karta {
namespace {

bool json_content_type(std::string_view content_type) {
  if (content_type.empty()) return true;
  return content_type.rfind("application/json", 0) == 0;
}

std::string object_name(const AdmissionRequest& r) {
  std::string name = r.name;
  if (name.empty() && r.object) {
    if (auto metadata = member(*r.object, "metadata")) {
      auto given = member(*metadata, "name");
      auto generated = member(*metadata, "generateName");
      if (auto text = given ? string_of(*given) : std::nullopt) name = std::string(*text);
      else if (auto prefix = generated ? string_of(*generated) : std::nullopt) name = std::string(*prefix) + "*";
    }
  }
  return r.namespace_name.empty() ? name : r.namespace_name + "/" + name;
}

std::string gvk_key(const GroupVersionKind& kind) { return kind.group + "/" + kind.version + "/" + kind.kind; }

// A namespace's name as a warning, a denial or a log line quotes it: a review may carry any text there
// (a name is at most 63 characters), and the store's reason why its labels are unknown.
std::string quoted_namespace(const std::string& name) { return "\"" + bounded_text(name, 80) + "\""; }
std::string quoted_reason(const std::string& why) { return bounded_text(why, 1000); }

// KAI Scheduler's pod-grouper looks definitions up by these labels.
AdmissionResult stamp_karta_labels(const AdmissionRequest& request) {
  auto kind = defined_kind(to_json(*request.object));
  if (!kind) return {AdmissionDecision::allow(), {}, "skipped:no-root-kind"};
  JsonPatchBuilder patch(*request.object);
  AdmissionResult result;
  const JsonPointer labels("/metadata/labels");
  for (const auto& [key, value] : {std::pair{"run.ai/karta-group", kind->group}, std::pair{"run.ai/karta-version", kind->version},
                                   std::pair{"run.ai/karta-kind", kind->kind}}) {
    if (auto error = label_value_error(value); !error.empty()) {
      result.decision.warnings.push_back(std::string("label ") + key + " not set: \"" + value + "\" " + error);
      continue;
    }
    if (patch.set_member(labels, key, value, true) == PatchChange::Blocked) result.notes.push_back(patch.blocked_reason());
  }
  auto warnings = std::move(result.decision.warnings);
  result.decision = AdmissionDecision::patched(patch.patch());
  result.decision.warnings = std::move(warnings);
  result.outcome = result.decision.patch_operations() > 0 ? "patched" : "unchanged";
  return result;
}

AdmissionResult validate_karta(const AdmissionRequest& request, const AdmissionState& state,
                               std::chrono::steady_clock::time_point deadline) {
  // A schema fetched for this check is held here until the report is made: the cache's trim cannot take it.
  std::vector<std::shared_ptr<const CrdSchema>> fetched;
  std::string unreadable;  // why the CRD of the Karta's kind could not be read by the deadline
  CrdLookup lookup = [&](const GroupVersionKind& kind) -> const CrdSchema* {
    if (const CrdSchema* held = state.crds ? state.crds->find(kind) : nullptr) return held;
    if (!state.fetch_crd) return nullptr;
    // A kind no loaded definition uses: its CRD is asked for now (runtime/cluster_schemas.h).
    CrdFetch got = state.fetch_crd(kind, deadline);
    if (!got.schema) {
      unreadable = std::move(got.unreadable);
      return nullptr;
    }
    fetched.push_back(std::move(got.schema));
    return fetched.back().get();
  };
  const json karta = to_json(*request.object);
  DefinitionReport report = validate_definition(karta, lookup);
  const std::optional<GroupVersionKind> kind = defined_kind(karta);
  if (kind) {
    auto existing = state.cluster_kartas.find(gvk_key(*kind));
    if (existing != state.cluster_kartas.end() && existing->second != request.name) {
      report.faults.push_back("spec.structureDefinition.rootComponent.kind: " + kind->to_string() +
                              " is already defined by Karta \"" + existing->second +
                              "\" (KAI Scheduler refuses two definitions of one kind)");
    }
  }
  AdmissionResult result;
  const bool warn = state.policy.definition_policy.mode == DefinitionPolicyMode::Warn;
  if (!unreadable.empty()) {
    // The kind comes from the request: cut and escaped before it is quoted.
    const std::string why = "the CustomResourceDefinition of " +
                            bounded_text(kind ? kind->to_string() : std::string("its kind"), 200) +
                            " could not be read in time (" + unreadable + ")";
    if (report.unknown_crd_warning) {
      report.warnings[*report.unknown_crd_warning] = why + ": paths not verified against a schema";
    }
    // Under enforce a Karta is never admitted unchecked; one with faults found anyway is invalid as it is.
    if (!warn && report.ok()) {
      result.decision = AdmissionDecision::errored(
          503, "Karta " + request.name + " not admitted: " + why +
                   ", so its paths cannot be checked (definitionPolicy.mode: enforce); retry");
      result.decision.reason = "ServiceUnavailable";
      result.outcome = "denied:crd-unreadable";
      return result;
    }
  }
  if (report.ok()) {
    result.decision = AdmissionDecision::allow();
    result.outcome = "allowed";
  } else if (warn) {
    // Workload Map or KAI may already rely on it: admitted, and each fault said. Loading decides apart
    // whether karta-webhook uses it (runtime/admission_state_loader.cpp).
    const std::size_t count = report.faults.size();
    result.decision = AdmissionDecision::allow();
    result.decision.warnings.push_back((
        "Karta " + request.name + " admitted with " + std::to_string(count) + (count == 1 ? " fault" : " faults") +
        " (definitionPolicy.mode: warn): " +
        (report.only_path_faults() ? "the paths at fault yield nothing" : "karta-webhook does not load it")));
    for (auto& fault : report.faults) result.decision.warnings.push_back(std::move(fault));
    result.outcome = "allowed:faults";
    result.definition_faults_admitted = count;
    // A label per kind a loaded definition registers, one for every other: the kinds of Kartas sent to
    // /validate are the senders' to choose, and each label value is a series /metrics keeps for good.
    const std::string* registered = kind ? state.catalog.find_key(*kind) : nullptr;
    result.defined_kind = registered != nullptr ? *registered : "other";
  } else {
    std::string message = "Karta " + request.name + " is invalid: ";
    for (std::size_t i = 0; i < report.faults.size(); ++i) message += (i == 0 ? "" : "; ") + report.faults[i];
    result.decision = AdmissionDecision::invalid(message);
    result.outcome = "denied";
  }
  for (auto& warning : report.warnings) result.decision.warnings.push_back(std::move(warning));
  return result;
}

// The kind of the object's controller (the ownerReference with controller: true), when it has one.
std::optional<GroupVersionKind> controller_kind(JsonElement object) {
  auto metadata = member(object, "metadata");
  auto references = metadata ? member(*metadata, "ownerReferences") : std::nullopt;
  if (!references || !references->is_array()) return std::nullopt;
  for (JsonElement reference : array_of(*references)) {
    auto controller = member(reference, "controller");
    if (!controller || !controller->is_bool() || !controller->get_bool().value_unsafe()) continue;
    auto api_version = member(reference, "apiVersion");
    auto kind = member(reference, "kind");
    auto api_text = api_version ? string_of(*api_version) : std::nullopt;
    auto kind_text = kind ? string_of(*kind) : std::nullopt;
    if (!api_text || !kind_text) return std::nullopt;
    return GroupVersionKind::from_api_version(std::string(*api_text), std::string(*kind_text));
  }
  return std::nullopt;
}

// An object made by a controller whose own kind has a definition (a ReplicaSet of a Deployment, a Job of
// a JobSet or CronJob, a Pod of any of them) was mutated and checked as its owner's template: patching it
// again would make it differ from the template its controller compares it with, and denying it would
// stop the rollout. The outcome names the owner's kind.
std::optional<AdmissionResult> skip_owned(const AdmissionRequest& request, const AdmissionState& state) {
  auto owner = controller_kind(*request.object);
  if (!owner || state.catalog.find(*owner) == nullptr) return std::nullopt;
  return AdmissionResult{AdmissionDecision::allow(), {}, "skipped:owned-by " + owner->to_string()};
}

// The decision's tenant, and the warning (and log line) when the namespace's labels were needed and unknown.
void note_tenant(AdmissionResult& result, const TenantDecision& decision) {
  result.tenant = decision.choice;
  if (decision.unknown_labels_warning.empty()) return;
  result.namespace_labels_unknown = true;
  result.decision.warnings.push_back(decision.unknown_labels_warning);
  result.notes.push_back(decision.unknown_labels_warning);
}

// A decision that cannot be made yet (serve awaits the namespace's labels), or that the policy's
// namespaceLabels.whenUnknown refuses without them.
std::optional<AdmissionResult> unsettled(const TenantDecision& decision, const std::string* kind_key) {
  if (!decision.awaiting && decision.refusal.empty()) return std::nullopt;
  AdmissionResult result;
  result.kind_key = kind_key;
  if (decision.awaiting) {
    result.outcome = "awaiting-namespace";
    result.awaiting_namespace = true;
    return result;
  }
  result.decision = AdmissionDecision::unavailable(decision.refusal);
  result.notes.push_back(decision.refusal);
  result.outcome = "denied:namespace-labels-unknown";
  result.namespace_labels_unknown = true;
  result.tenant = decision.choice;
  return result;
}

AdmissionResult exempt_result(const TenantDecision& decision) {
  AdmissionResult result{AdmissionDecision::allow(), {}, "skipped:exempt-tenant " + decision.choice.tenant()};
  note_tenant(result, decision);
  return result;
}

}  // namespace

std::optional<GroupVersionKind> defined_kind(const json& karta) {
  const json* kind = find_json_at(karta, json::json_pointer("/spec/structureDefinition/rootComponent/kind"));
  if (kind == nullptr || !kind->is_object()) return std::nullopt;
  auto text = [&](const char* key) {
    auto it = kind->find(key);
    return it != kind->end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  return GroupVersionKind{text("group"), text("version"), text("kind")};
}

TenantDecision decide_tenant(const AdmissionState& state, const std::string& namespace_name, LabelSource source) {
  TenantDecision decision;
  if (!state.policy.needs_namespace_labels()) {
    decision.choice = choose_tenant(state.policy, namespace_name, nullptr);
    return decision;
  }
  NamespaceLookup lookup = source.awaited       ? *source.awaited
                           : state.namespaces ? state.namespaces->find(namespace_name)
                                              : NamespaceLookup{std::nullopt, "no namespaces to read them from"};
  decision.labels = std::move(lookup.labels);
  decision.choice = choose_tenant(state.policy, namespace_name, decision.labels ? &*decision.labels : nullptr);
  // Unknown labels matter unless a rule decided by name gives a policy that reads none (an exempt one).
  const bool mattered = decision.choice.rule == nullptr ||
                        (!decision.choice.exempt() && !decision.choice.policy->scheduling.namespace_label.empty());
  if (decision.labels || !mattered) return decision;
  if (lookup.pending && source.serving) {
    decision.awaiting = true;
    return decision;
  }
  if (lookup.pending) lookup.why_unknown = "not learnt yet";
  if (source.serving && state.policy.namespace_labels.when_unknown == UnknownLabelsAction::Deny) {
    decision.refusal = "the labels of namespace " + quoted_namespace(namespace_name) + " could not be read in time (" +
                       quoted_reason(lookup.why_unknown) +
                       "); the policy decides by them (namespaceLabels.whenUnknown: deny): retry in a few seconds";
    return decision;
  }
  decision.unknown_labels_warning =
      "namespace " + quoted_namespace(namespace_name) + ": labels unknown (" + quoted_reason(lookup.why_unknown) +
      "); decided without them: " +
      (decision.choice.rule != nullptr ? "tenant " + decision.choice.tenant() + " by name" : std::string("the global policy")) +
      ", no queue from namespace labels";
  return decision;
}

bool is_definition_kind(const GroupVersionKind& kind) {
  return (kind.group == "run.ai" && kind.version == "v1alpha1" && kind.kind == "Karta") ||
         (kind.group == "optimization.nvidia.com" && kind.version == "v1alpha1" && kind.kind == "ResourceInterface");
}

AdmissionResult AdmissionService::mutate(const AdmissionRequest& request, const AdmissionState& state, LabelSource labels) {
  // Cheap allows first: nothing to patch, decided without looking at the object.
  if (request.operation != "CREATE" && request.operation != "UPDATE") {
    return {AdmissionDecision::allow(), {}, "skipped:operation"};
  }
  if (!request.sub_resource.empty()) return {AdmissionDecision::allow(), {}, "skipped:subresource"};
  // A dry run (kubectl apply --dry-run=server) is mutated exactly as the real request: the webhooks
  // declare sideEffects: None, and the dry run must show what the real request will store.
  if (!request.object) return {AdmissionDecision::allow(), {}, "skipped:no-object"};
  if (is_definition_kind(request.kind)) return stamp_karta_labels(request);
  const auto [kind_key, definition] = state.catalog.find_entry(request.kind);
  if (definition == nullptr) return {AdmissionDecision::allow(), {}, "skipped:no-definition"};
  if (auto skipped = skip_owned(request, state)) return std::move(*skipped);
  // Exemption first: an exempt tenant gets nothing, whatever the policy would default.
  const TenantDecision tenant = decide_tenant(state, request.namespace_name, labels);
  if (auto unsettled_result = unsettled(tenant, kind_key)) return std::move(*unsettled_result);
  if (tenant.choice.exempt()) {
    AdmissionResult result = exempt_result(tenant);
    result.kind_key = kind_key;
    return result;
  }

  MutationOutcome outcome =
      mutate_workload(*request.object, *definition, *tenant.choice.policy,
                      {request.namespace_name, request.operation, request.old_object,
                       tenant.labels ? &*tenant.labels : nullptr, tenant.choice.who()});
  AdmissionResult result{AdmissionDecision::patched(std::move(outcome.patch)), std::move(outcome.notes), ""};
  result.kind_key = kind_key;
  result.decision.warnings = std::move(outcome.warnings);
  result.outcome = result.decision.patch_operations() > 0 ? "patched" : "unchanged";
  note_tenant(result, tenant);
  return result;
}

AdmissionResult AdmissionService::validate(const AdmissionRequest& request, const AdmissionState& state, LabelSource labels,
                                           std::optional<std::chrono::steady_clock::time_point> deadline) {
  if (request.operation != "CREATE" && request.operation != "UPDATE") {
    return {AdmissionDecision::allow(), {}, "skipped:operation"};
  }
  if (!request.sub_resource.empty()) return {AdmissionDecision::allow(), {}, "skipped:subresource"};
  if (!request.object) return {AdmissionDecision::allow(), {}, "skipped:no-object"};
  if (is_definition_kind(request.kind)) {
    return validate_karta(request, state, deadline.value_or(std::chrono::steady_clock::now() + kDefaultReviewBudget));
  }
  const auto [kind_key, definition] = state.catalog.find_entry(request.kind);
  if (definition == nullptr) return {AdmissionDecision::allow(), {}, "skipped:no-definition"};
  if (auto skipped = skip_owned(request, state)) return std::move(*skipped);
  const TenantDecision tenant = decide_tenant(state, request.namespace_name, labels);
  if (auto unsettled_result = unsettled(tenant, kind_key)) return std::move(*unsettled_result);
  if (tenant.choice.exempt()) {
    AdmissionResult result = exempt_result(tenant);
    result.kind_key = kind_key;
    return result;
  }
  const Policy& policy = *tenant.choice.policy;
  const LabelPolicy& label_policy = policy.label_policy;
  if (!label_policy.enabled && !policy.scheduling.queues.restricted() && !policy.priority.classes.restricted()) {
    AdmissionResult result{AdmissionDecision::allow(), {}, "skipped:no-label-policy"};
    note_tenant(result, tenant);
    return result;
  }

  DefinitionEvaluation evaluation(*definition, *request.object);
  WorkloadLayout layout = locate_pod_templates(evaluation);
  ValidationOutcome outcome = combine(
      check_scheduling_choices(evaluation, layout, policy, tenant.labels ? &*tenant.labels : nullptr, tenant.choice.who()),
      check_label_policy(*request.object, layout, label_policy, request.namespace_name));
  AdmissionResult result;
  result.kind_key = kind_key;
  result.notes = std::move(layout.notes);
  result.decision = outcome.allowed ? AdmissionDecision::allow() : AdmissionDecision::deny(outcome.message);
  result.decision.warnings = std::move(outcome.warnings);
  result.violations = std::move(outcome.violations);
  result.outcome = outcome.allowed ? (result.decision.warnings.empty() ? "allowed" : "allowed:warnings") : "denied";
  note_tenant(result, tenant);
  return result;
}

const char* endpoint_name(AdmissionEndpoint endpoint) {
  switch (endpoint) {
    case AdmissionEndpoint::Mutate:
      return "mutate";
    case AdmissionEndpoint::Validate:
      return "validate";
    case AdmissionEndpoint::ValidatePolicy:
      return "validate-policy";
  }
  return "unknown";
}

ReviewReply AdmissionService::answer(AdmissionEndpoint endpoint, std::string_view content_type, std::string_view body,
                                     const AwaitedNamespace* awaited,
                                     std::optional<std::chrono::steady_clock::time_point> deadline) const {
  auto started = awaited != nullptr ? awaited->arrived : std::chrono::steady_clock::now();
  const char* endpoint_name = karta::endpoint_name(endpoint);
  if (!json_content_type(content_type)) {
    spdlog::warn("admission endpoint={} rejected: content type {}", endpoint_name, bounded_text(content_type));
    return ReviewReply{ReviewReply::Status::UnsupportedMediaType,
                       "expected Content-Type application/json, got " + bounded_text(content_type)};
  }
  ReviewDecoding decoding = decode_admission_review(body);
  if (!decoding.review) {
    spdlog::warn("admission endpoint={} malformed review: {}", endpoint_name, bounded_text(decoding.error, 512));
    return ReviewReply{ReviewReply::Status::Malformed, "malformed AdmissionReview: " + bounded_text(decoding.error, 512)};
  }
  const AdmissionRequest& request = decoding.review->request;
  auto state = this->state();
  if (!state) return ReviewReply{ReviewReply::Status::NotReady, "definitions and policy are not loaded yet"};

  AdmissionResult result;
  try {
    const LabelSource labels{.serving = true, .awaited = awaited != nullptr ? &awaited->lookup : nullptr};
    switch (endpoint) {
      case AdmissionEndpoint::Mutate:
        result = mutate(request, *state, labels);
        break;
      case AdmissionEndpoint::Validate:
        result = validate(request, *state, labels, deadline);
        break;
      case AdmissionEndpoint::ValidatePolicy:
        result = check_policy_configmap(request);
        break;
    }
  } catch (const std::exception& e) {
    // A bug, not bad input: answer an error so the webhook's failurePolicy decides.
    spdlog::error("admission uid={} endpoint={} kind={} internal error: {}", bounded_text(request.uid), endpoint_name,
                  bounded_text(request.kind.to_string()), bounded_text(e.what(), 1024));
    metrics_.record_admission(endpoint_name, request.operation, "error", "error", 0, 0);
    return ReviewReply{ReviewReply::Status::InternalError, "internal error: " + bounded_text(e.what(), 1024)};
  }
  if (result.awaiting_namespace) return ReviewReply{ReviewReply::Status::AwaitingNamespace, request.namespace_name};
  // What the request sent (its uid, kind, names) and the notes that quote its values are cut and escaped in
  // every log line: a megabyte namespace must not make a megabyte of log per request.
  // Made only when a line is written: the arguments cost allocations even when not logged.
  std::string logged_uid, logged_kind, logged_object;
  auto logged = [&] {
    if (logged_uid.empty()) {
      logged_uid = bounded_text(request.uid);
      logged_kind = bounded_text(request.kind.to_string());
      logged_object = bounded_text(object_name(request), 256);
    }
  };
  for (const auto& note : result.notes) {
    logged();
    spdlog::warn("admission uid={} kind={} {} tenant=\"{}\": {}", logged_uid, logged_kind, logged_object,
                 bounded_text(result.tenant.tenant(), 80), bounded_text(note, 1024));
  }
  ReviewReply reply;
  reply.body = encode_admission_review(result.decision, request.uid, request.review_api_version);
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
  static const std::string kUnregistered = "unregistered";
  const std::string* registered = result.kind_key != nullptr ? result.kind_key : state->catalog.find_key(request.kind);
  const std::string& kind_label = registered != nullptr ? *registered : kUnregistered;
  std::string result_label = result.outcome.substr(0, result.outcome.find(':'));
  // The tenant by the policy's own rule name: its values are bounded by the policy, not by the requests.
  const std::string tenant = result.tenant.tenant();
  metrics_.record_admission(endpoint_name, request.operation, kind_label, result_label,
                            result.decision.patch_operations(), static_cast<double>(micros.count()) / 1e6, tenant);
  if (result.namespace_labels_unknown) metrics_.record_namespace_labels_unknown(endpoint_name);
  if (result.definition_faults_admitted > 0) {
    metrics_.record_definition_faults_admitted(result.defined_kind, result.definition_faults_admitted);
  }
  if (spdlog::should_log(spdlog::level::info)) {
    logged();
    spdlog::info("admission uid={} endpoint={} kind={} object={} operation={} tenant=\"{}\" outcome={} patch_ops={} "
                 "duration_us={}",
                 logged_uid, endpoint_name, logged_kind, logged_object, bounded_text(request.operation),
                 bounded_text(tenant, 80), result.outcome, result.decision.patch_operations(),
                 micros.count());
  }
  return reply;
}

}  // namespace karta
