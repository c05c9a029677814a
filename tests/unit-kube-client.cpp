// The Kubernetes API client, against a local HTTPS API server that speaks the real protocol: LISTs in
// pages with continue tokens, WATCH streams of JSON lines sent as one chunk each, bookmarks, 410 ERROR
// events after compaction, Status bodies for errors, bearer tokens and client certificates. No cluster
// is needed.

#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "admission/admission_service.h"
#include "definitions/api/published_api.h"
#include "json/documents.h"
#include "kube/api_client.h"
#include "kube/kube_connection.h"
#include "kube/watcher.h"
#include "support/fake_api_server.h"
#include "support/running_webhook.h"
#include "support/test_support.h"
#include "validate/openapi_schema.h"

using karta::json;
namespace kube = karta::kube;
namespace test = karta::test;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

using test::base64;
using test::ClientCertificate;
using test::FakeApiServer;
using test::make_client_certificate;
using test::raw_url_base64;
using test::read_text;
using test::write_text;

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kKartas = "/apis/run.ai/v1alpha1/kartas";

// Waits for `condition`, looking every 2 ms, at most `timeout`.
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout = 5s) {
  auto deadline = Clock::now() + timeout;
  while (!condition()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

json karta_object(const std::string& name, const std::string& kind = "Job") {
  return {{"apiVersion", "run.ai/v1alpha1"},
          {"kind", "Karta"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"structureDefinition",
             {{"rootComponent",
               {{"name", "root"},
                {"kind", {{"group", "example.com"}, {"version", "v1"}, {"kind", kind}}},
                {"specDefinition", {{"podTemplateSpecPath", ".spec.template"}}},
                {"statusDefinition",
                 {{"phaseDefinition", {{"path", ".status.phase"}}},
                  {"statusMappings", {{"running", {{{"byPhase", "Running"}}}}}}}}}}}}}}};
}

std::vector<std::string> names(const std::vector<json>& objects) {
  std::vector<std::string> result;
  for (const auto& object : objects) result.push_back(object["metadata"]["name"].get<std::string>());
  return result;
}

// What a watcher's callbacks were given, for the test thread to look at.
struct Recorder {
  mutable std::mutex mutex;
  std::vector<std::vector<json>> snapshots;
  std::vector<std::pair<kube::EventType, json>> events;

  kube::WatcherCallbacks callbacks() {
    return {[this](std::vector<json> objects) {
              std::lock_guard lock(mutex);
              snapshots.push_back(std::move(objects));
            },
            [this](kube::EventType type, const json& object) {
              std::lock_guard lock(mutex);
              events.emplace_back(type, object);
            }};
  }
  std::size_t snapshot_count() const {
    std::lock_guard lock(mutex);
    return snapshots.size();
  }
  std::size_t event_count() const {
    std::lock_guard lock(mutex);
    return events.size();
  }
  std::vector<json> snapshot(std::size_t index) const {
    std::lock_guard lock(mutex);
    return snapshots.at(index);
  }
  std::pair<kube::EventType, json> event(std::size_t index) const {
    std::lock_guard lock(mutex);
    return events.at(index);
  }
};

kube::WatcherOptions test_options() {
  kube::WatcherOptions options;
  options.page_size = 2;
  options.initial_backoff = 20ms;
  options.max_backoff = 200ms;
  return options;
}

std::string watch_query(const std::string& version) {
  return std::string(kKartas) + "?watch=1&resourceVersion=" + version + "&allowWatchBookmarks=true&timeoutSeconds=300";
}

// A server holding kartas a, b and c, and a started watcher of it that has listed and is watching.
struct WatchedServer {
  test::TempDir dir;
  FakeApiServer server{dir.path, {karta_object("a"), karta_object("b"), karta_object("c")}};
  Recorder recorder;
  kube::ResourceWatcher watcher;

  explicit WatchedServer(kube::WatcherOptions options = test_options())
      : watcher(server.connection(), kKartas, recorder.callbacks(), options) {
    watcher.start();
    REQUIRE(watcher.wait_until_synced(5s));
    REQUIRE(eventually([&] { return watcher.watches() == 1 && server.open_watches() == 1; }));
  }
};

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

TEST_CASE("credential plugins, basic auth and impersonation are refused, naming the user and the field") {
  test::TempDir dir;
  auto error_for = [&](const std::string& user) {
    write_text(dir.path / "config",
               "clusters:\n- {name: c, cluster: {server: \"https://k8s.example.com\"}}\n"
               "users:\n- name: u\n  user:\n" +
                   user + "contexts:\n- {name: x, context: {cluster: c, user: u}}\ncurrent-context: x\n");
    return error_of([&] { kube::load_kubeconfig(dir.path / "config"); });
  };
  std::string file = (dir.path / "config").string();
  CHECK(error_for("    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n"
                  "      args: [eks, get-token, --cluster-name, prod]\n") ==
        file +
            ": users[u].user.exec: exec credential plugins are not supported (this one runs \"aws\"); use token, "
            "tokenFile or client-certificate and client-key instead");
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
// ApiClient

TEST_CASE("get sends the bearer token and Accept: application/json and returns the JSON answer") {
  test::TempDir dir;
  FakeApiServer server(dir.path, {karta_object("a"), karta_object("b")});
  kube::ApiClient client(server.connection());
  json list = client.get(std::string(kKartas) + "?limit=500");
  CHECK(list["kind"] == "KartaList");
  CHECK(list["metadata"] == json{{"resourceVersion", "100"}});
  CHECK(names(list["items"].get<std::vector<json>>()) == std::vector<std::string>{"a", "b"});
  // The second request reuses the connection; both carry the same headers.
  client.get(std::string(kKartas) + "?limit=1");
  auto received = server.received();
  REQUIRE(received.size() == 2);
  for (const auto& request : received) {
    CHECK(request.authorization == "Bearer sesame");
    CHECK(request.accept == "application/json");
  }
  CHECK(received[1].target == std::string(kKartas) + "?limit=1");
}

TEST_CASE("when the server has closed the kept-alive connection, get asks again on a new one") {
  test::TempDir dir;
  FakeApiServer server(dir.path, {karta_object("a")}, {.close_after_answer = true});
  kube::ApiClient client(server.connection());
  CHECK(client.get(kKartas)["kind"] == "KartaList");
  REQUIRE(eventually([&] { return server.received().size() == 1; }));
  CHECK(client.get(kKartas)["kind"] == "KartaList");
  CHECK(server.received().size() == 2);
  CHECK(server.connections() == 2);
}

TEST_CASE("a non-2xx answer throws an ApiError with the HTTP status and the Status's reason and message") {
  test::TempDir dir;
  FakeApiServer server(dir.path, {});
  kube::ApiClient wrong(server.connection("wrong"));
  try {
    wrong.get(kKartas);
    FAIL("no ApiError");
  } catch (const kube::ApiError& e) {
    CHECK(e.status() == 401);
    CHECK(e.reason() == "Unauthorized");
    CHECK(e.message() == "Unauthorized");
    CHECK_FALSE(e.cancelled());
    CHECK(std::string(e.what()) ==
          "GET https://127.0.0.1:" + std::to_string(server.port()) + kKartas + " answered 401: Unauthorized");
  }
  kube::ApiClient client(server.connection());
  try {
    client.get("/apis/run.ai/v1alpha1/nothings");
    FAIL("no ApiError");
  } catch (const kube::ApiError& e) {
    CHECK(e.status() == 404);
    CHECK(e.reason() == "NotFound");
    CHECK(e.message() == "the server could not find the requested resource");
  }
}

TEST_CASE("the server's certificate must carry the name checked: a wrong tls-server-name fails the handshake") {
  test::TempDir dir;
  FakeApiServer server(dir.path, {});
  kube::KubeConnection connection = server.connection();
  connection.tls_server_name = "kubernetes.default.svc";
  kube::ApiClient client(connection);
  try {
    client.get(kKartas);
    FAIL("no ApiError");
  } catch (const kube::ApiError& e) {
    CHECK(e.status() == 0);
    CHECK(e.message().rfind("TLS handshake with 127.0.0.1:" + std::to_string(server.port()) + " failed: ", 0) == 0);
    CHECK(e.message().find("(hostname mismatch, checking \"kubernetes.default.svc\")") != std::string::npos);
  }
  // "localhost" is in the certificate's subjectAltNames, as is 127.0.0.1.
  connection.tls_server_name = "localhost";
  CHECK(kube::ApiClient(connection).get(kKartas)["kind"] == "KartaList");
  CHECK(server.received().size() == 1);
}

TEST_CASE("an in-cluster connection reads its rotated token file again for the next request") {
  test::TempDir dir;
  FakeApiServer server(dir.path, {karta_object("a")});
  kube::ServiceAccountFiles files{dir.path / "sa/token", dir.path / "sa/ca.crt", dir.path / "sa/namespace"};
  write_text(files.token, "sesame");
  write_text(files.ca, read_text(server.certificates().ca));
  setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", std::to_string(server.port()).c_str(), 1);
  kube::KubeConnection connection = kube::in_cluster_connection(files);
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
  kube::ApiClient client(connection);
  client.get(kKartas);
  write_text(files.token, "rotated");
  try {
    client.get(kKartas);
    FAIL("the rotated token was not sent");
  } catch (const kube::ApiError& e) {
    CHECK(e.status() == 401);
  }
  auto received = server.received();
  REQUIRE(received.size() == 2);
  CHECK(received[0].authorization == "Bearer sesame");
  CHECK(received[1].authorization == "Bearer rotated");
}

// ---------------------------------------------------------------------------------------------------
// ResourceWatcher

TEST_CASE(
    "the watcher lists in pages, watches from the list's resourceVersion, and delivers an ADDED while the stream is "
    "open") {
  WatchedServer w;
  // Three kartas in pages of two: the second page is asked for with the first's continue token.
  auto targets = w.server.targets();
  REQUIRE(targets.size() == 3);
  CHECK(targets[0] == std::string(kKartas) + "?limit=2");
  std::string continue_token =
      raw_url_base64(json{{"v", "meta.k8s.io/v1"}, {"rv", 100}, {"start", std::string("b") + '\0'}}.dump());
  CHECK(targets[1] == std::string(kKartas) + "?limit=2&continue=" + continue_token);
  CHECK(targets[2] == watch_query("100"));
  REQUIRE(w.recorder.snapshot_count() == 1);
  CHECK(names(w.recorder.snapshot(0)) == std::vector<std::string>{"a", "b", "c"});
  CHECK(w.recorder.snapshot(0)[0]["metadata"]["resourceVersion"] == "40");
  CHECK(w.watcher.synced());
  CHECK(w.watcher.lists() == 1);
  CHECK(w.watcher.watches() == 1);
  CHECK(w.watcher.resource_version() == "100");

  w.server.add(karta_object("d", "PyTorchJob"));
  REQUIRE(eventually([&] { return w.recorder.event_count() == 1; }));
  // The stream has not ended: the server ends it only at timeoutSeconds (300) or when told.
  CHECK(w.server.open_watches() == 1);
  auto [type, object] = w.recorder.event(0);
  CHECK(type == kube::EventType::Added);
  CHECK(object["metadata"]["name"] == "d");
  CHECK(object["metadata"]["resourceVersion"] == "101");
  CHECK(object["spec"]["structureDefinition"]["rootComponent"]["kind"]["kind"] == "PyTorchJob");
  CHECK(w.watcher.resource_version() == "101");
  auto objects = w.watcher.objects();
  CHECK(objects.size() == 4);
  CHECK(objects.at("d") == object);
  CHECK(w.watcher.watches() == 1);
  CHECK(w.watcher.errors() == 0);
}

TEST_CASE("MODIFIED replaces the object and DELETED removes it") {
  WatchedServer w;
  json modified = karta_object("b", "RayCluster");
  w.server.modify(modified);
  w.server.remove("a");
  REQUIRE(eventually([&] { return w.recorder.event_count() == 2; }));
  CHECK(w.recorder.event(0).first == kube::EventType::Modified);
  CHECK(w.recorder.event(1).first == kube::EventType::Deleted);
  CHECK(w.recorder.event(1).second["metadata"]["name"] == "a");
  CHECK(w.recorder.event(1).second["metadata"]["resourceVersion"] == "102");
  auto objects = w.watcher.objects();
  CHECK(objects.size() == 2);
  CHECK(objects.count("a") == 0);
  CHECK(objects.at("b")["spec"]["structureDefinition"]["rootComponent"]["kind"]["kind"] == "RayCluster");
  CHECK(w.watcher.resource_version() == "102");
  CHECK(kube::to_string(w.recorder.event(1).first) == std::string("DELETED"));
}

TEST_CASE("a BOOKMARK moves the resourceVersion, and the next watch starts from it") {
  WatchedServer w;
  w.server.bookmark(150);
  REQUIRE(eventually([&] { return w.watcher.resource_version() == "150"; }));
  CHECK(w.recorder.event_count() == 0);  // bookmarks are not events of objects
  w.server.end_watches();
  REQUIRE(eventually([&] { return w.watcher.watches() == 2 && w.server.open_watches() == 1; }));
  auto targets = w.server.targets();
  REQUIRE(targets.size() == 4);
  CHECK(targets[3] == watch_query("150"));
  CHECK(w.watcher.lists() == 1);
  CHECK(w.recorder.snapshot_count() == 1);
}

TEST_CASE("when the server ends the stream, the watcher watches again from the last resourceVersion it saw") {
  WatchedServer w;
  w.server.add(karta_object("d"));
  w.server.add(karta_object("e"));
  REQUIRE(eventually([&] { return w.recorder.event_count() == 2; }));
  w.server.end_watches();
  REQUIRE(eventually([&] { return w.watcher.watches() == 2 && w.server.open_watches() == 1; }));
  auto targets = w.server.targets();
  REQUIRE(targets.size() == 4);
  CHECK(targets[3] == watch_query("102"));
  // Writes made while no stream was open are replayed by the server from that resourceVersion.
  w.server.end_watches();
  REQUIRE(eventually([&] { return w.watcher.watches() == 3; }));
  w.server.add(karta_object("f"));
  REQUIRE(eventually([&] { return w.recorder.event_count() == 3; }));
  CHECK(w.recorder.event(2).second["metadata"]["name"] == "f");
  CHECK(w.watcher.lists() == 1);
  CHECK(w.watcher.errors() == 0);
  CHECK(w.watcher.objects().size() == 6);
}

TEST_CASE("an ERROR event with a 410 Expired Status makes the watcher list again and deliver a fresh snapshot") {
  WatchedServer w;
  w.server.add(karta_object("d"));
  REQUIRE(eventually([&] { return w.recorder.event_count() == 1; }));
  // etcd compacted past the watcher's resourceVersion (101) while its stream was being re-opened.
  w.server.remove("a");
  REQUIRE(eventually([&] { return w.recorder.event_count() == 2; }));
  w.server.compact(200);
  // The watch from 102 is answered 200 with the ERROR event, and so counts as opened.
  REQUIRE(eventually([&] { return w.watcher.watches() == 3 && w.server.open_watches() == 1; }));
  auto targets = w.server.targets();
  REQUIRE(targets.size() == 7);
  CHECK(targets[3] == watch_query("102"));  // answered with the ERROR event
  CHECK(targets[4] == std::string(kKartas) + "?limit=2");
  CHECK(targets[6] == watch_query("200"));
  CHECK(names(w.recorder.snapshot(1)) == std::vector<std::string>{"b", "c", "d"});
  CHECK(w.watcher.relists_after_gone() == 1);
  CHECK(w.watcher.lists() == 2);
  CHECK(w.watcher.errors() == 0);
  CHECK(w.watcher.resource_version() == "200");
}

TEST_CASE("an HTTP 410 answer to a watch also makes the watcher list again") {
  test::TempDir dir;
  FakeApiServer server(dir.path, {karta_object("a")}, {.gone_as_http_status = true});
  Recorder recorder;
  kube::ResourceWatcher watcher(server.connection(), kKartas, recorder.callbacks(), test_options());
  watcher.start();
  REQUIRE(eventually([&] { return watcher.watches() == 1 && server.open_watches() == 1; }));
  server.compact(300);
  REQUIRE(eventually([&] { return watcher.watches() == 2 && server.open_watches() == 1; }));
  CHECK(server.targets() == std::vector<std::string>{std::string(kKartas) + "?limit=2", watch_query("100"),
                                                     watch_query("100"), std::string(kKartas) + "?limit=2",
                                                     watch_query("300")});
  CHECK(watcher.relists_after_gone() == 1);
  CHECK(watcher.watches() == 2);  // the 410 opened no stream
  CHECK(watcher.errors() == 0);
}

TEST_CASE("500 answers are retried after a backoff that doubles, and then the watcher syncs") {
  test::TempDir dir;
  FakeApiServer server(dir.path, {karta_object("a")});
  server.fail_next(3, 500);
  Recorder recorder;
  kube::WatcherOptions options = test_options();
  options.initial_backoff = 100ms;
  options.max_backoff = 10s;
  kube::ResourceWatcher watcher(server.connection(), kKartas, recorder.callbacks(), options);
  watcher.start();
  REQUIRE(watcher.wait_until_synced(5s));
  CHECK(watcher.errors() == 3);
  CHECK(watcher.lists() == 1);
  CHECK(watcher.last_error() == "GET https://127.0.0.1:" + std::to_string(server.port()) + kKartas +
                                    "?limit=2 answered 500: Internal error occurred: etcdserver: leader changed");
  auto received = server.received();
  REQUIRE(received.size() >= 4);
  // Each wait is drawn from the upper half of 100, 200, then 400 ms.
  CHECK(received[1].at - received[0].at >= 50ms);
  CHECK(received[2].at - received[1].at >= 100ms);
  CHECK(received[3].at - received[2].at >= 200ms);
  for (int i = 0; i < 4; ++i) CHECK(received[i].target == std::string(kKartas) + "?limit=2");
}

TEST_CASE("a wrong token leaves the watcher unsynced, with the 401 counted and its message kept") {
  test::TempDir dir;
  FakeApiServer server(dir.path, {karta_object("a")});
  Recorder recorder;
  kube::WatcherOptions options = test_options();
  options.page_size = 500;
  kube::ResourceWatcher watcher(server.connection("wrong"), kKartas, recorder.callbacks(), options);
  watcher.start();
  REQUIRE(eventually([&] { return watcher.errors() >= 2; }));
  CHECK_FALSE(watcher.synced());
  CHECK(watcher.lists() == 0);
  CHECK(recorder.snapshot_count() == 0);
  CHECK(watcher.last_error() ==
        "GET https://127.0.0.1:" + std::to_string(server.port()) + kKartas + "?limit=500 answered 401: Unauthorized");
  CHECK(server.received()[0].target == std::string(kKartas) + "?limit=500");
}

TEST_CASE("stop() returns within a second during an open watch, and the server sees the stream closed") {
  WatchedServer w;
  auto started = Clock::now();
  w.watcher.stop();
  CHECK(Clock::now() - started < 1s);
  CHECK(eventually([&] { return w.server.open_watches() == 0; }));
  w.watcher.stop();  // again: nothing to do
}

TEST_CASE("stop() returns within a second during a backoff wait") {
  test::TempDir dir;
  FakeApiServer server(dir.path, {karta_object("a")});
  server.fail_next(1, 503);
  Recorder recorder;
  kube::WatcherOptions options = test_options();
  options.initial_backoff = 20s;
  kube::ResourceWatcher watcher(server.connection(), kKartas, recorder.callbacks(), options);
  watcher.start();
  REQUIRE(eventually([&] { return watcher.errors() == 1; }));
  auto started = Clock::now();
  watcher.stop();
  CHECK(Clock::now() - started < 1s);
  CHECK(server.received().size() == 1);
}

TEST_CASE("LIST items without apiVersion and kind get them from the list, as watch events carry them") {
  test::TempDir dir;
  FakeApiServer server(dir.path, {karta_object("a")}, {.list_items_without_type = true});
  Recorder recorder;
  kube::ResourceWatcher watcher(server.connection(), kKartas, recorder.callbacks(), test_options());
  watcher.start();
  REQUIRE(watcher.wait_until_synced(5s));
  json expected = karta_object("a");
  expected["metadata"]["resourceVersion"] = "40";
  REQUIRE(recorder.snapshot_count() == 1);
  CHECK(recorder.snapshot(0) == std::vector<json>{expected});
  CHECK(watcher.objects().at("a") == expected);
}

TEST_CASE("objects are keyed by name when cluster-scoped and by namespace/name when namespaced") {
  CHECK(kube::ResourceWatcher::object_key(karta_object("jobset-v1alpha2")) == "jobset-v1alpha2");
  CHECK(kube::ResourceWatcher::object_key(json::parse(R"({"metadata":{"name":"cm","namespace":"karta-system"}})")) ==
        "karta-system/cm");
}

// ---------------------------------------------------------------------------------------------------
// The webhook on a cluster: definitions arrive over the watch

TEST_CASE("a Karta arriving over a watch stream is used by the webhook, then removed when deleted") {
  test::TempDir dir;
  FakeApiServer server{dir.path, {}};
  test::RunningWebhook running([&](karta::WebhookConfig& config) {
    config.cluster = server.connection();
    config.watcher_options = test_options();
  });
  test::HttpsClient client(running.port, running.certificates.ca);
  json trainer = json::parse(R"({"apiVersion":"acme.example.com/v1","kind":"Trainer","metadata":{"name":"t","namespace":"ml"},
      "spec":{"worker":{"template":{"spec":{"containers":[{"name":"w","image":"i"}]}}}}})");
  auto mutate = [&] {
    return json::parse(client.request("POST", "/mutate", test::admission_review(trainer).dump()).body)["response"];
  };
  CHECK_FALSE(mutate().contains("patch"));

  json definition = test::document(test::source_dir() / "tests/data/trainer-karta.yaml");
  definition["metadata"]["resourceVersion"] = "1";
  server.add(definition);
  REQUIRE(eventually([&] { return mutate().contains("patch"); }, 20s));
  CHECK(test::decoded_patch(json{{"response", mutate()}}) == json::parse(R"([{"op":"add","path":"/spec/worker/template/metadata",
      "value":{"labels":{"platform.example.com/managed":"true"},"annotations":{"platform.example.com/owner":"platform"}}}])"));

  // A definition that fails validation is not loaded (an `env` in an expression).
  json hostile = definition;
  hostile["metadata"]["name"] = "hostile";
  hostile["spec"]["structureDefinition"]["rootComponent"]["kind"]["kind"] = "Other";
  hostile["spec"]["structureDefinition"]["childComponents"][0]["specDefinition"]["podTemplateSpecPath"] = "env.HOME";
  server.add(hostile);

  server.remove("trainer");
  CHECK(eventually([&] { return !mutate().contains("patch"); }, 20s));
  CHECK(client.request("GET", "/metrics").body.find("karta_reload_errors_total{source=\"cluster\"}") != std::string::npos);
}

TEST_CASE("Kartas as the API server stores them with the published CRD are loaded and used, every catalog kind") {
  // Each catalog definition as a GET of it returns after `kubectl apply`: the CRD's defaults filled in,
  // the server's metadata, kubectl's last-applied annotation and a status with conditions, fields the
  // webhook does not use.
  std::vector<json> stored;
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(test::source_dir() / "definitions/catalog")) {
    if (entry.path().extension() != ".yaml") continue;
    json object = test::document(entry.path());
    json applied = object;
    object["metadata"]["name"] = "cluster-" + object["metadata"]["name"].get<std::string>();
    REQUIRE(karta::prune_unknown_fields(karta::karta_schema(), object) == std::vector<std::string>{});
    karta::apply_schema_defaults(karta::karta_schema(), object);
    object["metadata"]["uid"] = "3f1c2b9e-0000-4000-8000-" + std::to_string(100000000000 + stored.size());
    object["metadata"]["generation"] = 1;
    object["metadata"]["creationTimestamp"] = "2026-11-30T10:00:00Z";
    object["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = applied.dump();
    object["metadata"]["managedFields"] = json::array(
        {{{"manager", "kubectl-client-side-apply"}, {"operation", "Update"}, {"apiVersion", "run.ai/v1alpha1"},
          {"time", "2026-11-30T10:00:00Z"}, {"fieldsType", "FieldsV1"}, {"fieldsV1", {{"f:spec", json::object()}}}}});
    object["status"] = {{"conditions", json::array({{{"type", "Valid"}, {"status", "True"}, {"reason", "Validated"},
                                                     {"message", ""}, {"lastTransitionTime", "2026-11-30T10:00:01Z"},
                                                     {"observedGeneration", 1}}})}};
    CHECK(karta::validate_against_schema(karta::karta_schema(), object) == std::vector<karta::SchemaViolation>{});
    names.push_back(object["metadata"]["name"]);
    stored.push_back(std::move(object));
  }
  REQUIRE(stored.size() == 22);
  // A defaulted field is there, as the API server writes it.
  json jobset = *std::find_if(stored.begin(), stored.end(), [](const json& o) { return o["metadata"]["name"] == "cluster-jobset-v1alpha2"; });
  CHECK(jobset["spec"]["structureDefinition"]["rootComponent"]["statusDefinition"]["conditionsDefinition"] ==
        json::parse(R"({"path":".status.conditions","typeFieldName":"type","statusFieldName":"status",
                        "messageFieldName":"message","reasonFieldName":"reason"})"));

  test::TempDir dir;
  FakeApiServer server{dir.path, stored};
  std::ofstream(dir.path / "policy.yaml") << karta::read_text_file(test::source_dir() / "examples/policy.yaml");
  test::RunningWebhook running([&](karta::WebhookConfig& config) {
    config.cluster = server.connection();
    config.watcher_options = test_options();
    config.policy_file = dir.path / "policy.yaml";
  });
  test::HttpsClient client(running.port, running.certificates.ca);
  // Every stored Karta is in force: a second definition of each kind is refused, naming the stored one.
  auto validate = [&](json karta_object) {
    karta_object["metadata"] = {{"name", "another"}};
    json review = test::admission_review(karta_object, "CREATE", "v-1");
    review["request"]["kind"] = {{"group", "run.ai"}, {"version", "v1alpha1"}, {"kind", "Karta"}};
    return json::parse(client.request("POST", "/validate", review.dump()).body)["response"];
  };
  // Loading checks and compiles all 22 (about 2 s, ten times that under the sanitizers).
  REQUIRE(eventually([&] { return validate(stored[0])["allowed"] == false; }, 60s * test::kSlowdown));
  for (const json& object : stored) {
    CAPTURE(object["metadata"]["name"]);
    json response = validate(object);
    CHECK(response["allowed"] == false);
    CHECK(response["status"]["message"].get<std::string>().find("is already defined by Karta \"" +
                                                               object["metadata"]["name"].get<std::string>() + "\"") !=
          std::string::npos);
  }
  // None was rejected (a rejected Karta counts as a reload error of the cluster source).
  CHECK(client.request("GET", "/metrics").body.find("karta_reload_errors_total{source=\"cluster\"}") == std::string::npos);
  // And the demo JobSet gets the patch the built-in definition gives.
  json demo = test::document(test::source_dir() / "examples/jobset-demo.yaml");
  karta::AdmissionState builtin{test::builtin_catalog(), test::policy_from_yaml(karta::read_text_file(dir.path / "policy.yaml"))};
  json expected = karta::AdmissionService::mutate(karta::request_for_object(demo), builtin).decision.patch.value();
  CHECK(expected.size() == 9);
  CHECK(test::decoded_patch(json::parse(client.request("POST", "/mutate", test::admission_review(demo).dump()).body)) ==
        expected);
}

TEST_CASE("watching a cluster, /readyz waits until the first LISTs of Kartas and CRDs are loaded and served") {
  // Ready means the cluster's definitions are in force: a pod taking traffic before then would admit
  // workloads of the cluster's kinds unpatched.
  test::TempDir dir;
  json definition = test::document(test::source_dir() / "tests/data/trainer-karta.yaml");
  definition["metadata"]["resourceVersion"] = "1";
  FakeApiServer server{dir.path, {definition}};  // the CRD collection is not served yet: its LIST fails
  test::RunningWebhook running([&](karta::WebhookConfig& config) {
    config.cluster = server.connection();
    config.watcher_options = test_options();
  });
  test::HttpsClient client(running.port, running.certificates.ca);
  REQUIRE(eventually([&] { return server.targets().size() >= 4; }, 10s));  // both LISTs tried, and retried
  auto waiting = client.request("GET", "/readyz");
  CHECK(waiting.status == 503);
  CHECK(waiting.body == "waiting for the first LIST of Kartas and CustomResourceDefinitions\n");
  CHECK_FALSE(running.webhook->ready());

  server.serve({"apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions",
                "customresourcedefinition", {"crd", "crds"}, /*namespaced=*/false});
  REQUIRE(eventually([&] { return client.request("GET", "/readyz").status == 200; }, 20s));
  CHECK(running.webhook->ready());
  // Once ready, the cluster's Karta is what admission uses.
  json trainer = json::parse(R"({"apiVersion":"acme.example.com/v1","kind":"Trainer","metadata":{"name":"t","namespace":"ml"},
      "spec":{"worker":{"template":{"spec":{"containers":[{"name":"w","image":"i"}]}}}}})");
  auto review = json::parse(client.request("POST", "/mutate", test::admission_review(trainer).dump()).body);
  CHECK(test::decoded_patch(review) == json::parse(R"([{"op":"add","path":"/spec/worker/template/metadata",
      "value":{"labels":{"platform.example.com/managed":"true"},"annotations":{"platform.example.com/owner":"platform"}}}])"));
}

TEST_CASE("without a cluster to watch, /readyz is ready as soon as the definitions are loaded") {
  test::RunningWebhook running;
  test::HttpsClient client(running.port, running.certificates.ca);
  auto reply = client.request("GET", "/readyz");
  CHECK(reply.status == 200);
  CHECK(reply.body == "ok\n");
}
