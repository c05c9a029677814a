// The server's idle callback (HttpsServer::set_on_idle), on which the webhook returns freed memory to the
// kernel: it runs when the last open connection closes, not while another is open, and at most once a
// second. And what a keep-alive connection costs the server between requests: one read each.

#include <doctest/doctest.h>

#include <atomic>
#include <fstream>
#include <sys/syscall.h>
#include <unistd.h>
#include <memory>
#include <thread>

#include "server/https_server.h"
#include "server/tls_context.h"
#include "support/https_client.h"
#include "support/running_webhook.h"
#include "support/test_support.h"

namespace e2e_server_idle {  // this file's names, apart from other tests' in a unity build

namespace test = karta::test;
using namespace std::chrono_literals;

namespace {

// Certificates, their store and server options for a test's own HttpsServer on 127.0.0.1.
struct LocalTls {
  test::TempDir dir;
  test::TestCertificates certificates{dir.path};
  std::shared_ptr<karta::CertificateStore> store =
      std::make_shared<karta::CertificateStore>(karta::TlsFiles{certificates.certificate, certificates.key});

  static karta::ServerOptions options(std::size_t threads) {
    karta::ServerOptions options;
    options.bind_address = "127.0.0.1";
    options.port = 0;
    options.threads = threads;
    return options;
  }
};

}  // namespace

TEST_CASE("the idle callback runs when the last open connection closes, at most once a second") {
  LocalTls tls;
  const auto& certificates = tls.certificates;
  std::vector<karta::Route> routes{{"GET",
                                    "/ok",
                                    [](const karta::HttpRequest&) {
                                      return karta::HttpResponse{200, "text/plain", "ok", {}};
                                    },
                                    {}}};
  karta::HttpsServer server(LocalTls::options(2), tls.store, routes);
  std::atomic<int> idle{0};
  server.set_on_idle([&idle] { ++idle; });
  const unsigned short port = server.listen();
  std::thread thread([&server] { server.run(/*handle_signals=*/false); });

  {
    test::HttpsClient kept(port, certificates.ca);
    REQUIRE(kept.request("GET", "/ok").status == 200);
    {
      test::HttpsClient closed(port, certificates.ca);
      REQUIRE(closed.request("GET", "/ok").status == 200);
    }
    std::this_thread::sleep_for(300ms * test::kSlowdown);
    CHECK(idle == 0);  // one connection is still open
  }
  CHECK(test::eventually([&idle] { return idle == 1; }, 5s * test::kSlowdown));

  std::this_thread::sleep_for(1100ms);
  {
    test::HttpsClient again(port, certificates.ca);
    REQUIRE(again.request("GET", "/ok").status == 200);
  }
  CHECK(test::eventually([&idle] { return idle == 2; }, 5s * test::kSlowdown));

  server.shutdown();
  thread.join();
  CHECK(idle == 2);
}

// The read system calls (read, readv: OpenSSL reads the socket with read()) a thread of this process has made.
long reads_of_thread(long tid) {
  std::ifstream io("/proc/self/task/" + std::to_string(tid) + "/io");
  std::string key;
  long value = 0;
  while (io >> key >> value) {
    if (key == "syscr:") return value;
  }
  FAIL("no syscr in /proc/self/task/" << tid << "/io");
  return -1;
}

TEST_CASE("between requests on a keep-alive connection the server makes one read a request, not a failed one first") {
  // After writing a response the server waits for the socket before reading: its client sends the next
  // request only once it has that response, so a read then would fail (EAGAIN) and cost a system call.
  LocalTls tls;
  std::atomic<long> server_thread{0};
  std::vector<karta::Route> routes{{"POST",
                                    "/echo",
                                    [&server_thread](const karta::HttpRequest& request) {
                                      server_thread = static_cast<long>(::syscall(SYS_gettid));
                                      return karta::HttpResponse{200, "text/plain", request.body, {}};
                                    },
                                    {}}};
  karta::HttpsServer server(LocalTls::options(1), tls.store, routes);
  const unsigned short port = server.listen();
  std::thread thread([&server] { server.run(/*handle_signals=*/false); });
  {
    test::HttpsClient client(port, tls.certificates.ca);
    REQUIRE(client.request("POST", "/echo", "first").body == "first");  // the handshake and the first read
    REQUIRE(server_thread != 0);
    const long before = reads_of_thread(server_thread);
    constexpr int kRequests = 50;
    for (int i = 0; i < kRequests; ++i) {
      const std::string body = "request " + std::to_string(i);
      REQUIRE(client.request("POST", "/echo", body).body == body);
    }
    // Each request's record arrives whole on the loopback: one read each (a failed read before each
    // made it twice as many). A read split by the kernel now and then is allowed for.
    const long reads = reads_of_thread(server_thread) - before;
    CHECK(reads >= kRequests);
    CHECK(reads <= kRequests + kRequests / 10);
  }
  server.shutdown();
  thread.join();
}

}  // namespace e2e_server_idle
