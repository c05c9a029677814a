#pragma once

// Values of a kubeconfig read as client-go reads them: the base64 of its `-data` fields, PEM certificates
// and keys, and the API server's URL.

#include <functional>
#include <optional>
#include <string>

namespace karta::kube {

// Standard base64 as Go decodes kubeconfig []byte fields: line breaks are ignored, padding is required.
// None when `text` is not base64.
std::optional<std::string> decode_base64(const std::string& text);

// Whether `pem` holds a PEM certificate, or a PEM private key, that OpenSSL reads.
bool holds_pem_certificate(const std::string& pem);
bool holds_pem_private_key(const std::string& pem);

struct ServerAddress {
  std::string host;
  unsigned short port = 443;
  std::string base_path;
};

// Parses "https://host[:port][/path]"; `fail` throws with the problem (it must not return).
ServerAddress parse_server_url(const std::string& url, const std::function<void(const std::string&)>& fail);

}  // namespace karta::kube
