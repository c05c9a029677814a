#include "server/https_server.h"

// The HTTPS server and its connections. Longer than 500 lines because HttpsServer::Session, the server's
// private nested class, is one Beast state machine (handshake, reads with 100-continue, the handler,
// the write, keep-alive, deadlines, TLS shutdown) whose steps chain one another's completion handlers,
// and it works with the server's accept, drain and session registry beside it. (Its TLS is in tls_stream.h.)

#include <array>
#include <csignal>
#include <future>
#include <optional>
#include <string_view>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>

#include "server/request_parser.h"
#include "server/tls_stream.h"

namespace karta {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

// One single-threaded io_context per thread: concurrency hint 1 lets Asio skip its scheduler locking.
std::vector<std::unique_ptr<net::io_context>> make_contexts(std::size_t threads) {
  std::vector<std::unique_ptr<net::io_context>> contexts;
  for (std::size_t i = 0; i < std::max<std::size_t>(threads, 1); ++i) contexts.push_back(std::make_unique<net::io_context>(1));
  return contexts;
}

}  // namespace

// The connection's types are bound to the io_context's own executor, not Asio's type-erased
// any_io_executor: every operation of a session would otherwise copy and destroy a polymorphic executor
// (measured at about 5% of the server's CPU under load).
using Executor = net::io_context::executor_type;
using Socket = net::basic_stream_socket<tcp, Executor>;
using Timer = net::basic_waitable_timer<std::chrono::steady_clock, net::wait_traits<std::chrono::steady_clock>, Executor>;

class HttpsServer::Session : public std::enable_shared_from_this<HttpsServer::Session> {
 public:
  Session(HttpsServer& server, Socket&& socket, std::shared_ptr<net::ssl::context> tls)
      : server_(server), tls_(std::move(tls)), stream_(std::move(socket), tls_->native_handle()), timer_(stream_.get_executor()) {
    server_.register_session(this);
  }
  ~Session() { server_.unregister_session(this); }

  void run() { net::dispatch(stream_.get_executor(), beast::bind_front_handler(&Session::on_run, shared_from_this())); }

  // Called on shutdown: an idle connection closes now, a busy one after its response.
  void drain() {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      self->draining_ = true;
      if (self->waiting_for_request_ && !(self->parser_ && self->parser_->got_some())) {
        beast::error_code ec;
        self->stream_.lowest_layer().cancel(ec);
      }
    });
  }

 private:
  // Every step has a deadline. Setting one is a clock read: one timer per connection wakes at the
  // earliest deadline it was armed for and re-arms itself for a later one, so a busy keep-alive
  // connection does not re-queue a timer on every read and write. Past its deadline the socket is
  // closed and the pending operation fails.
  void set_deadline(std::chrono::steady_clock::duration limit) {
    deadline_ = std::chrono::steady_clock::now() + limit;
    if (!timer_armed_ || timer_.expiry() > deadline_) arm_timer();
  }

  void arm_timer() {
    timer_armed_ = true;
    timer_.expires_at(deadline_);  // cancels an earlier wait, whose handler then does nothing
    timer_.async_wait([weak = weak_from_this()](beast::error_code ec) {
      if (ec == net::error::operation_aborted) return;
      if (auto self = weak.lock()) self->on_timer();
    });
  }

  void on_timer() {
    timer_armed_ = false;
    if (std::chrono::steady_clock::now() < deadline_) return arm_timer();  // moved later meanwhile
    spdlog::debug("{}: deadline passed, closing the connection", remote());
    beast::error_code ec;
    stream_.lowest_layer().close(ec);  // the pending operation completes with an error; the session ends
  }

  void on_run() {
    set_deadline(server_.options_.handshake_timeout);
    stream_.async_handshake(beast::bind_front_handler(&Session::on_handshake, shared_from_this()));
  }

  void on_handshake(beast::error_code ec) {
    if (ec) {
      spdlog::debug("TLS handshake failed: {}", ec.message());
      return;
    }
    do_read();
  }

  void do_read() {
    // A fresh parser per message, as Beast's server-flex example does: body limits are per message.
    parser_.emplace();
    parser_->body_limit(server_.options_.body_limit);
    parser_->header_limit(static_cast<std::uint32_t>(server_.options_.header_limit));
    // Not eager until the header is parsed: the put() that completes the header stops there, so the
    // header is looked at (Expect, below) before any of the body is taken. Then eager, as http::async_read
    // sets: the whole body in one put() when it is buffered.
    parser_->eager(false);
    header_seen_ = false;
    waiting_for_request_ = true;
    if (draining_) return do_close();
    set_deadline(server_.options_.read_timeout);
    parse_buffered();
  }

  // The read loop of Beast's http::async_read, written out: parse what is buffered (a pipelined request
  // may already be there), read more while the parser needs it. Beast's version nests two composed
  // operations, each copying a work-tracking executor per step.
  void parse_buffered() {
    beast::error_code ec;
    while (buffer_.size() > 0 && !parser_->is_done()) {
      std::size_t used = parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      if (ec == http::error::need_more) break;
      if (ec) return on_read(ec, 0);
      if (!header_seen_ && parser_->is_header_done()) {
        header_seen_ = true;
        parser_->eager(true);
        if (on_header()) return;  // it answered, and the session goes on from that write
      }
      if (used == 0) break;  // nothing taken and nothing wrong: it needs more bytes
    }
    if (parser_->is_done()) return on_read({}, 0);
    std::size_t size = beast::read_size(buffer_, kReadSize);
    if (size == 0) return on_read(http::error::buffer_overflow, 0);
    // At least kMinRead a read: read_size() offers a buffer that never grew 512 bytes, and a 1.7 KB review
    // then took four reads, each an SSL_read and a pass of the parser (counted under callgrind).
    size = std::max(size, std::min(kMinRead, buffer_.max_size() - buffer_.size()));
    auto handler = beast::bind_front_handler(&Session::on_read_some, shared_from_this());
    // Nothing of the next request yet: its client sends it once it has our last response. Straight to
    // the socket's receive, which Asio waits for, without asking OpenSSL first.
    if (!parser_->got_some() && buffer_.size() == 0) {
      return stream_.async_read_some_when_readable(buffer_.prepare(size), std::move(handler));
    }
    stream_.async_read_some(buffer_.prepare(size), std::move(handler));
  }

  // A request's header is complete and its body not yet parsed. `Expect: 100-continue` (curl sends it
  // with bodies over 1 MB) means the client waits, for a second or so, before sending the body: as nginx
  // does, answer 100 Continue when the body has not arrived, or the final status at once when the
  // request is refused whatever its body says. Returns true when it took over the session.
  bool on_header() {
    const RequestParser& header = *parser_;
    if (header.version() < 11) return false;  // Expect is HTTP/1.1's (RFC 9110 10.1.1): an HTTP/1.0 one is ignored
    const std::string_view expect = header.expect();
    if (expect.empty()) return false;
    // A request refused whatever its body says gets its final status now, without a 100. Its body, if
    // the client sends it anyway, would be parsed as the next request: these close the connection, as
    // the 413 for a Content-Length over the limit does.
    if (!beast::iequals(beast::string_view(expect.data(), expect.size()), "100-continue")) {
      reply_error(417, "unsupported Expect: " + std::string(expect));
      return true;
    }
    // No body to wait for, or some of it already sent (the client did not wait): nothing to continue.
    if (parser_->is_done() || buffer_.size() > 0) return false;
    // A Content-Length over the body limit never gets here: the parser refused it (413) with the header.
    HttpRequest request;
    request.method = std::string(header.method_string());
    const std::string_view target = header.target();
    request.path = std::string(target.substr(0, target.find('?')));
    HttpResponse refusal;
    if (server_.find_route(request, refusal) == nullptr) {
      write(std::move(refusal), Reply{header.version(), /*keep_alive=*/false, header.method() == http::verb::head});
      return true;
    }
    // The request's read deadline, already running, covers this write: a client that stops reading
    // cannot hold the connection past it.
    stream_.async_write({net::buffer(kContinue.data(), kContinue.size()), net::const_buffer()},
                        beast::bind_front_handler(&Session::on_continue, shared_from_this()));
    return true;
  }

  void on_continue(beast::error_code ec, std::size_t) {
    if (ec) {
      spdlog::debug("{} write of 100 Continue failed: {}", remote(), ec.message());
      return;
    }
    parse_buffered();  // now read the body
  }

  void on_read_some(beast::error_code ec, std::size_t bytes) {
    buffer_.commit(bytes);
    if (ec == net::error::eof) {
      if (!parser_->got_some()) return on_read(http::error::end_of_stream, 0);
      ec = {};
      parser_->put_eof(ec);  // a message that ends with the connection, or partial_message
      return on_read(ec, 0);
    }
    if (ec) return on_read(ec, 0);
    parse_buffered();
  }

  void on_read(beast::error_code ec, std::size_t) {
    waiting_for_request_ = false;
    if (ec == http::error::end_of_stream || ec == net::ssl::error::stream_truncated) return do_close();
    if (ec == http::error::body_limit) {
      return reply_error(413, "request body exceeds " + std::to_string(server_.options_.body_limit) + " bytes");
    }
    if (ec == http::error::header_limit) return reply_error(431, "request header too large");
    if (ec) {
      // Closed by its deadline, cancelled by a drain, reset by the peer: nothing to answer. A request
      // that arrived in part and is malformed gets a 400.
      if (stream_.lowest_layer().is_open() && parser_->got_some() && ec != net::error::operation_aborted) {
        return reply_error(400, "malformed HTTP request: " + ec.message());
      }
      return;
    }
    RequestParser& message = *parser_;
    HttpRequest request;
    request.method = std::string(message.method_string());
    const std::string_view target = message.target();
    auto question = target.find('?');
    request.path = std::string(target.substr(0, question));
    if (question != std::string_view::npos) request.query = std::string(target.substr(question + 1));
    request.content_type = std::string(message.content_type());
    request.body = message.release_body();
    request.received = std::chrono::steady_clock::now();
    Reply reply{message.version(), message.keep_alive(), message.method() == http::verb::head};
    HttpResponse refusal;
    const Route* route = server_.find_route(request, refusal);
    if (route == nullptr) return write(std::move(refusal), reply);
    if (route->offload && route->offload(request)) {
      // Off this thread; the answer comes back to the connection's thread to be written.
      net::post(server_.offload_pool_, [self = shared_from_this(), route, request = std::move(request), reply]() mutable {
        self->handle(*route, request, reply, /*on_connection_thread=*/false);
      });
      return;
    }
    handle(*route, request, reply, /*on_connection_thread=*/true);
  }

  // What the request decided about its response.
  struct Reply {
    unsigned version;  // 10 or 11
    bool keep_alive;
    bool head;  // a HEAD request: the headers of the response, no body
  };

  // Runs the route's handler on this thread; its response is written now, or, from a deferring handler
  // that answers later, when it calls back.
  void handle(const Route& route, HttpRequest& request, Reply reply, bool on_connection_thread) {
    std::optional<HttpResponse> response;
    if (route.deferring) {
      struct Later final : Deferral {
        Later(Session& session, Reply reply) : session(session), reply(reply) {}
        Respond take() override {  // the session lives until the answer is written
          return [self = session.shared_from_this(), reply = reply](std::function<HttpResponse()> make) {
            net::post(self->stream_.get_executor(), [self, reply, make = std::move(make)] {
              self->write(guarded("a deferred answer", [&] { return make(); }), reply);
            });
          };
        }
        Session& session;
        Reply reply;
      } later(*this, reply);
      response = guarded(request.path, [&] { return route.deferring(request, later); });
      if (!response) return;
    } else {
      response = guarded(request.path, [&] { return route.handler(request); });
    }
    if (on_connection_thread) return write(std::move(*response), reply);
    net::post(stream_.get_executor(), [self = shared_from_this(), response = std::move(*response), reply]() mutable {
      self->write(std::move(response), reply);
    });
  }

  // A handler's answer, or a 500 when it throws.
  template <class Handler>
  static auto guarded(std::string_view what, Handler&& handler) -> decltype(handler()) {
    try {
      return handler();
    } catch (const std::exception& e) {
      spdlog::error("handler for {} failed: {}", what, e.what());
      return HttpResponse{500, "text/plain; charset=utf-8", std::string("internal error: ") + e.what() + "\n", {}};
    }
  }

  void reply_error(int status, std::string text) {
    spdlog::warn("{} answered {}: {}", remote(), status, text);
    write({status, "text/plain; charset=utf-8", std::move(text) + "\n", {}}, Reply{11, /*keep_alive=*/false, false});
  }

  // The response is serialized by hand into one buffer, so it leaves in one TLS record and one send
  // (Asio's SSL stream writes a buffer sequence one buffer at a time). Bodies too big to copy cheaply
  // follow as a second buffer.
  void write(HttpResponse response, Reply reply) {
    // Once shutdown began, every response closes its connection: the listener stays open for the
    // shutdown delay (while the Service's endpoints drop this pod), and a keep-alive client would
    // otherwise go on using its connection until the drain closes it, racing a request against the close.
    // Told to close, it opens a new connection, to another replica.
    bool keep_alive = reply.keep_alive && !draining_ && !server_.stopping_.load(std::memory_order_relaxed);
    auto reason = http::obsolete_reason(static_cast<http::status>(response.status));
    out_.clear();
    out_.reserve(256 + response.body.size());
    out_ += reply.version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
    out_ += std::to_string(response.status);
    out_ += ' ';
    out_.append(reason.data(), reason.size());
    out_ += "\r\nServer: karta-webhook\r\nContent-Type: ";
    out_ += response.content_type;
    for (const auto& [name, value] : response.headers) {
      out_ += "\r\n";
      out_ += name;
      out_ += ": ";
      out_ += value;
    }
    out_ += "\r\nContent-Length: ";
    out_ += std::to_string(response.body.size());
    if (reply.version == 10 && keep_alive) out_ += "\r\nConnection: keep-alive";
    if (reply.version != 10 && !keep_alive) out_ += "\r\nConnection: close";
    out_ += "\r\n\r\n";
    body_.clear();
    if (!reply.head) {
      if (response.body.size() <= kInlineBody) {
        out_ += response.body;
      } else {
        body_ = std::move(response.body);
      }
    }
    set_deadline(server_.options_.write_timeout);
    std::array<net::const_buffer, 2> buffers{net::buffer(out_), net::buffer(body_)};
    stream_.async_write(buffers, beast::bind_front_handler(&Session::on_write, shared_from_this(), !keep_alive));
  }

  void on_write(bool close, beast::error_code ec, std::size_t) {
    if (body_.capacity() > kInlineBody) std::string().swap(body_);
    if (out_.capacity() > 4 * kInlineBody) std::string().swap(out_);  // do not keep a big response per connection
    if (ec) {
      spdlog::debug("{} write failed: {}", remote(), ec.message());
      return;
    }
    if (close || draining_) return do_close();
    do_read();
  }

  void do_close() {
    set_deadline(std::chrono::seconds(5));
    stream_.async_shutdown(beast::bind_front_handler(&Session::on_shutdown, shared_from_this()));
  }

  void on_shutdown(beast::error_code) {
    beast::error_code ec;
    timer_.cancel();
    stream_.lowest_layer().close(ec);
  }

  std::string remote() {
    beast::error_code ec;
    auto endpoint = stream_.lowest_layer().remote_endpoint(ec);
    return ec ? std::string("client") : endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
  }

  static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
  static constexpr std::size_t kInlineBody = 64 * 1024;
  static constexpr std::size_t kReadSize = 64 * 1024;  // at most this much per read, as Beast reads
  static constexpr std::size_t kMinRead = 4 * 1024;    // kept by each connection's buffer once used

  HttpsServer& server_;
  std::shared_ptr<net::ssl::context> tls_;  // outlives the stream: a reload must not free it under us
  TlsStream stream_;  // OpenSSL over the socket, reading what Asio receives (server/tls_stream.h)
  Timer timer_;
  std::chrono::steady_clock::time_point deadline_;
  bool timer_armed_ = false;
  beast::flat_buffer buffer_;
  std::optional<RequestParser> parser_;
  std::string out_;   // the response head, and its body when small
  std::string body_;  // a big response's body
  bool waiting_for_request_ = false;
  bool header_seen_ = false;  // this request's header was parsed and looked at
  bool draining_ = false;
};

HttpsServer::HttpsServer(ServerOptions options, std::shared_ptr<CertificateStore> certificates, std::vector<Route> routes)
    : options_(std::move(options)),
      certificates_(std::move(certificates)),
      routes_(std::move(routes)),
      contexts_(make_contexts(options_.threads)),
      acceptor_(control()),
      certificate_timer_(housekeeping_.get_executor()),
      drain_timer_(control()),
      signals_(control()) {
  for (auto& context : contexts_) work_guards_.push_back(net::make_work_guard(*context));
  // OpenSSL writes to the socket itself (server/tls_stream.h), without MSG_NOSIGNAL: a peer gone
  // mid-write must fail that write (EPIPE), not end the process, as in nginx.
  std::signal(SIGPIPE, SIG_IGN);
}

HttpsServer::~HttpsServer() = default;

unsigned short HttpsServer::listen() {
  beast::error_code ec;
  auto address = net::ip::make_address(options_.bind_address, ec);
  if (ec) throw std::runtime_error("--bind-address " + options_.bind_address + ": not an IP address");
  tcp::endpoint endpoint{address, options_.port};
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    throw std::runtime_error("cannot listen on " + options_.bind_address + ":" + std::to_string(options_.port) + ": " +
                             ec.message());
  }
  return acceptor_.local_endpoint().port();
}

void HttpsServer::run(bool handle_signals) {
  if (handle_signals) {
    signals_.add(SIGTERM);
    signals_.add(SIGINT);
    signals_.async_wait([this](beast::error_code ec, int signal) {
      if (ec) return;
      spdlog::info("received signal {}: shutting down", signal);
      shutdown();
    });
  }
  do_accept();
  net::post(housekeeping_, [this] { poll_certificates(); });
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < contexts_.size(); ++i) threads.emplace_back([this, i] { contexts_[i]->run(); });
  control().run();
  for (auto& thread : threads) thread.join();
  offload_pool_.join();
  housekeeping_.join();
}

void HttpsServer::shutdown() {
  if (stopping_.exchange(true)) return;
  net::post(control(), [this] {
    if (on_shutdown_begin_) on_shutdown_begin_();
    drain_timer_.expires_after(options_.shutdown_delay);
    drain_timer_.async_wait([this](beast::error_code) { begin_drain(); });
  });
}

void HttpsServer::begin_drain() {
  beast::error_code ec;
  acceptor_.close(ec);
  // The timer belongs to the housekeeping thread: cancelled there, not from this one.
  net::post(housekeeping_, [this] { certificate_timer_.cancel(); });
  signals_.cancel();
  // Take owning references under the lock, drain outside it: the last reference to a session may be
  // dropped here, and its destructor takes the same lock to unregister.
  std::vector<std::shared_ptr<Session>> open;
  {
    std::lock_guard lock(sessions_mutex_);
    for (Session* session : sessions_) {
      // A session mid-destruction (waiting for the lock to unregister) has nothing left to drain.
      if (auto owned = session->weak_from_this().lock()) open.push_back(std::move(owned));
    }
  }
  for (const auto& session : open) session->drain();
  open.clear();
  drain_deadline_ = std::chrono::steady_clock::now() + options_.drain_timeout;
  check_drained();
}

void HttpsServer::check_drained() {
  if (open_connections() == 0 || std::chrono::steady_clock::now() >= drain_deadline_) {
    if (open_connections() != 0) spdlog::warn("drain deadline passed with {} connections open", open_connections());
    spdlog::info("shutdown complete");
    for (auto& guard : work_guards_) guard.reset();
    for (auto& context : contexts_) context->stop();
    return;
  }
  drain_timer_.expires_after(std::chrono::milliseconds(20));
  drain_timer_.async_wait([this](beast::error_code) { check_drained(); });
}

void HttpsServer::do_accept() {
  net::io_context& context = *contexts_[next_context_++ % contexts_.size()];
  acceptor_.async_accept(context, [this](beast::error_code ec, Socket socket) {
    if (ec) {
      if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
      spdlog::warn("accept failed: {}", ec.message());
    } else if (open_connections() >= options_.max_connections) {
      spdlog::warn("refusing a connection: {} open", open_connections());
    } else {
      // As nginx does for keep-alive connections: a response is one write, and must not wait for
      // the acknowledgement of the previous one (Nagle's algorithm).
      beast::error_code option_error;
      socket.set_option(tcp::no_delay(true), option_error);
      try {
        std::make_shared<Session>(*this, std::move(socket), certificates_->current())->run();
      } catch (const std::exception& e) {  // no memory for its TLS state, say: this connection only
        spdlog::warn("dropping a new connection: {}", e.what());
      }
    }
    if (!stopping_) do_accept();
  });
}

void HttpsServer::poll_certificates() {
  certificate_timer_.expires_after(options_.certificate_poll);
  certificate_timer_.async_wait([this](beast::error_code ec) {
    if (ec || stopping_) return;
    if (certificates_->reload_if_changed()) {
      spdlog::info("TLS certificate reloaded from {}", certificates_->files().certificate.string());
      last_certificate_error_.clear();
      if (on_certificate_reload_) on_certificate_reload_(true);
    } else if (auto error = certificates_->last_error(); !error.empty() && error != last_certificate_error_) {
      spdlog::warn("TLS certificate not reloaded (still serving the previous one): {}", error);
      last_certificate_error_ = error;
      if (on_certificate_reload_) on_certificate_reload_(false);
    }
    poll_certificates();
  });
}

const Route* HttpsServer::find_route(const HttpRequest& request, HttpResponse& refusal) const {
  std::string allowed;
  for (const auto& route : routes_) {
    if (route.path != request.path) continue;
    if (route.method == request.method) return &route;
    allowed += (allowed.empty() ? "" : ", ") + route.method;
  }
  if (!allowed.empty()) {
    refusal = {405, "text/plain; charset=utf-8",
               request.method + " is not allowed on " + request.path + "; use " + allowed + "\n", {{"Allow", allowed}}};
  } else {
    refusal = {404, "text/plain; charset=utf-8", "no route for " + request.path + "\n", {}};
  }
  return nullptr;
}

HttpResponse HttpsServer::dispatch(const HttpRequest& request) const {
  HttpResponse refusal;
  const Route* route = find_route(request, refusal);
  if (route == nullptr) return refusal;
  if (!route->deferring) return route->handler(request);
  // An answer given later is waited for here, and made on the thread that gives it.
  struct Later final : Deferral {
    Respond take() override {
      return [promise = promise](std::function<HttpResponse()> make) { promise->set_value(make()); };
    }
    std::shared_ptr<std::promise<HttpResponse>> promise = std::make_shared<std::promise<HttpResponse>>();
  } later;
  std::future<HttpResponse> answer = later.promise->get_future();
  HttpRequest own = request;
  if (auto now = route->deferring(own, later)) return *now;
  return answer.get();
}

std::size_t HttpsServer::open_connections() const {
  std::lock_guard lock(sessions_mutex_);
  return sessions_.size();
}

void HttpsServer::register_session(Session* session) {
  std::lock_guard lock(sessions_mutex_);
  sessions_.insert(session);
}

void HttpsServer::unregister_session(Session* session) {
  bool idle = false;
  {
    std::lock_guard lock(sessions_mutex_);
    sessions_.erase(session);
    const auto now = std::chrono::steady_clock::now();
    if (sessions_.empty() && on_idle_ && now - last_idle_ >= std::chrono::seconds(1)) {
      last_idle_ = now;
      idle = true;
    }
  }
  if (idle) on_idle_();
}

}  // namespace karta
