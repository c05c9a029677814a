// karta-paced-load: a constant-rate HTTPS load client for scripts/load-test.sh's half-load run.
//
//   karta-paced-load --url https://127.0.0.1:8443/mutate --body bench/jobset-demo-review.json
//                    --rate 18000 --connections 32 --duration 20 --warmup 2
//
// One schedule covers the whole run: request k is due k/rate seconds after the start and leaves on an
// idle connection as soon as it is due (epoll_pwait2 to the nanosecond, timer slack 1 ns). Open loop: a
// request due while every connection is busy leaves when one frees, and latency is counted from when it
// was due, so a stall shows in the tail; latency from the send and the client's own lateness are printed
// too. (wrk paces by whole milliseconds, h2load --rps per connection: both send bursts; bench/README.md.)
// One thread, HTTP/1.1 keep-alive, one request in flight per connection, responses framed by
// Content-Length. Requests due during --warmup are sent but not counted. Prints lines that
// scripts/load-test.sh reads; exits 1 on bad arguments or when no connection can be made.

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

using Nanoseconds = std::int64_t;

Nanoseconds now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return Nanoseconds{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

struct Target {
  std::string host;
  std::string port;
  std::string path;
};

Target parse_url(const std::string& url) {
  constexpr std::string_view scheme = "https://";
  if (url.rfind(scheme, 0) != 0) throw std::invalid_argument("--url: only https:// URLs are supported: " + url);
  std::string_view rest(url);
  rest.remove_prefix(scheme.size());
  auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  Target target;
  target.path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (!authority.empty() && authority.front() == '[') {  // [::1]:8443
    auto close = authority.find(']');
    if (close == std::string_view::npos) throw std::invalid_argument("--url: unclosed [ in " + url);
    target.host = std::string(authority.substr(1, close - 1));
    authority.remove_prefix(close + 1);
    if (!authority.empty() && authority.front() == ':') target.port = std::string(authority.substr(1));
  } else {
    auto colon = authority.rfind(':');
    target.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) target.port = std::string(authority.substr(colon + 1));
  }
  if (target.port.empty()) target.port = "443";
  if (target.host.empty()) throw std::invalid_argument("--url: no host in " + url);
  return target;
}

std::string openssl_error() {
  char text[256] = "unknown error";
  if (auto code = ERR_get_error()) ERR_error_string_n(code, text, sizeof text);
  ERR_clear_error();
  return text;
}

// Bytes from the server, fit for a terminal: anything outside printable ASCII as \xNN.
std::string printable(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    }
  }
  return out;
}

// What one response may hold: a server sending more is broken (or hostile), and the buffer must not grow
// without end.
constexpr std::size_t kMaxHeader = 64 * 1024;
constexpr std::size_t kMaxBody = 1024 * 1024 * 1024;

// The part of an HTTP/1.1 response buffer that makes one whole response: its status and its length.
struct Framed {
  int status = 0;
  std::size_t length = 0;
};

// nullopt: not whole yet. Throws on a response this client cannot frame (no Content-Length).
std::optional<Framed> frame_response(std::string_view buffer) {
  auto end = buffer.find("\r\n\r\n");
  if (end == std::string_view::npos) {
    if (buffer.size() > kMaxHeader) throw std::runtime_error("no end of the response header within 64 KiB");
    return std::nullopt;
  }
  std::string_view head = buffer.substr(0, end);
  Framed framed;
  if (head.size() < 12 || head.substr(0, 5) != "HTTP/" ||
      std::from_chars(head.data() + 9, head.data() + 12, framed.status).ec != std::errc())
    throw std::runtime_error("not an HTTP response: " + printable(head.substr(0, 40)));
  std::optional<std::size_t> content_length;
  for (std::size_t line = head.find("\r\n"); line != std::string_view::npos;) {
    auto next = head.find("\r\n", line + 2);
    std::string_view field = head.substr(line + 2, next == std::string_view::npos ? head.npos : next - line - 2);
    constexpr std::string_view name = "content-length:";
    if (field.size() > name.size() &&
        std::equal(name.begin(), name.end(), field.begin(), [](char a, char b) { return a == (b | 0x20); })) {
      auto value = field.substr(name.size());
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
      std::size_t parsed = 0;
      auto [end_of_number, error] = std::from_chars(value.data(), value.data() + value.size(), parsed);
      if (error != std::errc() || end_of_number != value.data() + value.size() || value.empty())
        throw std::runtime_error("bad Content-Length: " + printable(value.substr(0, 40)));
      if (parsed > kMaxBody) throw std::runtime_error("Content-Length " + std::to_string(parsed) + " is over 1 GiB");
      content_length = parsed;
    }
    line = next;
  }
  if (!content_length) throw std::runtime_error("a response without Content-Length (chunked?): not supported");
  framed.length = end + 4 + *content_length;
  if (buffer.size() < framed.length) return std::nullopt;
  return framed;
}

struct Errors {
  unsigned long long connect = 0, read = 0, write = 0, status = 0, timeout = 0;  // as printf's %llu
};

struct Connection {
  int fd = -1;
  SSL* ssl = nullptr;
  std::string received;
  std::int64_t request = -1;  // the request in flight, -1 when idle
  Nanoseconds sent_at = 0;
  std::size_t written = 0;  // bytes of the request written (a write may be partial)
  bool wants_write = false;

  void close() {
    if (ssl) SSL_free(ssl);
    if (fd >= 0) ::close(fd);
    ssl = nullptr;
    fd = -1;
    received.clear();
    request = -1;
    written = 0;
    wants_write = false;
  }
};

class PacedLoad {
 public:
  struct Options {
    std::string url, body_file, content_type = "application/json", ca_file;
    double rate = 0, duration = 10, warmup = 2, drain = 5, connect_timeout = 5;
    int connections = 32;
  };

  explicit PacedLoad(Options options) : options_(std::move(options)), target_(parse_url(options_.url)) {
    std::ifstream in(options_.body_file, std::ios::binary);
    if (!in) throw std::invalid_argument("--body: cannot read " + options_.body_file);
    std::string body{std::istreambuf_iterator<char>(in), {}};
    std::string host = target_.host.find(':') != std::string::npos ? "[" + target_.host + "]" : target_.host;
    request_ = "POST " + target_.path + " HTTP/1.1\r\nHost: " + host + ":" + target_.port +
               "\r\nContent-Type: " + options_.content_type + "\r\nContent-Length: " + std::to_string(body.size()) +
               "\r\n\r\n" + body;
    context_ = SSL_CTX_new(TLS_client_method());
    if (!context_) throw std::runtime_error("SSL_CTX_new: " + openssl_error());
    if (!options_.ca_file.empty()) {
      if (SSL_CTX_load_verify_locations(context_, options_.ca_file.c_str(), nullptr) != 1)
        throw std::invalid_argument("--cacert " + options_.ca_file + ": " + openssl_error());
      SSL_CTX_set_verify(context_, SSL_VERIFY_PEER, nullptr);
    }
    SSL_CTX_set_mode(context_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    if (int rc = getaddrinfo(target_.host.c_str(), target_.port.c_str(), &hints, &address_); rc != 0)
      throw std::invalid_argument("--url: cannot resolve " + target_.host + ": " + gai_strerror(rc));
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_ < 0) throw std::runtime_error(std::string("epoll_create1: ") + std::strerror(errno));
  }
  ~PacedLoad() {
    for (auto& connection : connections_) connection.close();
    if (address_) freeaddrinfo(address_);
    if (context_) SSL_CTX_free(context_);
    if (epoll_ >= 0) ::close(epoll_);
  }
  PacedLoad(const PacedLoad&) = delete;
  PacedLoad& operator=(const PacedLoad&) = delete;

  int run() {
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);  // wake when asked, not up to 50 µs later
    connections_.resize(static_cast<std::size_t>(options_.connections));
    for (auto& connection : connections_) {
      if (!open(connection)) continue;
      idle_.push_back(&connection);
    }
    if (idle_.empty()) {
      std::fprintf(stderr, "karta-paced-load: no connection to %s:%s could be made: %s\n", target_.host.c_str(),
                   target_.port.c_str(), last_connect_error_.c_str());
      return 1;
    }
    const auto to_ns = [](double seconds) { return static_cast<Nanoseconds>(std::llround(seconds * 1e9)); };
    const std::int64_t first_counted = std::llround(options_.warmup * options_.rate);
    const std::int64_t total = std::llround((options_.warmup + options_.duration) * options_.rate);
    const double interval = 1e9 / options_.rate;
    start_ = now_ns();
    const auto due = [&](std::int64_t k) { return start_ + static_cast<Nanoseconds>(static_cast<double>(k) * interval); };
    const Nanoseconds last_due = due(total > 0 ? total - 1 : 0);
    const Nanoseconds give_up = last_due + to_ns(options_.drain);
    from_due_.reserve(static_cast<std::size_t>(total - first_counted));
    from_send_.reserve(from_due_.capacity());
    lateness_.reserve(from_due_.capacity());
    std::int64_t next = 0;
    std::vector<epoll_event> events(connections_.size());
    for (;;) {
      Nanoseconds now = now_ns();
      while (next < total && due(next) <= now && !idle_.empty()) {
        Connection* connection = idle_.back();
        idle_.pop_back();
        std::int64_t request = next++;
        send(*connection, request, now);
        if (request >= first_counted) lateness_.push_back(now - due(request));
      }
      if (next >= total && in_flight_ == 0) break;
      if (now >= give_up) break;
      Nanoseconds wake = give_up;
      if (next < total && !idle_.empty()) wake = std::min(wake, due(next));
      Nanoseconds wait = std::max<Nanoseconds>(wake - now, 0);
      timespec timeout{static_cast<time_t>(wait / 1'000'000'000), static_cast<long>(wait % 1'000'000'000)};
      int ready = epoll_pwait2(epoll_, events.data(), static_cast<int>(events.size()), &timeout, nullptr);
      if (ready < 0) {
        if (errno == EINTR) continue;
        throw std::runtime_error(std::string("epoll_pwait2: ") + std::strerror(errno));
      }
      for (int i = 0; i < ready; ++i) on_ready(*static_cast<Connection*>(events[static_cast<std::size_t>(i)].data.ptr), first_counted, due);
    }
    errors_.timeout += static_cast<unsigned long long>(in_flight_ + (total - next));  // unanswered, or never sent
    report(total - first_counted);
    return 0;
  }

 private:
  bool open(Connection& connection) {
    connection.close();
    int fd = socket(address_->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    // Connecting and the handshake block, so both are bounded: a peer that accepts and stays silent
    // fails the connection rather than hanging the run.
    auto limit_us = static_cast<long long>(options_.connect_timeout * 1e6);
    timeval limit{static_cast<time_t>(limit_us / 1'000'000), static_cast<suseconds_t>(limit_us % 1'000'000)};
    if (fd >= 0) {
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    }
    if (fd < 0 || ::connect(fd, address_->ai_addr, address_->ai_addrlen) != 0) {
      last_connect_error_ = errno == EINPROGRESS ? "connect timed out" : std::strerror(errno);
      if (fd >= 0) ::close(fd);
      ++errors_.connect;
      return false;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    SSL* ssl = SSL_new(context_);
    SSL_set_fd(ssl, fd);
    SSL_set_tlsext_host_name(ssl, target_.host.c_str());
    if (!options_.ca_file.empty()) {
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
      if (X509_VERIFY_PARAM_set1_ip_asc(param, target_.host.c_str()) != 1) SSL_set1_host(ssl, target_.host.c_str());
    }
    if (SSL_connect(ssl) != 1) {  // blocking, also mid-run when a connection is made again (counted from due)
      bool timed_out = errno == EAGAIN || errno == EWOULDBLOCK;
      last_connect_error_ = "TLS handshake: " + (timed_out && ERR_peek_error() == 0 ? std::string("timed out") : openssl_error());
      SSL_free(ssl);
      ::close(fd);
      ++errors_.connect;
      return false;
    }
    // Non-blocking from here: the event loop waits in epoll_pwait2 only.
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    connection.fd = fd;
    connection.ssl = ssl;
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.ptr = &connection;
    epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &event);
    return true;
  }

  void send(Connection& connection, std::int64_t request, Nanoseconds now) {
    connection.request = request;
    connection.sent_at = now;
    connection.written = 0;
    ++in_flight_;
    write_more(connection);
  }

  void write_more(Connection& connection) {
    while (connection.written < request_.size()) {
      int n = SSL_write(connection.ssl, request_.data() + connection.written,
                        static_cast<int>(request_.size() - connection.written));
      if (n > 0) {
        connection.written += static_cast<std::size_t>(n);
        continue;
      }
      int error = SSL_get_error(connection.ssl, n);
      if (error == SSL_ERROR_WANT_WRITE || error == SSL_ERROR_WANT_READ) {
        watch_writes(connection, error == SSL_ERROR_WANT_WRITE);
        return;
      }
      ++errors_.write;
      fail(connection);
      return;
    }
    watch_writes(connection, false);
  }

  void watch_writes(Connection& connection, bool on) {
    if (connection.wants_write == on) return;
    connection.wants_write = on;
    epoll_event event{};
    event.events = EPOLLIN | (on ? EPOLLOUT : 0u);
    event.data.ptr = &connection;
    epoll_ctl(epoll_, EPOLL_CTL_MOD, connection.fd, &event);
  }

  // A connection that failed: its request is lost (counted by the caller), and a new connection takes
  // its place, so the schedule keeps its connections.
  void fail(Connection& connection) {
    if (connection.request >= 0) --in_flight_;
    else std::erase(idle_, &connection);  // an idle one is in the idle list
    connection.close();
    if (open(connection)) idle_.push_back(&connection);
  }

  template <typename Due>
  void on_ready(Connection& connection, std::int64_t first_counted, const Due& due) {
    if (connection.fd < 0) return;
    if (connection.request >= 0 && connection.written < request_.size()) {
      write_more(connection);
      if (connection.fd < 0 || connection.written < request_.size()) return;
    }
    char buffer[16384];
    bool closed = false;  // closed or broken
    for (;;) {
      int n = SSL_read(connection.ssl, buffer, sizeof buffer);
      if (n > 0) {
        connection.received.append(buffer, static_cast<std::size_t>(n));
        continue;
      }
      int error = SSL_get_error(connection.ssl, n);
      if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) break;
      closed = true;
      break;
    }
    // The answer first: a server may send its last one and close the connection in the same breath
    // (a 413 with Connection: close, say).
    if (!connection.received.empty()) {
      std::optional<Framed> framed;
      try {
        framed = frame_response(connection.received);
      } catch (const std::exception& error) {
        std::fprintf(stderr, "karta-paced-load: %s\n", error.what());
        ++errors_.read;
        fail(connection);
        return;
      }
      if (framed && connection.request < 0) {  // an answer nobody asked for
        ++errors_.read;
        fail(connection);
        return;
      }
      if (framed) answered(connection, *framed, first_counted, due, /*idle=*/!closed);
    }
    if (closed) {
      // A server may close a keep-alive connection it finds idle: that is no error, and the connection
      // is made again. With a request in flight, or half an answer, it is.
      if (connection.request >= 0 || !connection.received.empty()) ++errors_.read;
      fail(connection);
    }
  }

  template <typename Due>
  void answered(Connection& connection, const Framed& framed, std::int64_t first_counted, const Due& due, bool idle) {
    Nanoseconds now = now_ns();
    if (framed.status < 200 || framed.status > 299) ++errors_.status;
    if (connection.request >= first_counted) {
      from_due_.push_back(now - due(connection.request));
      from_send_.push_back(now - connection.sent_at);
      ++answered_;
    }
    connection.received.erase(0, framed.length);
    connection.request = -1;
    --in_flight_;
    if (idle) idle_.push_back(&connection);
  }

  static std::string percentiles(std::vector<Nanoseconds>& values) {
    if (values.empty()) return "p50 0 p99 0 p999 0 max 0";
    std::sort(values.begin(), values.end());
    auto at = [&](double p) {  // nearest rank
      auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(values.size())));
      return values[std::clamp<std::size_t>(rank, 1, values.size()) - 1] / 1000;
    };
    std::ostringstream out;
    out << "p50 " << at(0.50) << " p99 " << at(0.99) << " p999 " << at(0.999) << " max " << values.back() / 1000;
    return out.str();
  }

  void report(std::int64_t counted) {
    std::printf("paced: %lld requests due in %.3f s at %.1f req/s; %llu answered, %.1f req/s\n",
                static_cast<long long>(counted), options_.duration, options_.rate,
                static_cast<unsigned long long>(answered_), static_cast<double>(answered_) / options_.duration);
    std::printf("paced latency us from due: %s\n", percentiles(from_due_).c_str());
    std::printf("paced latency us from send: %s\n", percentiles(from_send_).c_str());
    std::printf("paced lateness us (send - due): %s\n", percentiles(lateness_).c_str());
    std::printf("paced errors: connect %llu read %llu write %llu status %llu timeout %llu\n", errors_.connect,
                errors_.read, errors_.write, errors_.status, errors_.timeout);
  }

  Options options_;
  Target target_;
  std::string request_;
  SSL_CTX* context_ = nullptr;
  addrinfo* address_ = nullptr;
  int epoll_ = -1;
  std::vector<Connection> connections_;
  std::vector<Connection*> idle_;
  std::int64_t in_flight_ = 0;
  Nanoseconds start_ = 0;
  std::uint64_t answered_ = 0;
  Errors errors_;
  std::string last_connect_error_ = "none tried";
  std::vector<Nanoseconds> from_due_, from_send_, lateness_;
};

}  // namespace

int main(int argc, char** argv) {
  PacedLoad::Options options;
  CLI::App app{"karta-paced-load: HTTPS POSTs at a constant rate on one schedule, latency percentiles"};
  app.add_option("--url", options.url, "https://HOST:PORT/PATH")->required();
  app.add_option("--body", options.body_file, "the file POSTed")->required();
  app.add_option("--content-type", options.content_type, "the request's Content-Type")->capture_default_str();
  app.add_option("--rate", options.rate, "requests per second, all connections together")
      ->required()
      ->check(CLI::Range(0.001, 10'000'000.0));
  app.add_option("--connections", options.connections, "connections kept open")
      ->capture_default_str()
      ->check(CLI::Range(1, 10'000));
  auto seconds = [&app](const char* name, double& value, const char* help, double least) {
    app.add_option(name, value, help)->capture_default_str()->check(CLI::Range(least, 86'400.0));
  };
  seconds("--duration", options.duration, "seconds counted", 0.001);
  seconds("--warmup", options.warmup, "seconds sent first and not counted", 0.0);
  seconds("--drain", options.drain,
          "seconds to wait for answers after the last request is due; then unanswered requests count as timeouts", 0.0);
  seconds("--connect-timeout", options.connect_timeout, "seconds to connect and finish the TLS handshake", 0.001);
  app.add_option("--cacert", options.ca_file, "verify the server against this CA (default: no verification, as wrk)");
  CLI11_PARSE(app, argc, argv);
  signal(SIGPIPE, SIG_IGN);  // OpenSSL writes without MSG_NOSIGNAL
  try {
    PacedLoad load(options);
    return load.run();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "karta-paced-load: %s\n", error.what());
    return 1;
  }
}
