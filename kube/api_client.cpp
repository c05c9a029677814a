// Longer than 500 lines because one Impl holds every step of a request on one io_context, each with
// its deadline and its message: resolve, connect, the proxy's CONNECT tunnel, TLS (with the exec
// plugin's client certificate), the request, the answer, and the one retry after a 401. The errors it
// throws are kube/api_error.cpp's.
#include "kube/api_client.h"

#include <poll.h>

#include <atomic>
#include <limits>
#include <optional>
#include <vector>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "json/json_document.h"
#include "kube/api_path.h"
#include "kube/json_fields.h"
#include "kube/server_name_check.h"

namespace karta::kube {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

std::string milliseconds_text(std::chrono::milliseconds duration) { return std::to_string(duration.count()) + " ms"; }

// Why `value` must not go out as a header value, "" when it may: as Go's net/http refuses it
// (httpguts.ValidHeaderFieldValue), any control character but a tab. A CR or LF would end the header
// and start another, or a second request. Only the position is told: the value may be a credential.
std::string header_value_fault(std::string_view value) {
  for (std::size_t i = 0; i < value.size(); ++i) {
    auto c = static_cast<unsigned char>(value[i]);
    if ((c < 0x20 && c != '\t') || c == 0x7f) {
      return "holds a control character (byte " + std::to_string(i) + " of " + std::to_string(value.size()) + ")";
    }
  }
  return "";
}

}  // namespace

// Named rather than anonymous: ApiClient::Impl holds them, and GCC warns (-Wsubobject-linkage) when a
// class with external linkage has a member of an anonymous namespace's type outside the main file, as
// this file is in the unity build.
namespace api_client_detail {

// One TLS connection to the API server, and the bytes read past the last message.
struct Connection {
  Connection(net::io_context& io, net::ssl::context& tls) : stream(io, tls) {}
  beast::ssl_stream<beast::tcp_stream> stream;
  beast::flat_buffer buffer;
  unsigned long credential_generation = 0;  // of the exec credential whose certificate it presented
  void close() { beast::get_lowest_layer(stream).close(); }
};

// Points the client's in_use at a connection for as long as operations run on it, however they end.
struct InUse {
  InUse(Connection*& slot, Connection* connection) : slot_(slot) { slot_ = connection; }
  ~InUse() { slot_ = nullptr; }
  InUse(const InUse&) = delete;
  InUse& operator=(const InUse&) = delete;
  Connection*& slot_;
};

}  // namespace api_client_detail

using api_client_detail::Connection;
using api_client_detail::InUse;

// Each operation is started asynchronously and io is run on the calling thread until it completes:
// that gives every step a timeout, and lets cancel() post a close that the running operation sees.
struct ApiClient::Impl {
  KubeConnection connection;
  ApiClientOptions options;
  net::io_context io{1};  // declared first: destroyed after everything that uses it
  net::ssl::context tls{net::ssl::context::tls_client};
  tcp::resolver resolver{io};
  std::unique_ptr<Connection> kept;  // get()'s keep-alive connection
  Connection* in_use = nullptr;      // the connection an operation is running on
  std::atomic<bool> cancelled{false};
  std::optional<std::chrono::steady_clock::time_point> deadline;  // of the get() in progress, if it has one

  Impl(KubeConnection c, ApiClientOptions o) : connection(std::move(c)), options(std::move(o)) { configure_tls(); }

  void configure_tls() {
    namespace ssl = net::ssl;
    tls.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                    ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    SSL_CTX_set_min_proto_version(tls.native_handle(), TLS1_2_VERSION);
    beast::error_code ec;
    if (connection.insecure_skip_tls_verify) {
      tls.set_verify_mode(ssl::verify_none);
    } else {
      tls.set_verify_mode(ssl::verify_peer);
      if (connection.ca_pem) {
        tls.add_certificate_authority(net::buffer(*connection.ca_pem), ec);
        if (ec) throw KubeConfigError(connection.source + ": certificate authority unusable: " + ec.message());
      } else {
        tls.set_default_verify_paths(ec);
        if (ec) throw KubeConfigError(connection.source + ": the system's CA store cannot be loaded: " + ec.message());
      }
    }
    if (!connection.client_certificate_pem.empty()) {
      tls.use_certificate_chain(net::buffer(connection.client_certificate_pem), ec);
      if (ec) throw KubeConfigError(connection.source + ": client certificate unusable: " + ec.message());
      tls.use_private_key(net::buffer(connection.client_key_pem), ssl::context::pem, ec);
      if (ec) throw KubeConfigError(connection.source + ": client key unusable: " + ec.message());
      if (SSL_CTX_check_private_key(tls.native_handle()) != 1) {
        ERR_clear_error();
        throw KubeConfigError(connection.source + ": the client key does not match the client certificate");
      }
    }
  }

  ApiError cancelled_error(const std::string& request) const {
    return ApiError(request + ": cancelled", 0, "", "cancelled", /*cancelled=*/true);
  }

  ApiError transport_error(const std::string& request, const std::string& fault) const {
    return ApiError(request + ": " + fault, 0, "", fault);
  }

  // Before anything is sent: a target that could end the request line, add a header or name another
  // path is refused, named with its control characters escaped.
  void check_target(const std::string& path_and_query) const {
    std::string fault = target_fault(connection.base_path + path_and_query);
    if (fault.empty()) return;
    throw ApiError("GET " + printable(connection.server_url() + path_and_query) +
                       ": refused before sending: " + fault,
                   0, "", fault);
  }

  std::string address() const { return authority_host(connection.host) + ":" + std::to_string(connection.port); }

  // Starts an operation with start(done) and runs io until it has completed. Throws when cancelled, or
  // when the deadline passes first (the connection is then closed, as cancel() closes it).
  template <class Start>
  beast::error_code wait(const std::string& request, Start&& start) {
    if (cancelled) throw cancelled_error(request);
    bool cut = deadline && std::chrono::steady_clock::now() >= *deadline;
    if (cut) throw transport_error(request, "no answer before the caller's deadline");
    beast::error_code result;
    net::steady_timer cutoff(io, deadline.value_or(std::chrono::steady_clock::time_point::max()));
    if (deadline) {
      cutoff.async_wait([this, &cut](beast::error_code ec) {
        if (ec) return;  // the operation completed first
        cut = true;
        close_all();
      });
    }
    start([&result, &cutoff](beast::error_code ec) {
      result = ec;
      cutoff.cancel();
    });
    io.restart();
    io.run();
    if (cancelled) throw cancelled_error(request);
    if (cut) throw transport_error(request, "no answer before the caller's deadline");
    return result;
  }

  // Runs on the requesting thread, inside io.run(), when cancel() was called from another.
  void close_all() {
    resolver.cancel();
    if (in_use != nullptr) in_use->close();
    if (kept) kept->close();
  }

  // The exec plugin's credential for the next request (running the plugin when it has expired).
  std::optional<ExecCredential> exec_credential() const {
    if (!connection.exec) return std::nullopt;
    return connection.exec->current();
  }

  // Where the TCP connection goes: the API server, or the proxy that tunnels to it.
  std::string dialled() const {
    return connection.proxy ? "proxy " + connection.proxy->url + " (from " + connection.proxy->source + ")" : address();
  }

  std::unique_ptr<Connection> open(const std::string& request, const std::optional<ExecCredential>& credential = {}) {
    const std::string& dial_host = connection.proxy ? connection.proxy->host : connection.host;
    const unsigned short dial_port = connection.proxy ? connection.proxy->port : connection.port;
    tcp::resolver::results_type endpoints;
    net::steady_timer resolve_timer(io);
    bool resolve_timed_out = false;
    beast::error_code ec = wait(request, [&](auto done) {
      resolve_timer.expires_after(options.connect_timeout);
      resolve_timer.async_wait([&](beast::error_code timer_ec) {
        if (timer_ec) return;
        resolve_timed_out = true;
        resolver.cancel();
      });
      resolver.async_resolve(dial_host, std::to_string(dial_port),
                             [&, done](beast::error_code resolve_ec, tcp::resolver::results_type results) {
                               resolve_timer.cancel();
                               endpoints = std::move(results);
                               done(resolve_ec);
                             });
    });
    const std::string of_proxy = connection.proxy ? " (" + dialled() + ")" : "";
    if (resolve_timed_out) {
      throw transport_error(request, "cannot resolve " + dial_host + of_proxy + " within " +
                                         milliseconds_text(options.connect_timeout));
    }
    if (ec) throw transport_error(request, "cannot resolve " + dial_host + of_proxy + ": " + ec.message());

    auto opened = std::make_unique<Connection>(io, tls);
    InUse opening(in_use, opened.get());
    auto& lowest = beast::get_lowest_layer(opened->stream);
    lowest.expires_after(options.connect_timeout);
    ec = wait(request, [&](auto done) {
      lowest.async_connect(endpoints, [done](beast::error_code connect_ec, const tcp::endpoint&) { done(connect_ec); });
    });
    if (ec == beast::error::timeout) {
      throw transport_error(request,
                            "no connection to " + dialled() + " within " + milliseconds_text(options.connect_timeout));
    }
    if (ec) throw transport_error(request, "cannot connect to " + dialled() + ": " + ec.message());
    beast::error_code ignored;
    lowest.socket().set_option(tcp::no_delay(true), ignored);
    // A watch can be quiet for minutes: keepalive notices a peer that vanished without closing.
    lowest.socket().set_option(net::socket_base::keep_alive(true), ignored);
    if (connection.proxy) tunnel(request, *opened);

    // The name the certificate must carry: tls-server-name when given, else the host.
    const std::string& name = connection.tls_server_name.empty() ? connection.host : connection.tls_server_name;
    SSL* ssl = opened->stream.native_handle();
    if (!require_server_name(ssl, name)) {
      // Never go on: the certificate would then be checked against no name at all.
      ERR_clear_error();
      std::string fault = server_name_fault(name);
      throw transport_error(request, "refused before the TLS handshake: the server name to check the certificate "
                                     "against (" + std::string(connection.tls_server_name.empty() ? "the server URL's host" : "tls-server-name") +
                                     ") " + (fault.empty() ? "is not one OpenSSL can check" : fault));
    }
    if (credential && !credential->client_certificate_pem.empty()) {
      present_certificate(ssl, *credential);
      opened->credential_generation = credential->generation;
    }
    auto name_mismatch = std::make_shared<std::string>();  // what the certificate names instead, if that failed
    if (!connection.insecure_skip_tls_verify) {
      opened->stream.set_verify_callback([name_mismatch, name](bool preverified, net::ssl::verify_context& context) {
        if (!preverified && name_mismatch->empty())
          *name_mismatch = server_name_mismatch(context.native_handle(), name);
        return preverified;
      });
    }
    lowest.expires_after(options.handshake_timeout);
    ec = wait(request, [&](auto done) {
      opened->stream.async_handshake(net::ssl::stream_base::client,
                                     [done](beast::error_code handshake_ec) { done(handshake_ec); });
    });
    if (ec == beast::error::timeout) {
      throw transport_error(
          request, "no TLS handshake with " + address() + " within " + milliseconds_text(options.handshake_timeout));
    }
    if (ec) {
      std::string fault = "TLS handshake with " + address() + " failed: " + ec.message();
      long verify = SSL_get_verify_result(ssl);
      if (!name_mismatch->empty()) {
        fault += " (" + *name_mismatch + ")";
      } else if (verify != X509_V_OK) {
        fault += " (" + std::string(X509_verify_cert_error_string(verify)) + ", checking \"" + name + "\")";
      }
      ERR_clear_error();
      throw transport_error(request, fault);
    }
    return opened;
  }

  // HTTP CONNECT to the API server through the proxy, as Go's transport asks for a tunnel: the TLS
  // handshake with the API server then runs inside it.
  void tunnel(const std::string& request, Connection& opened) {
    auto& lowest = beast::get_lowest_layer(opened.stream);
    const std::string authority = address();
    require_header_value("the CONNECT request's authority (the server URL's host)", authority);
    if (!connection.proxy->authorization.empty()) {
      require_header_value("Proxy-Authorization (the user information of " + connection.proxy->url + ", from " +
                               connection.proxy->source + ")",
                           connection.proxy->authorization);
    }
    http::request<http::empty_body> connect{http::verb::connect, authority, 11};
    connect.set(http::field::host, authority);
    connect.set(http::field::user_agent, options.user_agent);
    if (!connection.proxy->authorization.empty()) {
      connect.set(http::field::proxy_authorization, connection.proxy->authorization);
    }
    lowest.expires_after(options.handshake_timeout);
    http::response_parser<http::empty_body> parser;
    parser.skip(true);  // a CONNECT answer has no body: the tunnel follows
    beast::flat_buffer buffer;
    beast::error_code ec = wait(request, [&](auto done) {
      http::async_write(lowest, connect, [done](beast::error_code write_ec, std::size_t) { done(write_ec); });
    });
    if (!ec) {
      ec = wait(request, [&](auto done) {
        http::async_read(lowest, buffer, parser, [done](beast::error_code read_ec, std::size_t) { done(read_ec); });
      });
    }
    if (ec == beast::error::timeout) {
      throw transport_error(request, "no answer from " + dialled() + " to CONNECT " + authority + " within " +
                                         milliseconds_text(options.handshake_timeout));
    }
    if (ec) throw transport_error(request, "CONNECT " + authority + " through " + dialled() + " failed: " + ec.message());
    int status = static_cast<int>(parser.get().result_int());
    if (status != 200) {
      throw transport_error(request, dialled() + " refused CONNECT " + authority + ": " + std::to_string(status) + " " +
                                         std::string(parser.get().reason()));
    }
    if (buffer.size() != 0) throw transport_error(request, dialled() + " sent data before the TLS handshake");
  }

  // The exec plugin's client certificate (and any chain after it) and key, on this connection only.
  void present_certificate(SSL* ssl, const ExecCredential& credential) const {
    auto fault = [&](const std::string& what) {
      ERR_clear_error();
      throw KubeConfigError(connection.exec->config().field + ": the credential plugin's " + what);
    };
    std::unique_ptr<BIO, decltype(&BIO_free)> certificates(
        BIO_new_mem_buf(credential.client_certificate_pem.data(), static_cast<int>(credential.client_certificate_pem.size())),
        &BIO_free);
    X509* leaf = PEM_read_bio_X509(certificates.get(), nullptr, nullptr, nullptr);
    if (leaf == nullptr) fault("clientCertificateData holds no PEM certificate");
    int used = SSL_use_certificate(ssl, leaf);
    X509_free(leaf);
    if (used != 1) fault("client certificate cannot be used");
    while (X509* chained = PEM_read_bio_X509(certificates.get(), nullptr, nullptr, nullptr)) {
      if (SSL_add0_chain_cert(ssl, chained) != 1) X509_free(chained);
    }
    ERR_clear_error();
    std::unique_ptr<BIO, decltype(&BIO_free)> key(
        BIO_new_mem_buf(credential.client_key_pem.data(), static_cast<int>(credential.client_key_pem.size())), &BIO_free);
    EVP_PKEY* private_key = PEM_read_bio_PrivateKey(key.get(), nullptr, nullptr, nullptr);
    if (private_key == nullptr) fault("clientKeyData holds no PEM private key");
    used = SSL_use_PrivateKey(ssl, private_key);
    EVP_PKEY_free(private_key);
    if (used != 1 || SSL_check_private_key(ssl) != 1) fault("client key does not match its client certificate");
  }

  // Throws KubeConfigError naming `field` when `value` may not be sent as a header value.
  void require_header_value(const std::string& field, std::string_view value) const {
    if (std::string fault = header_value_fault(value); !fault.empty()) {
      throw KubeConfigError(connection.source + ": " + field + " " + fault +
                            ", which would end the header and add others; nothing was sent");
    }
  }

  // Where the bearer token came from and how to mend it, for a token that may not be sent.
  std::string token_origin(const std::optional<ExecCredential>& credential) const {
    if (credential) {
      return "the bearer token (status.token) of the credential plugin of " + connection.exec->config().field +
             ": the plugin must print the token alone;";
    }
    if (!connection.token_file.empty()) {
      return "the bearer token read from the tokenFile " + connection.token_file.string() +
             ": the file must hold the token alone (a final newline is trimmed);";
    }
    return "the bearer token of the user's token field: it must hold the token alone;";
  }

  http::request<http::empty_body> make_request(const std::string& path_and_query,
                                               const std::optional<ExecCredential>& credential,
                                               const std::string& accept) const {
    http::request<http::empty_body> request{http::verb::get, connection.base_path + path_and_query, 11};
    std::string host = authority_host(connection.host);
    if (connection.port != 443) host += ":" + std::to_string(connection.port);
    require_header_value("Host (the server URL's host)", host);
    request.set(http::field::host, host);
    request.set(http::field::user_agent, options.user_agent);
    require_header_value("Accept", accept);
    request.set(http::field::accept, accept);
    // Read now: the token file may have been rotated.
    std::string token = credential ? credential->token : connection.bearer_token();
    if (std::string fault = header_value_fault(token); !fault.empty()) {
      throw KubeConfigError(connection.source + ": " + token_origin(credential) + " it " + fault +
                            ", which would end the Authorization header and add others (or a second request); "
                            "nothing was sent");
    }
    if (!token.empty()) request.set(http::field::authorization, "Bearer " + token);
    return request;
  }

  std::string read_fault(const beast::error_code& ec, std::chrono::milliseconds timeout) const {
    if (ec == beast::error::timeout) return "no complete answer within " + milliseconds_text(timeout);
    if (ec == http::error::body_limit) {
      return "the answer is larger than " + std::to_string(options.body_limit) + " bytes, the most one answer may take";
    }
    return "reading the answer failed: " + ec.message();
  }

  // Whether a kept connection may carry the next request, as Go's transport decides: not when bytes
  // are waiting on it. The server sent nothing we asked for (an unsolicited answer, a front proxy's 408
  // on an idle connection, or its close), and reading on would take that for the next request's answer.
  bool idle_and_clean(Connection& kept) const {
    if (!beast::get_lowest_layer(kept.stream).socket().is_open()) return false;  // closed at a deadline
    if (kept.buffer.size() != 0 || SSL_pending(kept.stream.native_handle()) > 0) return false;
    pollfd waiting{beast::get_lowest_layer(kept.stream).socket().native_handle(), POLLIN, 0};
    return ::poll(&waiting, 1, 0) == 0;
  }
};

ApiClient::ApiClient(KubeConnection connection, ApiClientOptions options)
    : impl_(std::make_unique<Impl>(std::move(connection), std::move(options))) {}

ApiClient::~ApiClient() = default;

const KubeConnection& ApiClient::connection() const { return impl_->connection; }

std::string ApiClient::url(const std::string& path_and_query) const {
  return impl_->connection.server_url() + path_and_query;
}

void ApiClient::cancel() {
  impl_->cancelled = true;
  Impl* impl = impl_.get();
  net::post(impl->io, [impl] { impl->close_all(); });
}

json ApiClient::get(const std::string& path_and_query, std::optional<std::chrono::steady_clock::time_point> deadline) {
  Impl& impl = *impl_;
  impl.deadline = deadline;
  impl.check_target(path_and_query);
  const std::string request_name = "GET " + url(path_and_query);
  bool refreshed = false;  // the exec plugin was run again after a 401: the request is sent once more
  for (;;) {
    std::optional<ExecCredential> credential = impl.exec_credential();
    // A kept connection presented the certificate of an older credential.
    if (impl.kept && credential && impl.kept->credential_generation != credential->generation &&
        !credential->client_certificate_pem.empty()) {
      impl.kept.reset();
    }
    if (impl.kept && !impl.idle_and_clean(*impl.kept)) impl.kept.reset();
    bool fresh = !impl.kept;
    if (fresh) {
      auto opened = impl.open(request_name, credential);
      impl.kept = std::move(opened);
    }
    Connection& connection = *impl.kept;
    InUse in_use(impl.in_use, &connection);
    auto request = impl.make_request(path_and_query, credential, impl.options.accept);
    auto& lowest = beast::get_lowest_layer(connection.stream);
    lowest.expires_after(impl.options.request_timeout);
    beast::error_code ec = impl.wait(request_name, [&](auto done) {
      http::async_write(connection.stream, request,
                        [done](beast::error_code write_ec, std::size_t) { done(write_ec); });
    });
    http::response_parser<http::string_body> parser;
    parser.body_limit(impl.options.body_limit);
    if (!ec) {
      ec = impl.wait(request_name, [&](auto done) {
        http::async_read(connection.stream, connection.buffer, parser,
                         [done](beast::error_code read_ec, std::size_t) { done(read_ec); });
      });
    }
    if (ec) {
      impl.kept.reset();
      // The server may close a kept-alive connection just as we reuse it; like Go's transport, send the
      // (idempotent) GET once more on a new connection when no byte of an answer had arrived.
      if (!fresh && !parser.got_some() && ec != beast::error::timeout) continue;
      if (ec == http::error::body_limit) {
        throw AnswerTooLargeError(request_name + ": " + impl.read_fault(ec, impl.options.request_timeout),
                                  impl.options.body_limit);
      }
      throw impl.transport_error(request_name, impl.read_fault(ec, impl.options.request_timeout));
    }
    auto response = parser.release();
    // Beast's parser lets a body past its limit through when the whole answer came in the read that
    // brought its header (seen with 10 KB against 4 KB: one TLS record): the limit is checked here too.
    if (response.body().size() > impl.options.body_limit) {
      impl.kept.reset();
      throw AnswerTooLargeError(request_name + ": " + impl.read_fault(http::error::body_limit, impl.options.request_timeout),
                                impl.options.body_limit);
    }
    // Bytes after the answer are no answer to anything we sent: the connection is not used again.
    if (!response.keep_alive() || connection.buffer.size() != 0) impl.kept.reset();
    int status = static_cast<int>(response.result_int());
    // client-go runs the plugin again when the server refuses its credential; we also retry once.
    if (status == 401 && credential && !refreshed) {
      impl.connection.exec->refresh(*credential);
      impl.kept.reset();
      refreshed = true;
      continue;
    }
    if (status < 200 || status > 299) throw ApiError::from_answer(request_name, status, response.body());
    return parse_answer(response.body(), request_name, status);
  }
}

json ApiClient::parse_answer(std::string_view text, const std::string& request, int status) const {
  try {
    return parse_json_within(text, impl_->options.max_depth);
  } catch (const JsonParseError& e) {
    if (e.too_deep()) {
      throw ApiError(request + " answered " + std::to_string(status) + " with JSON " + e.what() +
                         ", the most an answer may be (as Go's encoding/json, which the API server decodes with)",
                     status, "", e.what());
    }
    throw ApiError(request + " answered " + std::to_string(status) + " with a body that is not JSON: " +
                       shortened(std::string(text)),
                   status, "", "the body is not JSON");
  }
}

void ApiClient::stream_lines(const std::string& path_and_query, std::chrono::milliseconds deadline,
                             const std::function<void(std::string_view line)>& on_line,
                             const std::function<void()>& on_open) {
  Impl& impl = *impl_;
  impl.deadline.reset();
  impl.check_target(path_and_query);
  const std::string request_name = "GET " + url(path_and_query);
  const auto until = std::chrono::steady_clock::now() + deadline;
  std::optional<ExecCredential> credential = impl.exec_credential();
  std::unique_ptr<Connection> connection = impl.open(request_name, credential);
  InUse in_use(impl.in_use, connection.get());
  auto& lowest = beast::get_lowest_layer(connection->stream);
  auto request = impl.make_request(path_and_query, credential, impl.options.stream_accept);
  lowest.expires_at(until);
  beast::error_code ec = impl.wait(request_name, [&](auto done) {
    http::async_write(connection->stream, request, [done](beast::error_code write_ec, std::size_t) { done(write_ec); });
  });
  // A buffer body hands over each piece of the body as it is parsed, whatever the transfer encoding:
  // an event is delivered when its chunk arrives, not when the stream ends.
  http::response_parser<http::buffer_body> parser;
  // A watch has no size; its lines are limited below. (Not boost::none: Beast 1.74 then refuses any
  // answer with a Content-Length, such as a 410 Status.)
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  if (!ec) {
    ec = impl.wait(request_name, [&](auto done) {
      http::async_read_header(connection->stream, connection->buffer, parser,
                              [done](beast::error_code read_ec, std::size_t) { done(read_ec); });
    });
  }
  if (ec) throw impl.transport_error(request_name, impl.read_fault(ec, deadline));
  const int status = static_cast<int>(parser.get().result_int());
  const bool success = status >= 200 && status <= 299;
  if (success && on_open) on_open();

  std::string pending;     // the start of a line whose end has not arrived
  std::string error_body;  // the body of a non-2xx answer
  std::vector<char> piece(std::size_t{64} * 1024);
  while (!parser.is_done()) {
    parser.get().body().data = piece.data();
    parser.get().body().size = piece.size();
    lowest.expires_at(until);
    ec = impl.wait(request_name, [&](auto done) {
      http::async_read_some(connection->stream, connection->buffer, parser,
                            [done](beast::error_code read_ec, std::size_t) { done(read_ec); });
    });
    if (ec == http::error::need_buffer) ec = {};  // the piece is full: hand it over and read on
    std::size_t size = piece.size() - parser.get().body().size;
    if (!success) {
      if (error_body.size() < piece.size()) error_body.append(piece.data(), size);  // enough for any Status
    } else {
      std::string_view data(piece.data(), size);
      for (std::size_t newline; (newline = data.find('\n')) != std::string_view::npos;
           data.remove_prefix(newline + 1)) {
        pending.append(data.substr(0, newline));
        if (!pending.empty() && pending.back() == '\r') pending.pop_back();
        if (!pending.empty()) on_line(pending);
        pending.clear();
      }
      pending.append(data);
      if (pending.size() > impl.options.line_limit) {
        throw AnswerTooLargeError(request_name + ": a line of the stream is longer than " +
                                      std::to_string(impl.options.line_limit) + " bytes, the most one watch event may take",
                                  impl.options.line_limit);
      }
    }
    if (ec == beast::error::timeout) {
      throw impl.transport_error(request_name, "the stream was still open after " + milliseconds_text(deadline));
    }
    if (ec) throw impl.transport_error(request_name, "the stream broke: " + ec.message());
  }
  if (!success) {
    // The caller retries a stream: the next one carries the plugin's new credential.
    if (status == 401 && credential) impl.connection.exec->refresh(*credential);
    throw ApiError::from_answer(request_name, status, error_body);
  }
  if (!pending.empty()) on_line(pending);
}

}  // namespace karta::kube
