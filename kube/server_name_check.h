#pragma once

// The check that the API server's certificate was issued for the name we connect to, as Go's
// crypto/x509 makes it for kubectl and client-go: against the certificate's subjectAltNames only. Go
// stopped reading the Common Name in 1.15, and so a certificate that names the host only there is
// refused; OpenSSL would fall back to it unless told not to.

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <string>

namespace karta::kube {

// Why `name` (tls-server-name, or the server URL's host) cannot be checked against a certificate, ""
// when it can: it must be an IP address without a zone ("fe80::1%eth0" parses, but OpenSSL cannot match
// it) or a DNS name (letters, digits, '-', '_' and '.', no empty label: never a NUL byte, which OpenSSL
// would refuse). The text never quotes the name: it may hold control characters.
std::string server_name_fault(const std::string& name);

// Sets the name `ssl` must find in the server's certificate: an IP address among its IP
// subjectAltNames, or a host name among its DNS ones (never the Common Name, no partial wildcards).
// Host names are also sent as SNI; IP addresses are not, as RFC 6066 says. False when OpenSSL refused
// the name: the certificate would then be checked against no name at all, so the caller must not connect.
[[nodiscard]] bool require_server_name(SSL* ssl, const std::string& name);

// Called while a certificate is verified, for a failure: when it is the name check that failed, what
// the certificate names instead ("the certificate has no subjectAltName for \"x\" ..."); else "".
std::string server_name_mismatch(X509_STORE_CTX* context, const std::string& name);

}  // namespace karta::kube
