#include "kube/proxy.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <openssl/evp.h>

#include "kube/go_strings.h"

namespace karta::kube {
namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string environment(const char* upper, const char* lower_name) {
  for (const char* name : {upper, lower_name}) {
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0') return value;
  }
  return "";
}

// An IPv4 or IPv6 address as 16 bytes (IPv4 mapped into IPv6, as Go's net.IP holds it).
std::optional<std::array<unsigned char, 16>> parse_ip(const std::string& text) {
  std::array<unsigned char, 16> bytes{};
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    bytes[10] = bytes[11] = 0xff;
    std::memcpy(bytes.data() + 12, &v4, 4);
    return bytes;
  }
  if (inet_pton(AF_INET6, text.c_str(), bytes.data()) == 1) return bytes;
  return std::nullopt;
}

bool is_v4(const std::array<unsigned char, 16>& ip) {
  return std::all_of(ip.begin(), ip.begin() + 10, [](unsigned char b) { return b == 0; }) && ip[10] == 0xff &&
         ip[11] == 0xff;
}

bool is_loopback(const std::array<unsigned char, 16>& ip) {
  if (is_v4(ip)) return ip[12] == 127;
  return std::all_of(ip.begin(), ip.begin() + 15, [](unsigned char b) { return b == 0; }) && ip[15] == 1;
}

struct Cidr {
  std::array<unsigned char, 16> ip;
  int bits;  // of the 16-byte form
  bool contains(const std::array<unsigned char, 16>& other) const {
    for (int bit = 0; bit < bits; ++bit) {
      int byte = bit / 8, mask = 0x80 >> (bit % 8);
      if ((ip[byte] & mask) != (other[byte] & mask)) return false;
    }
    return true;
  }
};

std::optional<Cidr> parse_cidr(const std::string& text) {
  std::size_t slash = text.find('/');
  if (slash == std::string::npos) return std::nullopt;
  auto ip = parse_ip(text.substr(0, slash));
  std::string length = text.substr(slash + 1);
  if (!ip || length.empty() || length.size() > 3 ||
      !std::all_of(length.begin(), length.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  int bits = std::atoi(length.c_str());
  bool v4 = text.substr(0, slash).find(':') == std::string::npos;
  if (bits > (v4 ? 32 : 128)) return std::nullopt;
  return Cidr{*ip, v4 ? bits + 96 : bits};
}

// Go's net.SplitHostPort, loosely: "host:port", "[v6]:port"; nullopt without a port.
std::optional<std::pair<std::string, std::string>> split_host_port(const std::string& text) {
  if (!text.empty() && text.front() == '[') {
    std::size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') return std::nullopt;
    return std::pair{text.substr(1, close - 1), text.substr(close + 2)};
  }
  std::size_t colon = text.rfind(':');
  if (colon == std::string::npos || text.find(':') != colon) return std::nullopt;  // none, or a bare IPv6
  return std::pair{text.substr(0, colon), text.substr(colon + 1)};
}

std::string percent_decoded(const std::string& text) {
  std::string decoded;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      decoded.push_back(static_cast<char>(std::strtol(text.substr(i + 1, 2).c_str(), nullptr, 16)));
      i += 2;
    } else {
      decoded.push_back(text[i]);
    }
  }
  return decoded;
}

std::string base64(const std::string& bytes) {
  std::string encoded(4 * ((bytes.size() + 2) / 3), '\0');
  int length = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()),
                               reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  encoded.resize(static_cast<std::size_t>(length));
  return encoded;
}

// A proxy URL cut as Go's url.Parse cuts it: scheme (http when there is none, as httpproxy reads the
// environment's), the authority up to the first '/', '?' or '#', the user information before the
// authority's last '@'; and `shown`, the URL with its password replaced by "xxxxx" (url.Redacted).
struct ProxyUrlParts {
  std::string scheme, authority;  // authority without the user information
  std::optional<std::string> user_information;
  // An '@' after the authority ended: a password with an unencoded '/', '?' or '#' (Go would take what
  // follows it for a path and the host from inside the password). `shown` then hides all before that '@'.
  bool user_information_misplaced = false;
  std::string shown;
};

ProxyUrlParts split_proxy_url(const std::string& url) {
  ProxyUrlParts parts;
  std::string prefix, rest = url;
  // A scheme is a letter then letters, digits, '+', '-' or '.' (RFC 3986); "user:pa://ss@host" has none.
  std::size_t end = url.find("://");
  auto scheme_character = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
  };
  if (end != std::string::npos && end > 0 && std::isalpha(static_cast<unsigned char>(url[0])) &&
      std::all_of(url.begin(), url.begin() + static_cast<std::ptrdiff_t>(end), scheme_character)) {
    parts.scheme = lower(url.substr(0, end));
    prefix = url.substr(0, end + 3);
    rest = url.substr(end + 3);
  } else {
    parts.scheme = "http";
  }
  std::size_t authority_end = std::min(rest.find_first_of("/?#"), rest.size());
  std::size_t last_at = rest.rfind('@');
  parts.authority = rest.substr(0, authority_end);
  parts.shown = url;
  if (last_at == std::string::npos) return parts;
  if (last_at >= authority_end) {
    parts.user_information_misplaced = true;
    parts.shown = prefix + "xxxxx" + rest.substr(last_at);
    return parts;
  }
  parts.user_information = rest.substr(0, last_at);
  parts.authority = rest.substr(last_at + 1, authority_end - last_at - 1);
  std::size_t colon = parts.user_information->find(':');
  parts.shown = prefix + parts.user_information->substr(0, colon) + (colon == std::string::npos ? "" : ":xxxxx") +
                rest.substr(last_at);
  return parts;
}

}  // namespace

ProxyServer parse_proxy_url(const std::string& url) {
  // Every message quotes `shown`, never `url`: the user information's password is a credential.
  const ProxyUrlParts parts = split_proxy_url(url);
  const std::string shown = "\"" + parts.shown + "\"";
  if (parts.user_information_misplaced) {
    throw std::invalid_argument(shown +
                                ": an '@' follows a '/', '?' or '#', so the user information before it would be "
                                "read as a path; percent-encode those characters in the user name and password "
                                "(%2F, %3F, %23)");
  }
  if (parts.scheme == "socks5" || parts.scheme == "socks5h") {
    throw std::invalid_argument(shown + ": SOCKS5 proxies are not supported; use an HTTP proxy (http://)");
  }
  if (parts.scheme != "http") {
    throw std::invalid_argument(shown + ": only http:// proxies (HTTP CONNECT) are supported, not " + parts.scheme +
                                "://");
  }
  std::string authority = parts.authority;
  ProxyServer proxy;
  std::string shown_user;
  if (parts.user_information) {
    const std::string& user_information = *parts.user_information;
    std::size_t colon = user_information.find(':');
    std::string user = percent_decoded(user_information.substr(0, colon));
    std::string password = colon == std::string::npos ? "" : percent_decoded(user_information.substr(colon + 1));
    proxy.authorization = "Basic " + base64(user + ":" + password);
    shown_user = user_information.substr(0, colon) + (colon == std::string::npos ? "@" : ":xxxxx@");
  }
  std::string port = "80";
  if (auto split = split_host_port(authority)) {
    proxy.host = split->first;
    port = split->second;
  } else {
    proxy.host = authority;
    if (!proxy.host.empty() && proxy.host.front() == '[' && proxy.host.back() == ']') {
      proxy.host = proxy.host.substr(1, proxy.host.size() - 2);
    }
  }
  if (proxy.host.empty()) throw std::invalid_argument(shown + ": no proxy host");
  bool digits = !port.empty() && port.size() <= 5 &&
                std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
  int number = digits ? std::atoi(port.c_str()) : 0;
  if (number < 1 || number > 65535) {
    throw std::invalid_argument(shown + ": port \"" + port + "\" is not a number from 1 to 65535");
  }
  proxy.port = static_cast<unsigned short>(number);
  std::string host = proxy.host.find(':') != std::string::npos ? "[" + proxy.host + "]" : proxy.host;
  proxy.url = "http://" + shown_user + host + ":" + std::to_string(proxy.port);
  return proxy;
}

bool use_proxy(const std::string& host_in, unsigned short port_number, const std::string& no_proxy) {
  std::string host = lower(trim_space(host_in));
  std::string port = std::to_string(port_number);
  if (host == "localhost") return false;
  auto ip = parse_ip(host);
  if (ip && is_loopback(*ip)) return false;
  std::size_t start = 0;
  while (start <= no_proxy.size()) {
    std::size_t comma = std::min(no_proxy.find(',', start), no_proxy.size());
    std::string entry = lower(trim_space(no_proxy.substr(start, comma - start)));
    start = comma + 1;
    if (entry.empty()) continue;
    if (entry == "*") return false;
    if (auto cidr = parse_cidr(entry)) {
      if (ip && cidr->contains(*ip)) return false;
      continue;
    }
    // Brackets come off only with a port ("[fd00::5]:443", by the split); a bracketed address without
    // one is a domain entry to Go, which no host matches.
    std::string entry_host = entry, entry_port;
    if (auto split = split_host_port(entry)) {
      if (split->first.empty()) continue;  // ":80", "[]:80": no host, ignored as Go ignores it
      entry_host = split->first;
      entry_port = split->second;
    }
    if (auto entry_ip = parse_ip(entry_host)) {
      if (ip && *ip == *entry_ip && (entry_port.empty() || entry_port == port)) return false;
      continue;
    }
    if (entry_host.starts_with("*.")) entry_host = entry_host.substr(1);
    bool match_host = entry_host.front() != '.';
    if (match_host) entry_host = "." + entry_host;
    bool matches = host.ends_with(entry_host) || (match_host && host == entry_host.substr(1));
    if (matches && (entry_port.empty() || entry_port == port)) return false;
  }
  return true;
}

std::optional<ProxyServer> proxy_from_environment(const std::string& host, unsigned short port) {
  std::string value = environment("HTTPS_PROXY", "https_proxy");
  if (value.empty()) return std::nullopt;
  if (!use_proxy(host, port, environment("NO_PROXY", "no_proxy"))) return std::nullopt;
  ProxyServer proxy = parse_proxy_url(value);
  proxy.source =
      std::getenv("HTTPS_PROXY") != nullptr && *std::getenv("HTTPS_PROXY") != '\0' ? "$HTTPS_PROXY" : "$https_proxy";
  return proxy;
}

}  // namespace karta::kube
