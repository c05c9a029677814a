#include "kube/exec_credential.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "json/documents.h"
#include "kube/go_strings.h"
#include "kube/json_fields.h"
#include "kube/kube_connection.h"

extern char** environ;

namespace karta::kube {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kOutputLimit = 1024 * 1024;  // an ExecCredential with a certificate chain is a few KiB
constexpr std::size_t kQuotedStderr = 2048;
// How long a plugin that has exited may leave its pipes held open by what it started. Its own output is
// in the pipe by then; a longer wait serves only a child that writes to it afterwards.
constexpr std::chrono::milliseconds kPipeGrace{500};
constexpr int kAnswerDepth = 32;  // an ExecCredential is two levels deep

// exec.LookPath: a name with a '/' is used as it is; else the first executable regular file of that name
// in a PATH directory. Since Go 1.19 a first match through an empty entry (the current directory) or a
// relative one is an error (exec.ErrDot), so an `aws` or `kubelogin` left in an untrusted checkout is
// not run by a command that happens to start there; `relative_entry` says it was such a match.
struct PathMatch {
  std::optional<std::string> program;
  std::optional<std::string> relative_entry;  // the PATH entry the first match came through, "" for empty
};

PathMatch look_path(const std::string& name) {
  auto executable = [](const std::string& path) {
    struct stat info {};
    return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && ::access(path.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) return {executable(name) ? std::optional(name) : std::nullopt, {}};
  const char* path = std::getenv("PATH");
  std::string list = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  // An empty PATH has no entries (Go's filepath.SplitList), not one empty one.
  for (std::size_t start = 0; !list.empty() && start <= list.size();) {
    std::size_t colon = std::min(list.find(':', start), list.size());
    std::string directory = list.substr(start, colon - start);
    std::string candidate = (directory.empty() ? "." : directory) + "/" + name;
    if (executable(candidate)) {
      if (directory.empty() || directory.front() != '/') return {candidate, directory};
      return {candidate, {}};
    }
    start = colon + 1;
  }
  return {};
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

  PathMatch match = look_path(config.command);
  if (!match.program) {
    std::string where = config.command.find('/') != std::string::npos ? "" : " on PATH";
    fail(named + " was not found" + where + (config.install_hint.empty() ? std::string() : "; " + config.install_hint));
  }
  if (match.relative_entry) {
    std::string entry = match.relative_entry->empty() ? "an empty entry in PATH (the current directory)"
                                                      : "PATH's relative entry \"" + *match.relative_entry + "\"";
    fail(named + " was found as \"" + *match.program + "\" through " + entry +
         ", and is not run from there, as Go's exec.LookPath refuses it (ErrDot): give the command as an absolute "
         "path, or remove the empty or relative entry from PATH");
  }
  const std::string& program = *match.program;

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
  // Non-interactively the plugin leads a process group of its own, so that the time limit ends whatever
  // it started too (a `sleep 300 &`, a helper that holds its stdout). Interactively it stays in ours: a
  // background group that reads the terminal is stopped (SIGTTIN), and a login prompt reads it.
  const bool own_group = !interactive;
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  if (own_group) {
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0);
  }
  pid_t pid = 0;
  int spawned = ::posix_spawn(&pid, program.c_str(), &actions, &attributes, arguments.data(), environment.data());
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out.fds[1]), out.fds[1] = -1;
  ::close(err.fds[1]), err.fds[1] = -1;
  if (interactive) ::close(err.fds[0]), err.fds[0] = -1;
  if (spawned != 0) fail(named + " (" + program + ") could not be started: " + std::strerror(spawned));
  auto kill_plugin = [&] { own_group ? ::killpg(pid, SIGKILL) : ::kill(pid, SIGKILL); };

  // Reads both pipes until the plugin has exited and both are closed. The plugin's exit is seen without
  // reaping it (WNOWAIT): until waitpid below its pid stays taken, so killpg cannot reach another group.
  // Once it has exited, whatever still holds a pipe (a child it left behind) gets kPipeGrace, then the
  // output is read as it stands; before it exits, the plugin gets until the deadline.
  std::string output, errors;
  bool output_over_limit = false;
  const auto deadline = Clock::now() + config.timeout;
  std::optional<Clock::time_point> exited_at;
  bool timed_out = false, pipes_held = false;
  while (true) {
    if (!exited_at) {
      siginfo_t info{};
      int seen = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
      // ECHILD: reaped already, by a process that ignores SIGCHLD.
      if ((seen == 0 && info.si_pid == pid) || (seen < 0 && errno == ECHILD)) exited_at = Clock::now();
    }
    const bool open = out.fds[0] >= 0 || err.fds[0] >= 0;
    if (exited_at && !open) break;
    const auto now = Clock::now();
    const auto until = exited_at ? *exited_at + kPipeGrace : deadline;
    if (now >= until) {
      (exited_at ? pipes_held : timed_out) = true;
      break;
    }
    // A short wait: the exit is polled, not signalled (a SIGCHLD handler is not a library's to install).
    auto wait =
        std::min(std::chrono::duration_cast<std::chrono::milliseconds>(until - now) + std::chrono::milliseconds(1),
                 std::chrono::milliseconds(20));
    if (!open) {
      std::this_thread::sleep_for(wait);
      continue;
    }
    pollfd polled[2];
    int count = 0;
    for (int fd : {out.fds[0], err.fds[0]}) {
      if (fd >= 0) polled[count++] = {fd, POLLIN, 0};
    }
    int ready = ::poll(polled, count, static_cast<int>(wait.count()));
    if (ready < 0 && errno != EINTR) {
      int error = errno;
      kill_plugin();
      ::waitpid(pid, nullptr, 0);
      fail("cannot read the output of " + named + ": " + std::strerror(error));
    }
    for (int i = 0; i < count && ready > 0; ++i) {
      if (polled[i].revents == 0) continue;
      char buffer[4096];
      ssize_t got = ::read(polled[i].fd, buffer, sizeof buffer);
      const bool is_output = polled[i].fd == out.fds[0];
      std::string& sink = is_output ? output : errors;
      if (got > 0) {
        if (sink.size() < kOutputLimit)
          sink.append(buffer, static_cast<std::size_t>(got));
        else if (is_output)
          output_over_limit = true;
        continue;
      }
      if (got < 0 && errno == EINTR) continue;
      int& fd = is_output ? out.fds[0] : err.fds[0];
      ::close(fd);
      fd = -1;
    }
  }
  // What it left holding a pipe is killed with it; after the exit, only what it started can be left.
  if (timed_out || (pipes_held && own_group)) kill_plugin();
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string quoted = interactive ? std::string() : "; " + stderr_quote(errors);
  if (timed_out) {
    fail(named + " did not exit within " + std::to_string(config.timeout.count()) + " ms and was killed" +
         (own_group ? ", with the processes it started" : "") + quoted);
  }
  // Said after any other fault, since it may be why the output is cut short.
  const std::string left_behind = !pipes_held ? std::string()
                                              : "; it exited, but a process it started still held its " +
                                                    std::string(interactive ? "stdout" : "stdout or stderr") + " " +
                                                    std::to_string(kPipeGrace.count()) + " ms later" +
                                                    (own_group ? " and was killed" : "");
  if (WIFSIGNALED(status)) {
    fail(named + " was killed by signal " + std::to_string(WTERMSIG(status)) + quoted + left_behind);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    fail(named + " exited with code " + std::to_string(WEXITSTATUS(status)) + quoted + left_behind);
  }

  // Never quoted: what a plugin prints is its credential, and a near-miss of JSON holds the token too.
  const std::string wanted = "; it must print one " + config.api_version + " ExecCredential object";
  if (output_over_limit) {
    fail(named + " printed more than " + std::to_string(kOutputLimit / 1024) + " KiB on stdout" + wanted + left_behind);
  }
  if (trim_space(output).empty()) {
    fail(named + " printed nothing" + (output.empty() ? "" : " but white space") + " on stdout" + wanted + left_behind);
  }
  if (json_nesting_depth(output, kAnswerDepth) > kAnswerDepth) {
    fail(named + " printed JSON nested deeper than " + std::to_string(kAnswerDepth) + " levels on stdout" + wanted +
         left_behind);
  }
  json answer;
  try {
    answer = json::parse(output);
  } catch (const json::parse_error& e) {
    // nlohmann counts the bytes read, the one it stopped at (or the end) included.
    std::size_t at = e.byte == 0 ? 0 : e.byte - 1;
    std::string where = "it ends inside a JSON value";
    if (at < output.size()) {
      std::size_t newline = at == 0 ? std::string::npos : output.rfind('\n', at - 1);
      std::size_t line_begin = newline == std::string::npos ? 0 : newline + 1;
      std::size_t line = 1 + static_cast<std::size_t>(std::count(output.begin(), output.begin() + line_begin, '\n'));
      where = "it breaks at line " + std::to_string(line) + ", column " + std::to_string(at - line_begin + 1);
    }
    fail(named + " printed " + std::to_string(output.size()) + " bytes on stdout that are not one JSON value (" +
         where + ")" + wanted + left_behind);
  }
  if (!answer.is_object()) {
    fail(named + " printed a JSON " + answer.type_name() + " on stdout, not an object" + wanted + left_behind);
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
