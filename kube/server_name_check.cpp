#include "kube/server_name_check.h"

#include <algorithm>
#include <array>
#include <memory>

#include <openssl/x509v3.h>
#include <boost/asio/ip/address.hpp>

namespace karta::kube {
namespace {

bool is_ip_address(const std::string& name) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(name, ec);
  return !ec;
}

std::string text_of(const ASN1_STRING* value) {
  return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(value)),
                     static_cast<std::size_t>(ASN1_STRING_length(value)));
}

std::string ip_text(const ASN1_OCTET_STRING* value) {
  const unsigned char* bytes = ASN1_STRING_get0_data(value);
  if (ASN1_STRING_length(value) == 4) {
    return boost::asio::ip::make_address_v4(std::array<unsigned char, 4>{bytes[0], bytes[1], bytes[2], bytes[3]})
        .to_string();
  }
  if (ASN1_STRING_length(value) == 16) {
    std::array<unsigned char, 16> v6{};
    std::copy(bytes, bytes + 16, v6.begin());
    return boost::asio::ip::make_address_v6(v6).to_string();
  }
  return "(an address of " + std::to_string(ASN1_STRING_length(value)) + " bytes)";
}

// "DNS:localhost, IP:127.0.0.1": the names a host can be checked against, "" when there are none.
std::string subject_alt_names(X509* certificate) {
  struct Free {
    void operator()(GENERAL_NAMES* names) const { GENERAL_NAMES_free(names); }
  };
  std::unique_ptr<GENERAL_NAMES, Free> names(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(certificate, NID_subject_alt_name, nullptr, nullptr)));
  std::string listed;
  for (int i = 0; names && i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* entry = sk_GENERAL_NAME_value(names.get(), i);
    std::string shown;
    if (entry->type == GEN_DNS) shown = "DNS:" + text_of(entry->d.dNSName);
    if (entry->type == GEN_IPADD) shown = "IP:" + ip_text(entry->d.iPAddress);
    if (!shown.empty()) listed += (listed.empty() ? "" : ", ") + shown;
  }
  return listed;
}

std::string common_name(X509* certificate) {
  X509_NAME* subject = X509_get_subject_name(certificate);
  int index = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (index < 0) return "";
  return text_of(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, index)));
}

}  // namespace

std::string server_name_fault(const std::string& name) {
  if (name.empty()) return "is empty";
  if (name.find('%') != std::string::npos && name.find(':') != std::string::npos) {
    return "is an IPv6 address with a zone (%...), which no certificate can name; give the address without "
           "it, or the DNS name the API server's certificate carries";
  }
  if (is_ip_address(name)) return "";
  if (name.size() > 253) return "is longer than 253 bytes, the most a DNS name may have";
  std::size_t label = 0;  // bytes of the label being read
  for (std::size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (c == '.') {
      if (label == 0) return "has an empty label (two dots, or a leading dot); give a DNS name or an IP address";
      label = 0;
      continue;
    }
    bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    if (!allowed) {
      std::string what = c == '\0'                                        ? "a NUL byte"
                         : static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? "a control character"
                                                                             : "a character no DNS name has";
      return "holds " + what + " (byte " + std::to_string(i) + "); give a DNS name or an IP address";
    }
    if (++label > 63) return "has a label longer than 63 bytes, the most a DNS label may have";
  }
  return "";
}

bool require_server_name(SSL* ssl, const std::string& name) {
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  if (name.empty() || name.find('\0') != std::string::npos) return false;
  if (is_ip_address(name)) return X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str()) == 1;
  if (SSL_set_tlsext_host_name(ssl, name.c_str()) != 1) return false;
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS | X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
  return X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size()) == 1;
}

std::string server_name_mismatch(X509_STORE_CTX* context, const std::string& name) {
  int error = X509_STORE_CTX_get_error(context);
  if (error != X509_V_ERR_HOSTNAME_MISMATCH && error != X509_V_ERR_IP_ADDRESS_MISMATCH) return "";
  X509* certificate = X509_STORE_CTX_get0_cert(context);
  if (certificate == nullptr) return "";
  std::string fault = "the certificate has no subjectAltName for \"" + name + "\": ";
  if (std::string names = subject_alt_names(certificate); !names.empty()) return fault + "it has " + names;
  fault += "it has none";
  if (std::string common = common_name(certificate); !common.empty()) {
    fault +=
        ", only the Common Name \"" + common + "\", which is never checked (Go and kubectl require a subjectAltName)";
  }
  return fault;
}

}  // namespace karta::kube
