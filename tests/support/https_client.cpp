#include "support/https_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <stdexcept>

namespace karta::test {

namespace fs = std::filesystem;
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

struct HttpsClient::Impl {
  net::io_context io;
  net::ssl::context tls{net::ssl::context::tls_client};
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> stream;
  beast::flat_buffer buffer;
};

HttpsClient::HttpsClient(unsigned short port, const fs::path& ca, int tls_version, const std::string& tls13_suites)
    : impl_(std::make_unique<Impl>()) {
  impl_->tls.load_verify_file(ca.string());
  if (!tls13_suites.empty() && SSL_CTX_set_ciphersuites(impl_->tls.native_handle(), tls13_suites.c_str()) != 1) {
    throw std::invalid_argument("TLS 1.3 suites not known to OpenSSL: " + tls13_suites);
  }
  impl_->tls.set_verify_mode(net::ssl::verify_peer);
  if (tls_version != 0) {
    SSL_CTX_set_min_proto_version(impl_->tls.native_handle(), tls_version);
    SSL_CTX_set_max_proto_version(impl_->tls.native_handle(), tls_version);
    // OpenSSL's default security level forbids TLS 1.0/1.1 in the client too; lower it so the test
    // really offers them and the server is the one saying no.
    SSL_CTX_set_security_level(impl_->tls.native_handle(), 0);
  }
  impl_->stream = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(impl_->io, impl_->tls);
  SSL_set_tlsext_host_name(impl_->stream->native_handle(), "localhost");
  impl_->stream->set_verify_callback(net::ssl::host_name_verification("localhost"));
  beast::get_lowest_layer(*impl_->stream).expires_after(std::chrono::seconds(10));
  beast::get_lowest_layer(*impl_->stream).connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  impl_->stream->handshake(net::ssl::stream_base::client);
}

HttpsClient::~HttpsClient() {
  beast::error_code ec;
  beast::get_lowest_layer(*impl_->stream).socket().close(ec);
}

void HttpsClient::reset() {
  beast::error_code ec;
  auto& socket = beast::get_lowest_layer(*impl_->stream).socket();
  socket.set_option(net::socket_base::linger(true, 0), ec);  // close() then sends a reset
  socket.close(ec);
}

bool HttpsClient::connected() const { return beast::get_lowest_layer(*impl_->stream).socket().is_open(); }

HttpReply HttpsClient::request(const std::string& method, const std::string& target, const std::string& body,
                               const std::string& content_type) {
  http::request<http::string_body> request{http::string_to_verb(method), target, 11};
  request.set(http::field::host, "localhost");
  if (!body.empty()) request.set(http::field::content_type, content_type);
  request.body() = body;
  request.prepare_payload();
  beast::get_lowest_layer(*impl_->stream).expires_after(std::chrono::seconds(30));
  http::write(*impl_->stream, request);
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  http::read(*impl_->stream, impl_->buffer, parser);
  auto response = parser.release();
  return {static_cast<int>(response.result_int()), response.body(), std::string(response[http::field::connection])};
}

void HttpsClient::send_partial(const std::string& bytes) {
  beast::get_lowest_layer(*impl_->stream).expires_after(std::chrono::seconds(30));
  net::write(*impl_->stream, net::buffer(bytes));
}

HttpReply HttpsClient::send_raw(const std::string& bytes, bool head_request) {
  beast::get_lowest_layer(*impl_->stream).expires_after(std::chrono::seconds(30));
  net::write(*impl_->stream, net::buffer(bytes));
  return receive(head_request);
}

HttpReply HttpsClient::receive(bool head_request) {
  beast::get_lowest_layer(*impl_->stream).expires_after(std::chrono::seconds(30));
  http::response_parser<http::string_body> parser;
  parser.skip(head_request);  // a response to HEAD has a Content-Length but no body
  http::read(*impl_->stream, impl_->buffer, parser);
  auto response = parser.release();
  return {static_cast<int>(response.result_int()), response.body(), std::string(response[http::field::connection])};
}

std::string HttpsClient::receive_bytes(std::size_t count, std::chrono::milliseconds limit) {
  beast::get_lowest_layer(*impl_->stream).expires_after(limit);
  // Bytes a previous response's read took beyond its message come first.
  std::size_t buffered = std::min(count, impl_->buffer.size());
  std::string bytes(static_cast<const char*>(impl_->buffer.data().data()), buffered);
  impl_->buffer.consume(buffered);
  bytes.resize(count);
  if (buffered < count) net::read(*impl_->stream, net::buffer(bytes.data() + buffered, count - buffered));
  return bytes;
}

std::string HttpsClient::cipher_suite() const {
  const SSL_CIPHER* cipher = SSL_get_current_cipher(impl_->stream->native_handle());
  return cipher == nullptr ? "" : SSL_CIPHER_standard_name(cipher);
}

std::string HttpsClient::peer_certificate_serial() const {
  X509* peer = SSL_get1_peer_certificate(impl_->stream->native_handle());
  if (peer == nullptr) return "";
  BIGNUM* serial = ASN1_INTEGER_to_BN(X509_get_serialNumber(peer), nullptr);
  char* hex = BN_bn2hex(serial);
  std::string result = hex;
  OPENSSL_free(hex);
  BN_free(serial);
  X509_free(peer);
  return result;
}

}  // namespace karta::test
