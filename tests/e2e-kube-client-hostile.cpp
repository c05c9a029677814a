// The CLI's connection to a cluster, attacked as issue 47 found it open: a kubeconfig whose
// tls-server-name OpenSSL cannot check (F1), credentials and server URLs carrying CR/LF (F2), a server
// or front proxy that answers what was never asked on a kept-alive connection (F3), a workload nested
// deeper than the webhook reads (F5), an answer nested 60,000 levels deep (F6), and answers or watch
// lines larger than the client should hold. Each runs against the local API server of tests/support,
// which logs every request head as its bytes arrived: a refusal must leave that log empty (nothing
// injected or smuggled reaches it), and no error may quote a secret.

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "cli/audit.h"
#include "cli/live_inspect.h"
#include "kube/api_client.h"
#include "kube/kube_connection.h"
#include "kube/list_pages.h"
#include "support/connect_proxy.h"
#include "support/demo_cluster.h"
#include "support/fake_api_server.h"
#include "support/kube_fixtures.h"
#include "support/test_support.h"

namespace e2e_kube_client_hostile {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace fs = std::filesystem;
namespace kube = karta::kube;
namespace test = karta::test;

namespace {

// Every credential of these tests holds it: no error may show it.
constexpr const char* kSecret = "s3cr3t";

void check_quotes_no_secret(const std::string& error) {
  CHECK_MESSAGE(error.find(kSecret) == std::string::npos, "an error quotes a secret: " << error);
  CHECK_MESSAGE(error.find("X-Injected") == std::string::npos, "an error quotes the injected header: " << error);
}

// The local API server and kubeconfigs of the test's making for it.
struct Loopback {
  test::TempDir dir;
  test::FakeApiServer server;

  explicit Loopback(test::FakeApiServerOptions options = {}) : server(dir.path, {}, std::move(options)) {}

  std::string url() const { return "https://127.0.0.1:" + std::to_string(server.port()); }

  // DIR/NAME: cluster "local" at `server_url` (YAML as written: quoted, with escapes, or plain) trusting
  // the server's CA, plus `cluster_extra` lines; user "me" with the `user` lines (each indented 4).
  fs::path kubeconfig(const std::string& name, const std::string& server_url, const std::string& cluster_extra,
                      const std::string& user) const {
    fs::path file = dir.path / name;
    test::write_text(file, "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n    server: " + server_url +
                               "\n    certificate-authority-data: " +
                               test::base64(test::read_text(server.certificates().ca)) + "\n" + cluster_extra +
                               "users:\n- name: me\n  user:\n" + user +
                               "contexts:\n- name: local\n  context: {cluster: local, user: me, namespace: research}\n"
                               "current-context: local\n");
    return file;
  }
};

// `karta-webhook list -A --kubeconfig FILE`, run in this process.
test::CliRun list_all_namespaces(const fs::path& kubeconfig) {
  return test::run_cli({"karta-webhook", "list", "-A", "--kubeconfig", kubeconfig.string()});
}

std::string load_error(const fs::path& kubeconfig) {
  try {
    kube::load_kubeconfig(kubeconfig);
  } catch (const kube::KubeConfigError& e) {
    return e.what();
  }
  return "(loaded)";
}

// A value nested `depth` arrays deep: [[[...]]].
json nested_value(std::size_t depth) {
  json value = json::array();
  for (std::size_t i = 1; i < depth; ++i) value = json::array({std::move(value)});
  return value;
}

json plain_job(const std::string& name) {
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata", {{"name", name}, {"namespace", "research"}, {"uid", "uid-" + name},
                        {"creationTimestamp", test::demo_cluster::kCreated}}},
          {"spec", {{"parallelism", 1}, {"template", {{"spec", {{"containers", {{{"name", "c"}, {"image", "x"}}}}}}}}}},
          {"status", {{"active", 1}}}};
}

karta::LiveOptions list_options(const fs::path& kubeconfig) {
  karta::LiveOptions options;
  options.kubeconfig = kubeconfig.string();
  options.all_namespaces = true;
  options.output = "json";
  options.now = std::chrono::system_clock::from_time_t(1'796'000'000);
  return options;
}

}  // namespace

// F1 ---------------------------------------------------------------------------------------------------

TEST_CASE("a tls-server-name OpenSSL cannot check (a NUL byte, an IPv6 zone) is refused when the kubeconfig loads") {
  Loopback loopback;
  const std::string token = "    token: s3cr3t-f1\n";
  std::string nul = load_error(
      loopback.kubeconfig("nul", loopback.url(), "    tls-server-name: \"kubernetes\\0.default.svc\"\n", token));
  CHECK(nul.ends_with(": clusters[local].cluster.tls-server-name: holds a NUL byte (byte 10); give a DNS name or an "
                      "IP address"));
  for (const char* zoned : {"fe80::1%1", "::1%lo"}) {
    std::string error = load_error(
        loopback.kubeconfig("zone", loopback.url(), "    tls-server-name: \"" + std::string(zoned) + "\"\n", token));
    CHECK(error.ends_with(": clusters[local].cluster.tls-server-name: is an IPv6 address with a zone (%...), which no "
                          "certificate can name; give the address without it, or the DNS name the API server's "
                          "certificate carries"));
    check_quotes_no_secret(error);
  }
  std::string host = load_error(loopback.kubeconfig("host", "https://[::1%25lo]:6443", "", token));
  CHECK(host.ends_with(": clusters[local].cluster.server: its host is an IPv6 address with a zone (%...), which no "
                       "certificate can name; give the address without it, or the DNS name the API server's "
                       "certificate carries; or set tls-server-name"));
  check_quotes_no_secret(nul);
  // The CLI stops there: no connection is even opened.
  test::CliRun run = list_all_namespaces(loopback.dir.path / "nul");
  CHECK(run.code != 0);
  CHECK(run.err.find("tls-server-name: holds a NUL byte") != std::string::npos);
  check_quotes_no_secret(run.err);
  CHECK(loopback.server.raw_heads().empty());
}

TEST_CASE("a connection whose server name OpenSSL refuses is never used: no request and no token reach the server") {
  Loopback loopback;
  // Built by hand, as a caller other than the kubeconfig reader might: the check when connecting holds.
  for (const std::string& name : {std::string("::1%lo"), std::string("kubernetes\0.default.svc", 23)}) {
    kube::KubeConnection connection = loopback.server.connection("s3cr3t-f1");
    connection.tls_server_name = name;
    kube::ApiClient client(connection);
    std::string error;
    try {
      client.get("/api");
    } catch (const kube::ApiError& e) {
      error = e.what();
    }
    CHECK(error.find("GET " + loopback.url() + "/api: refused before the TLS handshake: the server name to check the "
                     "certificate against (tls-server-name) ") == 0);
    check_quotes_no_secret(error);
  }
  CHECK(loopback.server.raw_heads().empty());
}

// F2 ---------------------------------------------------------------------------------------------------

TEST_CASE("a bearer token holding CR/LF, from token, tokenFile or an exec plugin, is never sent; the error names its source") {
  Loopback loopback;
  SUBCASE("the kubeconfig's token") {
    fs::path config =
        loopback.kubeconfig("config", loopback.url(), "", "    token: \"s3cr3t-inline\\r\\nX-Injected: yes\"\n");
    test::CliRun run = list_all_namespaces(config);
    CHECK(run.code == 1);
    CHECK(run.err.find("the bearer token of the user's token field: it must hold the token alone; it holds a control "
                       "character (byte 13 of 30), which would end the Authorization header and add others (or a "
                       "second request); nothing was sent") != std::string::npos);
    check_quotes_no_secret(run.err);
  }
  SUBCASE("a tokenFile that smuggles a second request after the token (only its ends are trimmed)") {
    test::write_text(loopback.dir.path / "token",
                     "s3cr3t-file\r\n\r\nGET /api/v1/namespaces/kube-system/secrets HTTP/1.1\r\nHost: x\r\n\r\n");
    fs::path config = loopback.kubeconfig("config", loopback.url(), "", "    tokenFile: token\n");
    test::CliRun run = list_all_namespaces(config);
    CHECK(run.code == 1);
    CHECK(run.err.find("the bearer token read from the tokenFile " + (loopback.dir.path / "token").string() +
                       ": the file must hold the token alone (a final newline is trimmed); it holds a control "
                       "character (byte 11 of ") != std::string::npos);
    check_quotes_no_secret(run.err);
    CHECK(run.err.find("secrets") == std::string::npos);
  }
  SUBCASE("an exec plugin's status.token") {
    fs::path plugin = loopback.dir.path / "plugin.sh";
    test::write_text(plugin,
                     "#!/bin/sh\nprintf '%s\\n' '{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\","
                     "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"s3cr3t-plugin\\r\\nX-Injected: yes\"}}'\n");
    fs::permissions(plugin, fs::perms::owner_all);
    fs::path config = loopback.kubeconfig(
        "config", loopback.url(), "",
        "    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: " + plugin.string() + "\n");
    test::CliRun run = list_all_namespaces(config);
    CHECK(run.code == 1);
    CHECK(run.err.find("the bearer token (status.token) of the credential plugin of " + config.string() +
                       ": users[me].user.exec: the plugin must print the token alone; it holds a control character "
                       "(byte 13 of 30)") != std::string::npos);
    check_quotes_no_secret(run.err);
  }
  // Nothing at all reached the server: no head, so no injected header and no smuggled request.
  CHECK(loopback.server.raw_heads().empty());
  CHECK(loopback.server.request_lines().empty());
}

TEST_CASE("a server URL holding CR/LF in its path is refused at load, named by field and not quoted") {
  Loopback loopback;
  fs::path config = loopback.kubeconfig(
      "config", "\"" + loopback.url() + "/prefix\\r\\nX-From-Server-Url: 1\\r\\nY:\"", "", "    token: s3cr3t-url\n");
  std::string error = load_error(config);
  const std::string at = std::to_string(loopback.url().size() + std::string("/prefix").size());
  CHECK(error == config.string() + ": clusters[local].cluster.server: holds a control character (byte " + at +
                     "), which no URL may hold; write the API server's https:// URL without it");
  test::CliRun run = list_all_namespaces(config);
  CHECK(run.code == 1);
  CHECK(run.err.find("clusters[local].cluster.server: holds a control character") != std::string::npos);
  CHECK(run.err.find("X-From-Server-Url") == std::string::npos);
  check_quotes_no_secret(run.err);
  CHECK(loopback.server.raw_heads().empty());
}

TEST_CASE("a Proxy-Authorization or CONNECT authority holding CR/LF is never sent to the proxy") {
  Loopback loopback;
  test::ConnectProxy proxy;
  auto through_proxy = [&](const std::string& host, const std::string& authorization) {
    kube::KubeConnection connection = loopback.server.connection("s3cr3t-proxy");
    connection.host = host;
    connection.proxy = kube::ProxyServer{"127.0.0.1", proxy.port(), authorization, proxy.url(), "proxy-url"};
    kube::ApiClient client(connection);
    try {
      client.get("/api");
    } catch (const kube::KubeConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(sent)");
  };
  std::string authorization = through_proxy("127.0.0.1", "Basic s3cr3t\r\nX-Injected: yes");
  CHECK(authorization == "test: Proxy-Authorization (the user information of " + proxy.url() +
                             ", from proxy-url) holds a control character (byte 12 of 29), which would end the header "
                             "and add others; nothing was sent");
  check_quotes_no_secret(authorization);
  // The proxy resolves every name to 127.0.0.1 itself: only the check stops this one.
  std::string authority = through_proxy("kube.test\r\nX-Injected: yes", "");
  CAPTURE(authority);
  // The host holds a ':', so the authority is written bracketed, "[kube.test\r\n...]:PORT": CR is byte 10.
  CHECK(authority.find("test: the CONNECT request's authority (the server URL's host) holds a control character (byte 10 "
                       "of ") == 0);
  check_quotes_no_secret(authority);
  CHECK(proxy.tunnels().empty());
  CHECK(loopback.server.raw_heads().empty());
}

// F3 ---------------------------------------------------------------------------------------------------

TEST_CASE("an unsolicited 403 after an answer on a kept-alive connection is never taken for the next GET's answer") {
  Loopback loopback({.unsolicited_403_after_first_answer = true});
  kube::ApiClient client(loopback.server.connection());
  json versions = client.get("/api");
  json groups = client.get("/apis");
  json again = client.get("/api");
  CHECK(versions["kind"] == "APIVersions");
  CHECK(groups["kind"] == "APIGroupList");
  CHECK(again == versions);
  // Each connection was dropped after its one answer, with the bytes that followed it.
  CHECK(loopback.server.connections() == 3);
  CHECK(loopback.server.request_lines() ==
        std::vector<std::string>{"GET /api HTTP/1.1", "GET /apis HTTP/1.1", "GET /api HTTP/1.1"});
}

TEST_CASE("list -A against a server that answers twice gets the same answer as against one that answers once") {
  auto listed = [](test::FakeApiServerOptions options) {
    Loopback loopback(options);
    test::demo_cluster::serve_demo(loopback.server);
    test::write_text(loopback.dir.path / "config", loopback.server.kubeconfig("research"));
    std::ostringstream out, err;
    int code = karta::list_live(list_options(loopback.dir.path / "config"), out, err);
    return std::tuple{code, out.str(), err.str()};
  };
  auto [code, out, err] = listed({});
  auto [hostile_code, hostile_out, hostile_err] = listed({.unsolicited_403_after_first_answer = true});
  REQUIRE(code == 0);
  CHECK(json::parse(out)["count"] == 1);
  CHECK(hostile_code == code);
  CHECK(hostile_out == out);
  CHECK(hostile_err == err);
}

TEST_CASE("a 408 sent on an idle kept-alive connection is not taken for the next GET's answer") {
  Loopback loopback({.idle_408_after = std::chrono::milliseconds(50)});
  kube::ApiClient client(loopback.server.connection());
  CHECK(client.get("/api")["kind"] == "APIVersions");
  // The 408 and the close have come by then (a request sent first would be answered normally).
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(client.get("/apis")["kind"] == "APIGroupList");
  CHECK(loopback.server.request_lines() == std::vector<std::string>{"GET /api HTTP/1.1", "GET /apis HTTP/1.1"});
  CHECK(loopback.server.connections() == 2);
}

// F5 ---------------------------------------------------------------------------------------------------

namespace {

// A Job nested 2,000 levels deep (deeper than the 1001 the webhook reads, within the 10,000 the API server
// stores and the client parses) and a plain one. Not 9,990: nlohmann::json copies a value recursively, and
// at 9,990 levels the Debug build with AddressSanitizer overflowed the test's 8 MiB stack.
struct DeepWorkloadCluster {
  Loopback loopback;
  fs::path config = loopback.dir.path / "config";

  DeepWorkloadCluster() {
    json deep = plain_job("deep");
    deep["spec"]["extra"] = nested_value(2'000);
    loopback.server.serve(test::demo_cluster::jobs(), {plain_job("train"), deep});
    test::write_text(config, loopback.server.kubeconfig("research"));
  }
};

constexpr const char* kTooDeep =
    "not checked: the object is nested deeper than 1001 levels, deeper than the webhook reads an object";

}  // namespace

TEST_CASE("audit reports a workload nested deeper than the webhook reads as not checked, and audits the rest") {
  DeepWorkloadCluster cluster;
  auto state = std::make_shared<karta::AdmissionState>();
  state->catalog = test::builtin_catalog();
  kube::ApiClient client(cluster.loopback.server.connection());
  karta::AuditReport report = karta::audit_cluster(client, *state, {});
  json document = report.to_json();
  CHECK(document["unchecked"] == json::array({{{"apiVersion", "batch/v1"},
                                                {"kind", "Job"},
                                                {"namespace", "research"},
                                                {"name", "deep"},
                                                {"why", kTooDeep}}}));
  CHECK(document["totals"]["workloads"] == 1);
  CHECK(document["complete"] == false);
  CHECK(report.exit_code() == 2);
  std::string text = karta::render_audit(document);
  CHECK(text.find(std::string("\nNOT CHECKED: Job research/deep (batch/v1): ") + kTooDeep + "\n") != std::string::npos);
  CHECK(text.ends_with("the audit is incomplete: 1 object was not checked\n"));
}

TEST_CASE("list -A lists the other workloads and names the one nested deeper than the webhook reads") {
  DeepWorkloadCluster cluster;
  std::ostringstream out, err;
  CHECK(karta::list_live(list_options(cluster.config), out, err) == 0);
  json listed = json::parse(out.str());
  CHECK(listed["count"] == 1);
  CHECK(listed["items"][0]["name"] == "train");
  CHECK(listed["unchecked"] == json::array({{{"namespace", "research"},
                                             {"name", "deep"},
                                             {"kind", "Job"},
                                             {"apiVersion", "batch/v1"},
                                             {"why", kTooDeep}}}));
  CHECK(listed["complete"] == false);
  CHECK(err.str().find(std::string("Job research/deep (batch/v1) ") + kTooDeep) != std::string::npos);
  CHECK(err.str().find("the list is incomplete: 1 workload was not checked") != std::string::npos);
}

// F6 ---------------------------------------------------------------------------------------------------

// A schema of arrays of arrays, `depth` levels deep: {"type":"array","items":{...{"type":"string"}...}}.
std::string nested_array_schemas(std::size_t depth) {
  std::string text;
  for (std::size_t i = 0; i < depth; ++i) text += R"({"type":"array","items":)";
  return text + R"({"type":"string"})" + std::string(depth, '}');
}

TEST_CASE("generate NAME on a CRD the server nests 60,000 levels deep is a clear error, not a crash") {
  Loopback loopback;
  loopback.server.serve(test::crd_resource());
  // A well-formed CRD, whose schema nests 60,000 levels under spec.properties.x: 0734fa8 parsed it whole
  // and died of SIGSEGV (exit 139) walking it.
  const std::string path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/deep.example.com";
  loopback.server.answer_raw(path, 200,
                             R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",)"
                             R"("metadata":{"name":"deep.example.com"},"spec":{"group":"example.com",)"
                             R"("names":{"kind":"Deep","plural":"deep","singular":"deep","listKind":"DeepList"},)"
                             R"("scope":"Namespaced","versions":[{"name":"v1","served":true,"storage":true,)"
                             R"("schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object",)"
                             R"("properties":{"x":)" +
                                 nested_array_schemas(60'000) + "}}}}}}]}}");
  test::write_text(loopback.dir.path / "config", loopback.server.kubeconfig("research"));
  int code = 0;
  // A process of its own: on the unbounded parse it died of SIGSEGV.
  std::string output = test::run_command(test::binary_path().string() + " generate deep.example.com --kubeconfig " +
                                             (loopback.dir.path / "config").string(),
                                         &code);
  CHECK(code == 1);
  CHECK(output.find("GET " + loopback.url() + path + " answered 200 with JSON nested deeper than 10000 levels, the "
                    "most an answer may be (as Go's encoding/json, which the API server decodes with)") !=
        std::string::npos);
  // The same bound for every GET of the client.
  kube::ApiClient client(loopback.server.connection());
  CHECK_THROWS_WITH_AS(client.get(path), doctest::Contains("answered 200 with JSON nested deeper than 10000 levels"),
                       kube::ApiError);
}

// What a server can make the client hold ----------------------------------------------------------------

json config_map(const std::string& name, std::size_t bytes) {
  return {{"metadata", {{"name", name}, {"namespace", "default"}}}, {"data", {{"blob", std::string(bytes, 'x')}}}};
}

TEST_CASE("a LIST page larger than the client's limit is asked for again in smaller pages, from the same snapshot") {
  Loopback loopback;
  std::vector<json> maps;
  for (int i = 0; i < 8; ++i) maps.push_back(config_map("map-" + std::to_string(i), 5'000));
  loopback.server.serve({.group = "", .version = "v1", .kind = "ConfigMap", .plural = "configmaps", .singular = "configmap"},
                        maps);
  kube::ApiClient client(loopback.server.connection(), {.body_limit = 16 * 1024});
  std::vector<std::string> names;
  kube::ListSummary summary = kube::list_all(client, "/api/v1/namespaces/default/configmaps", {.page_size = 8},
                                             [&](kube::ListPage& page) {
                                               for (const json& item : page.items) names.push_back(item["metadata"]["name"]);
                                             });
  CHECK(names == std::vector<std::string>{"map-0", "map-1", "map-2", "map-3", "map-4", "map-5", "map-6", "map-7"});
  CHECK(summary.pages == 4);
  std::vector<std::string> targets = loopback.server.targets();
  REQUIRE(targets.size() == 6);
  CHECK(targets[0] == "/api/v1/namespaces/default/configmaps?limit=8");  // about 40 KB: too large
  CHECK(targets[1] == "/api/v1/namespaces/default/configmaps?limit=4");  // about 20 KB: too large
  CHECK(targets[2] == "/api/v1/namespaces/default/configmaps?limit=2");
  for (std::size_t i = 3; i < targets.size(); ++i) {
    CHECK(targets[i].starts_with("/api/v1/namespaces/default/configmaps?limit=2&continue="));
  }
}

// Beast's parser let a page of 10 KB through a limit of 4 KB (the whole answer in the read that brought its
// header); the client checks the size itself.
TEST_CASE("a LIST whose one object is larger than the client's limit ends with an error naming the limit") {
  Loopback loopback;
  std::vector<json> maps;
  for (int i = 0; i < 4; ++i) maps.push_back(config_map("map-" + std::to_string(i), 5'000));
  loopback.server.serve({.group = "", .version = "v1", .kind = "ConfigMap", .plural = "configmaps", .singular = "configmap"},
                        maps);
  kube::ApiClient client(loopback.server.connection(), {.body_limit = 4096});
  std::size_t delivered = 0;
  const std::string error = "GET " + loopback.url() +
                            "/api/v1/namespaces/default/configmaps?limit=1: the answer is larger than 4096 bytes, the "
                            "most one answer may take, even for a page of one object";
  CHECK_THROWS_WITH_AS(kube::list_all(client, "/api/v1/namespaces/default/configmaps", {.page_size = 4},
                                      [&](kube::ListPage& page) { delivered += page.items.size(); }),
                       error.c_str(), kube::AnswerTooLargeError);
  CHECK(delivered == 0);
  CHECK(loopback.server.targets() == std::vector<std::string>{"/api/v1/namespaces/default/configmaps?limit=4",
                                                             "/api/v1/namespaces/default/configmaps?limit=2",
                                                             "/api/v1/namespaces/default/configmaps?limit=1"});
}

TEST_CASE("by default a LIST asks for pages of 100 and an answer may not pass 32 MiB, nor a watch line 16 MiB") {
  Loopback loopback;
  loopback.server.serve({.group = "", .version = "v1", .kind = "ConfigMap", .plural = "configmaps", .singular = "configmap"},
                        {config_map("small", 10)});
  kube::ApiClient client(loopback.server.connection());
  kube::list_all(client, "/api/v1/configmaps", {}, {});
  CHECK(loopback.server.targets().back() == "/api/v1/configmaps?limit=100");
  // 33 MiB: far past any object the API server stores (etcd's request limit is 1.5 MiB by default).
  loopback.server.answer_raw("/api/v1/namespaces/default/configmaps/huge", 200,
                             json(config_map("huge", std::size_t{33} * 1024 * 1024)).dump());
  const std::string too_large = "GET " + loopback.url() +
                                "/api/v1/namespaces/default/configmaps/huge: the answer is larger than 33554432 bytes, "
                                "the most one answer may take";
  CHECK_THROWS_WITH(client.get("/api/v1/namespaces/default/configmaps/huge"), too_large.c_str());
  // A watch event of 17 MiB.
  json karta = test::kube_fixtures::karta_object("huge");
  karta["metadata"]["annotations"] = {{"padding", std::string(std::size_t{17} * 1024 * 1024, 'x')}};
  test::TempDir dir;
  test::FakeApiServer watched(dir.path, {karta});
  kube::ApiClient watching(watched.connection());
  const std::string watch = std::string(test::kube_fixtures::kKartas) + "?watch=1&resourceVersion=0&timeoutSeconds=5";
  std::size_t lines = 0;
  const std::string too_long = "GET https://127.0.0.1:" + std::to_string(watched.port()) + watch +
                               ": a line of the stream is longer than 16777216 bytes, the most one watch event may take";
  CHECK_THROWS_WITH(watching.stream_lines(watch, std::chrono::seconds(20), [&](std::string_view) { ++lines; }),
                    too_long.c_str());
  CHECK(lines == 0);
}

}  // namespace e2e_kube_client_hostile
