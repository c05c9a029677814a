#pragma once

// Server TLS: TLS 1.2 minimum, ECDHE with AEAD ciphers only, certificate and key from files (a mounted
// Secret's tls.crt and tls.key), reloaded when the files change so rotation needs no restart.

#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

#include <boost/asio/ssl/context.hpp>

namespace karta {

struct TlsFiles {
  std::filesystem::path certificate;  // PEM chain, leaf first
  std::filesystem::path private_key;  // PEM
};

// Builds a server context from the files. Throws std::runtime_error saying which file is wrong and why.
std::shared_ptr<boost::asio::ssl::context> make_server_tls_context(const TlsFiles& files);

// The notAfter of the leaf certificate a context serves. Throws std::runtime_error when it has none.
std::chrono::system_clock::time_point certificate_not_after(boost::asio::ssl::context& context);

// The context new connections use. reload_if_changed() rereads the files (cheap: two small reads) and
// swaps in a new context when their bytes changed; connections already open keep the old one.
class CertificateStore {
 public:
  explicit CertificateStore(TlsFiles files);  // loads once; throws like make_server_tls_context

  std::shared_ptr<boost::asio::ssl::context> current() const;

  // True when a new certificate was loaded. A failed reload (a half-written file) keeps the old one and
  // sets last_error().
  bool reload_if_changed();
  std::string last_error() const;
  // When the certificate being served expires (its notAfter): what a monitor pages on before it does.
  std::chrono::system_clock::time_point not_after() const;
  const TlsFiles& files() const { return files_; }

 private:
  TlsFiles files_;
  mutable std::mutex mutex_;
  std::shared_ptr<boost::asio::ssl::context> context_;
  std::chrono::system_clock::time_point not_after_;
  std::string loaded_bytes_;
  std::string last_error_;
};

}  // namespace karta
