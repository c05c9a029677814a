// HTTP/1.1 protocol behaviour over real HTTPS: `Expect: 100-continue` (curl sends it with bodies over
// 1 MB), chunked bodies and the fields the server reads (server/request_parser.h), and `Connection: close`
// on every response once shutdown began.

#include <doctest/doctest.h>

#include <csignal>
#include <sstream>
#include <string_view>

#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/system/system_error.hpp>

#include "support/running_webhook.h"

namespace e2e_http_protocol {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;
using namespace std::chrono_literals;

namespace {

const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

json demo() { return test::document(test::source_dir() / "examples/jobset-demo.yaml"); }

// An AdmissionReview of 2.5 MB: curl would announce it with `Expect: 100-continue`.
std::string big_review() {
  json object = demo();
  json& env = object["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]["containers"][0]["env"];
  env = json::array();
  for (int i = 0; i < 20000; ++i) env.push_back({{"name", "VARIABLE_" + std::to_string(i)}, {"value", std::string(100, 'v')}});
  std::string body = test::admission_review(object).dump();
  REQUIRE(body.size() > 2'500'000);
  return body;
}

std::string head(const std::string& request_line, const std::string& expect, std::size_t content_length) {
  return request_line + "\r\nHost: localhost\r\nContent-Type: application/json\r\n" +
         (expect.empty() ? "" : "Expect: " + expect + "\r\n") + "Content-Length: " + std::to_string(content_length) +
         "\r\n\r\n";
}

// How reading on from a connection ends, within a limit: end of file when the server closed it (its
// TLS close_notify). Waiting out the limit ends differently (the client's own timeout closes the socket:
// stream truncated), and a byte that comes is no error at all.
boost::system::error_code read_end(test::HttpsClient& client) {
  try {
    client.receive_bytes(1, 1s * test::kSlowdown);
    return {};
  } catch (const boost::system::system_error& e) {
    return e.code();
  }
}

const boost::system::error_code kClosed = boost::asio::error::eof;

// The patch RunningWebhook's policy gives the demo JobSet.
json demo_patch() {
  return json::parse(R"([
      {"op": "add", "path": "/spec/replicatedJobs/0/template/spec/template/metadata/annotations",
       "value": {"platform.example.com/owner": "platform"}},
      {"op": "add", "path": "/spec/replicatedJobs/1/template/spec/template/metadata",
       "value": {"annotations": {"platform.example.com/owner": "platform"},
                 "labels": {"platform.example.com/managed": "true"}}}])");
}

}  // namespace

TEST_CASE("Expect: 100-continue is answered 100 Continue before the body, and the request then served") {
  test::RunningWebhook running;
  std::string body = big_review();

  SUBCASE("a 2.5 MB review announced with Expect: the 100 comes at once, the 200 after the body") {
    test::HttpsClient client(running.port, running.certificates.ca);
    client.send_partial(head("POST /mutate HTTP/1.1", "100-continue", body.size()));
    // Without a 100 the client would wait a second (curl's default) before sending anyway.
    CHECK(client.receive_bytes(kContinue.size(), 500ms * test::kSlowdown) == kContinue);
    auto reply = client.send_raw(body);
    REQUIRE(reply.status == 200);
    CHECK(reply.header_connection.empty());
    CHECK(test::decoded_patch(json::parse(reply.body)).size() == 2);
    CHECK(client.request("GET", "/healthz").status == 200);  // the connection is still in step
  }

  SUBCASE("the value is case-insensitive, and a second request on the connection gets its own 100") {
    test::HttpsClient client(running.port, running.certificates.ca);
    std::string review = test::admission_review(demo()).dump();
    for (const char* expect : {"100-Continue", "100-CONTINUE"}) {
      CAPTURE(expect);
      client.send_partial(head("POST /mutate HTTP/1.1", expect, review.size()));
      CHECK(client.receive_bytes(kContinue.size(), 500ms * test::kSlowdown) == kContinue);
      CHECK(client.send_raw(review).status == 200);
    }
  }

  SUBCASE("a body sent along with its header, or no body at all: no 100, the response only") {
    test::HttpsClient client(running.port, running.certificates.ca);
    std::string review = test::admission_review(demo()).dump();
    auto reply = client.send_raw(head("POST /mutate HTTP/1.1", "100-continue", review.size()) + review);
    CHECK(reply.status == 200);
    reply = client.send_raw("GET /healthz HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\n\r\n");
    CHECK(reply.status == 200);
    CHECK(reply.body == "ok\n");
    CHECK(client.request("GET", "/healthz").status == 200);
  }

  SUBCASE("HTTP/1.0 has no Expect: it is ignored, whatever its value") {
    std::string review = test::admission_review(demo()).dump();
    for (const char* expect : {"100-continue", "something-else"}) {
      CAPTURE(expect);
      test::HttpsClient client(running.port, running.certificates.ca);
      client.send_partial(head("POST /mutate HTTP/1.0", expect, review.size()));
      std::this_thread::sleep_for(200ms);  // time enough for a 100 to come, if one were sent
      auto reply = client.send_raw(review);
      CHECK(reply.status == 200);  // the first thing the server sent is the final response
    }
  }
}

TEST_CASE("Expect: 100-continue on a request refused anyway gets the final status, no 100, and a closed connection") {
  test::RunningWebhook running;

  SUBCASE("a Content-Length over the 7 MiB limit: 413") {
    test::HttpsClient client(running.port, running.certificates.ca);
    auto reply = client.send_raw(head("POST /mutate HTTP/1.1", "100-continue", 8 * 1024 * 1024));
    CHECK(reply.status == 413);
    CHECK(reply.body == "request body exceeds 7340032 bytes\n");
    CHECK(reply.header_connection == "close");
    CHECK(read_end(client) == kClosed);
  }

  SUBCASE("an unknown path: 404") {
    test::HttpsClient client(running.port, running.certificates.ca);
    auto reply = client.send_raw(head("POST /nowhere HTTP/1.1", "100-continue", 1000));
    CHECK(reply.status == 404);
    CHECK(reply.header_connection == "close");
    CHECK(read_end(client) == kClosed);
  }

  SUBCASE("a wrong method: 405") {
    test::HttpsClient client(running.port, running.certificates.ca);
    auto reply = client.send_raw(head("PUT /mutate?timeout=10s HTTP/1.1", "100-continue", 1000));
    CHECK(reply.status == 405);
    CHECK(reply.header_connection == "close");
    CHECK(read_end(client) == kClosed);
  }
}

TEST_CASE("an Expect other than 100-continue gets 417 Expectation Failed and a closed connection") {
  test::RunningWebhook running;
  test::HttpsClient client(running.port, running.certificates.ca);
  auto reply = client.send_raw(head("POST /mutate HTTP/1.1", "something-else", 1000));
  CHECK(reply.status == 417);
  CHECK(reply.body == "unsupported Expect: something-else\n");
  CHECK(reply.header_connection == "close");
  CHECK(read_end(client) == kClosed);
  // Others are served as before.
  CHECK(test::HttpsClient(running.port, running.certificates.ca).request("GET", "/healthz").status == 200);
}

TEST_CASE("a chunked body is put together from its chunks and served, and the body limit holds for it too") {
  test::RunningWebhook running([](karta::WebhookConfig& config) { config.server.body_limit = 4096; });
  test::HttpsClient client(running.port, running.certificates.ca);
  const std::string review = test::admission_review(demo(), "CREATE", "chunked-1").dump();
  REQUIRE(review.size() < 4096);
  auto chunk = [](std::string_view bytes, const std::string& extension = "") {
    std::ostringstream size;
    size << std::hex << bytes.size();
    return size.str() + extension + "\r\n" + std::string(bytes) + "\r\n";
  };
  const std::string head = "POST /mutate?timeout=10s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                           "Transfer-Encoding: chunked\r\n\r\n";
  // Three chunks, one with an extension, and a trailer field after the last.
  auto reply = client.send_raw(head + chunk(std::string_view(review).substr(0, 100)) +
                               chunk(std::string_view(review).substr(100, 1000), ";note=x") +
                               chunk(std::string_view(review).substr(1100)) + "0\r\nX-Trailer: t\r\n\r\n");
  REQUIRE(reply.status == 200);
  json answer = json::parse(reply.body);
  CHECK(answer["response"]["uid"] == "chunked-1");
  CHECK(test::decoded_patch(answer) == demo_patch());
  // The same connection goes on: the chunked message ended where its last chunk said.
  CHECK(client.request("GET", "/healthz").status == 200);

  // 4,097 bytes in chunks that are each under the limit: refused once their sum passes it, as a
  // Content-Length of 4,097 is, and the connection closed.
  const std::string part(2100, ' ');
  reply = client.send_raw(head + chunk(part) + chunk(part) + "0\r\n\r\n");
  CHECK(reply.status == 413);
  CHECK(reply.body == "request body exceeds 4096 bytes\n");
  CHECK(reply.header_connection == "close");
  test::HttpsClient other(running.port, running.certificates.ca);
  reply = other.send_raw(head.substr(0, head.find("Transfer-Encoding")) + "Content-Length: 4097\r\n\r\n");
  CHECK(reply.status == 413);
  CHECK(reply.body == "request body exceeds 4096 bytes\n");
}

TEST_CASE("the request's Content-Type is its first such field, named in any case") {
  test::RunningWebhook running;
  test::HttpsClient client(running.port, running.certificates.ca);
  const std::string review = test::admission_review(demo(), "CREATE", "ct-1").dump();
  auto post = [&](const std::string& fields) {
    return client.send_raw("POST /mutate HTTP/1.1\r\nHost: localhost\r\n" + fields +
                           "Content-Length: " + std::to_string(review.size()) + "\r\n\r\n" + review);
  };
  auto reply = post("content-TYPE: application/json\r\n");
  CHECK(reply.status == 200);
  CHECK(json::parse(reply.body)["response"]["uid"] == "ct-1");
  reply = post("Content-Type: text/plain\r\nContent-Type: application/json\r\n");
  CHECK(reply.status == 415);
  CHECK(reply.body == "expected Content-Type application/json, got text/plain\n");
  reply = post("Content-Type: application/json; charset=utf-8\r\nContent-Type: text/plain\r\n");
  CHECK(reply.status == 200);
  reply = post("");  // none: read as JSON, as the service takes a review without one
  CHECK(reply.status == 200);
  CHECK(json::parse(reply.body)["response"]["uid"] == "ct-1");
}

TEST_CASE("clients that vanish mid-request or before their answer cost the server nothing: the next one is served") {
  test::RunningWebhook running;
  // The server's TLS writes to the socket itself, where a write to a connection the peer has gone from
  // raises SIGPIPE: the server ignores it (the write fails with EPIPE instead of ending the process).
  struct sigaction action {};
  REQUIRE(sigaction(SIGPIPE, nullptr, &action) == 0);
  CHECK(reinterpret_cast<void*>(action.sa_handler) == reinterpret_cast<void*>(SIG_IGN));

  const std::string review = test::admission_review(demo()).dump();
  const std::string body = big_review();
  for (int i = 0; i < 4; ++i) {
    CAPTURE(i);
    test::HttpsClient client(running.port, running.certificates.ca);
    if (i % 2 == 0) {
      client.send_partial(head("POST /mutate HTTP/1.1", "", body.size()) + body.substr(0, body.size() / 2));
    } else {
      client.send_partial(head("POST /mutate HTTP/1.1", "", review.size()) + review);
    }
    client.reset();  // mid-body, or with the answer on its way
  }
  test::HttpsClient next(running.port, running.certificates.ca);
  CHECK(next.request("GET", "/healthz").status == 200);
  auto reply = next.send_raw(head("POST /mutate HTTP/1.1", "", review.size()) + review);
  REQUIRE(reply.status == 200);
  CHECK(test::decoded_patch(json::parse(reply.body)) == demo_patch());
}

TEST_CASE("a request that arrives a few bytes per TLS record is put together across them and answered") {
  // Each send_partial is a TLS record of its own: the server's reads take one small record at a time
  // (and wait for the socket between them) while the parser asks for more.
  test::RunningWebhook running;
  test::HttpsClient client(running.port, running.certificates.ca);
  const std::string review = test::admission_review(demo()).dump();
  const std::string request = head("POST /mutate HTTP/1.1", "", review.size()) + review;
  for (std::size_t at = 0; at < request.size(); at += 61) client.send_partial(request.substr(at, 61));
  auto reply = client.receive();
  REQUIRE(reply.status == 200);
  CHECK(test::decoded_patch(json::parse(reply.body)) == demo_patch());
  CHECK(client.request("GET", "/healthz").status == 200);  // and the connection is still in step
}

TEST_CASE("once shutdown began, responses carry Connection: close and their connections are closed") {
  // A delay long enough that the drain at its end (which closes idle connections too) cannot be what
  // closes the connections below: the steps after shutdown() take tens of milliseconds, and well under a
  // second in the sanitizer builds. Not scaled like the time bounds: the test waits the whole delay out
  // (30 s made this the sanitizer run's slowest case).
  test::RunningWebhook running([](karta::WebhookConfig& config) {
    config.server.shutdown_delay = test::kSlowdown == 1 ? 3s : 6s;
  });
  std::string review = test::admission_review(demo()).dump();
  test::HttpsClient client(running.port, running.certificates.ca);
  auto reply = client.request("POST", "/mutate", review);
  REQUIRE(reply.status == 200);
  CHECK(reply.header_connection.empty());  // keep-alive, as HTTP/1.1's default
  reply = client.request("GET", "/readyz");
  CHECK(reply.status == 200);
  CHECK(reply.header_connection.empty());

  running.webhook->shutdown();  // what SIGTERM does; the listener stays open for the shutdown delay

  // On the connection opened before: served, and told to go elsewhere.
  reply = client.request("POST", "/mutate", review);
  CHECK(reply.status == 200);
  CHECK(json::parse(reply.body)["response"]["allowed"] == true);
  CHECK(reply.header_connection == "close");
  CHECK(read_end(client) == kClosed);

  // On a connection opened during the delay: the same.
  test::HttpsClient late(running.port, running.certificates.ca);
  reply = late.request("GET", "/readyz");
  CHECK(reply.status == 503);
  CHECK(reply.header_connection == "close");
  CHECK(read_end(late) == kClosed);
}

TEST_CASE("a connection still open when the drain deadline passes is let go with the server, in time and safely") {
  // A client that sent half a request and then nothing: the drain lets it finish until drain_timeout,
  // then the server stops with the connection's read still queued. Destroying the server destroys that
  // read, and with it the session, whose destructor unregisters from the server: the sanitizer build
  // catches it if the sessions' set and mutex are gone by then.
  auto running = std::make_unique<test::RunningWebhook>([](karta::WebhookConfig& config) {
    config.server.drain_timeout = 200ms;
    config.server.read_timeout = 60s;
  });
  std::string review = test::admission_review(demo()).dump();
  test::HttpsClient client(running->port, running->certificates.ca);
  client.send_partial(head("POST /mutate HTTP/1.1", "", review.size()) + review.substr(0, 100));
  std::this_thread::sleep_for(100ms);  // the server has read the head
  auto started = std::chrono::steady_clock::now();
  running.reset();  // shutdown, drain until the deadline, stop, destroy
  auto took = std::chrono::steady_clock::now() - started;
  CHECK(took < 3s * test::kSlowdown);  // the drain deadline, not the 60 s read timeout
  // The connection was closed with the server, without an answer or a TLS close_notify.
  started = std::chrono::steady_clock::now();
  CHECK(read_end(client) == boost::asio::ssl::error::stream_truncated);
  CHECK(std::chrono::steady_clock::now() - started < 500ms * test::kSlowdown);
}

}  // namespace e2e_http_protocol
