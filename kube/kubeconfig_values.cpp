#include "kube/kubeconfig_values.h"

#include <algorithm>
#include <memory>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

namespace karta::kube {
namespace {

using BioPtr = std::unique_ptr<BIO, decltype(&BIO_free)>;

BioPtr memory_bio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
}

}  // namespace

std::optional<std::string> decode_base64(const std::string& text) {
  std::string compact;
  compact.reserve(text.size());
  for (char c : text) {
    if (c == '\n' || c == '\r') continue;
    bool valid =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/' || c == '=';
    if (!valid) return std::nullopt;
    compact.push_back(c);
  }
  if (compact.size() % 4 != 0) return std::nullopt;
  std::size_t padding = 0;
  while (padding < compact.size() && compact[compact.size() - 1 - padding] == '=') ++padding;
  if (padding > 2 || compact.find('=') < compact.size() - padding) return std::nullopt;
  std::string decoded(compact.size() / 4 * 3, '\0');
  int length =
      EVP_DecodeBlock(reinterpret_cast<unsigned char*>(decoded.data()),
                      reinterpret_cast<const unsigned char*>(compact.data()), static_cast<int>(compact.size()));
  if (length < 0) return std::nullopt;
  decoded.resize(static_cast<std::size_t>(length) - padding);  // EVP_DecodeBlock counts padding as zero bytes
  return decoded;
}

bool holds_pem_certificate(const std::string& pem) {
  BioPtr bio = memory_bio(pem);
  X509* certificate = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr);
  ERR_clear_error();
  if (certificate == nullptr) return false;
  X509_free(certificate);
  return true;
}

bool holds_pem_private_key(const std::string& pem) {
  BioPtr bio = memory_bio(pem);
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr);
  ERR_clear_error();
  if (key == nullptr) return false;
  EVP_PKEY_free(key);
  return true;
}


ServerAddress parse_server_url(const std::string& url, const std::function<void(const std::string&)>& fail) {
  const std::string scheme = "https://";
  // As Go's net/url refuses it ("invalid control character in URL"): a CR or LF in the path would end
  // the request line and add headers to every request. Not quoted: the URL is then not fit to print.
  if (auto control = std::find_if(url.begin(), url.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; });
      control != url.end()) {
    fail("holds a control character (byte " + std::to_string(control - url.begin()) +
         "), which no URL may hold; write the API server's https:// URL without it");
  }
  if (url.rfind("http://", 0) == 0) {
    fail("\"" + url + "\": plain http is not supported; the API server must use https://");
  }
  if (url.rfind(scheme, 0) != 0) fail("\"" + url + "\": must be an https:// URL");
  std::string rest = url.substr(scheme.size());
  if (rest.find_first_of("?#") != std::string::npos) fail("\"" + url + "\": a query or fragment is not supported");
  std::size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  ServerAddress address;
  address.base_path = slash == std::string::npos ? "" : rest.substr(slash);
  while (!address.base_path.empty() && address.base_path.back() == '/') address.base_path.pop_back();
  if (authority.find('@') != std::string::npos) fail("\"" + url + "\": user information in the URL is not supported");
  std::string port;
  if (!authority.empty() && authority.front() == '[') {
    std::size_t close = authority.find(']');
    if (close == std::string::npos) fail("\"" + url + "\": an IPv6 address must end with ']'");
    address.host = authority.substr(1, close - 1);
    std::string after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') fail("\"" + url + "\": unexpected \"" + after + "\" after the IPv6 address");
      port = after.substr(1);
      if (port.empty()) fail("\"" + url + "\": empty port");
    }
  } else {
    std::size_t colon = authority.rfind(':');
    address.host = authority.substr(0, colon);
    if (colon != std::string::npos) {
      port = authority.substr(colon + 1);
      if (port.empty()) fail("\"" + url + "\": empty port");
    }
  }
  if (address.host.empty()) fail("\"" + url + "\": no host");
  if (!port.empty()) {
    bool digits =
        port.size() <= 5 && std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
    int number = digits ? std::stoi(port) : 0;
    if (number < 1 || number > 65535) fail("\"" + url + "\": port \"" + port + "\" is not a number from 1 to 65535");
    address.port = static_cast<unsigned short>(number);
  }
  return address;
}

}  // namespace karta::kube
