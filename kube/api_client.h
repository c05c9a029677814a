#pragma once

// A blocking HTTPS client for the Kubernetes API, after client-go's REST client: it verifies the server
// (the connection's CA or the system store, and the host name or IP address among the certificate's
// subjectAltNames), sends the bearer token or presents the client certificate, and asks for JSON.
// One thread makes the requests; any other may cancel() them, which is how a watcher stops promptly.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kube/kube_connection.h"

namespace karta::kube {

using json = nlohmann::json;

struct ApiClientOptions {
  std::chrono::milliseconds connect_timeout{10'000};  // name resolution and TCP connect
  std::chrono::milliseconds handshake_timeout{10'000};
  // Sending a request and reading its whole answer. Streams (watches) have their own deadline.
  std::chrono::milliseconds request_timeout{60'000};
  std::size_t body_limit = 256 * 1024 * 1024;  // a LIST page of 500 CRDs can pass 100 MB
  std::string user_agent = "karta-webhook";
};

// A request that got no 2xx answer. status() is the HTTP status (or, for an ERROR event of a watch, the
// code of its Status); 0 when no answer came at all: connection, TLS, timeout or cancel.
class ApiError : public std::runtime_error {
 public:
  ApiError(const std::string& what, int status, std::string reason, std::string message, bool cancelled = false);

  // From an answer's status and body: a Kubernetes Status gives reason and message, any other body is
  // quoted (shortened). `request` says what was asked: "GET https://host:port/path?query".
  static ApiError from_answer(const std::string& request, int status, const std::string& body);
  // From the Status object of a watch ERROR event.
  static ApiError from_status(const std::string& request, const json& status);

  int status() const { return status_; }
  const std::string& reason() const { return reason_; }    // the Status's reason: "Unauthorized", "Expired", ...
  const std::string& message() const { return message_; }  // the Status's message, or what went wrong
  bool cancelled() const { return cancelled_; }

 private:
  int status_;
  std::string reason_;
  std::string message_;
  bool cancelled_;
};

class ApiClient {
 public:
  // Builds the TLS context from the connection. Throws KubeConfigError when its PEM data is unusable.
  explicit ApiClient(KubeConnection connection, ApiClientOptions options = {});
  ~ApiClient();
  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;

  // GETs `path_and_query` (below the connection's base path, starting with '/') and returns the JSON
  // answer. The connection is kept alive for the next get(). Throws ApiError, or KubeConfigError when
  // the token file cannot be read. A target that target_fault() (kube/api_path.h) refuses is not sent:
  // the ApiError (status 0) names it escaped and says why. Build targets with resource_path().
  json get(const std::string& path_and_query);

  // GETs a streamed answer (a watch) on a connection of its own, and calls on_line with each line as it
  // arrives, without its newline; on_open once the 2xx header has come. Returns when the server ends the
  // answer. Throws ApiError when the answer is not 2xx, the connection fails, `deadline` (from now)
  // passes, or cancel() is called; exceptions from the callbacks pass through.
  void stream_lines(const std::string& path_and_query, std::chrono::milliseconds deadline,
                    const std::function<void(std::string_view line)>& on_line,
                    const std::function<void()>& on_open = {});

  // From any thread: ends the request in progress, and fails every later one, with a cancelled ApiError.
  void cancel();

  const KubeConnection& connection() const;
  // "https://host:port/base/path_and_query", as named in errors.
  std::string url(const std::string& path_and_query) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace karta::kube
