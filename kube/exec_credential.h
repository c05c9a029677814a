#pragma once

// client-go's exec credential plugins (k8s.io/client-go/plugin/pkg/client/auth/exec): the kubeconfig's
// user names a program (aws eks get-token, gke-gcloud-auth-plugin, kubelogin, ...) that prints a
// client.authentication.k8s.io/v1 or v1beta1 ExecCredential with a bearer token or a client certificate.
// It is run as client-go runs it: no shell; a command with a '/' relative to the kubeconfig's directory,
// else looked up on PATH; our environment plus the config's env plus KUBERNETES_EXEC_INFO (the request
// ExecCredential, with spec.interactive and, under provideClusterInfo, the cluster); standard input the
// terminal only when it runs interactively. Its answer is kept until its expirationTimestamp, and the
// program is run again after that, or when the API server answers 401 to the credential it gave.
// A command found through an empty or relative PATH entry (the current directory) is refused, as Go's
// exec.LookPath refuses it (ErrDot). Unlike client-go, a program that does not exit within a time limit is
// killed (a CLI must not hang), with what it started: run non-interactively, it leads a process group of
// its own. Once it has exited, a child it left holding its stdout gets a short grace, then is killed and
// the output is read as it stands. A failure quotes the program's standard error (captured when it runs
// non-interactively), never its standard output, which holds the credential.

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace karta::kube {

struct ExecConfig {
  std::string api_version;  // client.authentication.k8s.io/v1 or /v1beta1
  std::string command;      // as written; with a '/' already resolved against the kubeconfig's directory
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;  // added to ours, in order (later wins)
  std::string install_hint;
  std::string interactive_mode = "IfAvailable";  // Never, IfAvailable or Always
  // KUBERNETES_EXEC_INFO's spec.cluster as JSON text (client-go's field order), "" without
  // provideClusterInfo.
  std::string cluster_json;
  std::string field;  // where it was configured, for messages: "FILE: users[u].user.exec"
  std::chrono::milliseconds timeout{60'000};
  // Whether our standard input is a terminal; tests set it. nullopt: asked of fd 0 when the plugin runs.
  std::optional<bool> stdin_is_terminal;
};

struct ExecCredential {
  std::string token;
  std::string client_certificate_pem, client_key_pem;
  std::optional<std::chrono::system_clock::time_point> expiry;  // none: good until the server says 401
  unsigned long generation = 0;                                 // counts the plugin's runs in one ExecCredentialSource
};

// Runs the plugin once and reads its answer. Throws KubeConfigError naming `config.field`: the program not
// found (with its installHint) or found only through the current directory, not started, killed after
// the time limit, exited with a non-zero code (quoting its stderr), or an answer that is not an
// ExecCredential of config's apiVersion with a token or a certificate and key (saying where its JSON
// broke, never quoting it).
ExecCredential run_exec_plugin(const ExecConfig& config);

// The plugin's credential, shared by every copy of a KubeConnection and every thread that uses it.
class ExecCredentialSource {
 public:
  explicit ExecCredentialSource(ExecConfig config) : config_(std::move(config)) {}

  // The cached credential while it has not expired; else runs the plugin.
  ExecCredential current();
  // After a 401 to `used`: runs the plugin again, unless another thread already replaced `used`.
  ExecCredential refresh(const ExecCredential& used);

  const ExecConfig& config() const { return config_; }
  unsigned long runs() const;

 private:
  ExecCredential run_locked();

  ExecConfig config_;
  mutable std::mutex mutex_;
  std::optional<ExecCredential> cached_;
  unsigned long runs_ = 0;
};

// RFC 3339 as Go's time.Time unmarshals it ("2026-12-03T01:00:00Z", "...T01:00:00.5+02:00"); nullopt
// when it is not one.
std::optional<std::chrono::system_clock::time_point> parse_rfc3339(const std::string& text);

}  // namespace karta::kube
