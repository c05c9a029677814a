#include "kube/exec_credential.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "kube/json_fields.h"
#include "kube/kube_connection.h"

extern char** environ;

namespace karta::kube {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kOutputLimit = 1024 * 1024;  // an ExecCredential with a certificate chain is a few KiB
constexpr std::size_t kQuotedStderr = 2048;

// exec.LookPath: a name with a '/' is used as it is; else the first executable regular file of that name
// in a PATH directory ("" in PATH is the current directory).
std::optional<std::string> look_path(const std::string& name) {
  auto executable = [](const std::string& path) {
    struct stat info {};
    return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && ::access(path.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) return executable(name) ? std::optional(name) : std::nullopt;
  const char* path = std::getenv("PATH");
  std::string list = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  for (std::size_t start = 0; start <= list.size();) {
    std::size_t colon = std::min(list.find(':', start), list.size());
    std::string directory = list.substr(start, colon - start);
    std::string candidate = (directory.empty() ? "." : directory) + "/" + name;
    if (executable(candidate)) return candidate;
    start = colon + 1;
  }
  return std::nullopt;
}

// The last bytes of the plugin's stderr, for the message; the caller escapes it for the terminal.
std::string stderr_quote(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  if (text.size() > kQuotedStderr) text = "..." + text.substr(text.size() - kQuotedStderr);
  return text.empty() ? "its stderr was empty" : "its stderr: \"" + text + "\"";
}

struct Pipe {
  int fds[2] = {-1, -1};
  ~Pipe() { close_both(); }
  void close_both() {
    for (int& fd : fds) {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  }
};

std::string request_json(const ExecConfig& config, bool interactive) {
  // Field order as client-go's encoder writes it: kind, apiVersion, spec {cluster, interactive}.
  std::string spec = config.cluster_json.empty() ? "" : "\"cluster\":" + config.cluster_json + ",";
  spec += std::string("\"interactive\":") + (interactive ? "true" : "false");
  return "{\"kind\":\"ExecCredential\",\"apiVersion\":" + json(config.api_version).dump() + ",\"spec\":{" + spec + "}}";
}


}  // namespace

std::optional<std::chrono::system_clock::time_point> parse_rfc3339(const std::string& text) {
  int year, month, day, hour, minute, second;
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &year, &month, &day, &hour, &minute, &second, &consumed) !=
          6 ||
      consumed != 19) {
    return std::nullopt;
  }
  std::size_t at = 19;
  if (at < text.size() && text[at] == '.') {
    ++at;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') ++at;  // sub-second: ignored
  }
  long offset = 0;
  if (at < text.size() && (text[at] == 'Z' || text[at] == 'z')) {
    ++at;
  } else if (at + 6 == text.size() && (text[at] == '+' || text[at] == '-') && text[at + 3] == ':') {
    int hours = std::atoi(text.substr(at + 1, 2).c_str()), minutes = std::atoi(text.substr(at + 4, 2).c_str());
    offset = (text[at] == '-' ? -1 : 1) * (hours * 3600L + minutes * 60L);
    at += 6;
  } else {
    return std::nullopt;
  }
  if (at != text.size() || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = year - 1900, tm.tm_mon = month - 1, tm.tm_mday = day;
  tm.tm_hour = hour, tm.tm_min = minute, tm.tm_sec = second;
  return std::chrono::system_clock::from_time_t(timegm(&tm) - offset);
}

ExecCredential run_exec_plugin(const ExecConfig& config) {
  auto fail = [&](const std::string& problem) -> void { throw KubeConfigError(config.field + ": " + problem); };
  const std::string named = "the credential plugin \"" + config.command + "\"";

  bool terminal = config.stdin_is_terminal.value_or(::isatty(STDIN_FILENO) == 1);
  bool interactive = false;
  if (config.interactive_mode == "Always") {
    if (!terminal) {
      fail(named + " wants interactiveMode Always, but standard input is not a terminal");
    }
    interactive = true;
  } else if (config.interactive_mode == "IfAvailable") {
    interactive = terminal;
  }

  std::optional<std::string> program = look_path(config.command);
  if (!program) {
    std::string where = config.command.find('/') != std::string::npos ? "" : " on PATH";
    fail(named + " was not found" + where + (config.install_hint.empty() ? std::string() : "; " + config.install_hint));
  }

  // Our environment, then the config's env, then KUBERNETES_EXEC_INFO: later names win, as in Go's exec.
  std::map<std::string, std::string> variables;
  std::vector<std::string> order;
  auto set = [&](const std::string& name, const std::string& value) {
    if (!variables.contains(name)) order.push_back(name);
    variables[name] = value;
  };
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string text = *entry;
    std::size_t equals = text.find('=');
    if (equals != std::string::npos) set(text.substr(0, equals), text.substr(equals + 1));
  }
  for (const auto& [name, value] : config.env) set(name, value);
  set("KUBERNETES_EXEC_INFO", request_json(config, interactive));
  std::vector<std::string> environment_text;
  for (const auto& name : order) environment_text.push_back(name + "=" + variables[name]);
  std::vector<char*> environment;
  for (auto& entry : environment_text) environment.push_back(entry.data());
  environment.push_back(nullptr);
  std::vector<std::string> argument_text{config.command};
  argument_text.insert(argument_text.end(), config.args.begin(), config.args.end());
  std::vector<char*> arguments;
  for (auto& argument : argument_text) arguments.push_back(argument.data());
  arguments.push_back(nullptr);

  Pipe out, err;
  if (::pipe2(out.fds, O_CLOEXEC) != 0 || ::pipe2(err.fds, O_CLOEXEC) != 0) {
    fail("cannot make pipes for " + named + ": " + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!interactive) posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.fds[1], STDOUT_FILENO);
  // Interactively, the plugin talks to the person at the terminal (a login prompt) on stderr.
  if (!interactive) posix_spawn_file_actions_adddup2(&actions, err.fds[1], STDERR_FILENO);
  // Nothing else of ours (the API client's sockets, a watcher's) is the plugin's to keep open.
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
  pid_t pid = 0;
  int spawned = ::posix_spawn(&pid, program->c_str(), &actions, nullptr, arguments.data(), environment.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out.fds[1]), out.fds[1] = -1;
  ::close(err.fds[1]), err.fds[1] = -1;
  if (interactive) ::close(err.fds[0]), err.fds[0] = -1;
  if (spawned != 0) fail(named + " (" + *program + ") could not be started: " + std::strerror(spawned));

  std::string output, errors;
  const auto deadline = Clock::now() + config.timeout;
  bool timed_out = false;
  while (out.fds[0] >= 0 || err.fds[0] >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd polled[2];
    int count = 0;
    for (int fd : {out.fds[0], err.fds[0]}) {
      if (fd >= 0) polled[count++] = {fd, POLLIN, 0};
    }
    int ready = ::poll(polled, count, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0 && errno != EINTR) break;
    for (int i = 0; i < count; ++i) {
      if (polled[i].revents == 0) continue;
      char buffer[4096];
      ssize_t got = ::read(polled[i].fd, buffer, sizeof buffer);
      std::string& sink = polled[i].fd == out.fds[0] ? output : errors;
      if (got > 0) {
        if (sink.size() < kOutputLimit) sink.append(buffer, static_cast<std::size_t>(got));
        continue;
      }
      if (got < 0 && errno == EINTR) continue;
      int& fd = polled[i].fd == out.fds[0] ? out.fds[0] : err.fds[0];
      ::close(fd);
      fd = -1;
    }
  }
  // Both pipes closed: the plugin has ended, or closed them and goes on; it gets until the deadline.
  int status = 0;
  while (!timed_out) {
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) break;
    if (Clock::now() >= deadline)
      timed_out = true;
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (timed_out) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    fail(named + " did not finish within " + std::to_string(config.timeout.count()) + " ms and was killed" +
         (interactive ? std::string() : "; " + stderr_quote(errors)));
  }
  if (WIFSIGNALED(status)) {
    fail(named + " was killed by signal " + std::to_string(WTERMSIG(status)) +
         (interactive ? std::string() : "; " + stderr_quote(errors)));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    fail(named + " exited with code " + std::to_string(WEXITSTATUS(status)) +
         (interactive ? std::string() : "; " + stderr_quote(errors)));
  }

  json answer = json::parse(output, nullptr, /*allow_exceptions=*/false);
  if (!answer.is_object()) {
    std::string start = output.substr(0, 200);
    fail(named + " printed no ExecCredential JSON on stdout (it printed \"" + start + "\")");
  }
  std::string api_version = string_at(answer, "apiVersion");
  if (api_version != config.api_version) {
    fail(named + " answered with apiVersion \"" + api_version + "\"; the kubeconfig asks for \"" + config.api_version +
         "\"");
  }
  if (string_at(answer, "kind") != "ExecCredential") {
    fail(named + " answered with kind \"" + string_at(answer, "kind") + "\", not ExecCredential");
  }
  auto status_node = answer.find("status");
  if (status_node == answer.end() || !status_node->is_object()) fail(named + " answered without a status");
  ExecCredential credential;
  credential.token = string_at(*status_node, "token");
  credential.client_certificate_pem = string_at(*status_node, "clientCertificateData");
  credential.client_key_pem = string_at(*status_node, "clientKeyData");
  if (credential.token.empty() && credential.client_certificate_pem.empty() && credential.client_key_pem.empty()) {
    fail(named + " answered with neither a token nor a client certificate and key");
  }
  if (credential.client_certificate_pem.empty() != credential.client_key_pem.empty()) {
    fail(named + " answered with only one of clientCertificateData and clientKeyData");
  }
  if (std::string expiry = string_at(*status_node, "expirationTimestamp"); !expiry.empty()) {
    credential.expiry = parse_rfc3339(expiry);
    if (!credential.expiry)
      fail(named + " answered with an expirationTimestamp that is not RFC 3339: \"" + expiry + "\"");
  }
  return credential;
}

ExecCredential ExecCredentialSource::run_locked() {
  ExecCredential credential = run_exec_plugin(config_);
  credential.generation = ++runs_;
  cached_ = credential;
  return credential;
}

ExecCredential ExecCredentialSource::current() {
  std::lock_guard lock(mutex_);
  // client-go runs the plugin again once the expiry has passed.
  if (cached_ && (!cached_->expiry || std::chrono::system_clock::now() < *cached_->expiry)) return *cached_;
  return run_locked();
}

ExecCredential ExecCredentialSource::refresh(const ExecCredential& used) {
  std::lock_guard lock(mutex_);
  if (cached_ && cached_->generation != used.generation) return *cached_;
  return run_locked();
}

unsigned long ExecCredentialSource::runs() const {
  std::lock_guard lock(mutex_);
  return runs_;
}

}  // namespace karta::kube
