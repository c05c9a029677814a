#pragma once

// A blocking HTTPS client for the Kubernetes API, after client-go's REST client: it verifies the server
// (the connection's CA or the system store, and the host name or IP address among the certificate's
// subjectAltNames), sends the bearer token or presents the client certificate, and asks for JSON.
// One thread makes the requests; any other may cancel() them, which is how a watcher stops promptly.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kube/api_error.h"
#include "kube/kube_connection.h"

namespace karta::kube {

using json = nlohmann::json;

// What one answer may make the client hold. The API server stores no object larger than etcd takes
// (1.5 MiB by default; it refuses any request body over 3 MiB), and the largest real CRDs are 1-3 MB:
// - an answer (one object, a discovery document, a LIST page of kListPageSize objects) may take 32 MiB.
//   A page of 100 typical workloads is under 2 MB; a page that is larger still is asked for again in
//   smaller pages (kube/list_pages.h), down to one object, and a 3 MB object is far below the limit.
// - a watch line (one event: one object and its envelope) may take 16 MiB, five times the largest
//   object the API server accepts.
// - nesting: 10,000 levels, as Go's encoding/json, which the API server decodes every object with,
//   allows no deeper; an answer nested deeper (a hostile server's) is refused before it is parsed.
constexpr std::size_t kMaxAnswerBytes = std::size_t{32} * 1024 * 1024;
constexpr std::size_t kMaxWatchLineBytes = std::size_t{16} * 1024 * 1024;
constexpr std::size_t kMaxAnswerDepth = 10'000;

struct ApiClientOptions {
  std::chrono::milliseconds connect_timeout{10'000};  // name resolution and TCP connect
  std::chrono::milliseconds handshake_timeout{10'000};
  // Sending a request and reading its whole answer. Streams (watches) have their own deadline.
  std::chrono::milliseconds request_timeout{60'000};
  std::size_t body_limit = kMaxAnswerBytes;     // one answer of get()
  std::size_t line_limit = kMaxWatchLineBytes;  // one line of stream_lines()
  std::size_t max_depth = kMaxAnswerDepth;      // of get()'s answers (and, by the watcher, of watch lines)
  std::string user_agent = "karta-webhook";
  // The Accept header of get() and of stream_lines(). A metadata-only client (client-go's metadata
  // client, as OLM and controller-runtime use it for objects they only index) asks for
  // PartialObjectMetadataList and PartialObjectMetadata: see kMetadataListAccept below.
  std::string accept = "application/json";
  std::string stream_accept = "application/json";
};

// What client-go's metadata client sends (k8s.io/client-go/metadata): the API server then answers a LIST
// with a meta.k8s.io/v1 PartialObjectMetadataList and each watch event with a PartialObjectMetadata,
// metadata only, whatever the objects hold. Plain JSON is the fallback for a server that cannot.
constexpr const char* kMetadataListAccept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
constexpr const char* kMetadataAccept = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

class ApiClient {
 public:
  // Builds the TLS context from the connection. Throws KubeConfigError when its PEM data is unusable.
  explicit ApiClient(KubeConnection connection, ApiClientOptions options = {});
  ~ApiClient();
  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;

  // GETs `path_and_query` (below the connection's base path, starting with '/') and returns the JSON
  // answer. The connection is kept alive for the next get(), unless bytes came after the answer or
  // arrive while it is idle (an unsolicited answer, a proxy's 408): as Go's transport, such a
  // connection is closed, so that no answer is ever taken for a later request's. Throws ApiError
  // (AnswerTooLargeError past options.body_limit; an answer nested deeper than options.max_depth is an
  // ApiError saying so), or KubeConfigError when the token file cannot be read or a header value
  // (the bearer token, Host, the proxy's) holds a control character: that is never sent. A target that target_fault() (kube/api_path.h) refuses is not sent:
  // the ApiError (status 0) names it escaped and says why. Build targets with resource_path().
  // With `deadline`, every step (resolve, connect, TLS, the request, the answer, a retry) ends there: the
  // connection is closed and an ApiError (status 0) says so. A credential plugin is not bounded by it.
  json get(const std::string& path_and_query, std::optional<std::chrono::steady_clock::time_point> deadline = {});

  // GETs a streamed answer (a watch) on a connection of its own, and calls on_line with each line as it
  // arrives, without its newline; on_open once the 2xx header has come. Returns when the server ends the
  // answer. Throws ApiError when the answer is not 2xx, the connection fails, `deadline` (from now)
  // passes, or cancel() is called; AnswerTooLargeError for a line longer than options.line_limit;
  // exceptions from the callbacks pass through. Lines are not parsed here: parse_answer() does it.
  void stream_lines(const std::string& path_and_query, std::chrono::milliseconds deadline,
                    const std::function<void(std::string_view line)>& on_line,
                    const std::function<void()>& on_open = {});

  // An answer's text (a body of get(), a line of stream_lines()) as JSON, nested at most
  // options.max_depth: the one parse of everything the server sends. Throws ApiError (status
  // `status`) naming `request` when it is too deep or not JSON.
  json parse_answer(std::string_view text, const std::string& request, int status = 200) const;

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
