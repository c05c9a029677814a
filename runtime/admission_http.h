#pragma once

// The HTTP face of the admission service, where the protocol meets the transport: a POST to /mutate or
// /validate handed to AdmissionService::answer, and its ReviewReply mapped to an HTTP status. A review
// that was understood is a 200, allowed or denied; an envelope that was not gets an HTTP error with the
// reason in plain text, so the cluster's failurePolicy decides (as Kyverno does):
//   415 the body is not declared as JSON; 400 not an AdmissionReview; 503 nothing loaded yet; 500 a bug.
// A review whose namespace's labels serve has not learnt yet is answered later, once they are learnt or
// its wait (review_budget) is over, holding no thread meanwhile.

#include <chrono>
#include <memory>
#include <optional>
#include <string_view>

#include "admission/admission_service.h"
#include "server/http_exchange.h"

namespace karta {

HttpResponse to_http_response(ReviewReply reply);

// The API server calls a webhook with ?timeout=DURATION (Go's time.Duration text: "5s", "10s", "1m0s",
// "1.5s", "500ms") and gives up on it then. What one review may spend waiting on the API server itself
// (a Karta's CRD on /validate, a namespace's labels): that timeout less a margin for the answer's way back (1 s, or half of a
// timeout under 2 s), at most kDefaultReviewBudget (3 s); 3 s when the call gives no timeout that parses.
std::chrono::milliseconds review_budget(std::string_view query);
// Go's time.Duration text as a number of milliseconds (rounded down); nullopt when it is not one, or not
// positive.
std::optional<std::chrono::milliseconds> parse_go_duration(std::string_view text);

// What the server's /mutate and /validate routes run: the answer now, or nothing now and the answer
// through the deferral's Respond. The review's body is taken then.
std::optional<HttpResponse> handle_admission(const std::shared_ptr<const AdmissionService>& service,
                                             AdmissionEndpoint endpoint, HttpRequest& request, Deferral& deferral);
// The same, waiting on this thread for an answer given later (tests and fuzzers).
HttpResponse handle_admission(const AdmissionService& service, AdmissionEndpoint endpoint, const HttpRequest& request);

}  // namespace karta
