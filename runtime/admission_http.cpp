#include "runtime/admission_http.h"

#include <algorithm>
#include <future>
#include <utility>

namespace karta {

namespace {

using Clock = std::chrono::steady_clock;

// Go's time.ParseDuration, for what the API server writes (time.Duration.String): a sequence of decimal
// numbers, each with a unit (ns, us, ms, s, m, h). No sign: a negative timeout means nothing here.
std::optional<std::chrono::milliseconds> parse_go_duration(std::string_view text) {
  if (text == "0") return std::chrono::milliseconds(0);
  if (text.empty()) return std::nullopt;
  double seconds = 0;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t start = at;
    double number = 0, scale = 1;
    bool digits = false, fraction = false;
    for (; at < text.size() && ((text[at] >= '0' && text[at] <= '9') || (text[at] == '.' && !fraction)); ++at) {
      if (text[at] == '.') {
        fraction = true;
        continue;
      }
      digits = true;
      if (fraction) scale /= 10;
      number = fraction ? number + (text[at] - '0') * scale : number * 10 + (text[at] - '0');
    }
    if (!digits || at == start) return std::nullopt;
    std::size_t unit_end = at;
    while (unit_end < text.size() && text[unit_end] >= 'a' && text[unit_end] <= 'z') ++unit_end;
    const std::string_view unit = text.substr(at, unit_end - at);
    at = unit_end;
    if (unit == "h") seconds += number * 3600;
    else if (unit == "m") seconds += number * 60;
    else if (unit == "s") seconds += number;
    else if (unit == "ms") seconds += number / 1e3;
    else if (unit == "us") seconds += number / 1e6;
    else if (unit == "ns") seconds += number / 1e9;
    else return std::nullopt;
    if (seconds > 86'400) return std::nullopt;  // no call waits a day
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

// The first answer, or the work to wait for the namespace's labels and answer again once they are known.
struct FirstAnswer {
  ReviewReply reply;
  Clock::time_point arrived;
  std::shared_ptr<const NamespaceLabels> store;  // what to wait on, when the reply awaits a namespace
};

FirstAnswer first_answer(const AdmissionService& service, AdmissionEndpoint endpoint, const HttpRequest& request) {
  FirstAnswer first{{}, Clock::now(), nullptr};
  first.reply = service.answer(endpoint, request.content_type, request.body);
  if (first.reply.status != ReviewReply::Status::AwaitingNamespace) return first;
  auto state = service.state();
  first.store = state ? state->namespaces : nullptr;
  // Only a store's find() says to wait, and a state keeps its store: a state reloaded meanwhile without
  // one (the policy no longer reads labels) needs no wait.
  if (!first.store) first.reply = service.answer(endpoint, request.content_type, request.body, nullptr);
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

std::optional<HttpResponse> handle_admission(const std::shared_ptr<const AdmissionService>& service,
                                             AdmissionEndpoint endpoint, HttpRequest& request, Deferral& deferral) {
  FirstAnswer first = first_answer(*service, endpoint, request);
  if (first.reply.status != ReviewReply::Status::AwaitingNamespace) return to_http_response(std::move(first.reply));
  const Clock::time_point deadline = first.arrived + namespace_wait(request.query);
  auto held = std::make_shared<HttpRequest>(std::move(request));
  first.store->await(first.reply.body, deadline,
                     [service, endpoint, held, arrived = first.arrived, respond = deferral.take()](NamespaceLookup lookup) {
                       respond([service, endpoint, held, awaited = AwaitedNamespace{std::move(lookup), arrived}] {
                         return to_http_response(service->answer(endpoint, held->content_type, held->body, &awaited));
                       });
                     });
  return std::nullopt;
}

HttpResponse handle_admission(const AdmissionService& service, AdmissionEndpoint endpoint, const HttpRequest& request) {
  FirstAnswer first = first_answer(service, endpoint, request);
  if (first.reply.status != ReviewReply::Status::AwaitingNamespace) return to_http_response(std::move(first.reply));
  std::promise<NamespaceLookup> learnt;
  first.store->await(first.reply.body, first.arrived + namespace_wait(request.query),
                     [&learnt](NamespaceLookup lookup) { learnt.set_value(std::move(lookup)); });
  const AwaitedNamespace awaited{learnt.get_future().get(), first.arrived};
  return to_http_response(service.answer(endpoint, request.content_type, request.body, &awaited));
}

std::optional<std::chrono::milliseconds> call_timeout(std::string_view query) {
  while (!query.empty()) {
    const std::size_t end = std::min(query.find('&'), query.size());
    const std::string_view pair = query.substr(0, end);
    if (pair.starts_with("timeout=")) return parse_go_duration(pair.substr(8));
    query.remove_prefix(std::min(end + 1, query.size()));
  }
  return std::nullopt;
}

std::chrono::milliseconds namespace_wait(std::string_view query) {
  constexpr std::chrono::milliseconds kLongest{3'000}, kMargin{1'000};
  const std::optional<std::chrono::milliseconds> timeout = call_timeout(query);
  if (!timeout) return kLongest;
  return std::min(kLongest, *timeout - std::min(kMargin, *timeout / 2));
}

}  // namespace karta
