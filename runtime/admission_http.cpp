#include "runtime/admission_http.h"

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

HttpResponse handle_admission(const AdmissionService& service, AdmissionEndpoint endpoint, const HttpRequest& request) {
  return to_http_response(service.answer(endpoint, request.content_type, request.body));
}

}  // namespace karta
