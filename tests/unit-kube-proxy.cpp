// Reaching the API server through an HTTP proxy, as client-go does: the cluster's proxy-url, and
// $HTTPS_PROXY with $NO_PROXY read as Go's httpproxy reads them; through a local CONNECT proxy that
// counts its tunnels. The server is named kube.test, a name only the proxy resolves (to 127.0.0.1), with
// tls-server-name localhost: a request that bypasses the proxy cannot reach it.

#include <doctest/doctest.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "kube/api_client.h"
#include "kube/kube_connection.h"
#include "kube/proxy.h"
#include "support/connect_proxy.h"
#include "support/demo_cluster.h"
#include "support/fake_api_server.h"
#include "support/scoped_environment.h"
#include "support/test_support.h"

namespace unit_kube_proxy {  // this file's names, apart from other tests' in a unity build

namespace test = karta::test;
namespace kube = karta::kube;
namespace fs = std::filesystem;

namespace {

using Environment = test::ScopedEnvironment;

struct ProxiedCluster {
  test::TempDir dir;
  test::FakeApiServer server{dir.path, {}};
  test::ConnectProxy proxy;
  fs::path kubeconfig = dir.path / "config";

  explicit ProxiedCluster(const std::string& proxy_url_line = "") {
    test::demo_cluster::serve_demo(server);
    kube::KubeConnection c = server.connection();
    test::write_text(kubeconfig,
                     "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n"
                     "    server: https://kube.test:" +
                         std::to_string(server.port()) +
                         "\n    tls-server-name: localhost\n    certificate-authority-data: " +
                         test::base64(*c.ca_pem) + "\n" + proxy_url_line +
                         "users:\n- {name: me, user: {token: sesame}}\n"
                         "contexts:\n- name: local\n  context: {cluster: local, user: me, namespace: research}\n"
                         "current-context: local\n");
  }
  std::string authority() const { return "kube.test:" + std::to_string(server.port()); }
};

using Run = karta::test::CliRun;
Run run(std::vector<std::string> args) { return karta::test::run_cli(std::move(args)); }

struct NoProxyCase {
  std::string host;
  unsigned short port;
  std::string no_proxy;
  bool proxied;
};

void check_no_proxy(const std::vector<NoProxyCase>& cases) {
  for (const auto& c : cases) {
    CAPTURE(c.host);
    CAPTURE(c.no_proxy);
    CHECK(kube::use_proxy(c.host, c.port, c.no_proxy) == c.proxied);
  }
}

// What parse_proxy_url says when it refuses a URL, or "" when it takes it.
std::string error_of(const std::string& url) {
  try {
    kube::parse_proxy_url(url);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("NO_PROXY is read as Go's httpproxy reads it: hosts, domain suffixes, .domain, IPs, CIDRs, *, ports") {
  const std::vector<NoProxyCase> cases = {
      {"api.example.com", 443, "", true},
      {"localhost", 443, "", false},  // never proxied, as Go never proxies loopback
      {"127.0.0.1", 6443, "", false},
      {"::1", 6443, "", false},
      {"api.example.com", 443, "*", false},
      {"api.example.com", 443, "example.com", false},  // the domain and its subdomains
      {"example.com", 443, "example.com", false},
      {"notexample.com", 443, "example.com", true},
      {"api.example.com", 443, ".example.com", false},  // subdomains only
      {"example.com", 443, ".example.com", true},
      {"api.example.com", 443, "*.example.com", false},
      {"example.com", 443, "*.example.com", true},
      {"API.Example.COM", 443, "example.com", false},
      {"api.example.com", 443, "other.org, example.com", false},
      {"api.example.com", 443, "example.com:6443", true},  // a port must match
      {"api.example.com", 6443, "example.com:6443", false},
      {"10.1.2.3", 443, "10.1.2.3", false},
      {"10.1.2.4", 443, "10.1.2.3", true},
      {"10.1.2.3", 443, "10.0.0.0/8", false},
      {"11.1.2.3", 443, "10.0.0.0/8", true},
      {"10.1.2.3", 6443, "10.1.2.3:443", true},
      {"10.1.2.3", 443, "10.1.2.3:443", false},
      {"fd00::5", 443, "fd00::/8", false},
      {"fd00::5", 443, "[fd00::5]:443", false},
      {"10.1.2.3", 443, "example.com", true},
      {"api.example.com", 443, ":443", true},  // malformed, ignored
  };
  check_no_proxy(cases);
}

TEST_CASE("NO_PROXY entries with no host in them ([], []:443, :443) are skipped, and brackets only go with a port") {
  // "[]" once read front() of the empty host inside its brackets: undefined behaviour, an abort under
  // -D_GLIBCXX_ASSERTIONS (the sanitizer build). Go's httpproxy strips the brackets only from the host of a
  // successful host:port split and skips an empty host; a bracketed address without a port is a domain
  // entry there, which no host matches.
  const std::vector<NoProxyCase> cases = {
      {"api.example.com", 443, "[]", true},
      {"api.example.com", 443, "[], example.com", false},
      {"api.example.com", 443, "[]:443", true},
      {"api.example.com", 443, "[]:443,example.com", false},
      {"api.example.com", 443, " , :443 ,[],", true},
      {"fd00::5", 443, "[fd00::5]", true},
      {"fd00::5", 443, "[fd00::5]:443", false},
      {"fd00::5", 443, "fd00::5", false},
      {"api.example.com", 443, "*.", true},
      {"api.example.com", 443, "[", true},
      {"api.example.com", 443, "]", true},
  };
  check_no_proxy(cases);
  // Through the environment, as `list` reads it: the proxy is still used.
  Environment env;
  env.set("HTTPS_PROXY", "http://127.0.0.1:3128").set("NO_PROXY", "[]");
  auto proxy = kube::proxy_from_environment("api.example.com", 443);
  REQUIRE(proxy);
  CHECK(proxy->url == "http://127.0.0.1:3128");
}

TEST_CASE("proxy URLs: http:// with or without credentials, a bare host:port; socks5 and https are refused") {
  kube::ProxyServer proxy = kube::parse_proxy_url("http://alice:s%40cret@proxy.corp:3128");
  CHECK(proxy.host == "proxy.corp");
  CHECK(proxy.port == 3128);
  CHECK(proxy.authorization == "Basic " + test::base64("alice:s@cret"));
  CHECK(proxy.url == "http://alice:xxxxx@proxy.corp:3128");
  proxy = kube::parse_proxy_url("proxy.corp:8080");
  CHECK(proxy.url == "http://proxy.corp:8080");
  CHECK(proxy.authorization == "");
  CHECK(kube::parse_proxy_url("http://[fd00::1]").url == "http://[fd00::1]:80");
  CHECK(error_of("socks5://127.0.0.1:1080") ==
        "\"socks5://127.0.0.1:1080\": SOCKS5 proxies are not supported; use an HTTP proxy (http://)");
  CHECK(error_of("https://proxy.corp") ==
        "\"https://proxy.corp\": only http:// proxies (HTTP CONNECT) are supported, not https://");
  CHECK(error_of("http://proxy.corp:99999") ==
        "\"http://proxy.corp:99999\": port \"99999\" is not a number from 1 to 65535");
}

TEST_CASE("a proxy URL's password is never quoted: every refusal shows it as xxxxx, from proxy-url and $HTTPS_PROXY") {
  // The password is "hunter2" in each; the refusals once quoted the URL as written.
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"socks5://alice:hunter2@127.0.0.1:1080",
       "\"socks5://alice:xxxxx@127.0.0.1:1080\": SOCKS5 proxies are not supported; use an HTTP proxy (http://)"},
      {"https://alice:hunter2@proxy.corp",
       "\"https://alice:xxxxx@proxy.corp\": only http:// proxies (HTTP CONNECT) are supported, not https://"},
      {"http://alice:hunter2@proxy.corp:99999",
       "\"http://alice:xxxxx@proxy.corp:99999\": port \"99999\" is not a number from 1 to 65535"},
      {"http://alice:hunter2@", "\"http://alice:xxxxx@\": no proxy host"},
      {"alice:hunter2@proxy.corp:none",
       "\"alice:xxxxx@proxy.corp:none\": port \"none\" is not a number from 1 to 65535"},
      // A '/', '?' or '#' in the password ends the authority there, as in Go's url.Parse: the host and
      // port would be read from inside the password.
      {"http://alice:hun/ter2@proxy.corp:3128",
       "\"http://xxxxx@proxy.corp:3128\": an '@' follows a '/', '?' or '#', so the user information before it "
       "would be read as a path; percent-encode those characters in the user name and password (%2F, %3F, %23)"},
      {"alice:hunter2?@proxy.corp:3128",
       "\"xxxxx@proxy.corp:3128\": an '@' follows a '/', '?' or '#', so the user information before it would be "
       "read as a path; percent-encode those characters in the user name and password (%2F, %3F, %23)"},
      {"alice:hunter2://@proxy.corp:3128",
       "\"xxxxx@proxy.corp:3128\": an '@' follows a '/', '?' or '#', so the user information before it would be "
       "read as a path; percent-encode those characters in the user name and password (%2F, %3F, %23)"},
  };
  for (const auto& [url, error] : refused) {
    CAPTURE(url);
    CHECK(error_of(url) == error);
    CHECK(error_of(url).find("hunter2") == std::string::npos);
  }
  // Encoded, the same characters are the password's.
  kube::ProxyServer encoded = kube::parse_proxy_url("http://alice:hun%2Fter2%3F@proxy.corp:3128");
  CHECK(encoded.authorization == "Basic " + test::base64("alice:hun/ter2?"));
  CHECK(encoded.url == "http://alice:xxxxx@proxy.corp:3128");

  // Through the commands: the kubeconfig's field or the variable is named, the password is not shown.
  ProxiedCluster cluster;
  std::string config = test::read_text(cluster.kubeconfig);
  std::string with_url = config;
  with_url.replace(with_url.find("users:"), 0, "    proxy-url: socks5://alice:hunter2@127.0.0.1:1080\n");
  test::write_text(cluster.kubeconfig, with_url);
  Run from_kubeconfig = run({"karta-webhook", "list", "--kubeconfig", cluster.kubeconfig.string()});
  CHECK(from_kubeconfig.code == 1);
  CHECK(from_kubeconfig.err == "karta-webhook: " + cluster.kubeconfig.string() +
                                   ": clusters[local].cluster.proxy-url: \"socks5://alice:xxxxx@127.0.0.1:1080\": "
                                   "SOCKS5 proxies are not supported; use an HTTP proxy (http://)\n");
  test::write_text(cluster.kubeconfig, config);
  {
    Environment env;
    env.set("HTTPS_PROXY", "http://alice:hunter2@proxy.corp:http").set("NO_PROXY", "").set("no_proxy", "");
    Run from_environment = run({"karta-webhook", "audit", "--kubeconfig", cluster.kubeconfig.string()});
    CHECK(from_environment.code == 2);
    CHECK(from_environment.err ==
          "karta-webhook audit: $HTTPS_PROXY: \"http://alice:xxxxx@proxy.corp:http\": port \"http\" is not a number "
          "from 1 to 65535\n");
    for (const Run& refusal : {from_kubeconfig, from_environment}) {
      CHECK(refusal.out.find("hunter2") == std::string::npos);
      CHECK(refusal.err.find("hunter2") == std::string::npos);
    }
  }
  CHECK(cluster.proxy.tunnels().empty());
  CHECK(cluster.server.received().empty());
}

TEST_CASE("a cluster's proxy-url reaches the server through the CONNECT proxy; inspect prints the same") {
  ProxiedCluster cluster;
  std::string config = test::read_text(cluster.kubeconfig);
  config.replace(config.find("users:"), 0, "    proxy-url: " + cluster.proxy.url() + "\n");
  test::write_text(cluster.kubeconfig, config);
  Run inspected = run({"karta-webhook", "inspect", "jobset/demo", "--kubeconfig", cluster.kubeconfig.string()});
  CHECK(inspected.code == 0);
  CHECK(inspected.err == "");
  CHECK(inspected.out.substr(inspected.out.find('\n')) == std::string(test::demo_cluster::kDescribeAfterHeader));
  // One kept-alive connection, so one tunnel, to the server's name and port as the kubeconfig gives them.
  auto tunnels = cluster.proxy.tunnels();
  REQUIRE(tunnels.size() == 1);
  CHECK(tunnels[0].authority == cluster.authority());
  CHECK(tunnels[0].proxy_authorization == "");
  CHECK(cluster.server.received().size() > 5);

  // proxy-url wins over NO_PROXY, as in client-go.
  {
    Environment env;
    env.set("NO_PROXY", "*");
    CHECK(run({"karta-webhook", "list", "--kubeconfig", cluster.kubeconfig.string()}).code == 0);
  }
  CHECK(cluster.proxy.tunnels().size() == 2);

  // A socks5 proxy-url is refused at load, naming the field.
  config.replace(config.find("http://127.0.0.1"), 7, "socks5://");
  test::write_text(cluster.kubeconfig, config);
  Run refused = run({"karta-webhook", "list", "--kubeconfig", cluster.kubeconfig.string()});
  CHECK(refused.code == 1);
  CHECK(refused.err ==
        "karta-webhook: " + cluster.kubeconfig.string() +
            ": clusters[local].cluster.proxy-url: \"socks5://127.0.0.1:" + std::to_string(cluster.proxy.port()) +
            "\": SOCKS5 proxies are not supported; use an HTTP proxy (http://)\n");
}

TEST_CASE("a proxy that wants credentials gets them from the URL; a refused CONNECT is an error naming the proxy") {
  test::ConnectProxy guarded("Basic " + test::base64("alice:secret"));
  ProxiedCluster cluster;
  auto with_proxy = [&](const std::string& url) {
    std::string config = test::read_text(cluster.kubeconfig);
    std::size_t line = config.find("    proxy-url: ");
    if (line != std::string::npos) config.erase(line, config.find('\n', line) + 1 - line);
    config.replace(config.find("users:"), 0, "    proxy-url: " + url + "\n");
    test::write_text(cluster.kubeconfig, config);
  };
  std::string port = std::to_string(guarded.port());
  with_proxy("http://alice:secret@127.0.0.1:" + port);
  kube::ApiClient client(kube::load_kubeconfig(cluster.kubeconfig));
  CHECK(client.get("/api")["kind"] == "APIVersions");
  with_proxy("http://alice:wrong@127.0.0.1:" + port);
  kube::ApiClient refused(kube::load_kubeconfig(cluster.kubeconfig));
  std::string error;
  try {
    refused.get("/api");
  } catch (const kube::ApiError& e) {
    error = e.what();
  }
  CHECK(error == "GET https://kube.test:" + std::to_string(cluster.server.port()) +
                     "/api: proxy http://alice:xxxxx@127.0.0.1:" + port + " (from proxy-url) refused CONNECT " +
                     cluster.authority() + ": 407 Proxy Authentication Required");
  auto tunnels = guarded.tunnels();
  REQUIRE(tunnels.size() == 2);
  CHECK(tunnels[0].proxy_authorization == "Basic " + test::base64("alice:secret"));
  CHECK(tunnels[1].proxy_authorization == "Basic " + test::base64("alice:wrong"));
}

TEST_CASE("HTTPS_PROXY (or https_proxy) carries list and audit through the proxy; NO_PROXY bypasses it") {
  ProxiedCluster cluster;
  std::string config = cluster.kubeconfig.string();
  {
    Environment env;
    env.set("HTTPS_PROXY", cluster.proxy.url()).set("NO_PROXY", "example.com,10.0.0.0/8");
    Run listed = run({"karta-webhook", "list", "-A", "--kubeconfig", config});
    CHECK(listed.code == 0);
    CHECK(listed.out.find("research    demo   JobSet   Running   leader(1), worker(2)   12") != std::string::npos);
    CHECK(run({"karta-webhook", "audit", "--kubeconfig", config}).code == 0);
  }
  CHECK(cluster.proxy.tunnels().size() == 2);
  {
    Environment env;  // lower case, and a bare host:port as Go accepts it
    env.set("HTTPS_PROXY", "").set("https_proxy", "127.0.0.1:" + std::to_string(cluster.proxy.port()));
    CHECK(run({"karta-webhook", "list", "--kubeconfig", config}).code == 0);
  }
  CHECK(cluster.proxy.tunnels().size() == 3);
  for (const auto& tunnel : cluster.proxy.tunnels()) CHECK(tunnel.authority == cluster.authority());
  // NO_PROXY naming the server (by domain suffix, by name and port): the client goes directly, and kube.test
  // is a name only the proxy knows.
  for (std::string no_proxy :
       std::vector<std::string>{".test", "kube.test:" + std::to_string(cluster.server.port()), "*"}) {
    CAPTURE(no_proxy);
    Environment env;
    env.set("HTTPS_PROXY", cluster.proxy.url()).set("no_proxy", no_proxy).set("NO_PROXY", "");
    Run direct = run({"karta-webhook", "list", "--kubeconfig", config});
    CHECK(direct.code == 1);
    CHECK(direct.err.find(": cannot resolve kube.test: ") != std::string::npos);
  }
  CHECK(cluster.proxy.tunnels().size() == 3);
}

TEST_CASE("--context picks the kubeconfig's context on inspect, list, audit and serve") {
  test::TempDir dir;
  test::FakeApiServer server(dir.path, {});
  test::demo_cluster::serve_demo(server);
  std::string config = server.kubeconfig("research");
  // The current context points at a cluster that does not exist; "local" at the server.
  config.replace(config.find("current-context: local"), 22,
                 "- name: broken\n  context: {cluster: nowhere, user: me}\ncurrent-context: broken");
  test::write_text(dir.path / "config", config);
  std::string file = (dir.path / "config").string();
  Run broken = run({"karta-webhook", "list", "--kubeconfig", file});
  CHECK(broken.code == 1);
  CHECK(broken.err ==
        "karta-webhook: " + file +
            ": contexts[broken].context.cluster: no cluster named \"nowhere\" in clusters (it has local)\n");
  Run listed = run({"karta-webhook", "list", "--kubeconfig", file, "--context", "local"});
  CHECK(listed.code == 0);
  CHECK(listed.out.find("research    demo   JobSet") != std::string::npos);
  Run inspected = run({"karta-webhook", "inspect", "jobset/demo", "--kubeconfig", file, "--context", "local"});
  CHECK(inspected.code == 0);
  CHECK(inspected.out.substr(inspected.out.find('\n')) == std::string(test::demo_cluster::kDescribeAfterHeader));
  CHECK(run({"karta-webhook", "audit", "--kubeconfig", file, "--context", "local"}).code == 0);
  Run unknown = run({"karta-webhook", "audit", "--kubeconfig", file, "--context", "elsewhere"});
  CHECK(unknown.code == 2);
  CHECK(unknown.err == "karta-webhook audit: " + file +
                           ": context: no context named \"elsewhere\" in contexts (it has local, broken)\n");
  // serve takes --context with --kubeconfig only.
  Run serve = run({"karta-webhook", "serve", "--tls-cert-file", server.certificates().certificate.string(),
                   "--tls-private-key-file", server.certificates().key.string(), "--context", "local"});
  CHECK(serve.code != 0);
  CHECK(serve.err.find("--context requires --kubeconfig") != std::string::npos);
}

}  // namespace unit_kube_proxy
