#include "support/connect_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

namespace karta::test {
namespace {

bool send_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t sent = ::send(fd, data, size, MSG_NOSIGNAL);
    if (sent <= 0) return false;
    data += sent;
    size -= static_cast<std::size_t>(sent);
  }
  return true;
}

std::string header_value(const std::string& head, const std::string& name) {
  std::string lower_head = head;
  for (char& c : lower_head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::size_t at = lower_head.find("\r\n" + name + ":");
  if (at == std::string::npos) return "";
  std::size_t start = at + 2 + name.size() + 1;
  std::size_t end = head.find("\r\n", start);
  std::string value = head.substr(start, end - start);
  std::size_t first = value.find_first_not_of(' ');
  return first == std::string::npos ? "" : value.substr(first);
}

}  // namespace

ConnectProxy::ConnectProxy(std::string required_authorization)
    : required_authorization_(std::move(required_authorization)) {
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(listener_, 16) != 0 || ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    throw std::runtime_error(std::string("the test proxy cannot listen: ") + std::strerror(errno));
  }
  port_ = ntohs(address.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

ConnectProxy::~ConnectProxy() {
  stopping_ = true;
  ::shutdown(listener_, SHUT_RDWR);
  acceptor_.join();
  ::close(listener_);
  {
    std::lock_guard lock(mutex_);
    for (int fd : open_) ::shutdown(fd, SHUT_RDWR);
  }
  for (auto& thread : threads_) thread.join();
}

std::vector<Tunnel> ConnectProxy::tunnels() const {
  std::lock_guard lock(mutex_);
  return tunnels_;
}

void ConnectProxy::accept_loop() {
  while (!stopping_) {
    int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      if (stopping_) return;
      continue;
    }
    std::lock_guard lock(mutex_);
    open_.push_back(client);
    threads_.emplace_back([this, client] { serve(client); });
  }
}

void ConnectProxy::serve(int client) {
  std::string head;
  char buffer[16384];
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < 65536) {
    ssize_t got = ::recv(client, buffer, sizeof buffer, 0);
    if (got <= 0) return forget_and_close(client);
    head.append(buffer, static_cast<std::size_t>(got));
  }
  std::size_t space = head.find(' ');
  std::string method = head.substr(0, space);
  std::string authority = head.substr(space + 1, head.find(' ', space + 1) - space - 1);
  std::string authorization = header_value(head, "proxy-authorization");
  {
    std::lock_guard lock(mutex_);
    tunnels_.push_back({authority, authorization});
  }
  auto answer = [&](const std::string& status) {
    std::string response = "HTTP/1.1 " + status + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    send_all(client, response.data(), response.size());
    forget_and_close(client);
  };
  if (method != "CONNECT") return answer("405 Method Not Allowed");
  if (!required_authorization_.empty() && authorization != required_authorization_) {
    return answer("407 Proxy Authentication Required");
  }
  std::size_t colon = authority.rfind(':');
  int port = colon == std::string::npos ? 0 : std::atoi(authority.c_str() + colon + 1);
  int upstream = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<unsigned short>(port));
  if (upstream < 0 || ::connect(upstream, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    if (upstream >= 0) ::close(upstream);
    return answer("502 Bad Gateway");
  }
  {
    std::lock_guard lock(mutex_);
    open_.push_back(upstream);
  }
  const std::string established = "HTTP/1.1 200 Connection established\r\n\r\n";
  send_all(client, established.data(), established.size());
  // Bytes the client sent after the header (none, for a TLS client waiting for the answer) go first.
  std::string rest = head.substr(head.find("\r\n\r\n") + 4);
  if (!rest.empty()) send_all(upstream, rest.data(), rest.size());
  pollfd fds[2] = {{client, POLLIN, 0}, {upstream, POLLIN, 0}};
  while (!stopping_) {
    if (::poll(fds, 2, 200) < 0) break;
    bool done = false;
    for (int i = 0; i < 2 && !done; ++i) {
      if (fds[i].revents == 0) continue;
      ssize_t got = ::recv(fds[i].fd, buffer, sizeof buffer, 0);
      if (got <= 0 || !send_all(fds[1 - i].fd, buffer, static_cast<std::size_t>(got))) done = true;
    }
    if (done) break;
  }
  forget_and_close(client);
  forget_and_close(upstream);
}

void ConnectProxy::forget_and_close(int fd) {
  std::lock_guard lock(mutex_);
  std::erase(open_, fd);
  ::close(fd);
}

}  // namespace karta::test
