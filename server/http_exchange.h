#pragma once

// The transport's view of one HTTP exchange: plain data, no Beast types, so handlers (and their tests)
// need no socket.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace karta {

struct HttpRequest {
  std::string method;  // "POST"
  std::string path;    // "/mutate" (the query string is split off: the API server calls /mutate?timeout=10s)
  std::string query;   // "timeout=10s"
  std::string content_type;
  std::string body;
  // When the server had read it whole: what the caller's timeout counts from, however long the request
  // then waits for a worker (unset, the epoch, for a request made in a test).
  std::chrono::steady_clock::time_point received{};
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// How a handler that answers later (Route::deferring) gives its answer: called once, from any thread, with
// what makes the response. That runs on the connection's thread, as a handler does, and its response is
// written.
using Respond = std::function<void(std::function<HttpResponse()> make)>;

// What a deferring handler is given: take() makes the Respond, once, when the handler will answer later
// (most answer now, and pay nothing for it).
class Deferral {
 public:
  virtual Respond take() = 0;

 protected:
  ~Deferral() = default;
};

// A handler that answers now (it returns the response) or later (it returns nothing after taking the
// deferral's Respond). It may take the request's body: the request is not used after it returns.
using DeferringHandler = std::function<std::optional<HttpResponse>(HttpRequest& request, Deferral& deferral)>;

// A plain-text answer: `text` and a newline.
inline HttpResponse text_response(int status, std::string text) {
  return HttpResponse{status, "text/plain; charset=utf-8", std::move(text) + "\n", {}};
}

}  // namespace karta
