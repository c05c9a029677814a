#include "kube/api_error.h"

#include "json/json_document.h"
#include "kube/api_client.h"
#include "kube/json_fields.h"

namespace karta::kube {

std::string shortened(std::string text, std::size_t limit) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  if (text.size() > limit) text = text.substr(0, limit) + "...";
  return text;
}

ApiError::ApiError(const std::string& what, int status, std::string reason, std::string message, bool cancelled)
    : std::runtime_error(what),
      status_(status),
      reason_(std::move(reason)),
      message_(std::move(message)),
      cancelled_(cancelled) {}

ApiError ApiError::from_answer(const std::string& request, int status, const std::string& body) {
  std::string reason;
  std::string message;
  json parsed;
  try {
    parsed = parse_json_within(body, kMaxAnswerDepth);
  } catch (const JsonParseError&) {
    // Not a Status: quoted below.
  }
  if (parsed.is_object() && string_at(parsed, "kind") == "Status") {
    reason = string_at(parsed, "reason");
    message = string_at(parsed, "message");
  } else {
    message = shortened(body);
  }
  std::string what = request + " answered " + std::to_string(status);
  if (!message.empty()) what += ": " + message;
  return ApiError(what, status, std::move(reason), std::move(message));
}

ApiError ApiError::from_status(const std::string& request, const json& status) {
  int code = 0;
  if (status.is_object()) {
    auto found = status.find("code");
    if (found != status.end() && found->is_number_integer()) code = found->get<int>();
  }
  std::string reason = status.is_object() ? string_at(status, "reason") : "";
  std::string message = status.is_object() ? string_at(status, "message") : "";
  std::string what = request + " sent an ERROR event with code " + std::to_string(code);
  if (!message.empty()) what += ": " + message;
  return ApiError(what, code, std::move(reason), std::move(message));
}

}  // namespace karta::kube
