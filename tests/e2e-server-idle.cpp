// The server's idle callback (HttpsServer::set_on_idle), on which the webhook returns freed memory to the
// kernel: it runs when the last open connection closes, not while another is open, and at most once a
// second. And what a keep-alive connection costs the server between requests: one receive each, and no
// call to wait.

#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include <dlfcn.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

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

}  // namespace e2e_server_idle

// The system calls the server's receives and waits make, counted per thread. Defined here, these wrap
// libc's functions for the code linked into this test binary (the server's: Asio is compiled into it),
// and call the next definition (libc's, or a sanitizer's interceptor in a sanitized build). Asio receives
// with recv (one buffer) or recvmsg, and re-arms a socket in epoll with epoll_ctl.
namespace e2e_server_idle_calls {
thread_local long receives = 0;
thread_local long epoll_ctls = 0;

template <typename Function>
Function* next(Function*, const char* name) {
  auto* found = reinterpret_cast<Function*>(::dlsym(RTLD_NEXT, name));
  if (found == nullptr) std::abort();  // libc has all three
  return found;
}
}  // namespace e2e_server_idle_calls

extern "C" ssize_t recv(int fd, void* buffer, size_t size, int flags) {
  ++e2e_server_idle_calls::receives;
  static auto* const next = e2e_server_idle_calls::next(&recv, "recv");
  return next(fd, buffer, size, flags);
}

extern "C" ssize_t recvmsg(int fd, struct msghdr* message, int flags) {
  ++e2e_server_idle_calls::receives;
  static auto* const next = e2e_server_idle_calls::next(&recvmsg, "recvmsg");
  return next(fd, message, flags);
}

extern "C" int epoll_ctl(int epfd, int op, int fd, struct epoll_event* event) noexcept {
  ++e2e_server_idle_calls::epoll_ctls;
  static auto* const next = e2e_server_idle_calls::next(&epoll_ctl, "epoll_ctl");
  return next(epfd, op, fd, event);
}

namespace e2e_server_idle {

namespace {

// The read system calls a thread of this process has made, as /proc counts them: read and readv (what
// OpenSSL's socket BIO reads with), not recv or recvmsg.
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

// The serving thread's calls when it last ran the route's handler.
struct ServerCalls {
  long thread = 0;
  long receives = 0;
  long epoll_ctls = 0;
};

// A server on one thread with one route, POST /, answering what `answer` makes of the body; each time it
// runs, it notes the serving thread's calls.
class CountingServer {
 public:
  explicit CountingServer(std::function<std::string(const std::string&)> answer)
      : server_(LocalTls::options(1), tls_.store,
                {{"POST",
                  "/",
                  [this, answer = std::move(answer)](const karta::HttpRequest& request) {
                    {
                      std::lock_guard lock(mutex_);
                      calls_ = {static_cast<long>(::syscall(SYS_gettid)), e2e_server_idle_calls::receives,
                                e2e_server_idle_calls::epoll_ctls};
                    }
                    return karta::HttpResponse{200, "text/plain", answer(request.body), {}};
                  },
                  {}}}),
        port_(server_.listen()),
        thread_([this] { server_.run(/*handle_signals=*/false); }) {}
  ~CountingServer() {
    server_.shutdown();
    thread_.join();
  }
  ServerCalls calls() {
    std::lock_guard lock(mutex_);
    return calls_;
  }
  test::HttpsClient client() { return test::HttpsClient(port_, tls_.certificates.ca); }

 private:
  LocalTls tls_;
  std::mutex mutex_;
  ServerCalls calls_;
  karta::HttpsServer server_;
  unsigned short port_;
  std::thread thread_;
};

}  // namespace

TEST_CASE("between requests on a keep-alive connection the server re-arms nothing: it receives, and Asio waits") {
  // After writing a response the server asks for its next request, which its client sends only once it
  // has that response. Waiting for readability (async_wait) re-armed the socket in epoll each time: an
  // epoll_ctl a request. Asio's receive needs none (the socket stays registered); Boost 1.74's Asio first
  // tries a receive at once, which finds nothing when the client is this slow (under load the request is
  // there already, and it is the only receive). So, per request: no epoll_ctl, one or two receives.
  CountingServer server([](const std::string& body) { return body; });
  test::HttpsClient client = server.client();
  REQUIRE(client.request("POST", "/", "first").body == "first");  // the handshake and the first read
  const ServerCalls before = server.calls();
  REQUIRE(before.thread != 0);
  const long reads_before = reads_of_thread(before.thread);
  constexpr int kRequests = 50;
  for (int i = 0; i < kRequests; ++i) {
    const std::string body = "request " + std::to_string(i);
    REQUIRE(client.request("POST", "/", body).body == body);
  }
  const ServerCalls after = server.calls();
  const long reads = reads_of_thread(before.thread) - reads_before;
  // Each request's record arrives whole on the loopback; a receive split by the kernel now and then is
  // allowed for.
  const long receives = after.receives - before.receives;
  CHECK(receives >= kRequests);
  CHECK(receives <= 2 * kRequests + kRequests / 10);
  CHECK(reads == 0);                                 // OpenSSL takes the records from Asio's receives
  CHECK(after.epoll_ctls - before.epoll_ctls == 0);  // 50 when the server waited with async_wait
}

TEST_CASE("a large request is received in buffers as large as a TLS record, a small one in a small buffer") {
  // The input buffer is 4 KB while a connection waits for a request, and grows to 16 KB once a receive
  // filled it: a 1 MB body (64 records of 16 KB) then takes some 64 receives, not 256 or more.
  CountingServer server([](const std::string& body) { return std::to_string(body.size()); });
  test::HttpsClient client = server.client();
  REQUIRE(client.request("POST", "/", "first").body == "5");
  const long before_small = server.calls().receives;
  REQUIRE(client.request("POST", "/", std::string(3000, 's')).body == "3000");  // fits in 4 KB
  const long small = server.calls().receives - before_small;
  CHECK(small >= 1);
  CHECK(small <= 2);  // its receive, and one that found nothing yet
  const long before_large = server.calls().receives;
  REQUIRE(client.request("POST", "/", std::string(1024 * 1024, 'l')).body == "1048576");
  const long large = server.calls().receives - before_large;
  MESSAGE("receives for 1 MB: " << large);
  CHECK(large >= 64);
  CHECK(large <= 160);  // 256 at the least in 4 KB buffers
}

}  // namespace e2e_server_idle
