// Hostile input end to end over HTTPS: each case is answered (or refused) promptly and the webhook
// keeps serving everyone else.

#include <doctest/doctest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <optional>
#include <thread>

#include "support/running_webhook.h"

namespace e2e_hostile_input {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;
using namespace std::chrono_literals;

namespace {

json demo() { return test::document(test::source_dir() / "examples/jobset-demo.yaml"); }

std::string review_with(const std::function<void(json&)>& change) {
  json review = test::admission_review(demo(), "CREATE", "h-1");
  change(review);
  return review.dump();
}

}  // namespace

TEST_CASE("malformed bodies get a 400 with the reason and the connection keeps serving") {
  test::RunningWebhook running;
  test::HttpsClient client(running.port, running.certificates.ca);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "malformed AdmissionReview: empty body: expected an admission.k8s.io/v1 AdmissionReview\n"},
      {"not json at all", ""},
      {review_with([](json&) {}).substr(0, 300), ""},  // truncated
      {review_with([](json& r) { r["request"]["object"] = "a string"; }),
       "malformed AdmissionReview: request.object: must be an object, not string\n"},
      {review_with([](json& r) { r["request"].erase("uid"); }), "malformed AdmissionReview: request.uid: is required\n"},
      {review_with([](json& r) { r["request"]["kind"] = json::array(); }),
       "malformed AdmissionReview: request.kind: must be an object, not array\n"},
      {review_with([](json& r) { r["request"]["namespace"] = 7; }),
       "malformed AdmissionReview: request.namespace: must be a string, not number\n"},
      {std::string(200000, '[') + std::string(200000, ']'),
       "malformed AdmissionReview: body nested deeper than 1000 levels\n"},
      {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"\xc3\x28\"}}",
       "malformed AdmissionReview: body is not JSON: not valid UTF-8\n"},
      {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":1e400}}",
       "malformed AdmissionReview: body is not JSON: a number is malformed or out of range\n"},
  };
  for (const auto& [body, expected] : cases) {
    CAPTURE(body.substr(0, 80));
    auto reply = client.request("POST", "/mutate", body);
    CHECK(reply.status == 400);
    if (!expected.empty()) CHECK(reply.body == expected);
    CHECK(reply.body.rfind("malformed AdmissionReview: ", 0) == 0);
  }
  CHECK(client.request("GET", "/mutate").status == 405);
  CHECK(client.request("GET", "/healthz").status == 200);
}

TEST_CASE("a 200,000-character label value in a custom resource's pod template is denied, not a crash") {
  // The API server does not length-check labels nested in a custom resource: std::regex searching this
  // value overflowed the stack and took the process down, replica after replica.
  test::RunningWebhook running({}, "labelPolicy:\n"
                                   "  mode: enforce\n"
                                   "  podTemplates:\n"
                                   "    allowed: {team: \"^[a-z0-9-]+$\"}\n");
  test::HttpsClient client(running.port, running.certificates.ca);
  const std::string body = review_with([](json& r) {
    r["request"]["object"]["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["metadata"]["labels"]["team"] =
        std::string(200000, 'a');
  });
  REQUIRE(body.size() > 200000);

  // The mutating webhook does not enforce the label policy: it admits, with nothing to patch here.
  auto mutated = client.request("POST", "/mutate", body);
  REQUIRE(mutated.status == 200);
  json mutate_review = json::parse(mutated.body);
  CHECK(mutate_review["response"] == json::parse(R"({"uid":"h-1","allowed":true,"status":{"code":200}})"));

  auto validated = client.request("POST", "/validate", body);
  REQUIRE(validated.status == 200);
  json review = json::parse(validated.body);
  CHECK(review["apiVersion"] == "admission.k8s.io/v1");
  CHECK(review["kind"] == "AdmissionReview");
  CHECK(review["response"] == json{{"uid", "h-1"}, {"allowed", false},
                                   {"status", {{"code", 403}, {"reason", "Forbidden"},
                                               {"message", "label policy: worker pod template: label \"team\" value is "
                                                           "200000 characters; at most 63 are allowed"}}}});
  CHECK(client.request("GET", "/healthz").status == 200);
  test::HttpsClient another(running.port, running.certificates.ca);
  CHECK(another.request("GET", "/healthz").status == 200);
}

TEST_CASE("wrong types inside the object are admitted unpatched in those places, never denied") {
  test::RunningWebhook running;
  test::HttpsClient client(running.port, running.certificates.ca);
  auto body = review_with([](json& r) {
    r["request"]["object"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["labels"] =
        json::array({"a", "b"});
    r["request"]["object"]["spec"]["replicatedJobs"][1]["template"] = "not a template";
  });
  auto reply = client.request("POST", "/mutate", body);
  REQUIRE(reply.status == 200);
  json review = json::parse(reply.body);
  CHECK(review["response"]["allowed"] == true);
  // Only the leader's annotations could be written.
  CHECK(test::decoded_patch(review) == json::parse(R"([{"op":"add",
      "path":"/spec/replicatedJobs/0/template/spec/template/metadata/annotations",
      "value":{"platform.example.com/owner":"platform"}}])"));
}

TEST_CASE("a legitimate 2.5 MB review is patched in well under a second") {
  test::RunningWebhook running;
  test::HttpsClient client(running.port, running.certificates.ca);
  json object = demo();
  json& env = object["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]["containers"][0]["env"];
  env = json::array();
  for (int i = 0; i < 20000; ++i) {
    env.push_back({{"name", "VARIABLE_" + std::to_string(i)}, {"value", std::string(100, 'v')}});
  }
  std::string body = test::admission_review(object).dump();
  REQUIRE(body.size() > 2'500'000);
  auto started = std::chrono::steady_clock::now();
  auto reply = client.request("POST", "/mutate", body);
  auto elapsed = std::chrono::steady_clock::now() - started;
  REQUIRE(reply.status == 200);
  CHECK(test::decoded_patch(json::parse(reply.body)).size() == 2);
  MESSAGE("2.5 MB review answered in " << std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count() << " ms");
  CHECK(elapsed < 1s * test::kSlowdown);
}

TEST_CASE("hundreds of idle connections held open do not stop others being served within a second") {
  test::RunningWebhook running;
  namespace net = boost::asio;
  net::io_context io;
  std::vector<std::unique_ptr<net::ip::tcp::socket>> idle;
  for (int i = 0; i < 300; ++i) {  // TCP connected, never a TLS byte: a slowloris
    auto socket = std::make_unique<net::ip::tcp::socket>(io);
    socket->connect({net::ip::make_address("127.0.0.1"), running.port});
    idle.push_back(std::move(socket));
  }
  std::vector<std::unique_ptr<test::HttpsClient>> quiet;
  for (int i = 0; i < 50; ++i) {  // TLS done, never a request
    quiet.push_back(std::make_unique<test::HttpsClient>(running.port, running.certificates.ca));
  }
  auto started = std::chrono::steady_clock::now();
  test::HttpsClient client(running.port, running.certificates.ca);
  auto reply = client.request("POST", "/mutate", test::admission_review(demo()).dump());
  auto elapsed = std::chrono::steady_clock::now() - started;
  CHECK(reply.status == 200);
  CHECK(elapsed < 1s * test::kSlowdown);
}

TEST_CASE("silent connections are closed at their deadlines; a connection in use is not") {
  test::RunningWebhook running([](karta::WebhookConfig& config) {
    config.server.handshake_timeout = 300ms;
    config.server.read_timeout = 400ms;
  });
  namespace net = boost::asio;

  SUBCASE("TCP connected, never a TLS byte: closed after the handshake deadline") {
    net::io_context io;
    net::ip::tcp::socket socket(io);
    socket.connect({net::ip::make_address("127.0.0.1"), running.port});
    auto started = std::chrono::steady_clock::now();
    char byte = 0;
    std::optional<boost::system::error_code> result;
    socket.async_read_some(net::buffer(&byte, 1), [&](boost::system::error_code ec, std::size_t) { result = ec; });
    io.run_for(5s * test::kSlowdown);
    auto elapsed = std::chrono::steady_clock::now() - started;
    REQUIRE(result.has_value());
    CHECK(*result == net::error::eof);
    CHECK(elapsed >= 250ms);
    CHECK(elapsed < 3s * test::kSlowdown);
  }

  SUBCASE("idle after a response: the keep-alive connection is closed after the read deadline") {
    test::HttpsClient client(running.port, running.certificates.ca);
    CHECK(client.request("GET", "/healthz").status == 200);
    std::this_thread::sleep_for(900ms);
    CHECK_THROWS(client.request("GET", "/healthz"));
  }

  SUBCASE("a request that never completes is cut off at the read deadline, however slowly it trickles in") {
    test::HttpsClient client(running.port, running.certificates.ca);
    client.send_partial("POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n");
    for (int i = 0; i < 6; ++i) {  // a byte every 150 ms: 900 ms in all, past the 400 ms deadline
      std::this_thread::sleep_for(150ms);
      try {
        client.send_partial("{");
      } catch (const std::exception&) {
        break;
      }
    }
    CHECK_THROWS(client.send_raw(std::string(94, ' ')));
  }

  SUBCASE("requests spaced under the deadline keep one connection open past it") {
    test::HttpsClient client(running.port, running.certificates.ca);
    for (int i = 0; i < 8; ++i) {  // 8 x 150 ms = 1.2 s, three times the deadline
      CHECK(client.request("GET", "/healthz").status == 200);
      std::this_thread::sleep_for(150ms);
    }
    CHECK(client.connected());
  }
}

TEST_CASE("responses carry exact HTTP framing for HTTP/1.1, HTTP/1.0 and HEAD") {
  test::RunningWebhook running;
  test::HttpsClient client(running.port, running.certificates.ca);
  auto reply = client.send_raw("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  CHECK(reply.status == 200);
  CHECK(reply.body == "ok\n");
  CHECK(reply.header_connection == "close");

  test::HttpsClient old(running.port, running.certificates.ca);
  reply = old.send_raw("GET /healthz HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n\r\n");
  CHECK(reply.status == 200);
  CHECK(reply.header_connection == "keep-alive");
  reply = old.send_raw("HEAD /healthz HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n\r\n", /*head_request=*/true);
  CHECK(reply.status == 405);
  CHECK(reply.body.empty());  // HEAD: headers only
  CHECK(old.request("GET", "/healthz").status == 200);  // and the connection is still in step
}

TEST_CASE("pipelined requests written at once are answered in order on one connection") {
  test::RunningWebhook running;
  test::HttpsClient client(running.port, running.certificates.ca);
  json demo = test::document(test::source_dir() / "examples/jobset-demo.yaml");
  std::string review = test::admission_review(demo).dump();
  client.send_partial("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                      "POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                      std::to_string(review.size()) + "\r\n\r\n" + review +
                      "GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n"
                      "GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  auto healthz = client.receive();
  CHECK(healthz.status == 200);
  CHECK(healthz.body == "ok\n");
  auto mutate = client.receive();
  REQUIRE(mutate.status == 200);
  json response = json::parse(mutate.body);
  CHECK(response["response"]["uid"] == test::admission_review(demo)["request"]["uid"]);
  CHECK(response["response"]["allowed"] == true);
  CHECK(response["response"]["patchType"] == "JSONPatch");
  CHECK(client.receive().status == 404);
  auto ready = client.receive();
  CHECK(ready.status == 200);
  CHECK(ready.header_connection == "close");
}

}  // namespace e2e_hostile_input
