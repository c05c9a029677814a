#pragma once

// A local HTTP proxy that answers CONNECT as Squid or any corporate proxy does, for the tests of
// `proxy-url` and $HTTPS_PROXY: it reads "CONNECT host:port HTTP/1.1", answers "200 Connection
// established" and relays bytes both ways until either side closes. Every host is reached at 127.0.0.1
// (the proxy, not the client, resolves names: a test may name a server "kube.test" that no DNS knows).
// It counts its tunnels and keeps each one's authority and Proxy-Authorization.

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace karta::test {

struct Tunnel {
  std::string authority;  // "kube.test:6443"
  std::string proxy_authorization;
};

class ConnectProxy {
 public:
  // With `required_authorization` ("Basic ..."), a CONNECT without it gets 407.
  explicit ConnectProxy(std::string required_authorization = "");
  ~ConnectProxy();
  ConnectProxy(const ConnectProxy&) = delete;
  ConnectProxy& operator=(const ConnectProxy&) = delete;

  unsigned short port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<Tunnel> tunnels() const;  // every CONNECT asked for, answered 200 or not

 private:
  void accept_loop();
  void serve(int client);
  void forget_and_close(int fd);

  std::string required_authorization_;
  int listener_ = -1;
  unsigned short port_ = 0;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::vector<Tunnel> tunnels_;
  std::vector<int> open_;  // sockets to shut down when stopping
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

}  // namespace karta::test
