// Fuzz target: the whole path of an admission request without a socket. The input is an HTTP body.
//
// 1. AdmissionService::handle for /mutate and /validate, as the server calls it, with the built-in
//    catalog and two policies (examples/policy.yaml, and one with every injection and overwrite: true).
//    A 500 is a finding: handle answers 500 only when mutate/validate threw, which its comment calls a
//    bug, not bad input.
// 2. decode_admission_review, then AdmissionService::mutate/validate called directly (exceptions escape
//    and crash: a finding), and encode_admission_review. Oracles:
//    - a well-formed review's response is JSON with the same uid, and a patch is base64 of a JSON array;
//    - a malformed review has an error message;
//    - the patch applies to the object (nlohmann's RFC 6902 implementation);
//    - the patched object, mutated again, gives no patch (README: idempotent, reinvocationPolicy
//      IfNeeded).

#include <cstdint>
#include <string>
#include <string_view>

#include "admission/admission_review.h"
#include "admission/admission_service.h"
#include "fuzz/fuzz_support.h"
#include "runtime/admission_http.h"

namespace {

using karta::AdmissionService;
using karta::json;
using karta::fuzz::finding;

struct Fixture {
  std::shared_ptr<const karta::AdmissionState> example, everything;
  AdmissionService example_service, everything_service;
  Fixture() {
    karta::fuzz::quiet_logs();
    example = karta::fuzz::make_state(karta::fuzz::kExamplePolicy, "example-policy");
    everything = karta::fuzz::make_state(karta::fuzz::kEverythingPolicy, "everything-policy");
    example_service.update(example);
    everything_service.update(everything);
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

std::string base64_decode(const std::string& text) {
  static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    auto pos = alphabet.find(c);
    if (pos == std::string::npos) finding("patch is not base64: " + text.substr(0, 200));
    buffer = (buffer << 6) | static_cast<unsigned>(pos);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xff));
    }
  }
  return out;
}

void check_response(const std::string& body, std::string_view uid, const json& patch) {
  json response = json::parse(body, nullptr, false);
  if (response.is_discarded() || !response.is_object()) finding("response is not a JSON object: " + body.substr(0, 300));
  if (response.value("kind", "") != "AdmissionReview") finding("response kind is not AdmissionReview");
  const json& r = response["response"];
  if (!r.is_object() || r.value("uid", "") != uid) finding("response does not echo the uid " + std::string(uid));
  if (patch.is_array() && !patch.empty()) {
    if (r.value("patchType", "") != "JSONPatch") finding("a patch without patchType JSONPatch");
    json decoded = json::parse(base64_decode(r.value("patch", "")), nullptr, false);
    if (decoded != patch) finding("the encoded patch does not decode to the decided patch");
  } else if (r.contains("patch")) {
    finding("a response carries a patch when none was decided");
  }
}

void check_http(const karta::HttpResponse& response, const char* which) {
  if (response.status == 500) finding(std::string(which) + " answered 500: " + response.body);
  if (response.status != 200 && response.status != 400) {
    finding(std::string(which) + " answered " + std::to_string(response.status) + ": " + response.body);
  }
}

void mutate_and_check(const karta::AdmissionRequest& request, const karta::AdmissionState& state, const char* policy) {
  auto result = AdmissionService::mutate(request, state);
  std::string body = karta::encode_admission_review(result.decision, request.uid, request.review_api_version);
  check_response(body, request.uid, result.decision.patch.value());
  if (result.decision.patch_operations() == 0) return;

  json patched;
  try {
    patched = karta::to_json(*request.object).patch(result.decision.patch.value());
  } catch (const json::exception& e) {
    finding(std::string(policy) + ": the patch does not apply to the object: " + e.what() +
            "\npatch: " + result.decision.patch.text.substr(0, 2000));
  }
  karta::AdmissionRequest again = request;
  again.document = std::make_shared<const karta::JsonDocument>(karta::JsonDocument::from(patched));
  again.object = again.document->root();
  auto second = AdmissionService::mutate(again, state);
  if (second.decision.patch_operations() != 0) {
    finding(std::string(policy) + ": not idempotent: the patched object gets another patch: " +
            second.decision.patch.text.substr(0, 2000) + "\nfirst patch: " + result.decision.patch.text.substr(0, 2000));
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fixture();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Fixture& f = fixture();
  std::string body(reinterpret_cast<const char*>(data), size);

  // As the server calls it.
  karta::HttpRequest http{"POST", "/mutate", "timeout=10s", "application/json", body};
  check_http(karta::handle_admission(f.example_service, karta::AdmissionEndpoint::Mutate, http), "/mutate");
  http.path = "/validate";
  check_http(karta::handle_admission(f.example_service, karta::AdmissionEndpoint::Validate, http), "/validate");
  check_http(karta::handle_admission(f.everything_service, karta::AdmissionEndpoint::Validate, http),
             "/validate (audit)");

  // The same pieces, called directly, with oracles.
  karta::ReviewDecoding decoding = karta::decode_admission_review(body);
  if (!decoding.review) {
    if (decoding.error.empty()) finding("a refused review without a reason");
    return 0;
  }
  const karta::AdmissionRequest& request = decoding.review->request;
  if (request.uid.empty()) finding("a decoded review with an empty uid");
  mutate_and_check(request, *f.example, "example policy");
  mutate_and_check(request, *f.everything, "everything policy");
  auto validated = AdmissionService::validate(request, *f.example);
  check_response(karta::encode_admission_review(validated.decision, request.uid, request.review_api_version),
                 request.uid, validated.decision.patch.value());
  return 0;
}
