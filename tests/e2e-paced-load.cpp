// karta-paced-load (bench/paced_load.cpp), the constant-rate client of scripts/load-test.sh's half-load
// run: it sends exactly the requests its schedule makes due, each once, counts what it is told (answers,
// statuses, requests never answered), and never hangs on a peer that stops talking.

#include <doctest/doctest.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <atomic>
#include <cstdio>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "server/https_server.h"
#include "server/tls_context.h"
#include "support/running_webhook.h"
#include "support/test_support.h"

namespace e2e_paced_load {  // this file's names, apart from other tests' in a unity build

namespace test = karta::test;
using namespace std::chrono_literals;

#ifdef KARTA_PACED_LOAD_BINARY
const std::string kClient = KARTA_PACED_LOAD_BINARY;
#else
const std::string kClient;  // built without KARTA_BUILD_BENCHMARKS: every case below fails, none is skipped
#endif

// A loopback port that was free a moment ago: bound to port 0, read back, closed.
unsigned short free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&address), size) == 0);
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0);
  close(fd);
  return ntohs(address.sin_port);
}

// Whether something listens on 127.0.0.1:`port`, read from /proc/net/tcp without connecting: a probe
// connection would be openssl s_server's one connection, and take what it was told to say.
bool listening(unsigned short port) {
  std::ifstream table("/proc/net/tcp");
  char wanted[16];
  std::snprintf(wanted, sizeof wanted, "0100007F:%04X", port);
  std::string line_text;
  std::getline(table, line_text);  // the header
  while (std::getline(table, line_text)) {
    std::istringstream fields(line_text);
    std::string slot, local, remote, state;
    fields >> slot >> local >> remote >> state;
    if (local == wanted && state == "0A") return true;  // 0A: TCP_LISTEN
  }
  return false;
}

std::string demo_body() { return (test::source_dir() / "bench/jobset-demo-review.json").string(); }

struct Run {
  int code = -1;
  std::string output;
};

Run paced(unsigned short port, const std::string& path, const std::string& arguments) {
  REQUIRE_MESSAGE(!kClient.empty(), "karta-paced-load was not built (KARTA_BUILD_BENCHMARKS is off)");
  Run run;
  run.output = test::run_command(kClient + " --url https://127.0.0.1:" + std::to_string(port) + path + " " + arguments,
                                 &run.code);
  return run;
}

std::string line(const std::string& output, const std::string& prefix) {
  std::istringstream in(output);
  for (std::string text; std::getline(in, text);)
    if (text.rfind(prefix, 0) == 0) return text;
  FAIL("no line starting with '" << prefix << "' in:\n" << output);
  return {};
}

// "paced latency us from due: p50 176 p99 564 p999 2331 max 4432" -> {176, 564, 2331, 4432}
std::vector<long> percentiles(const std::string& output, const std::string& prefix) {
  std::istringstream in(line(output, prefix).substr(prefix.size()));
  std::vector<long> values;
  std::string name;
  long value = 0;
  while (in >> name >> value) values.push_back(value);
  REQUIRE(values.size() == 4);
  return values;
}

// The run succeeded, and its summary and error lines are these (each after its "paced: " or
// "paced errors: " prefix).
void check_run(const Run& run, const std::string& summary, const std::string& errors) {
  REQUIRE_MESSAGE(run.code == 0, run.output);
  CHECK(line(run.output, "paced: ") == "paced: " + summary);
  CHECK(line(run.output, "paced errors: ") == "paced errors: " + errors);
}

// A server whose POST /ok answers 200 and POST /busy 503, counting every request it is sent.
struct CountingServer {
  test::TempDir dir;
  test::TestCertificates certificates{dir.path};
  std::atomic<int> requests{0};
  std::unique_ptr<karta::HttpsServer> server;
  unsigned short port = 0;
  std::thread thread;

  explicit CountingServer(std::chrono::milliseconds read_timeout = 30s, std::size_t body_limit = 7 * 1024 * 1024) {
    karta::ServerOptions options;
    options.bind_address = "127.0.0.1";
    options.port = 0;
    options.threads = 2;
    options.read_timeout = read_timeout;  // also how long a keep-alive connection may stay idle
    options.body_limit = body_limit;      // a body over it: 413 and Connection: close
    auto answer = [this](int status) {
      return [this, status](const karta::HttpRequest&) {
        ++requests;
        return karta::HttpResponse{status, "application/json", "{}", {}};
      };
    };
    std::vector<karta::Route> routes{{"POST", "/ok", answer(200), {}}, {"POST", "/busy", answer(503), {}}};
    auto store = std::make_shared<karta::CertificateStore>(karta::TlsFiles{certificates.certificate, certificates.key});
    server = std::make_unique<karta::HttpsServer>(options, store, routes);
    port = server->listen();
    thread = std::thread([this] { server->run(/*handle_signals=*/false); });
  }
  ~CountingServer() {
    server->shutdown();
    thread.join();
  }
};

// openssl s_server on a port: it takes one connection at a time, completes the handshake and sends the
// connection `says` (written to its input before any connection), then nothing more: with
// `says` empty it never answers. Stopped with SIGTERM.
struct ScriptedTlsPeer {
  pid_t pid = -1;
  int input = -1;
  ScriptedTlsPeer(unsigned short port, const test::TestCertificates& certificates, const std::string& says = "") {
    int pipe_fds[2];  // a socket pair, not a pipe: sent to with MSG_NOSIGNAL, no SIGPIPE once s_server is gone
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, pipe_fds) == 0);
    std::string accept = "127.0.0.1:" + std::to_string(port);
    pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      dup2(pipe_fds[0], 0);
      close(pipe_fds[1]);
      int null = open("/dev/null", O_WRONLY);
      dup2(null, 1);
      dup2(null, 2);
      execlp("openssl", "openssl", "s_server", "-quiet", "-accept", accept.c_str(), "-cert",
             certificates.certificate.c_str(), "-key", certificates.key.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(pipe_fds[0]);
    input = pipe_fds[1];
    // From a thread: more than the socket holds waits until s_server reads it, once a client connected.
    writer = std::thread([this, says] {
      for (std::size_t done = 0; done < says.size();) {
        ssize_t n = send(input, says.data() + done, says.size() - done, MSG_NOSIGNAL);
        if (n <= 0) return;  // the peer is gone
        done += static_cast<std::size_t>(n);
      }
    });
  }
  ~ScriptedTlsPeer() {
    kill(pid, SIGTERM);
    waitpid(pid, nullptr, 0);
    writer.join();  // a send still waiting fails once s_server is gone
    close(input);
  }
  std::thread writer;
  ScriptedTlsPeer(const ScriptedTlsPeer&) = delete;
  ScriptedTlsPeer& operator=(const ScriptedTlsPeer&) = delete;
};

TEST_CASE("the demo review at a constant rate against the webhook: every request due is answered once") {
  test::RunningWebhook webhook;
  auto run = paced(webhook.port, "/mutate",
                   "--body " + demo_body() + " --rate 200 --duration 1 --warmup 0.25 --connections 4 --cacert " +
                       webhook.certificates.ca.string());
  check_run(run, "200 requests due in 1.000 s at 200.0 req/s; 200 answered, 200.0 req/s",
            "connect 0 read 0 write 0 status 0 timeout 0");
  auto from_due = percentiles(run.output, "paced latency us from due:");
  auto from_send = percentiles(run.output, "paced latency us from send:");
  auto lateness = percentiles(run.output, "paced lateness us (send - due):");
  for (std::size_t i = 0; i < 4; ++i) {
    // Each request's latency from its send is at most its latency from when it was due, so every order
    // statistic is too; percentiles are in order.
    CHECK(from_send[i] <= from_due[i]);
    if (i > 0) CHECK(from_due[i - 1] <= from_due[i]);
    CHECK(lateness[i] >= 0);
  }
  CHECK(from_send[0] > 0);  // an admission over TLS takes some microseconds
}

TEST_CASE("warm-up and counted requests come from one schedule: the server sees each exactly once") {
  CountingServer server;
  auto run = paced(server.port, "/ok",
                   "--body " + demo_body() + " --rate 400 --duration 0.5 --warmup 0.25 --connections 3 --cacert " +
                       server.certificates.ca.string());
  check_run(run, "200 requests due in 0.500 s at 400.0 req/s; 200 answered, 400.0 req/s",
            "connect 0 read 0 write 0 status 0 timeout 0");
  CHECK(server.requests == 300);  // 100 in the warm-up, 200 counted
}

TEST_CASE("answers that are not 2xx are counted as status errors, and still answered") {
  CountingServer server;
  auto run = paced(server.port, "/busy", "--body " + demo_body() + " --rate 100 --duration 0.5 --warmup 0 --connections 2");
  check_run(run, "50 requests due in 0.500 s at 100.0 req/s; 50 answered, 100.0 req/s",
            "connect 0 read 0 write 0 status 50 timeout 0");
  CHECK(server.requests == 50);
}

TEST_CASE("a server that closes keep-alive connections it finds idle: no error, the connections are made again") {
  CountingServer server(100ms);
  // At 10 req/s, 4 connections each wait far longer than 100 ms between requests.
  auto run = paced(server.port, "/ok", "--body " + demo_body() + " --rate 10 --duration 1 --warmup 0 --connections 4");
  check_run(run, "10 requests due in 1.000 s at 10.0 req/s; 10 answered, 10.0 req/s",
            "connect 0 read 0 write 0 status 0 timeout 0");
  CHECK(server.requests == 10);
}

TEST_CASE("an answer followed at once by the close of its connection is counted, and the connection made again") {
  CountingServer server(30s, /*body_limit=*/100);  // the demo review's 1,534 bytes get 413 and a closed connection
  auto run = paced(server.port, "/ok", "--body " + demo_body() + " --rate 20 --duration 0.5 --warmup 0 --connections 2");
  check_run(run, "10 requests due in 0.500 s at 20.0 req/s; 10 answered, 20.0 req/s",
            "connect 0 read 0 write 0 status 10 timeout 0");
  CHECK(server.requests == 0);  // refused before the handler
}

TEST_CASE("a peer that completes the handshake and never answers: the run ends after --drain, every request a timeout") {
  test::TempDir dir;
  test::TestCertificates certificates{dir.path};
  const unsigned short port = free_port();
  ScriptedTlsPeer peer(port, certificates);
  REQUIRE(test::eventually([port] { return listening(port); }, 5s));
  auto started = std::chrono::steady_clock::now();
  auto run = paced(port, "/", "--body " + demo_body() + " --rate 20 --duration 0.5 --warmup 0 --connections 1 --drain 0.3");
  auto took = std::chrono::steady_clock::now() - started;
  // One request was sent and never answered; the other nine were due while the only connection waited.
  check_run(run, "10 requests due in 0.500 s at 20.0 req/s; 0 answered, 0.0 req/s",
            "connect 0 read 0 write 0 status 0 timeout 10");
  CHECK(line(run.output, "paced latency us from due: ") == "paced latency us from due: p50 0 p99 0 p999 0 max 0");
  CHECK(took < 5s);
}

TEST_CASE("an answer that cannot be framed: a read error with its reason, escaped; the connection made again") {
  test::TempDir dir;
  test::TestCertificates certificates{dir.path};
  const unsigned short port = free_port();
  struct Case {
    std::string says, reason;
  };
  const Case cases[] = {
      // Past any limit: framed as is, 2^64 - 1 plus the header's length would wrap round to a few bytes.
      {"HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551615\r\n\r\n",
       "Content-Length 18446744073709551615 is over 1 GiB"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
       "bad Content-Length: 99999999999999999999999"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 12\x1b]0;owned\x07\r\n\r\n", "bad Content-Length: 12\\x1b]0;owned\\x07"},
      {"\x1b[2J\x1b[31mHTTP/1.1 200\r\n\r\n", "not an HTTP response: \\x1b[2J\\x1b[31mHTTP/1.1 200"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
       "a response without Content-Length (chunked?): not supported"},
      {"HTTP/1.1 200 OK\r\nX: " + std::string(70 * 1024, 'x'), "no end of the response header within 64 KiB"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.reason);
    ScriptedTlsPeer peer(port, certificates, c.says);
    REQUIRE(test::eventually([port] { return listening(port); }, 5s));
    auto run = paced(port, "/", "--body " + demo_body() +
                                    " --rate 20 --duration 0.3 --warmup 0 --connections 1 --drain 0.3 --connect-timeout 2");
    // The first request's answer is refused; the other five wait on the connection made again, which the
    // peer accepts and never answers.
    check_run(run, "6 requests due in 0.300 s at 20.0 req/s; 0 answered, 0.0 req/s",
              "connect 0 read 1 write 0 status 0 timeout 5");
    CHECK(run.output.rfind("karta-paced-load: " + c.reason + "\n", 0) == 0);
  }
}

TEST_CASE("what cannot be run is refused with the reason, exit 1") {
  test::TempDir dir;
  test::TestCertificates certificates{dir.path};
  SUBCASE("nothing listens") {
    const unsigned short port = free_port();
    auto run = paced(port, "/", "--body " + demo_body() + " --rate 10");
    CHECK(run.code == 1);
    CHECK(run.output == "karta-paced-load: no connection to 127.0.0.1:" + std::to_string(port) +
                            " could be made: Connection refused\n");
  }
  SUBCASE("a certificate the CA did not sign") {
    CountingServer server;
    test::TempDir other_dir;
    test::TestCertificates other{other_dir.path};
    auto run = paced(server.port, "/ok", "--body " + demo_body() + " --rate 10 --cacert " + other.ca.string());
    CHECK(run.code == 1);
    CHECK(run.output.find("could be made: TLS handshake: ") != std::string::npos);
    CHECK(run.output.find("certificate verify failed") != std::string::npos);
    CHECK(server.requests == 0);
  }
  SUBCASE("a URL that is not https") {
    auto run = test::run_command(kClient + " --url http://127.0.0.1:1/ --body " + demo_body() + " --rate 10", nullptr);
    CHECK(run == "karta-paced-load: --url: only https:// URLs are supported: http://127.0.0.1:1/\n");
  }
  SUBCASE("a body that cannot be read") {
    auto missing = (dir.path / "missing.json").string();
    auto run = test::run_command(kClient + " --url https://127.0.0.1:1/ --body " + missing + " --rate 10", nullptr);
    CHECK(run == "karta-paced-load: --body: cannot read " + missing + "\n");
  }
}

}  // namespace e2e_paced_load
