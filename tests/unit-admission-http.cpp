#include <doctest/doctest.h>

#include "admission/admission_service.h"
#include "runtime/admission_http.h"
#include "support/test_support.h"

namespace unit_admission_http {  // this file's names, apart from other tests' in a unity build

using karta::AdmissionEndpoint;
using karta::HttpRequest;
using karta::ReviewReply;
namespace test = karta::test;

// admission/ knows the AdmissionReview protocol and no HTTP; runtime/admission_http maps its replies.

TEST_CASE("each ReviewReply becomes its HTTP status: a review as JSON, a refused envelope as one line of text") {
  struct Case {
    ReviewReply::Status status;
    const char* reason;
    int http_status;
    const char* content_type;
    const char* body;
  };
  const Case cases[] = {
      {ReviewReply::Status::Answered, R"({"kind":"AdmissionReview"})", 200, "application/json",
       R"({"kind":"AdmissionReview"})"},
      {ReviewReply::Status::UnsupportedMediaType, "not JSON", 415, "text/plain; charset=utf-8", "not JSON\n"},
      {ReviewReply::Status::Malformed, "malformed AdmissionReview: x", 400, "text/plain; charset=utf-8",
       "malformed AdmissionReview: x\n"},
      {ReviewReply::Status::NotReady, "not loaded", 503, "text/plain; charset=utf-8", "not loaded\n"},
      {ReviewReply::Status::InternalError, "internal error: y", 500, "text/plain; charset=utf-8",
       "internal error: y\n"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.reason);
    karta::HttpResponse response = karta::to_http_response(ReviewReply{c.status, c.reason});
    CHECK(response.status == c.http_status);
    CHECK(response.content_type == c.content_type);
    CHECK(response.body == c.body);
    CHECK(response.headers.empty());
  }
}

TEST_CASE("the service's reply and the HTTP adapter's answer agree on a refused content type and a missing state") {
  karta::AdmissionService empty;
  std::string review =
      test::admission_review(test::yaml("{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}")).dump();
  ReviewReply reply = empty.answer(AdmissionEndpoint::Mutate, "application/json", review);
  CHECK(reply.status == ReviewReply::Status::NotReady);
  CHECK(reply.body == "definitions and policy are not loaded yet");
  reply = empty.answer(AdmissionEndpoint::Validate, "text/yaml", review);
  CHECK(reply.status == ReviewReply::Status::UnsupportedMediaType);
  CHECK(reply.body == "expected Content-Type application/json, got text/yaml");
  karta::HttpResponse response = karta::handle_admission(empty, AdmissionEndpoint::Validate,
                                                         HttpRequest{"POST", "/validate", "", "text/yaml", review});
  CHECK(response.status == 415);
  CHECK(response.body == "expected Content-Type application/json, got text/yaml\n");
}

TEST_CASE("the API server's ?timeout= sets what a review may wait on the API server: a second less, at most 3 s") {
  using namespace std::chrono_literals;
  CHECK(karta::review_budget("timeout=5s") == 3000ms);
  CHECK(karta::review_budget("timeout=10s") == 3000ms);
  CHECK(karta::review_budget("timeout=3s") == 2000ms);
  CHECK(karta::review_budget("timeout=2s") == 1000ms);
  CHECK(karta::review_budget("timeout=1s") == 500ms);
  CHECK(karta::review_budget("dryRun=All&timeout=1.5s") == 750ms);
  CHECK(karta::review_budget("timeout=1m0s") == 3000ms);
  CHECK(karta::review_budget("timeout=800ms") == 400ms);
  for (const char* query : {"", "timeout=", "timeout=5", "timeout=-5s", "timeout=0s", "timeout=5x", "timeout=s", "dryRun=All"}) {
    CAPTURE(query);
    CHECK(karta::review_budget(query) == 3000ms);
  }
  CHECK(karta::parse_go_duration("1h2m3.5s") == std::chrono::milliseconds(3'723'500));
  CHECK(karta::parse_go_duration("1500us") == 1ms);
  CHECK(karta::parse_go_duration("2\xc2\xb5s") == 0ms);
}

}  // namespace unit_admission_http
