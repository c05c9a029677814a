#pragma once

// The HTTPS transport, after Boost.Beast's async-ssl example server: a listener owns the acceptor; a
// session is a chain of read/handle/write steps with a deadline on every step. Knows nothing of Karta:
// it routes (method, path) to HttpHandlers.
//
// Unlike Beast's example (one io_context run by every thread, a strand per connection), each thread runs
// an io_context of its own and each connection lives on one of them, dealt round-robin: a connection's
// handlers never need a strand, and threads never wake each other. Measured with scripts/load-test.sh,
// the shared io_context spent a third of the CPU in the kernel switching threads.
//
// Also unlike it, a session holds a socket bound to its io_context's executor (no beast::tcp_stream, no
// type-erased executor), keeps one lazily re-armed deadline timer instead of re-queuing a timer per
// operation, and writes each response serialized into one buffer. With these, a 405 from the router went
// from 68,000 to 99,000 requests/s over TLS (nginx: 103,000). And its TLS is OpenSSL writing to the
// socket itself and reading what Asio receives (server/tls_stream.h), not Asio's SSL stream over a memory
// BIO pair.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include "server/http_exchange.h"
#include "server/tls_context.h"

namespace karta {

struct ServerOptions {
  std::string bind_address = "0.0.0.0";
  unsigned short port = 8443;  // 0 picks a free port (tests)
  std::size_t threads = 2;
  // controller-runtime's admission decoder allows 7 MiB: object and oldObject can each be 3 MB.
  std::size_t body_limit = 7 * 1024 * 1024;
  std::size_t header_limit = 16 * 1024;
  std::chrono::milliseconds handshake_timeout{10'000};
  // A whole request must arrive within this once the connection waits for one; a keep-alive
  // connection idle this long is closed. Slow or idle clients cannot pile up.
  std::chrono::milliseconds read_timeout{30'000};
  std::chrono::milliseconds write_timeout{30'000};
  std::chrono::milliseconds certificate_poll{1'000};  // how often the TLS files are checked for changes
  // On SIGTERM: readiness turns false, then after shutdown_delay (so endpoints are removed) the
  // acceptor closes and open requests get up to drain_timeout to finish. Every response from SIGTERM on
  // carries `Connection: close`, so keep-alive clients move to new connections during the delay.
  std::chrono::milliseconds shutdown_delay{0};
  std::chrono::milliseconds drain_timeout{30'000};
  std::size_t max_connections = 10'000;
};

struct Route {
  std::string method;
  std::string path;
  HttpHandler handler;
  // When set and true for a request, the handler runs on a separate worker pool instead of the
  // connection's thread, so slow work (compiling a definition's jq) cannot stall other requests.
  std::function<bool(const HttpRequest&)> offload;
  // When set, runs instead of `handler` and may answer later: a request that waits for something (the
  // labels of an admission's namespace) holds no thread while it waits, only its connection.
  DeferringHandler deferring;
};

class HttpsServer {
 public:
  HttpsServer(ServerOptions options, std::shared_ptr<CertificateStore> certificates, std::vector<Route> routes);
  ~HttpsServer();
  HttpsServer(const HttpsServer&) = delete;
  HttpsServer& operator=(const HttpsServer&) = delete;

  // Binds and listens. Returns the bound port. Throws std::runtime_error if the address is unusable.
  unsigned short listen();

  // Serves until shutdown completes, on `threads` threads (this one included). With handle_signals,
  // SIGTERM and SIGINT start a graceful shutdown.
  void run(bool handle_signals = true);

  // Starts a graceful shutdown from any thread: on_shutdown_begin runs first (readiness goes false).
  void shutdown();
  void set_on_shutdown_begin(std::function<void()> callback) { on_shutdown_begin_ = std::move(callback); }
  // Runs on the thread that closed the last open connection, at most once a second: nothing is in flight
  // (the webhook returns the memory freed to the kernel then). Set before run().
  void set_on_idle(std::function<void()> callback) { on_idle_ = std::move(callback); }
  // Told of every certificate reload attempt that found changed files: true when it was loaded. Runs on
  // the server's housekeeping thread, not on a thread that serves connections.
  void set_on_certificate_reload(std::function<void(bool)> callback) { on_certificate_reload_ = std::move(callback); }

  std::size_t open_connections() const;
  bool stopping() const { return stopping_.load(); }

  // Answers one request without a socket (tests and fuzzers use it): routing, 404 and 405. A deferring
  // handler's later answer is waited for.
  HttpResponse dispatch(const HttpRequest& request) const;
  // The route for a request, or nullptr with the 404/405 answer in `refusal`.
  const Route* find_route(const HttpRequest& request, HttpResponse& refusal) const;

  class Session;

 private:
  void do_accept();
  void poll_certificates();
  void begin_drain();
  void check_drained();
  void register_session(Session* session);
  void unregister_session(Session* session);

  ServerOptions options_;
  std::shared_ptr<CertificateStore> certificates_;
  std::vector<Route> routes_;
  // Declared before the contexts, so destroyed after them: destroying a context destroys the handlers
  // still queued on it (after a drain deadline passed with connections open), and with them the last
  // references to their sessions, whose destructors unregister here.
  mutable std::mutex sessions_mutex_;
  std::unordered_set<Session*> sessions_;
  using WorkGuard = boost::asio::executor_work_guard<boost::asio::io_context::executor_type>;
  // contexts_[0] also runs the acceptor, the timers and the signal set.
  std::vector<std::unique_ptr<boost::asio::io_context>> contexts_;
  std::vector<WorkGuard> work_guards_;  // keep every context running while it has no connection
  std::size_t next_context_ = 0;        // round-robin; touched only by the acceptor's handler
  boost::asio::io_context& control() { return *contexts_.front(); }
  boost::asio::ip::tcp::acceptor acceptor_;
  // The TLS files are read here, on a thread of its own, never on a thread that serves connections: a
  // read costs a dozen system calls every poll, and a volume that stalls (a remote mount, say) would
  // stall every admission with it. A read that never returns still holds up the end of run(), which
  // joins this thread after the drain (the kubelet's SIGKILL ends such a pod). Declared before its timer,
  // which must not outlive it.
  boost::asio::thread_pool housekeeping_{1};
  boost::asio::steady_timer certificate_timer_;
  boost::asio::steady_timer drain_timer_;
  boost::asio::signal_set signals_;
  boost::asio::thread_pool offload_pool_{1};
  std::chrono::steady_clock::time_point drain_deadline_;
  std::function<void()> on_shutdown_begin_;
  std::function<void()> on_idle_;
  std::chrono::steady_clock::time_point last_idle_{};  // guarded by sessions_mutex_
  std::function<void(bool)> on_certificate_reload_;
  std::string last_certificate_error_;  // touched by housekeeping_'s thread only
  std::atomic<bool> stopping_{false};
};

}  // namespace karta
