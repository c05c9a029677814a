#pragma once

// A blocking HTTPS client for the end-to-end tests: it verifies the webhook's certificate against the test
// CA, keeps its connection alive, and can write raw bytes (half a request, pipelined requests) to test the
// server's HTTP handling.

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

namespace karta::test {

struct HttpReply {
  int status = 0;
  std::string body;
  std::string header_connection;
};

// A blocking HTTPS client that verifies the server against `ca` and keeps its connection alive.
class HttpsClient {
 public:
  // tls_version 0: any >= 1.2. tls13_suites: the TLS 1.3 cipher suites offered, in order (OpenSSL's
  // syntax); empty: OpenSSL's default list, which puts TLS_AES_256_GCM_SHA384 first.
  HttpsClient(unsigned short port, const std::filesystem::path& ca, int tls_version = 0,
              const std::string& tls13_suites = "");
  ~HttpsClient();
  HttpReply request(const std::string& method, const std::string& target, const std::string& body = "",
                    const std::string& content_type = "application/json");
  // Writes raw bytes without reading anything back (the first part of a request).
  void send_partial(const std::string& bytes);
  // Writes raw bytes (a hand-made request) and reads one response; for a HEAD request, its headers only.
  HttpReply send_raw(const std::string& bytes, bool head_request = false);
  // Reads the next response (after send_partial wrote several requests at once).
  HttpReply receive(bool head_request = false);
  // Reads exactly `count` raw bytes (an interim `100 Continue`, say), waiting at most `limit`. Throws
  // boost::system::system_error: beast::error::timeout when they did not come in time (the connection is
  // then unusable), another code (eof) when the server closed the connection.
  std::string receive_bytes(std::size_t count, std::chrono::milliseconds limit);
  // Ends the connection abruptly, as a client that crashed: a TCP reset, no TLS close_notify.
  void reset();
  std::string peer_certificate_serial() const;
  // The negotiated cipher suite, in its standard name ("TLS_AES_128_GCM_SHA256").
  std::string cipher_suite() const;
  bool connected() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace karta::test
