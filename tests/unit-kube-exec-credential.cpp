// Exec credential plugins, as kubectl runs them (client-go's plugin/pkg/client/auth/exec), against the
// local API server made to accept only the plugin's token: `inspect`, `list` and `audit` with a
// kubeconfig whose user is a plugin; the request the plugin gets (args, env, KUBERNETES_EXEC_INFO with the
// cluster); its answer cached until expirationTimestamp, and the plugin run again after that or on a
// 401, the request then sent once more; a client certificate in the answer; and the errors: a plugin
// that fails (its stderr quoted, escaped), is not found (its installHint), hangs, or wants a terminal.
// Longer than 500 lines because each way a plugin can fail closed (issue 47: found through an empty PATH
// entry, an answer never quoted, a child left holding its pipes) needs its own plugin script and run.

#include <doctest/doctest.h>

#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "kube/api_client.h"
#include "kube/exec_credential.h"
#include "kube/kube_connection.h"
#include "support/demo_cluster.h"
#include "support/fake_api_server.h"
#include "support/scoped_environment.h"
#include "support/test_support.h"

namespace unit_kube_exec_credential {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;
namespace kube = karta::kube;
namespace fs = std::filesystem;

namespace {

// Counts its runs in `runs`, keeps what it was given (KUBERNETES_EXEC_INFO, args, an env variable), and
// prints answer.json when there is one, else an ExecCredential with the token in `token` and the
// expirationTimestamp in `expiry` (none when that file is empty or missing).
constexpr const char* kPlugin = R"sh(#!/bin/sh
here=$(dirname "$0")
runs=$(( $(cat "$here/runs" 2>/dev/null || echo 0) + 1 ))
echo $runs > "$here/runs"
printf '%s' "$KUBERNETES_EXEC_INFO" > "$here/exec-info"
printf '%s|%s' "$*" "$PLUGIN_GREETING" > "$here/args-and-env"
if [ -f "$here/answer.json" ]; then cat "$here/answer.json"; exit 0; fi
expiry=$(cat "$here/expiry" 2>/dev/null)
if [ -n "$expiry" ]; then expiry=",\"expirationTimestamp\":\"$expiry\""; fi
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"%s}}\n' "$(cat "$here/token")" "$expiry"
)sh";

void write_executable(const fs::path& file, const std::string& text) {
  test::write_text(file, text);
  fs::permissions(file, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
}

std::string rfc3339(std::chrono::system_clock::time_point at) {
  std::time_t t = std::chrono::system_clock::to_time_t(at);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// The demo cluster, accepting only "cloud-token-1"; DIR/plugin/plugin.sh and a kubeconfig DIR/plugin/config
// whose user runs it (command ./plugin.sh, relative to the kubeconfig's directory).
struct ExecCluster {
  test::TempDir dir;
  test::FakeApiServer server;
  fs::path plugin_dir = dir.path / "plugin";
  fs::path kubeconfig = plugin_dir / "config";

  explicit ExecCluster(const std::string& exec_extra = "", bool require_client_certificate = false)
      : server(dir.path, {}, {.token = "cloud-token-1", .require_client_certificate = require_client_certificate}) {
    test::demo_cluster::serve_demo(server);
    write_executable(plugin_dir / "plugin.sh", kPlugin);
    test::write_text(plugin_dir / "token", "cloud-token-1");
    kube::KubeConnection c = server.connection();
    test::write_text(
        kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n    server: " + c.server_url() +
            "\n    certificate-authority-data: " + test::base64(*c.ca_pem) +
            "\n    extensions:\n    - name: client.authentication.k8s.io/exec\n      extension: {audience: demo, "
            "port: 8443}\n"
            "users:\n- name: cloud\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
            "      command: ./plugin.sh\n      args: [get-token, --cluster, demo]\n"
            "      env: [{name: PLUGIN_GREETING, value: hello}]\n      interactiveMode: Never\n"
            "      provideClusterInfo: true\n      installHint: install it with apt-get install demo-auth\n" +
            exec_extra +
            "contexts:\n- name: local\n  context: {cluster: local, user: cloud, namespace: research}\n"
            "current-context: local\n");
    // The same cluster with the plugin's token written in: what the exec runs are compared with.
    test::write_text(dir.path / "static-config", server.kubeconfig("research"));
  }

  int runs() const {
    std::error_code ec;
    if (!fs::exists(plugin_dir / "runs", ec)) return 0;
    return std::stoi(test::read_text(plugin_dir / "runs"));
  }
  std::vector<std::string> authorizations() const {
    std::vector<std::string> seen;
    for (const auto& request : server.received()) seen.push_back(request.authorization);
    return seen;
  }
};

using Run = karta::test::CliRun;
Run run(std::vector<std::string> args) { return karta::test::run_cli(std::move(args)); }

// Whether `pid` is still a running process (a zombie is not: it has ended, and awaits a parent's wait).
bool running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

// Waits up to `limit` for `pid` to end; kills it when it has not, so a failed test leaves nothing behind.
bool ended_within(pid_t pid, std::chrono::milliseconds limit) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (running(pid)) {
    if (std::chrono::steady_clock::now() >= until) {
      ::kill(pid, SIGKILL);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

kube::ExecConfig plugin_config(const fs::path& command) {
  kube::ExecConfig config;
  config.api_version = "client.authentication.k8s.io/v1";
  config.field = "config: users[u].user.exec";
  config.interactive_mode = "Never";
  config.command = command.string();
  config.timeout = std::chrono::milliseconds(20'000);
  return config;
}

std::string answer_with_token(const std::string& token) {
  return R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":")" + token +
         "\"}}";
}

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("inspect, list and audit work with a kubeconfig whose user is an exec plugin; it runs once per command") {
  ExecCluster cluster;
  std::string exec_config = cluster.kubeconfig.string(), static_config = (cluster.dir.path / "static-config").string();
  // The static kubeconfig holds "sesame": the server takes only the plugin's token.
  cluster.server.set_token("cloud-token-1");
  test::write_text(cluster.dir.path / "static-config",
                   test::read_text(static_config)
                       .replace(test::read_text(static_config).find("token: sesame"),
                                std::string("token: sesame").size(), "token: cloud-token-1"));

  Run inspected = run({"karta-webhook", "inspect", "jobset/demo", "--kubeconfig", exec_config});
  CHECK(inspected.code == 0);
  CHECK(inspected.err == "");
  CHECK(inspected.out.substr(inspected.out.find('\n')) == std::string(test::demo_cluster::kDescribeAfterHeader));
  CHECK(cluster.runs() == 1);
  Run listed = run({"karta-webhook", "list", "-A", "--kubeconfig", exec_config});
  CHECK(listed.code == 0);
  CHECK(cluster.runs() == 2);
  Run audited = run({"karta-webhook", "audit", "-o", "json", "--kubeconfig", exec_config});
  CHECK(audited.code == 0);
  CHECK(cluster.runs() == 3);
  // Every request carried the plugin's token.
  auto authorizations = cluster.authorizations();
  CHECK(authorizations.size() > 10);
  for (const auto& authorization : authorizations) CHECK(authorization == "Bearer cloud-token-1");

  // The same commands with the token written into the kubeconfig print the same, whole.
  CHECK(run({"karta-webhook", "inspect", "jobset/demo", "--kubeconfig", static_config}).out == inspected.out);
  CHECK(run({"karta-webhook", "list", "-A", "--kubeconfig", static_config}).out == listed.out);
  Run audited_static = run({"karta-webhook", "audit", "-o", "json", "--kubeconfig", static_config});
  CHECK(audited_static.out == audited.out);
  CHECK(json::parse(audited.out)["totals"]["workloads"] == 1);
  CHECK(cluster.runs() == 3);

  // The plugin got its args, the config's env, and the request ExecCredential with the cluster (client-go's
  // field names and order; the CA as base64; the exec extension as `config`).
  CHECK(test::read_text(cluster.plugin_dir / "args-and-env") == "get-token --cluster demo|hello");
  kube::KubeConnection c = cluster.server.connection();
  CHECK(test::read_text(cluster.plugin_dir / "exec-info") ==
        "{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/"
        "v1\",\"spec\":{\"cluster\":{\"server\":\"" +
            c.server_url() + "\",\"certificate-authority-data\":\"" + test::base64(*c.ca_pem) +
            "\",\"config\":{\"audience\":\"demo\",\"port\":8443}},\"interactive\":false}}");
}

TEST_CASE("the credential is kept until its expirationTimestamp; the plugin runs again once it has passed") {
  ExecCluster cluster;
  kube::ApiClient client(kube::load_kubeconfig(cluster.kubeconfig));
  // Expired already (a clock skew, or a token minted long ago): every request runs the plugin.
  test::write_text(cluster.plugin_dir / "expiry", rfc3339(std::chrono::system_clock::now() - std::chrono::minutes(5)));
  client.get("/api");
  client.get("/apis");
  CHECK(cluster.runs() == 2);
  // Valid for an hour: run once more, then kept.
  test::write_text(cluster.plugin_dir / "expiry", rfc3339(std::chrono::system_clock::now() + std::chrono::hours(1)));
  client.get("/api");
  CHECK(cluster.runs() == 3);
  for (int i = 0; i < 5; ++i) client.get("/api/v1");
  CHECK(cluster.runs() == 3);
  // A copy of the connection (as a watcher holds one) shares the cache.
  kube::ApiClient second(client.connection());
  second.get("/api");
  CHECK(cluster.runs() == 3);
  CHECK(client.connection().exec->runs() == 3);
}

TEST_CASE("a 401 runs the plugin again and sends the request once more; a second 401 is the answer") {
  ExecCluster cluster;
  kube::ApiClient client(kube::load_kubeconfig(cluster.kubeconfig));
  CHECK(client.get("/api")["kind"] == "APIVersions");
  CHECK(cluster.runs() == 1);
  // The cloud revoked the token (its expiry said an hour, say): the server refuses it, the plugin mints
  // another.
  cluster.server.set_token("cloud-token-2");
  test::write_text(cluster.plugin_dir / "token", "cloud-token-2");
  CHECK(client.get("/apis")["kind"] == "APIGroupList");
  CHECK(cluster.runs() == 2);
  CHECK(cluster.authorizations() ==
        std::vector<std::string>{"Bearer cloud-token-1", "Bearer cloud-token-1", "Bearer cloud-token-2"});
  // A plugin that keeps giving a refused token: it runs once more, the request is sent once more, and
  // the 401 is the answer (no loop).
  cluster.server.set_token("cloud-token-3");
  int status = 0;
  try {
    client.get("/api");
  } catch (const kube::ApiError& e) {
    status = e.status();
  }
  CHECK(status == 401);
  CHECK(cluster.runs() == 3);
  CHECK(cluster.server.received().size() == 5);
}

TEST_CASE("a client certificate in the answer (v1beta1) is presented to the server instead of a token") {
  ExecCluster cluster("", /*require_client_certificate=*/true);
  auto client_certificate = test::make_client_certificate(cluster.dir.path, "plugin-user");
  json answer = {{"apiVersion", "client.authentication.k8s.io/v1beta1"},
                 {"kind", "ExecCredential"},
                 {"status",
                  {{"clientCertificateData", test::read_text(client_certificate.certificate)},
                   {"clientKeyData", test::read_text(client_certificate.key)}}}};
  test::write_text(cluster.plugin_dir / "answer.json", answer.dump());
  std::string config = test::read_text(cluster.kubeconfig);
  config.replace(config.find("client.authentication.k8s.io/v1\n"), 32, "client.authentication.k8s.io/v1beta1\n");
  config.replace(config.find("      interactiveMode: Never\n"), 29, "");  // v1beta1: IfAvailable by default
  test::write_text(cluster.kubeconfig, config);
  kube::ApiClient client(kube::load_kubeconfig(cluster.kubeconfig));
  CHECK(client.get("/api")["kind"] == "APIVersions");
  CHECK(client.get("/apis")["kind"] == "APIGroupList");
  CHECK(cluster.runs() == 1);
  auto received = cluster.server.received();
  REQUIRE(received.size() == 2);
  for (const auto& request : received) {
    CHECK(request.client_name == "plugin-user");
    CHECK(request.authorization == "");
  }
}

TEST_CASE("a failing plugin's error quotes its exit code and its stderr, escaped for the terminal") {
  ExecCluster cluster;
  write_executable(cluster.plugin_dir / "plugin.sh",
                   "#!/bin/sh\necho 'error: the SSO session has expired; run: aws sso login' >&2\n"
                   "printf 'bell\\a and \\033[2J clear\\n' >&2\nexit 3\n");
  std::string plugin = (cluster.plugin_dir / "plugin.sh").string();
  std::string field = cluster.kubeconfig.string() + ": users[cloud].user.exec";
  Run inspected = run({"karta-webhook", "inspect", "jobset/demo", "--kubeconfig", cluster.kubeconfig.string()});
  CHECK(inspected.code == 1);
  CHECK(inspected.out == "");
  CHECK(inspected.err == "karta-webhook: " + field + ": the credential plugin \"" + plugin +
                             "\" exited with code 3; its stderr: \"error: the SSO session has expired; run: aws sso "
                             "login\\nbell\\a and ^[[2J clear\"\n");
  Run listed = run({"karta-webhook", "list", "--kubeconfig", cluster.kubeconfig.string()});
  CHECK(listed.code == 1);
  CHECK(listed.err == inspected.err);
  Run audited = run({"karta-webhook", "audit", "--kubeconfig", cluster.kubeconfig.string()});
  CHECK(audited.code == 2);
  CHECK(audited.err == "karta-webhook audit: " + inspected.err.substr(std::string("karta-webhook: ").size()));
  CHECK(cluster.server.received().empty());
}

TEST_CASE("a plugin that is not found, hangs, wants a terminal or answers wrongly is an error naming it") {
  test::TempDir dir;
  kube::ExecConfig config;
  config.api_version = "client.authentication.k8s.io/v1";
  config.field = "config: users[u].user.exec";
  config.interactive_mode = "Never";

  config.command = "karta-no-such-auth-plugin";
  config.install_hint = "install it with: apt-get install karta-auth";
  CHECK(error_of([&] { kube::run_exec_plugin(config); }) ==
        "config: users[u].user.exec: the credential plugin \"karta-no-such-auth-plugin\" was not found on PATH; "
        "install it with: apt-get install karta-auth");

  // A hung plugin is killed at the time limit.
  write_executable(dir.path / "hang.sh", "#!/bin/sh\necho waiting for a browser >&2\nexec sleep 30\n");
  config.command = (dir.path / "hang.sh").string();
  config.timeout = std::chrono::milliseconds(300);
  auto started = std::chrono::steady_clock::now();
  CHECK(error_of([&] { kube::run_exec_plugin(config); }) ==
        "config: users[u].user.exec: the credential plugin \"" + config.command +
            "\" did not exit within 300 ms and was killed, with the processes it started; its stderr: \"waiting for a "
            "browser\"");
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));

  // interactiveMode Always with no terminal on stdin.
  config.interactive_mode = "Always";
  config.stdin_is_terminal = false;
  CHECK(error_of([&] { kube::run_exec_plugin(config); }) ==
        "config: users[u].user.exec: the credential plugin \"" + config.command +
            "\" wants interactiveMode Always, but standard input is not a terminal");

  // Answers that are not a usable ExecCredential.
  config.interactive_mode = "Never";
  config.timeout = std::chrono::milliseconds(10'000);
  auto answer_error = [&](const std::string& answer) {
    test::write_text(dir.path / "answer", answer);
    write_executable(dir.path / "answer.sh", "#!/bin/sh\ncat \"$(dirname \"$0\")/answer\"\n");
    config.command = (dir.path / "answer.sh").string();
    std::string error = error_of([&] { kube::run_exec_plugin(config); });
    std::string prefix = "config: users[u].user.exec: the credential plugin \"" + config.command + "\" ";
    return error.starts_with(prefix) ? error.substr(prefix.size()) : error;
  };
  CHECK(answer_error("token") ==
        "printed 5 bytes on stdout that are not one JSON value (it breaks at line 1, column 2); it must print one "
        "client.authentication.k8s.io/v1 ExecCredential object");
  CHECK(
      answer_error(
          R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"t"}})") ==
      "answered with apiVersion \"client.authentication.k8s.io/v1beta1\"; the kubeconfig asks for "
      "\"client.authentication.k8s.io/v1\"");
  CHECK(answer_error(R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential"})") ==
        "answered without a status");
  CHECK(answer_error(R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{}})") ==
        "answered with neither a token nor a client certificate and key");
  CHECK(
      answer_error(
          R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"clientKeyData":"k"}})") ==
      "answered with only one of clientCertificateData and clientKeyData");
  CHECK(
      answer_error(
          R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t","expirationTimestamp":"tomorrow"}})") ==
      "answered with an expirationTimestamp that is not RFC 3339: \"tomorrow\"");
  kube::ExecCredential good = kube::run_exec_plugin(config = [&] {
    answer_error(
        R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t","expirationTimestamp":"2026-12-03T01:30:00+01:00"}})");
    return config;
  }());
  CHECK(good.token == "t");
  CHECK(good.expiry == kube::parse_rfc3339("2026-12-03T00:30:00Z"));
}

TEST_CASE("the exec section is read as client-go reads it, and its faults name the field") {
  test::TempDir dir;
  auto error_for = [&](const std::string& exec) {
    test::write_text(dir.path / "config",
                     "clusters:\n- {name: c, cluster: {server: \"https://k8s.example.com\"}}\n"
                     "users:\n- name: u\n  user:\n    exec:\n" +
                         exec + "contexts:\n- {name: x, context: {cluster: c, user: u}}\ncurrent-context: x\n");
    return error_of([&] { kube::load_kubeconfig(dir.path / "config"); });
  };
  std::string file = (dir.path / "config").string();
  CHECK(error_for("      command: aws\n") ==
        file + ": users[u].user.exec.apiVersion: not set; client.authentication.k8s.io/v1 or v1beta1");
  CHECK(error_for("      apiVersion: client.authentication.k8s.io/v1alpha1\n      command: aws\n") ==
        file +
            ": users[u].user.exec.apiVersion: \"client.authentication.k8s.io/v1alpha1\" is not "
            "client.authentication.k8s.io/v1 or v1beta1");
  CHECK(error_for("      apiVersion: client.authentication.k8s.io/v1\n      command: aws\n") ==
        file +
            ": users[u].user.exec.interactiveMode: not set; client.authentication.k8s.io/v1 needs Never, "
            "IfAvailable or Always");
  CHECK(error_for("      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n      interactiveMode: "
                  "Sometimes\n") ==
        file + ": users[u].user.exec.interactiveMode: \"Sometimes\" is not Never, IfAvailable or Always");
  CHECK(error_for("      apiVersion: client.authentication.k8s.io/v1beta1\n") ==
        file + ": users[u].user.exec.command: not set");
  // A command without a '/' stays a name for PATH; with one, it is relative to the kubeconfig.
  CHECK(error_for("      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n") == "");
  test::write_text(
      dir.path / "config",
      "clusters:\n- {name: c, cluster: {server: \"https://k8s.example.com\"}}\n"
      "users:\n- {name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: bin/auth}}}\n"
      "contexts:\n- {name: x, context: {cluster: c, user: u}}\ncurrent-context: x\n");
  kube::KubeConnection connection = kube::load_kubeconfig(dir.path / "config");
  REQUIRE(connection.exec);
  CHECK(connection.exec->config().command == (dir.path / "bin/auth").string());
  CHECK(connection.exec->config().interactive_mode == "IfAvailable");
  CHECK(connection.exec->config().cluster_json == "");
  CHECK(connection.exec->runs() == 0);  // run by the first request, not by loading
}

TEST_CASE("a plugin found through an empty or relative PATH entry is refused, not run from the current directory") {
  // An untrusted checkout holding a file named as the plugin: run, it would leave `ran` behind. Go's
  // exec.LookPath refuses such a match (ErrDot); the lookup once took "" for "." and ran it.
  test::TempDir dir;
  fs::path checkout = dir.path / "checkout";
  write_executable(checkout / "karta-test-auth", "#!/bin/sh\ntouch \"$(dirname \"$0\")/ran\"\nprintf '%s\\n' '" +
                                                     answer_with_token("planted-token") + "'\n");
  kube::ExecConfig config = plugin_config("karta-test-auth");
  const std::string named = "config: users[u].user.exec: the credential plugin \"karta-test-auth\" was found as ";
  const std::string fix =
      ", and is not run from there, as Go's exec.LookPath refuses it (ErrDot): give the command as an absolute "
      "path, or remove the empty or relative entry from PATH";
  auto error = [&] { return error_of([&] { kube::run_exec_plugin(config); }); };
  {
    test::ScopedEnvironment env;
    env.change_directory(checkout);
    for (std::string path : {"/usr/bin:/bin:", ":/usr/bin:/bin", "/usr/bin::/bin"}) {
      CAPTURE(path);
      env.set("PATH", path);
      CHECK(error() == named + "\"./karta-test-auth\" through an empty entry in PATH (the current directory)" + fix);
    }
    env.set("PATH", "");  // no entries at all, as Go's filepath.SplitList reads it
    CHECK(error() == "config: users[u].user.exec: the credential plugin \"karta-test-auth\" was not found on PATH");
  }
  {
    test::ScopedEnvironment env;
    std::string relative = fs::relative(checkout).string();
    REQUIRE(!relative.starts_with("/"));
    env.set("PATH", "/usr/bin:/bin:" + relative);
    CHECK(error() ==
          named + "\"" + relative + "/karta-test-auth\" through PATH's relative entry \"" + relative + "\"" + fix);
  }
  CHECK(!fs::exists(checkout / "ran"));
  // Through `list`, the kubeconfig's field is named, and nothing reaches the server.
  ExecCluster cluster;
  std::string kubeconfig = test::read_text(cluster.kubeconfig);
  kubeconfig.replace(kubeconfig.find("command: ./plugin.sh"), 20, "command: plugin.sh");
  test::write_text(cluster.kubeconfig, kubeconfig);
  {
    test::ScopedEnvironment env;
    env.change_directory(cluster.plugin_dir).set("PATH", "/usr/bin:/bin:");
    Run listed = run({"karta-webhook", "list", "--kubeconfig", cluster.kubeconfig.string()});
    CHECK(listed.code == 1);
    CHECK(listed.err ==
          "karta-webhook: " + cluster.kubeconfig.string() +
              ": users[cloud].user.exec: the credential plugin \"plugin.sh\" was found as \"./plugin.sh\" "
              "through an empty entry in PATH (the current directory)" +
              fix + "\n");
  }
  CHECK(cluster.runs() == 0);
  CHECK(cluster.server.received().empty());
  // Found first through an absolute entry, the plugin runs, whatever empty entry follows.
  test::ScopedEnvironment env;
  env.change_directory(checkout).set("PATH", checkout.string() + "::/usr/bin:/bin");
  CHECK(kube::run_exec_plugin(config).token == "planted-token");
  CHECK(fs::exists(checkout / "ran"));
}

TEST_CASE("a plugin's stdout is never quoted in an error: a broken answer is told by its size and where it broke") {
  // Each answer holds the token "s3cr3t-cloud-token"; the error once quoted the first 200 bytes.
  ExecCluster cluster;
  const std::string secret = "s3cr3t-cloud-token";
  const std::string whole = answer_with_token(secret);
  const std::string field = cluster.kubeconfig.string() + ": users[cloud].user.exec";
  const std::string named = "the credential plugin \"" + (cluster.plugin_dir / "plugin.sh").string() + "\" ";
  const std::string wanted = "; it must print one client.authentication.k8s.io/v1 ExecCredential object";
  const std::vector<std::pair<std::string, std::string>> answers = {
      {"token: " + secret + "\n",
       "printed 26 bytes on stdout that are not one JSON value (it breaks at line 1, column 2)"},
      {whole + "\n" + secret + "\n",
       "printed " + std::to_string(whole.size() + 20) +
           " bytes on stdout that are not one JSON value (it breaks at line 2, column 1)"},
      {whole.substr(0, whole.size() - 1) + "\n", "printed " + std::to_string(whole.size()) +
                                                     " bytes on stdout that are not one JSON value (it ends inside a "
                                                     "JSON value)"},
      {"{\"token\": \"" + secret + "\"\n  \"kind\": 1}",
       "printed 43 bytes on stdout that are not one JSON value (it breaks at line 2, column 8)"},
      {"\"" + secret + "\"", "printed a JSON string on stdout, not an object"},
      {"[\"" + secret + "\"]", "printed a JSON array on stdout, not an object"},
      {"", "printed nothing on stdout"},
      {" \n", "printed nothing but white space on stdout"},
      {std::string(40, '[') + "\"" + secret + "\"" + std::string(40, ']'),
       "printed JSON nested deeper than 32 levels on stdout"},
      {whole + std::string(2 * 1024 * 1024, ' ') + secret, "printed more than 1024 KiB on stdout"},
  };
  for (const auto& [answer, problem] : answers) {
    CAPTURE(problem);
    test::write_text(cluster.plugin_dir / "answer.json", answer);
    Run listed = run({"karta-webhook", "list", "--kubeconfig", cluster.kubeconfig.string()});
    CHECK(listed.code == 1);
    CHECK(listed.err == "karta-webhook: " + field + ": " + named + problem + wanted + "\n");
    CHECK(listed.err.find(secret) == std::string::npos);
    CHECK(listed.out == "");
  }
  CHECK(cluster.server.received().empty());
}

TEST_CASE("a plugin that answers and exits 0 but leaves a child holding its stdout is used after a short grace") {
  // The child (`sleep 300 &`) keeps the pipe open: the answer was once thrown away at the time limit,
  // with "did not finish", and the child left running. Now the plugin's exit starts a 500 ms grace for
  // the pipes, then its output is used and the child, in the plugin's process group, is killed.
  test::TempDir dir;
  write_executable(dir.path / "leaves-child.sh", "#!/bin/sh\nprintf '%s\\n' '" + answer_with_token("grace-token") +
                                                     "'\nsleep 300 &\necho $! > \"$(dirname \"$0\")/child\"\nexit 0\n");
  kube::ExecConfig config = plugin_config(dir.path / "leaves-child.sh");
  auto started = std::chrono::steady_clock::now();
  kube::ExecCredential credential;
  CHECK(error_of([&] { credential = kube::run_exec_plugin(config); }) == "");
  auto took = std::chrono::steady_clock::now() - started;
  CHECK(credential.token == "grace-token");
  CHECK(took >= std::chrono::milliseconds(500));
  CHECK(took < std::chrono::seconds(5));
  CHECK(ended_within(std::stoi(test::read_text(dir.path / "child")), std::chrono::seconds(2)));

  // Exiting with a code, the same: the message says so, with its stderr and what was left behind.
  write_executable(dir.path / "fails.sh",
                   "#!/bin/sh\necho 'the SSO session has expired' >&2\nsleep 300 &\necho $! > \"$(dirname "
                   "\"$0\")/child\"\nexit 3\n");
  config.command = (dir.path / "fails.sh").string();
  started = std::chrono::steady_clock::now();
  CHECK(error_of([&] { kube::run_exec_plugin(config); }) ==
        "config: users[u].user.exec: the credential plugin \"" + config.command +
            "\" exited with code 3; its stderr: \"the SSO session has expired\"; it exited, but a process it started "
            "still held its stdout or stderr 500 ms later and was killed");
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
  CHECK(ended_within(std::stoi(test::read_text(dir.path / "child")), std::chrono::seconds(2)));
}

TEST_CASE("a plugin that does not exit in time is killed with the processes it started") {
  test::TempDir dir;
  write_executable(dir.path / "hangs.sh",
                   "#!/bin/sh\nsleep 300 &\necho $! > \"$(dirname \"$0\")/child\"\necho waiting for a browser "
                   ">&2\nexec sleep 30\n");
  kube::ExecConfig config = plugin_config(dir.path / "hangs.sh");
  config.timeout = std::chrono::milliseconds(300);
  auto started = std::chrono::steady_clock::now();
  CHECK(error_of([&] { kube::run_exec_plugin(config); }) ==
        "config: users[u].user.exec: the credential plugin \"" + config.command +
            "\" did not exit within 300 ms and was killed, with the processes it started; its stderr: \"waiting for "
            "a browser\"");
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
  CHECK(ended_within(std::stoi(test::read_text(dir.path / "child")), std::chrono::seconds(2)));
}

}  // namespace unit_kube_exec_credential
