#pragma once

// The HTTP face of the admission service, where the protocol meets the transport: a POST to /mutate or
// /validate handed to AdmissionService::answer, and its ReviewReply mapped to an HTTP status. A review
// that was understood is a 200, allowed or denied; an envelope that was not gets an HTTP error with the
// reason in plain text, so the cluster's failurePolicy decides (as Kyverno does):
//   415 the body is not declared as JSON; 400 not an AdmissionReview; 503 nothing loaded yet; 500 a bug.
// A review whose namespace's labels serve has not learnt yet is answered later, once they are learnt or
// its wait (namespace_wait) is over, holding no thread meanwhile.

#include <chrono>
#include <memory>
#include <optional>
#include <string_view>

#include "admission/admission_service.h"
#include "server/http_exchange.h"

namespace karta {

HttpResponse to_http_response(ReviewReply reply);

// What the server's /mutate and /validate routes run: the answer now, or nothing now and the answer
// through the deferral's Respond. The review's body is taken then.
std::optional<HttpResponse> handle_admission(const std::shared_ptr<const AdmissionService>& service,
                                             AdmissionEndpoint endpoint, HttpRequest& request, Deferral& deferral);
// The same, waiting on this thread for an answer given later (tests and fuzzers).
HttpResponse handle_admission(const AdmissionService& service, AdmissionEndpoint endpoint, const HttpRequest& request);

// The `timeout` of a call's query as the API server writes it (`/mutate?timeout=10s`: a Go duration, such
// as "10s", "1m0s", "2.5s" or "500ms"), or nothing when there is none or it does not parse.
std::optional<std::chrono::milliseconds> call_timeout(std::string_view query);

// How long a review may wait for its namespace's labels: the call's timeout less what the answer needs to
// get back (1 s, or half of a timeout under 2 s), and at most 3 s; 3 s when the call names no timeout. The
// API server gives up at its timeout and then applies the webhook's failurePolicy, which is not the
// policy's choice: the answer must be there first.
std::chrono::milliseconds namespace_wait(std::string_view query);

}  // namespace karta
