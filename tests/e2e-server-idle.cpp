// The server's idle callback (HttpsServer::set_on_idle), on which the webhook returns freed memory to the
// kernel: it runs when the last open connection closes, not while another is open, and at most once a
// second.

#include <doctest/doctest.h>

#include <atomic>
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

TEST_CASE("the idle callback runs when the last open connection closes, at most once a second") {
  test::TempDir dir;
  test::TestCertificates certificates{dir.path};
  karta::ServerOptions options;
  options.bind_address = "127.0.0.1";
  options.port = 0;
  options.threads = 2;
  auto store = std::make_shared<karta::CertificateStore>(karta::TlsFiles{certificates.certificate, certificates.key});
  std::vector<karta::Route> routes{{"GET",
                                    "/ok",
                                    [](const karta::HttpRequest&) {
                                      return karta::HttpResponse{200, "text/plain", "ok", {}};
                                    },
                                    {}}};
  karta::HttpsServer server(options, store, routes);
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

}  // namespace e2e_server_idle
