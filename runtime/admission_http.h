#pragma once

// The HTTP face of the admission service, where the protocol meets the transport: a POST to /mutate or
// /validate handed to AdmissionService::answer, and its ReviewReply mapped to an HTTP status. A review
// that was understood is a 200, allowed or denied; an envelope that was not gets an HTTP error with the
// reason in plain text, so the cluster's failurePolicy decides (as Kyverno does):
//   415 the body is not declared as JSON; 400 not an AdmissionReview; 503 nothing loaded yet; 500 a bug.

#include "admission/admission_service.h"
#include "server/http_exchange.h"

namespace karta {

HttpResponse to_http_response(ReviewReply reply);

// What the server's /mutate and /validate routes run.
HttpResponse handle_admission(const AdmissionService& service, AdmissionEndpoint endpoint, const HttpRequest& request);

}  // namespace karta
