#include <doctest/doctest.h>

#include "admission/admission_service.h"
#include "runtime/admission_http.h"
#include "support/test_support.h"

using karta::AdmissionEndpoint;
using karta::HttpRequest;
using karta::ReviewReply;
namespace test = karta::test;

// admission/ knows the AdmissionReview protocol and no HTTP; runtime/admission_http maps its replies.

TEST_CASE("each ReviewReply becomes its HTTP status: a review as JSON, a refused envelope as one line of text") {
  struct Case {
    ReviewReply::Status status;
    int http_status;
    const char* content_type;
    const char* body;
  };
  const Case cases[] = {
      {ReviewReply::Status::Answered, 200, "application/json", R"({"kind":"AdmissionReview"})"},
      {ReviewReply::Status::UnsupportedMediaType, 415, "text/plain; charset=utf-8", "not JSON\n"},
      {ReviewReply::Status::Malformed, 400, "text/plain; charset=utf-8", "malformed AdmissionReview: x\n"},
      {ReviewReply::Status::NotReady, 503, "text/plain; charset=utf-8", "not loaded\n"},
      {ReviewReply::Status::InternalError, 500, "text/plain; charset=utf-8", "internal error: y\n"},
  };
  const char* reasons[] = {R"({"kind":"AdmissionReview"})", "not JSON", "malformed AdmissionReview: x", "not loaded",
                           "internal error: y"};
  for (std::size_t i = 0; i < std::size(cases); ++i) {
    CAPTURE(i);
    karta::HttpResponse response = karta::to_http_response(ReviewReply{cases[i].status, reasons[i]});
    CHECK(response.status == cases[i].http_status);
    CHECK(response.content_type == cases[i].content_type);
    CHECK(response.body == cases[i].body);
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
