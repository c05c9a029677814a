// End to end over real HTTPS: the webhook runs in-process on an ephemeral port with certificates made
// for the test, and a verifying TLS client talks to it as the API server would.

#include <doctest/doctest.h>

#include "support/running_webhook.h"

namespace e2e_webhook {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

namespace {

using test::RunningWebhook;

json demo() { return test::document(test::source_dir() / "examples/jobset-demo.yaml"); }

}  // namespace

TEST_CASE("the demo JobSet posted over HTTPS to /mutate?timeout=10s comes back with a patch kubectl applies") {
  RunningWebhook running;
  test::HttpsClient client(running.port, running.certificates.ca);
  json object = demo();
  auto reply = client.request("POST", "/mutate?timeout=10s", test::admission_review(object, "CREATE", "e2e-1").dump());
  REQUIRE(reply.status == 200);
  json review = json::parse(reply.body);
  CHECK(review["response"]["uid"] == "e2e-1");
  CHECK(review["response"]["allowed"] == true);
  json patch = test::decoded_patch(review);
  CHECK(patch == json::parse(R"([
    {"op":"add","path":"/spec/replicatedJobs/0/template/spec/template/metadata/annotations",
     "value":{"platform.example.com/owner":"platform"}},
    {"op":"add","path":"/spec/replicatedJobs/1/template/spec/template/metadata",
     "value":{"labels":{"platform.example.com/managed":"true"},"annotations":{"platform.example.com/owner":"platform"}}}
  ])"));
  json patched = test::kubectl_apply(object, patch);
  CHECK(patched["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["labels"] ==
        json{{"platform.example.com/managed", "user-set"}});

  // Same keep-alive connection: the patched object gets no patch.
  reply = client.request("POST", "/mutate", test::admission_review(patched, "UPDATE", "e2e-2").dump());
  REQUIRE(reply.status == 200);
  CHECK(json::parse(reply.body) == json::parse(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",
      "response":{"uid":"e2e-2","allowed":true,"status":{"code":200}}})"));
}

TEST_CASE("health, readiness, routing and HTTP errors over HTTPS") {
  RunningWebhook running;
  test::HttpsClient client(running.port, running.certificates.ca);
  CHECK(client.request("GET", "/healthz").body == "ok\n");
  CHECK(client.request("GET", "/readyz").status == 200);
  auto reply = client.request("GET", "/mutate");
  CHECK(reply.status == 405);
  CHECK(reply.body == "GET is not allowed on /mutate; use POST\n");
  CHECK(client.request("POST", "/nowhere", "{}").status == 404);
  reply = client.request("POST", "/mutate", "{\"apiVersion\":");
  CHECK(reply.status == 400);
  CHECK(reply.body.rfind("malformed AdmissionReview: body is not JSON", 0) == 0);
  // The connection survives a 400 and serves the next request.
  CHECK(client.request("GET", "/healthz").status == 200);
}

TEST_CASE("a body over 7 MiB is refused with 413 and the connection closed") {
  RunningWebhook running;
  test::HttpsClient client(running.port, running.certificates.ca);
  // The server answers as soon as the header announces too much, before the body is sent.
  auto reply = client.send_raw("POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                               "Content-Length: 7340033\r\n\r\n{");
  CHECK(reply.status == 413);
  CHECK(reply.body == "request body exceeds 7340032 bytes\n");
  CHECK(reply.header_connection == "close");
}

}  // namespace e2e_webhook
