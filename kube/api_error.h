#pragma once

// What a request to the API server that got no 2xx answer throws: the HTTP status with the reason and
// message of the Kubernetes Status the server answered (or the body, shortened, when it sent none).

#include <cstddef>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace karta::kube {

using json = nlohmann::json;

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

// An answer larger than the client's body_limit, or a line of a stream longer than its line_limit: the
// connection is dropped, with nothing of it kept. list_all asks for such a page again in smaller pages.
class AnswerTooLargeError : public ApiError {
 public:
  AnswerTooLargeError(const std::string& what, std::size_t limit) : ApiError(what, 0, "", what), limit_(limit) {}
  std::size_t limit() const { return limit_; }

 private:
  std::size_t limit_;
};

// `text` without trailing whitespace and cut to `limit` bytes (with "..."): a body that is not a Status is
// quoted in messages, but an HTML error page can be long.
std::string shortened(std::string text, std::size_t limit = 300);

}  // namespace karta::kube
