// Kubernetes connections: kubeconfig contexts, what a kubeconfig may not hold, and the in-cluster service account.

#include <doctest/doctest.h>

#include <cstdlib>
#include <optional>

#include "kube/api_client.h"
#include "kube/kube_connection.h"
#include "support/fake_api_server.h"
#include "support/kube_fixtures.h"
#include "support/test_support.h"

namespace unit_kube_connection {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace kube = karta::kube;
namespace test = karta::test;
namespace fs = std::filesystem;

using test::base64;
using test::ClientCertificate;
using test::FakeApiServer;
using test::make_client_certificate;
using test::read_text;
using test::write_text;
using namespace test::kube_fixtures;

namespace {

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

// ---------------------------------------------------------------------------------------------------
// kubeconfig and in-cluster configuration

TEST_CASE("a kubeconfig's current context gives the server's host, port and path, the CA data and the token") {
  test::TempDir dir;
  test::TestCertificates certificates(dir.path);
  std::string ca = read_text(certificates.ca);
  write_text(dir.path / "config", R"(apiVersion: v1
kind: Config
clusters:
- name: dev
  cluster:
    server: https://api.dev.example.com:6443/k8s/clusters/c-1/
    certificate-authority-data: )" + base64(ca) +
                                      R"(
    tls-server-name: kubernetes.default.svc
users:
- name: alice
  user:
    token: abc.def
contexts:
- name: dev
  context: {cluster: dev, user: alice, namespace: research}
current-context: dev
)");
  kube::KubeConnection connection = kube::load_kubeconfig(dir.path / "config");
  CHECK(connection.host == "api.dev.example.com");
  CHECK(connection.port == 6443);
  CHECK(connection.base_path == "/k8s/clusters/c-1");
  CHECK(connection.server_url() == "https://api.dev.example.com:6443/k8s/clusters/c-1");
  CHECK(connection.ca_pem == std::optional<std::string>(ca));
  CHECK(connection.token == "abc.def");
  CHECK(connection.bearer_token() == "abc.def");
  CHECK(connection.token_file.empty());
  CHECK(connection.client_certificate_pem.empty());
  CHECK(connection.tls_server_name == "kubernetes.default.svc");
  CHECK_FALSE(connection.insecure_skip_tls_verify);
  CHECK(connection.default_namespace == "research");
  CHECK(connection.source == "kubeconfig " + (dir.path / "config").string() + ", context dev");
}

TEST_CASE("a context named by the caller wins over current-context") {
  test::TempDir dir;
  write_text(dir.path / "config", R"(clusters:
- name: dev
  cluster: {server: "https://10.0.0.1:6443"}
- name: prod
  cluster: {server: "https://[fd00::1]", insecure-skip-tls-verify: true}
users:
- {name: alice, user: {token: alice-token}}
- {name: ops, user: {token: ops-token}}
contexts:
- {name: dev, context: {cluster: dev, user: alice}}
- {name: prod, context: {cluster: prod, user: ops}}
current-context: dev
)");
  kube::KubeConnection current = kube::load_kubeconfig(dir.path / "config");
  CHECK(current.server_url() == "https://10.0.0.1:6443");
  CHECK(current.token == "alice-token");
  kube::KubeConnection prod = kube::load_kubeconfig(dir.path / "config", "prod");
  CHECK(prod.host == "fd00::1");
  CHECK(prod.port == 443);
  CHECK(prod.server_url() == "https://[fd00::1]:443");
  CHECK(prod.insecure_skip_tls_verify);
  CHECK_FALSE(prod.ca_pem.has_value());
  CHECK(prod.token == "ops-token");
  CHECK(prod.default_namespace == "");
  CHECK(prod.source == "kubeconfig " + (dir.path / "config").string() + ", context prod");
}

TEST_CASE("certificate-authority, client-certificate, client-key and tokenFile paths are relative to the kubeconfig") {
  test::TempDir dir;
  fs::create_directories(dir.path / "pki");
  test::TestCertificates certificates(dir.path / "pki");
  ClientCertificate client = make_client_certificate(dir.path / "pki", "karta-webhook");
  write_text(dir.path / "kube/token", "token-1\n");
  write_text(dir.path / "kube/config", R"(clusters:
- name: local
  cluster: {server: "https://127.0.0.1:6443", certificate-authority: ../pki/ca.crt}
users:
- name: webhook
  user: {client-certificate: ../pki/karta-webhook.crt, client-key: ../pki/karta-webhook.key, tokenFile: token}
contexts:
- {name: local, context: {cluster: local, user: webhook}}
current-context: local
)");
  kube::KubeConnection connection = kube::load_kubeconfig(dir.path / "kube/config");
  CHECK(connection.ca_pem == std::optional<std::string>(read_text(certificates.ca)));
  CHECK(connection.client_certificate_pem == read_text(client.certificate));
  CHECK(connection.client_key_pem == read_text(client.key));
  CHECK(connection.token_file == dir.path / "kube" / "token");
  CHECK(connection.token == "");
  CHECK(connection.bearer_token() == "token-1");
  // The file is read for every request: a rotated token is used at once.
  write_text(dir.path / "kube/token", "token-2");
  CHECK(connection.bearer_token() == "token-2");
}

TEST_CASE("client-certificate-data and client-key-data are decoded from base64, and the certificate is presented") {
  test::TempDir dir;
  FakeApiServer server(dir.path, {karta_object("a")}, {.token = "", .require_client_certificate = true});
  ClientCertificate client = make_client_certificate(dir.path, "karta-webhook");
  write_text(dir.path / "config",
             "clusters:\n- name: local\n  cluster:\n    server: https://127.0.0.1:" + std::to_string(server.port()) +
                 "\n    certificate-authority-data: " + base64(read_text(server.certificates().ca)) +
                 "\nusers:\n- name: webhook\n  user:\n    client-certificate-data: " +
                 base64(read_text(client.certificate)) + "\n    client-key-data: " + base64(read_text(client.key)) +
                 "\ncontexts:\n- {name: local, context: {cluster: local, user: webhook}}\n"
                 "current-context: local\n");
  kube::KubeConnection connection = kube::load_kubeconfig(dir.path / "config");
  CHECK(connection.client_certificate_pem == read_text(client.certificate));
  CHECK(connection.client_key_pem == read_text(client.key));
  CHECK(connection.bearer_token() == "");

  kube::ApiClient client_with_certificate(connection);
  json list = client_with_certificate.get(std::string(kKartas) + "?limit=500");
  CHECK(names(list["items"].get<std::vector<json>>()) == std::vector<std::string>{"a"});
  auto received = server.received();
  REQUIRE(received.size() == 1);
  CHECK(received[0].client_name == "karta-webhook");
  CHECK(received[0].authorization == "");

  // Without a certificate the server ends the handshake.
  connection.client_certificate_pem.clear();
  connection.client_key_pem.clear();
  kube::ApiClient anonymous(connection);
  std::string error = error_of([&] { anonymous.get(kKartas); });
  CHECK(error.rfind("GET https://127.0.0.1:" + std::to_string(server.port()) + kKartas + ": ", 0) == 0);
  CHECK(server.received().size() == 1);
}

TEST_CASE("auth-provider plugins, basic auth and impersonation are refused, naming the user and the field") {
  test::TempDir dir;
  auto error_for = [&](const std::string& user) {
    write_text(dir.path / "config",
               "clusters:\n- {name: c, cluster: {server: \"https://k8s.example.com\"}}\n"
               "users:\n- name: u\n  user:\n" +
                   user + "contexts:\n- {name: x, context: {cluster: c, user: u}}\ncurrent-context: x\n");
    return error_of([&] { kube::load_kubeconfig(dir.path / "config"); });
  };
  std::string file = (dir.path / "config").string();
  // Exec plugins are run (tests/unit-kube-exec-credential.cpp): loading one is no error.
  CHECK(error_for("    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n"
                  "      args: [eks, get-token, --cluster-name, prod]\n") == "(no error)");
  CHECK(error_for("    auth-provider:\n      name: gcp\n") ==
        file +
            ": users[u].user.auth-provider: auth-provider plugins are not supported (this one is \"gcp\"); use "
            "token, tokenFile or client-certificate and client-key instead");
  CHECK(error_for("    username: admin\n    password: secret\n") ==
        file +
            ": users[u].user.username: basic authentication is not supported (Kubernetes 1.19 removed it); use "
            "token, tokenFile or client-certificate and client-key instead");
  CHECK(error_for("    token: t\n    as: system:admin\n") ==
        file + ": users[u].user.as: impersonation is not supported");
}

TEST_CASE("a kubeconfig that names what is not there, or holds what cannot be used, is refused with the field") {
  test::TempDir dir;
  std::string file = (dir.path / "config").string();
  auto error_for = [&](const std::string& text, const std::string& context = "") {
    write_text(dir.path / "config", text);
    return error_of([&] { kube::load_kubeconfig(dir.path / "config", context); });
  };
  const std::string users = "users:\n- {name: u, user: {token: t}}\n";
  const std::string contexts = "contexts:\n- {name: dev, context: {cluster: prod, user: u}}\n";
  CHECK(error_for("clusters:\n- {name: dev, cluster: {server: \"https://a\"}}\n" + users + contexts +
                  "current-context: dev\n") ==
        file + ": contexts[dev].context.cluster: no cluster named \"prod\" in clusters (it has dev)");
  CHECK(error_for(users + contexts + "current-context: dev\n") ==
        file + ": contexts[dev].context.cluster: no cluster named \"prod\" in clusters (it is empty)");
  const std::string clusters = "clusters:\n- {name: prod, cluster: {server: \"https://a\"}}\n";
  CHECK(error_for(clusters + users + contexts + "current-context: gone\n") ==
        file + ": current-context: no context named \"gone\" in contexts (it has dev)");
  CHECK(error_for(clusters + users + contexts, "staging") ==
        file + ": context: no context named \"staging\" in contexts (it has dev)");
  CHECK(error_for(clusters + users + contexts) == file + ": current-context: not set, and no context was named");
  CHECK(error_for(clusters + "users:\n- {name: v, user: {token: t}}\n" + contexts + "current-context: dev\n") ==
        file + ": contexts[dev].context.user: no user named \"u\" in users (it has v)");
  CHECK(error_for("clusters:\n- {name: prod, cluster: {server: \"http://localhost:8080\"}}\n" + users + contexts,
                  "dev") ==
        file +
            ": clusters[prod].cluster.server: \"http://localhost:8080\": plain http is not supported; the API server "
            "must use https://");
  CHECK(error_for("clusters:\n- {name: prod, cluster: {server: \"https://a:http\"}}\n" + users + contexts, "dev") ==
        file + ": clusters[prod].cluster.server: \"https://a:http\": port \"http\" is not a number from 1 to 65535");
  CHECK(error_for("clusters:\n- {name: prod, cluster: {certificate-authority-data: abc}}\n" + users + contexts,
                  "dev") == file + ": clusters[prod].cluster.server: not set");
  CHECK(
      error_for("clusters:\n- {name: prod, cluster: {server: \"https://a\", certificate-authority-data: \"abc!\"}}\n" +
                    users + contexts,
                "dev") == file + ": clusters[prod].cluster.certificate-authority-data: not valid base64");
  CHECK(error_for("clusters:\n- {name: prod, cluster: {server: \"https://a\", certificate-authority-data: " +
                      base64("not a certificate") + "}}\n" + users + contexts,
                  "dev") == file + ": clusters[prod].cluster.certificate-authority: holds no PEM certificate");
  CHECK(error_for("clusters:\n- {name: prod, cluster: {server: \"https://a\", certificate-authority: ca.crt, "
                  "certificate-authority-data: " +
                      base64("x") + "}}\n" + users + contexts,
                  "dev") == file +
                                ": clusters[prod].cluster.certificate-authority: both certificate-authority and "
                                "certificate-authority-data are set; keep one");
  CHECK(error_for("clusters:\n- {name: prod, cluster: {server: \"https://a\", certificate-authority: ca.crt}}\n" +
                      users + contexts,
                  "dev") ==
        file + ": clusters[prod].cluster.certificate-authority: " + (dir.path / "ca.crt").string() + " cannot be read");
  CHECK(error_for(clusters + "users:\n- {name: u, user: {tokenFile: /nonexistent/token}}\n" + contexts, "dev") ==
        file + ": users[u].user.tokenFile: /nonexistent/token cannot be read");
  CHECK(error_for(clusters + "users:\n- {name: u, user: {client-certificate-data: " + base64("x") + "}}\n" + contexts,
                  "dev") == file + ": users[u].user.client-key: not set, but client-certificate is");
  CHECK(error_for("clusters: [\n").rfind(file + ": not valid YAML at line ", 0) == 0);
  CHECK(error_of([&] { kube::load_kubeconfig(dir.path / "missing"); }) ==
        (dir.path / "missing").string() + ": cannot be read");
}

TEST_CASE("in a pod, the connection comes from KUBERNETES_SERVICE_HOST and PORT and the mounted service account") {
  test::TempDir dir;
  test::TestCertificates certificates(dir.path);
  kube::ServiceAccountFiles files{dir.path / "sa/token", dir.path / "sa/ca.crt", dir.path / "sa/namespace"};
  write_text(files.token, "eyJhbGciOi.first");
  write_text(files.ca, read_text(certificates.ca));
  write_text(files.namespace_file, "karta-system");
  setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  kube::KubeConnection connection = kube::in_cluster_connection(files);
  CHECK(connection.server_url() == "https://10.96.0.1:443");
  CHECK(connection.token_file == files.token);
  CHECK(connection.bearer_token() == "eyJhbGciOi.first");
  CHECK(connection.ca_pem == std::optional<std::string>(read_text(certificates.ca)));
  CHECK(connection.default_namespace == "karta-system");
  CHECK(connection.source == "in-cluster service account");

  fs::remove(files.ca);
  CHECK(error_of([&] { kube::in_cluster_connection(files); }) ==
        "service account CA " + files.ca.string() + " cannot be read");
  unsetenv("KUBERNETES_SERVICE_HOST");
  CHECK(error_of([&] { kube::in_cluster_connection(files); }) ==
        "not running in a Kubernetes pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
  unsetenv("KUBERNETES_SERVICE_PORT");
}

// ---------------------------------------------------------------------------------------------------
// Several kubeconfig files, as $KUBECONFIG lists them

namespace {

// Sets KUBECONFIG (unset for nullptr) for as long as it lives.
struct KubeconfigVariable {
  explicit KubeconfigVariable(const char* value) {
    if (value != nullptr) {
      setenv("KUBECONFIG", value, 1);
    } else {
      unsetenv("KUBECONFIG");
    }
  }
  ~KubeconfigVariable() { unsetenv("KUBECONFIG"); }
};

}  // namespace

TEST_CASE("the kubeconfig files: --kubeconfig alone, else $KUBECONFIG's split at ':' once each, else ~/.kube/config") {
  KubeconfigVariable variable("/a/config::/b/config:/a/config:");
  kube::KubeconfigFiles flag = kube::kubeconfig_files("/flag/config");
  CHECK(flag.files == std::vector<fs::path>{"/flag/config"});
  CHECK(flag.explicit_file);
  CHECK(flag.origin == "--kubeconfig");
  kube::KubeconfigFiles listed = kube::kubeconfig_files("");
  CHECK(listed.files == std::vector<fs::path>{"/a/config", "/b/config"});
  CHECK_FALSE(listed.explicit_file);
  CHECK(listed.origin == "$KUBECONFIG");
  unsetenv("KUBECONFIG");
  const char* home = std::getenv("HOME");
  REQUIRE(home != nullptr);
  kube::KubeconfigFiles fallback = kube::kubeconfig_files("");
  CHECK(fallback.files == std::vector<fs::path>{fs::path(home) / ".kube/config"});
  CHECK(fallback.origin == "~/.kube/config");
}

TEST_CASE("$KUBECONFIG with a cluster file, a user file and a missing file merges into a working connection") {
  test::TempDir dir;
  FakeApiServer server(dir.path, {karta_object("a")});
  KubeconfigVariable variable(split_kubeconfig(dir.path / "kube", server.connection()).c_str());
  kube::KubeConnection connection = kube::load_kubeconfig(kube::kubeconfig_files(""));
  // Each file's relative paths are its own: ca.pem beside cluster.yaml, token beside user/user.yaml.
  CHECK(connection.ca_pem == std::optional<std::string>(read_text(server.certificates().ca)));
  CHECK(connection.token_file == dir.path / "kube/user/token");
  CHECK(connection.default_namespace == "research");
  CHECK(connection.source == "kubeconfig " + (dir.path / "kube/cluster.yaml").string() + ":" +
                                 (dir.path / "kube/user/user.yaml").string() + ", context local");
  CHECK(kube::ApiClient(connection).get(kKartas)["kind"] == "KartaList");
  CHECK(server.received().at(0).authorization == "Bearer sesame");
}

TEST_CASE("merged kubeconfigs: the first file wins for each named cluster, user and context, and for current-context") {
  test::TempDir dir;
  write_text(dir.path / "first", R"(clusters:
- {name: shared, cluster: {server: "https://first.example.com"}}
users:
- {name: shared, user: {token: first-token}}
contexts:
- {name: one, context: {cluster: shared, user: shared, namespace: first-ns}}
current-context: one
)");
  // Its entries of the same names are ignored whole, even fields the first file's lack; its own are used.
  write_text(dir.path / "second", R"(clusters:
- {name: shared, cluster: {server: "https://second.example.com", tls-server-name: second}}
- {name: own, cluster: {server: "https://own.example.com:8443"}}
users:
- {name: shared, user: {token: second-token}}
contexts:
- {name: one, context: {cluster: own, user: shared, namespace: second-ns}}
- {name: two, context: {cluster: own, user: shared}}
current-context: two
)");
  std::string both = (dir.path / "first").string() + ":" + (dir.path / "second").string();
  KubeconfigVariable variable(both.c_str());
  kube::KubeConnection one = kube::load_kubeconfig(kube::kubeconfig_files(""));
  CHECK(one.server_url() == "https://first.example.com:443");
  CHECK(one.tls_server_name == "");
  CHECK(one.token == "first-token");
  CHECK(one.default_namespace == "first-ns");
  CHECK(one.source == "kubeconfig " + both + ", context one");
  // A context of the second file, whose user the first file also names: the first file's user.
  kube::KubeConnection two = kube::load_kubeconfig(kube::kubeconfig_files(""), "two");
  CHECK(two.server_url() == "https://own.example.com:8443");
  CHECK(two.token == "first-token");
  // In the other order, the second file's entries and current-context win.
  std::string reversed = (dir.path / "second").string() + ":" + (dir.path / "first").string();
  KubeconfigVariable swapped(reversed.c_str());
  kube::KubeConnection other = kube::load_kubeconfig(kube::kubeconfig_files(""));
  CHECK(other.server_url() == "https://own.example.com:8443");
  CHECK(other.token == "second-token");
  CHECK(other.source == "kubeconfig " + reversed + ", context two");
  // A name no file has is reported with the names the files have; current-context that names it, by
  // the file that sets it.
  CHECK(error_of([&] { kube::load_kubeconfig(kube::kubeconfig_files(""), "three"); }) ==
        reversed + ": context: no context named \"three\" in contexts (it has one, two)");
  write_text(dir.path / "third", "current-context: three\n");
  std::string three = (dir.path / "third").string() + ":" + reversed;
  KubeconfigVariable with_third(three.c_str());
  CHECK(error_of([&] { kube::load_kubeconfig(kube::kubeconfig_files("")); }) ==
        (dir.path / "third").string() + ": current-context: no context named \"three\" in contexts (it has one, two)");
}

TEST_CASE("no kubeconfig file at all is a NoKubeconfigError; a missing --kubeconfig file is an error of its own") {
  test::TempDir dir;
  std::string a = (dir.path / "a").string(), b = (dir.path / "b").string();
  std::string both = a + ":" + b;
  KubeconfigVariable variable(both.c_str());
  auto no_kubeconfig = [](const kube::KubeconfigFiles& files) {
    try {
      kube::load_kubeconfig(files);
    } catch (const kube::NoKubeconfigError& e) {
      return std::string(e.what());
    }
    return std::string("(no NoKubeconfigError)");
  };
  CHECK(no_kubeconfig(kube::kubeconfig_files("")) == "no kubeconfig: none of the files $KUBECONFIG names exists (" + a +
                                                         ", " + b + ")");
  CHECK(no_kubeconfig({{a}, false, "~/.kube/config"}) == "no kubeconfig: " + a + " (from ~/.kube/config) does not exist");
  CHECK(error_of([&] { kube::load_kubeconfig(kube::kubeconfig_files(a)); }) == a + ": cannot be read");
  // An empty file is an empty kubeconfig, as kubectl reads it: merged with others, it adds nothing.
  write_text(dir.path / "a", "");
  CHECK(error_of([&] { kube::load_kubeconfig(kube::kubeconfig_files("")); }) ==
        a + ": current-context: not set, and no context was named");
}

TEST_CASE("karta-webhook audit reads every file of $KUBECONFIG, merged, and no longer takes a:b for one path") {
  test::TempDir dir;
  test::FakeApiServer server(dir.path, {});
  std::string kubeconfig = test::kube_fixtures::split_kubeconfig(dir.path / "kube", server.connection());
  int code = -1;
  std::string audit = test::binary_path().string() + " audit -o json";
  json report = json::parse(test::run_command("KUBECONFIG=" + kubeconfig + " " + audit + " 2>/dev/null", &code));
  CHECK(code == 0);
  CHECK(report["workloads"] == json::array());
  // Discovery and the LISTs went to the cluster file's server with the user file's token.
  REQUIRE_FALSE(server.received().empty());
  CHECK(server.received()[0].target == "/api");
  for (const auto& request : server.received()) CHECK(request.authorization == "Bearer sesame");
  // None of the files there: no cluster to audit, status 2.
  std::string a = (dir.path / "a").string(), b = (dir.path / "b").string();
  std::string none = test::run_command("KUBECONFIG=" + a + ":" + b + " " + audit + " 2>&1", &code);
  CHECK(code == 2);
  CHECK(none == "karta-webhook audit: audit: no cluster (give --kubeconfig, --in-cluster or -f FILES): no kubeconfig: "
                "none of the files $KUBECONFIG names exists (" + a + ", " + b + ")\n");
}

}  // namespace unit_kube_connection
