// A route that answers later (Route::deferring): while it waits it holds no thread, so a one-thread server
// goes on answering others; its answer, given from any thread, is made on the connection's thread and
// written on its connection, which stays alive; an answer that throws is a 500; dispatch() waits for it.
// (e2e-namespace-lookups.cpp has the admissions that wait for their namespace's labels this way.)

#include <doctest/doctest.h>

#include <condition_variable>
#include <future>
#include <mutex>
#include <sstream>
#include <thread>

#include "server/https_server.h"
#include "server/tls_context.h"
#include "support/https_client.h"
#include "support/test_support.h"

namespace e2e_deferred_answers {  // this file's names, apart from other tests' in a unity build

namespace test = karta::test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A one-thread server: GET /now answers with the thread it ran on; POST /later keeps its Respond for the
// test to call (POST /at-once answers now through the same handler).
class DeferringServer {
 public:
  DeferringServer()
      : server_(options(), tls_store(), routes()), port_(server_.listen()), thread_([this] { server_.run(false); }) {}
  ~DeferringServer() {
    server_.shutdown();
    thread_.join();
  }
  test::HttpsClient client() { return test::HttpsClient(port_, certificates_.ca); }
  // The Respond of the next request to POST /later, once it has come.
  karta::Respond next_later() {
    std::unique_lock lock(mutex_);
    REQUIRE(kept_.wait_for(lock, 5s, [this] { return !respond_.empty(); }));
    karta::Respond respond = std::move(respond_.front());
    respond_.erase(respond_.begin());
    return respond;
  }
  const karta::HttpsServer& server() const { return server_; }
  static std::string this_thread() {
    std::ostringstream id;
    id << std::this_thread::get_id();
    return id.str();
  }

 private:
  static karta::ServerOptions options() {
    karta::ServerOptions options;
    options.bind_address = "127.0.0.1";
    options.port = 0;
    options.threads = 1;
    return options;
  }
  std::shared_ptr<karta::CertificateStore> tls_store() {
    return std::make_shared<karta::CertificateStore>(karta::TlsFiles{certificates_.certificate, certificates_.key});
  }
  std::vector<karta::Route> routes() {
    auto now = [](const karta::HttpRequest&) { return karta::HttpResponse{200, "text/plain", this_thread(), {}}; };
    auto later = [this](karta::HttpRequest& request, karta::Deferral& deferral) -> std::optional<karta::HttpResponse> {
      if (request.path == "/at-once") return karta::HttpResponse{200, "text/plain", "at once: " + request.body, {}};
      {
        std::lock_guard lock(mutex_);
        respond_.push_back(deferral.take());
      }
      kept_.notify_all();
      return std::nullopt;
    };
    return {{"GET", "/now", now, {}, {}}, {"POST", "/later", {}, {}, later}, {"POST", "/at-once", {}, {}, later}};
  }

  test::TempDir dir_;
  test::TestCertificates certificates_{dir_.path};
  std::mutex mutex_;
  std::condition_variable kept_;
  std::vector<karta::Respond> respond_;
  karta::HttpsServer server_;
  unsigned short port_;
  std::thread thread_;
};

TEST_CASE("a one-thread server answers others while a deferred request waits, and writes its answer, made on its thread, when given") {
  DeferringServer server;
  test::HttpsClient waiting = server.client();
  test::HttpsClient other = server.client();
  const std::string server_thread = other.request("GET", "/now").body;
  auto answer = std::async(std::launch::async, [&] { return waiting.request("POST", "/later", "x"); });
  karta::Respond respond = server.next_later();
  const auto start = Clock::now();
  CHECK(other.request("GET", "/now").body == server_thread);  // nothing waits for the deferred one
  CHECK(Clock::now() - start < 100ms * test::kSlowdown);
  CHECK(answer.wait_for(0ms) == std::future_status::timeout);
  std::thread([&] {  // given from a thread of its own
    respond([] { return karta::HttpResponse{200, "text/plain", "later on " + DeferringServer::this_thread(), {}}; });
  }).join();
  test::HttpReply reply = answer.get();
  CHECK(reply.status == 200);
  CHECK(reply.body == "later on " + server_thread);
  CHECK(reply.header_connection == "");  // kept alive: the connection serves its next request
  CHECK(waiting.request("POST", "/at-once", "y").body == "at once: y");

  SUBCASE("an answer that throws is a 500") {
    auto failed = std::async(std::launch::async, [&] { return waiting.request("POST", "/later", "z"); });
    server.next_later()([]() -> karta::HttpResponse { throw std::runtime_error("no answer"); });
    test::HttpReply error = failed.get();
    CHECK(error.status == 500);
    CHECK(error.body == "internal error: no answer\n");
  }
}

TEST_CASE("dispatch() waits for a deferred answer, made on the thread that gives it") {
  DeferringServer server;
  std::promise<std::string> given;
  std::thread giver([&] { given.set_value(DeferringServer::this_thread()); server.next_later()([] {
    return karta::HttpResponse{200, "text/plain", DeferringServer::this_thread(), {}};
  }); });
  karta::HttpResponse response = server.server().dispatch({"POST", "/later", "", "text/plain", "x"});
  giver.join();
  CHECK(response.status == 200);
  CHECK(response.body == given.get_future().get());
  CHECK(server.server().dispatch({"POST", "/at-once", "", "text/plain", "y"}).body == "at once: y");
}

}  // namespace e2e_deferred_answers
