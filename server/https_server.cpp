#include "server/https_server.h"

#include <optional>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <spdlog/spdlog.h>

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

class HttpsServer::Session : public std::enable_shared_from_this<HttpsServer::Session> {
 public:
  Session(HttpsServer& server, tcp::socket&& socket, std::shared_ptr<net::ssl::context> tls)
      : server_(server), tls_(std::move(tls)), stream_(std::move(socket), *tls_) {
    server_.register_session(this);
  }
  ~Session() { server_.unregister_session(this); }

  void run() {
    net::dispatch(stream_.get_executor(), beast::bind_front_handler(&Session::on_run, shared_from_this()));
  }

  // Called on shutdown: an idle connection closes now, a busy one after its response.
  void drain() {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      self->draining_ = true;
      if (self->waiting_for_request_ && !(self->parser_ && self->parser_->got_some())) {
        beast::get_lowest_layer(self->stream_).cancel();
      }
    });
  }

 private:
  void on_run() {
    beast::get_lowest_layer(stream_).expires_after(server_.options_.handshake_timeout);
    stream_.async_handshake(net::ssl::stream_base::server,
                            beast::bind_front_handler(&Session::on_handshake, shared_from_this()));
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
    waiting_for_request_ = true;
    if (draining_) return do_close();
    beast::get_lowest_layer(stream_).expires_after(server_.options_.read_timeout);
    http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&Session::on_read, shared_from_this()));
  }

  void on_read(beast::error_code ec, std::size_t) {
    waiting_for_request_ = false;
    if (ec == http::error::end_of_stream || ec == net::ssl::error::stream_truncated) return do_close();
    if (ec == beast::error::timeout || ec == net::error::operation_aborted) return;  // idle, or drained
    if (ec == http::error::body_limit) {
      return reply_error(413, "request body exceeds " + std::to_string(server_.options_.body_limit) + " bytes");
    }
    if (ec == http::error::header_limit) return reply_error(431, "request header too large");
    if (ec) {
      if (parser_->got_some()) return reply_error(400, "malformed HTTP request: " + ec.message());
      return;
    }
    http::request<http::string_body> message = parser_->release();
    HttpRequest request;
    request.method = std::string(message.method_string());
    std::string_view target(message.target().data(), message.target().size());
    auto question = target.find('?');
    request.path = std::string(target.substr(0, question));
    if (question != std::string_view::npos) request.query = std::string(target.substr(question + 1));
    request.content_type = std::string(message[http::field::content_type]);
    request.body = std::move(message.body());
    unsigned version = message.version();
    bool keep_alive = message.keep_alive();
    HttpResponse refusal;
    const Route* route = server_.find_route(request, refusal);
    if (route == nullptr) return write(std::move(refusal), version, keep_alive && !draining_);
    if (route->offload && route->offload(request)) {
      // Off this thread; the answer comes back to the connection's strand to be written.
      net::post(server_.offload_pool_, [self = shared_from_this(), route, request = std::move(request), version,
                                        keep_alive]() mutable {
        HttpResponse response = run_handler(*route, request);
        net::post(self->stream_.get_executor(), [self, response = std::move(response), version, keep_alive]() mutable {
          self->write(std::move(response), version, keep_alive && !self->draining_);
        });
      });
      return;
    }
    write(run_handler(*route, request), version, keep_alive && !draining_);
  }

  static HttpResponse run_handler(const Route& route, const HttpRequest& request) {
    try {
      return route.handler(request);
    } catch (const std::exception& e) {
      spdlog::error("handler for {} {} failed: {}", request.method, request.path, e.what());
      return {500, "text/plain; charset=utf-8", std::string("internal error: ") + e.what() + "\n", {}};
    }
  }

  void reply_error(int status, std::string text) {
    spdlog::warn("{} answered {}: {}", remote(), status, text);
    write({status, "text/plain; charset=utf-8", std::move(text) + "\n", {}}, 11, /*keep_alive=*/false);
  }

  void write(HttpResponse response, unsigned version, bool keep_alive) {
    auto message = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(response.status), version);
    message->set(http::field::server, "karta-webhook");
    message->set(http::field::content_type, response.content_type);
    for (const auto& [name, value] : response.headers) message->set(name, value);
    message->body() = std::move(response.body);
    message->keep_alive(keep_alive);
    message->prepare_payload();
    response_ = message;
    beast::get_lowest_layer(stream_).expires_after(server_.options_.write_timeout);
    http::async_write(stream_, *message,
                      beast::bind_front_handler(&Session::on_write, shared_from_this(), message->need_eof()));
  }

  void on_write(bool close, beast::error_code ec, std::size_t) {
    response_.reset();
    if (ec) {
      spdlog::debug("{} write failed: {}", remote(), ec.message());
      return;
    }
    if (close || draining_) return do_close();
    do_read();
  }

  void do_close() {
    beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(5));
    stream_.async_shutdown(beast::bind_front_handler(&Session::on_shutdown, shared_from_this()));
  }

  void on_shutdown(beast::error_code) {}

  std::string remote() {
    beast::error_code ec;
    auto endpoint = beast::get_lowest_layer(stream_).socket().remote_endpoint(ec);
    return ec ? std::string("client") : endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
  }

  HttpsServer& server_;
  std::shared_ptr<net::ssl::context> tls_;  // outlives the stream: a reload must not free it under us
  beast::ssl_stream<beast::tcp_stream> stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<void> response_;
  bool waiting_for_request_ = false;
  bool draining_ = false;
};

HttpsServer::HttpsServer(ServerOptions options, std::shared_ptr<CertificateStore> certificates, std::vector<Route> routes)
    : options_(std::move(options)),
      certificates_(std::move(certificates)),
      routes_(std::move(routes)),
      contexts_(make_contexts(options_.threads)),
      acceptor_(control()),
      certificate_timer_(control()),
      drain_timer_(control()),
      signals_(control()) {
  for (auto& context : contexts_) work_guards_.push_back(net::make_work_guard(*context));
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
  poll_certificates();
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < contexts_.size(); ++i) threads.emplace_back([this, i] { contexts_[i]->run(); });
  control().run();
  for (auto& thread : threads) thread.join();
  offload_pool_.join();
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
  certificate_timer_.cancel();
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
  acceptor_.async_accept(context, [this](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
      spdlog::warn("accept failed: {}", ec.message());
    } else if (open_connections() >= options_.max_connections) {
      spdlog::warn("refusing a connection: {} open", open_connections());
    } else {
      std::make_shared<Session>(*this, std::move(socket), certificates_->current())->run();
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
  return route != nullptr ? route->handler(request) : refusal;
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
  std::lock_guard lock(sessions_mutex_);
  sessions_.erase(session);
}

}  // namespace karta
