#include "server/tls_context.h"

#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <spdlog/spdlog.h>

namespace karta {
namespace {

// TLS 1.2 suites: forward secrecy and AEAD only (Mozilla's "intermediate" list). TLS 1.3 suites: all
// three, in Mozilla's order, which is also the order of the API server's Go client on hardware with AES:
// AES-128-GCM first. OpenSSL's default puts AES-256-GCM first, and with the server's preference on
// (below) every client would get it: it costs about 1,300 instructions a request more on the demo
// review (bench/README.md, ninth round) for no security a webhook's traffic needs.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
constexpr const char* kTls13Suites = "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot be read");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return std::move(buffer).str();
}

std::string openssl_error() {
  unsigned long code = ERR_get_error();
  if (code == 0) return "unknown OpenSSL error";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  ERR_clear_error();
  return text;
}

}  // namespace

std::shared_ptr<boost::asio::ssl::context> make_server_tls_context(const TlsFiles& files) {
  namespace ssl = boost::asio::ssl;
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                       ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use);
  SSL_CTX* native = context->native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  SSL_CTX_set_options(native, SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_RENEGOTIATION);
  if (SSL_CTX_set_cipher_list(native, kTls12Ciphers) != 1) {
    throw std::runtime_error("TLS cipher list rejected: " + openssl_error());
  }
  if (SSL_CTX_set_ciphersuites(native, kTls13Suites) != 1) {
    throw std::runtime_error("TLS 1.3 suites rejected: " + openssl_error());
  }
  if (SSL_CTX_use_certificate_chain_file(native, files.certificate.c_str()) != 1) {
    throw std::runtime_error(files.certificate.string() + ": not a usable PEM certificate: " + openssl_error());
  }
  if (SSL_CTX_use_PrivateKey_file(native, files.private_key.c_str(), SSL_FILETYPE_PEM) != 1) {
    throw std::runtime_error(files.private_key.string() + ": not a usable PEM private key: " + openssl_error());
  }
  if (SSL_CTX_check_private_key(native) != 1) {
    throw std::runtime_error(files.private_key.string() + " does not match the certificate in " +
                             files.certificate.string());
  }
  // The serving threads' TLS (server/tls_stream.h) expects an empty error queue on the thread: whatever
  // loading left there (a PEM reader's end-of-file, say) goes now.
  ERR_clear_error();
  return context;
}

std::chrono::system_clock::time_point certificate_not_after(boost::asio::ssl::context& context) {
  X509* leaf = SSL_CTX_get0_certificate(context.native_handle());
  const ASN1_TIME* not_after = leaf == nullptr ? nullptr : X509_get0_notAfter(leaf);
  std::tm tm{};
  if (not_after == nullptr || ASN1_TIME_to_tm(not_after, &tm) != 1) {
    throw std::runtime_error("the serving certificate has no readable notAfter: " + openssl_error());
  }
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

CertificateStore::CertificateStore(TlsFiles files) : files_(std::move(files)) {
  loaded_bytes_ = read_file(files_.certificate) + read_file(files_.private_key);
  context_ = make_server_tls_context(files_);
  not_after_ = certificate_not_after(*context_);
}

std::shared_ptr<boost::asio::ssl::context> CertificateStore::current() const {
  std::lock_guard lock(mutex_);
  return context_;
}

bool CertificateStore::reload_if_changed() {
  std::string bytes;
  try {
    bytes = read_file(files_.certificate) + read_file(files_.private_key);
  } catch (const std::exception& e) {
    std::lock_guard lock(mutex_);
    last_error_ = e.what();
    return false;
  }
  {
    std::lock_guard lock(mutex_);
    if (bytes == loaded_bytes_) return false;
  }
  try {
    auto context = make_server_tls_context(files_);
    auto not_after = certificate_not_after(*context);
    std::lock_guard lock(mutex_);
    context_ = std::move(context);
    not_after_ = not_after;
    loaded_bytes_ = std::move(bytes);
    last_error_.clear();
    return true;
  } catch (const std::exception& e) {
    // Typically the certificate was rewritten before the key: the next poll will pair them.
    std::lock_guard lock(mutex_);
    last_error_ = e.what();
    return false;
  }
}

std::chrono::system_clock::time_point CertificateStore::not_after() const {
  std::lock_guard lock(mutex_);
  return not_after_;
}

std::string CertificateStore::last_error() const {
  std::lock_guard lock(mutex_);
  return last_error_;
}

}  // namespace karta
