#pragma once

// Reaching the API server through an HTTP proxy, as client-go does: the cluster's `proxy-url`, else
// Go's http.ProxyFromEnvironment (golang.org/x/net/http/httpproxy): HTTPS_PROXY or https_proxy, with
// NO_PROXY or no_proxy naming the hosts reached directly. The client opens a tunnel with CONNECT and
// speaks TLS to the API server through it. SOCKS5 and https:// proxies are refused by name.

#include <optional>
#include <stdexcept>
#include <string>

namespace karta::kube {

struct ProxyServer {
  std::string host;  // IPv6 without brackets
  unsigned short port = 80;
  std::string authorization;  // "Basic ..." from the URL's user information, or ""
  std::string url;            // for messages, without its password
  std::string source;         // "proxy-url", "$HTTPS_PROXY", ...
};

// An http:// proxy URL ("http://user:pass@proxy:3128"); a value without a scheme is read as http://, as
// Go reads the environment's. Throws std::invalid_argument saying what is wrong (socks5:// and https://
// are not supported).
ProxyServer parse_proxy_url(const std::string& url);

// Whether Go's httpproxy sends a request to host:port through the proxy, given NO_PROXY's value: never
// for localhost or a loopback address; not when an entry matches: "*"; an IP address or CIDR range; a
// domain ("example.com" matches it and its subdomains, ".example.com" and "*.example.com" only its
// subdomains); each optionally with ":port". Case does not matter.
bool use_proxy(const std::string& host, unsigned short port, const std::string& no_proxy);

// The environment's proxy for an https://host:port server, or nullopt. Throws std::invalid_argument when
// HTTPS_PROXY holds a URL that cannot be used.
std::optional<ProxyServer> proxy_from_environment(const std::string& host, unsigned short port);

}  // namespace karta::kube
