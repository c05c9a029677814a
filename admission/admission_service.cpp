#include "admission/admission_service.h"

#include <chrono>

#include <spdlog/spdlog.h>

#include "definitions/pod_template_locator.h"
#include "mutate/mutation.h"
#include "validate/label_policy.h"

namespace karta {
namespace {

HttpResponse plain(int status, std::string text) {
  HttpResponse response;
  response.status = status;
  response.content_type = "text/plain; charset=utf-8";
  response.body = std::move(text) + "\n";
  return response;
}

bool json_content_type(const std::string& content_type) {
  if (content_type.empty()) return true;
  return content_type.rfind("application/json", 0) == 0;
}

std::string object_name(const AdmissionRequest& r) {
  std::string name = r.name;
  if (name.empty() && r.object != nullptr) {
    const json& metadata = r.object->value("metadata", json::object());
    if (metadata.is_object()) {
      if (auto it = metadata.find("name"); it != metadata.end() && it->is_string()) name = it->get<std::string>();
      else if (auto g = metadata.find("generateName"); g != metadata.end() && g->is_string()) name = g->get<std::string>() + "*";
    }
  }
  return r.namespace_name.empty() ? name : r.namespace_name + "/" + name;
}

}  // namespace

AdmissionResult AdmissionService::mutate(const AdmissionRequest& request, const AdmissionState& state) {
  // Cheap allows first: nothing to patch, decided without looking at the object.
  if (request.operation != "CREATE" && request.operation != "UPDATE") {
    return {AdmissionDecision::allow(), {}, "skipped:operation"};
  }
  if (!request.sub_resource.empty()) return {AdmissionDecision::allow(), {}, "skipped:subresource"};
  if (request.dry_run) return {AdmissionDecision::allow(), {}, "skipped:dry-run"};
  if (request.object == nullptr) return {AdmissionDecision::allow(), {}, "skipped:no-object"};
  const CompiledDefinition* definition = state.catalog.find(request.kind);
  if (definition == nullptr) return {AdmissionDecision::allow(), {}, "skipped:no-definition"};

  MutationOutcome outcome =
      mutate_workload(*request.object, *definition, state.policy, {request.namespace_name, request.operation});
  AdmissionResult result{AdmissionDecision::patched(std::move(outcome.patch)), std::move(outcome.notes), ""};
  result.decision.warnings = std::move(outcome.warnings);
  result.outcome = result.decision.patch_operations() > 0 ? "patched" : "unchanged";
  return result;
}

AdmissionResult AdmissionService::validate(const AdmissionRequest& request, const AdmissionState& state) {
  if (request.operation != "CREATE" && request.operation != "UPDATE") {
    return {AdmissionDecision::allow(), {}, "skipped:operation"};
  }
  if (!request.sub_resource.empty()) return {AdmissionDecision::allow(), {}, "skipped:subresource"};
  if (request.object == nullptr) return {AdmissionDecision::allow(), {}, "skipped:no-object"};
  const CompiledDefinition* definition = state.catalog.find(request.kind);
  if (definition == nullptr) return {AdmissionDecision::allow(), {}, "skipped:no-definition"};
  if (!state.policy.label_policy.enabled) return {AdmissionDecision::allow(), {}, "skipped:no-label-policy"};

  DefinitionEvaluation evaluation(*definition, *request.object);
  WorkloadLayout layout = locate_pod_templates(evaluation);
  ValidationOutcome outcome =
      check_label_policy(*request.object, layout, state.policy.label_policy, request.namespace_name);
  AdmissionResult result;
  result.notes = std::move(layout.notes);
  result.decision = outcome.allowed ? AdmissionDecision::allow() : AdmissionDecision::deny(outcome.message);
  result.decision.warnings = std::move(outcome.warnings);
  result.outcome = outcome.allowed ? (result.decision.warnings.empty() ? "allowed" : "allowed:warnings") : "denied";
  return result;
}

HttpResponse AdmissionService::handle(AdmissionEndpoint endpoint, const HttpRequest& http) const {
  auto started = std::chrono::steady_clock::now();
  const char* endpoint_name = endpoint == AdmissionEndpoint::Mutate ? "mutate" : "validate";
  if (!json_content_type(http.content_type)) {
    spdlog::warn("admission endpoint={} rejected: content type {}", endpoint_name, http.content_type);
    return plain(415, "expected Content-Type application/json, got " + http.content_type);
  }
  ReviewDecoding decoding = decode_admission_review(http.body);
  if (!decoding.review) {
    spdlog::warn("admission endpoint={} malformed review: {}", endpoint_name, decoding.error);
    return plain(400, "malformed AdmissionReview: " + decoding.error);
  }
  const AdmissionRequest& request = decoding.review->request;
  auto state = state_.load();
  if (!state) return plain(503, "definitions and policy are not loaded yet");

  AdmissionResult result;
  try {
    result = endpoint == AdmissionEndpoint::Mutate ? mutate(request, *state) : validate(request, *state);
  } catch (const std::exception& e) {
    // A bug, not bad input: answer an error so the webhook's failurePolicy decides.
    spdlog::error("admission uid={} endpoint={} kind={} internal error: {}", request.uid, endpoint_name,
                  request.kind.to_string(), e.what());
    metrics_.record_admission(endpoint_name, request.operation, "error", "error", 0, 0);
    return plain(500, std::string("internal error: ") + e.what());
  }
  for (const auto& note : result.notes) {
    spdlog::warn("admission uid={} kind={} {}: {}", request.uid, request.kind.to_string(), object_name(request), note);
  }
  HttpResponse response;
  response.body = encode_admission_review(result.decision, request.uid, request.review_api_version);
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
  std::string kind_label = state->catalog.find(request.kind) != nullptr
                               ? request.kind.group + "/" + request.kind.version + "/" + request.kind.kind
                               : "unregistered";
  std::string result_label = result.outcome.substr(0, result.outcome.find(':'));
  metrics_.record_admission(endpoint_name, request.operation, kind_label, result_label,
                            result.decision.patch_operations(), static_cast<double>(micros.count()) / 1e6);
  spdlog::info("admission uid={} endpoint={} kind={} object={} operation={} outcome={} patch_ops={} duration_us={}",
               request.uid, endpoint_name, request.kind.to_string(), object_name(request), request.operation,
               result.outcome, result.decision.patch_operations(), micros.count());
  return response;
}

}  // namespace karta
