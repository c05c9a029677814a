#include "runtime/admission_http.h"

#include <algorithm>
#include <string>
#include <utility>

namespace karta {

HttpResponse to_http_response(ReviewReply reply) {
  switch (reply.status) {
    case ReviewReply::Status::Answered:
      return HttpResponse{200, "application/json", std::move(reply.body), {}};
    case ReviewReply::Status::UnsupportedMediaType:
      return text_response(415, std::move(reply.body));
    case ReviewReply::Status::Malformed:
      return text_response(400, std::move(reply.body));
    case ReviewReply::Status::NotReady:
      return text_response(503, std::move(reply.body));
    case ReviewReply::Status::InternalError:
      break;
  }
  return text_response(500, std::move(reply.body));
}

std::optional<std::chrono::milliseconds> parse_go_duration(std::string_view text) {
  // time.ParseDuration's units, in milliseconds ("µs" and "μs" in UTF-8), "ms" tried before "m" and "s".
  static const std::pair<std::string_view, double> kUnits[] = {
      {"ns", 1e-6}, {"us", 1e-3}, {"\xc2\xb5s", 1e-3}, {"\xce\xbcs", 1e-3}, {"ms", 1}, {"s", 1e3}, {"m", 6e4}, {"h", 3.6e6}};
  if (text.empty() || text.size() > 64) return std::nullopt;
  double total = 0;
  while (!text.empty()) {
    std::size_t digits = 0;
    bool point = false, any_digit = false;
    for (; digits < text.size(); ++digits) {
      const char c = text[digits];
      if (c == '.' && !point) {
        point = true;
      } else if (c >= '0' && c <= '9') {
        any_digit = true;
      } else {
        break;
      }
    }
    if (!any_digit) return std::nullopt;
    const double number = std::stod(std::string(text.substr(0, digits)));
    text.remove_prefix(digits);
    std::optional<double> scale;
    for (const auto& [unit, milliseconds] : kUnits) {
      if (text.starts_with(unit)) {
        scale = milliseconds;
        text.remove_prefix(unit.size());
        break;
      }
    }
    if (!scale) return std::nullopt;
    total += number * *scale;
  }
  if (total <= 0 || total > 3.6e9) return std::nullopt;
  return std::chrono::milliseconds(static_cast<long long>(total));
}

std::chrono::milliseconds review_budget(std::string_view query) {
  std::optional<std::chrono::milliseconds> timeout;
  for (std::size_t start = 0; start <= query.size();) {
    const std::size_t end = std::min(query.find('&', start), query.size());
    const std::string_view pair = query.substr(start, end - start);
    if (pair.starts_with("timeout=")) timeout = parse_go_duration(pair.substr(8));
    start = end + 1;
  }
  if (!timeout) return kDefaultReviewBudget;
  const std::chrono::milliseconds margin = std::min(std::chrono::milliseconds(1'000), *timeout / 2);
  return std::min(kDefaultReviewBudget, *timeout - margin);
}

HttpResponse handle_admission(const AdmissionService& service, AdmissionEndpoint endpoint, const HttpRequest& request) {
  const auto received =
      request.received == std::chrono::steady_clock::time_point{} ? std::chrono::steady_clock::now() : request.received;
  return to_http_response(
      service.answer(endpoint, request.content_type, request.body, received + review_budget(request.query)));
}

}  // namespace karta
