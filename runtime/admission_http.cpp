#include "runtime/admission_http.h"

#include <algorithm>
#include <future>
#include <string>
#include <utility>

namespace karta {

namespace {

using Clock = std::chrono::steady_clock;

// The first answer, or the work to wait for the namespace's labels and answer again once they are known.
struct FirstAnswer {
  ReviewReply reply;
  Clock::time_point arrived;
  Clock::time_point deadline;  // what the review may spend waiting on the API server ends here
  std::shared_ptr<const NamespaceLabels> store;  // what to wait on, when the reply awaits a namespace
};

FirstAnswer first_answer(const AdmissionService& service, AdmissionEndpoint endpoint, const HttpRequest& request) {
  // The review's clock starts when its request was read (the server records it), else now.
  const Clock::time_point arrived = request.received == Clock::time_point{} ? Clock::now() : request.received;
  FirstAnswer first{{}, arrived, arrived + review_budget(request.query), nullptr};
  first.reply = service.answer(endpoint, request.content_type, request.body, nullptr, first.deadline);
  if (first.reply.status != ReviewReply::Status::AwaitingNamespace) return first;
  auto state = service.state();
  first.store = state ? state->namespaces : nullptr;
  // Only a store's find() says to wait, and a state keeps its store: a state reloaded meanwhile without
  // one (the policy no longer reads labels) needs no wait.
  if (!first.store) first.reply = service.answer(endpoint, request.content_type, request.body, nullptr, first.deadline);
  return first;
}

}  // namespace

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
    case ReviewReply::Status::AwaitingNamespace:  // answered again once awaited, never sent as such
      return text_response(500, "internal error: a review left waiting for its namespace's labels");
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

std::optional<HttpResponse> handle_admission(const std::shared_ptr<const AdmissionService>& service,
                                             AdmissionEndpoint endpoint, HttpRequest& request, Deferral& deferral) {
  FirstAnswer first = first_answer(*service, endpoint, request);
  if (first.reply.status != ReviewReply::Status::AwaitingNamespace) return to_http_response(std::move(first.reply));
  const Clock::time_point deadline = first.deadline;
  auto held = std::make_shared<HttpRequest>(std::move(request));
  first.store->await(first.reply.body, deadline,
                     [service, endpoint, held, arrived = first.arrived, deadline, respond = deferral.take()](NamespaceLookup lookup) {
                       respond([service, endpoint, held, deadline, awaited = AwaitedNamespace{std::move(lookup), arrived}] {
                         return to_http_response(
                             service->answer(endpoint, held->content_type, held->body, &awaited, deadline));
                       });
                     });
  return std::nullopt;
}

HttpResponse handle_admission(const AdmissionService& service, AdmissionEndpoint endpoint, const HttpRequest& request) {
  FirstAnswer first = first_answer(service, endpoint, request);
  if (first.reply.status != ReviewReply::Status::AwaitingNamespace) return to_http_response(std::move(first.reply));
  std::promise<NamespaceLookup> learnt;
  first.store->await(first.reply.body, first.deadline,
                     [&learnt](NamespaceLookup lookup) { learnt.set_value(std::move(lookup)); });
  const AwaitedNamespace awaited{learnt.get_future().get(), first.arrived};
  return to_http_response(service.answer(endpoint, request.content_type, request.body, &awaited, first.deadline));
}

}  // namespace karta
