#pragma once

// The admission.k8s.io/v1 AdmissionReview protocol: bytes to a request, a decision to bytes. This is the
// one place that builds response JSON.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "json/documents.h"
#include "json/json_document.h"
#include "k8s/group_version_kind.h"
#include "mutate/json_patch.h"

namespace karta {

using json = nlohmann::json;

// Bodies nested deeper than this are refused by the parser: no Kubernetes object comes close, and
// recursive code later must not meet a 200,000-deep array.
constexpr int kMaxReviewDepth = 1000;

// The accepted review apiVersion, echoed in the response.
inline constexpr std::string_view kReviewApiVersion = "admission.k8s.io/v1";

// uid and username are views into `document`, the parsed body the request holds (a copy of the request
// holds it too); an offline request points them at literals. The heap copies they replaced were three of
// an admission's fourteen allocations.
struct AdmissionRequest {
  std::string_view uid;
  std::string_view review_api_version = kReviewApiVersion;  // echoed in the response: the only one accepted
  GroupVersionKind kind;           // request.kind: the object's kind
  std::string resource;            // request.resource.resource ("jobsets")
  std::string sub_resource;        // "status", "scale", or empty
  std::string operation;           // CREATE, UPDATE, DELETE, CONNECT
  std::string namespace_name;
  std::string name;
  bool dry_run = false;
  std::string_view username;  // a view into `document`, as uid
  std::optional<JsonElement> object;      // nullopt when absent or JSON null (DELETE)
  std::optional<JsonElement> old_object;  // likewise
  std::shared_ptr<const JsonDocument> document;  // what object and old_object point into
};

// A decoded review: its request, which owns the parsed document.
struct AdmissionReview {
  AdmissionRequest request;
};

struct ReviewDecoding {
  std::optional<AdmissionReview> review;  // set on success
  std::string error;                      // what is malformed and where, otherwise
};

// Parses and checks the envelope: apiVersion, kind, request.uid, request.kind, request.operation and the
// types of the fields read. The object itself may have any shape (mutation copes, never denies).
ReviewDecoding decode_admission_review(std::string_view body);

// What the webhook decided, before it is put in a review.
struct AdmissionDecision {
  bool allowed = true;
  int code = 200;
  std::string reason;   // metav1.StatusReason for denials ("Forbidden", "Invalid")
  std::string message;  // why
  JsonPatch patch;      // no operations when there is nothing to change
  std::vector<std::string> warnings;

  static AdmissionDecision allow(std::string message = "");
  static AdmissionDecision patched(JsonPatch patch);
  static AdmissionDecision deny(std::string message);     // 403 Forbidden: policy says no
  static AdmissionDecision invalid(std::string message);  // 422 Invalid: the object is wrong
  // 503 ServiceUnavailable: not decided, for now (what it needed could not be had in time); retry.
  static AdmissionDecision unavailable(std::string message);
  static AdmissionDecision errored(int code, std::string message);

  std::size_t patch_operations() const { return patch.operations; }
};

// The AdmissionReview answering a request: same apiVersion and kind, the request's uid, the patch
// base64-encoded with patchType JSONPatch. What it carries of others' text is bounded here, in the one
// place that writes answers: each warning is cut under the API server's 256 characters (it truncates
// longer ones, and cuts every one once a response's warnings pass 4096), at most kMaxWarnings of them
// (the last saying how many more there were), and the message at kMaxMessageBytes.
constexpr std::size_t kMaxWarnings = 16;
constexpr std::size_t kMaxWarningBytes = 240;
constexpr std::size_t kMaxMessageBytes = 8 * 1024;
std::string encode_admission_review(const AdmissionDecision& decision, std::string_view uid,
                                    std::string_view review_api_version = kReviewApiVersion);

}  // namespace karta

namespace karta {

// The request the API server would send for creating `object` (offline commands use it so they take
// the same code path as the server). Holds its own read-only copy of `object`.
AdmissionRequest request_for_object(const json& object, const std::string& operation = "CREATE");

}  // namespace karta
