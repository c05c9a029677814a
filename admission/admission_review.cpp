#include "admission/admission_review.h"

#include "admission/base64.h"
#include "json/json_text.h"

#include <algorithm>

namespace karta {

using namespace std::string_view_literals;
namespace {

// "where.key", naming a field in an error.
std::string field_name(std::string_view where, std::string_view key) {
  std::string name(where);
  name += '.';
  name += key;
  return name;
}

// Reads an optional string member, given as found (nullopt: absent); a present non-string is an error
// naming the field. (Keys are views: a literal's length is known where it is written, not counted.) Read
// as a view, `out` points into the parsed document.
bool read_string(std::optional<JsonElement> value, std::string_view key, std::string_view where, std::string_view& out,
                 std::string& error, bool required = false) {
  if (!value || value->is_null()) {
    if (required) error = field_name(where, key) + ": is required";
    return !required;
  }
  auto text = string_of(*value);
  if (!text) {
    error = field_name(where, key) + ": must be a string, not " + type_name(*value);
    return false;
  }
  out = *text;
  return true;
}
bool read_string(std::optional<JsonElement> value, std::string_view key, std::string_view where, std::string& out,
                 std::string& error, bool required = false) {
  std::string_view view;
  if (!read_string(value, key, where, view, error, required)) return false;
  out.assign(view.data(), view.size());
  return true;
}
template <typename Out>
bool read_string(JsonElement object, std::string_view key, std::string_view where, Out& out, std::string& error,
                 bool required = false) {
  return read_string(member(object, key), key, where, out, error, required);
}

std::optional<JsonElement> read_object(std::optional<JsonElement> value, std::string_view key, std::string_view where,
                                       std::string& error) {
  if (!value || value->is_null()) return std::nullopt;
  if (!value->is_object()) {
    error = field_name(where, key) + ": must be an object, not " + type_name(*value);
    return std::nullopt;
  }
  return value;
}
std::optional<JsonElement> read_object(JsonElement object, std::string_view key, std::string_view where,
                                       std::string& error) {
  return read_object(member(object, key), key, where, error);
}

// The members of `request` decoding reads, found in one pass over it instead of one search each (the
// object it holds, and the old one, are skipped whole). The first of a repeated key counts, as member()
// finds it.
struct RequestFields {
  std::optional<JsonElement> uid, kind, resource, sub_resource, operation, namespace_name, name, dry_run, user_info,
      object, old_object;

  explicit RequestFields(JsonElement request) {
    for (auto field : object_of(request)) {
      std::optional<JsonElement>* slot = slot_for(field.key);
      if (slot != nullptr && !*slot) *slot = field.value;
    }
  }

 private:
  std::optional<JsonElement>* slot_for(std::string_view key) {
    switch (key.size()) {
      case 3: return key == "uid" ? &uid : nullptr;
      case 4: return key == "kind" ? &kind : key == "name" ? &name : nullptr;
      case 6: return key == "object" ? &object : key == "dryRun" ? &dry_run : nullptr;
      case 8: return key == "resource" ? &resource : key == "userInfo" ? &user_info : nullptr;
      case 9:
        return key == "operation" ? &operation : key == "namespace" ? &namespace_name
                                               : key == "oldObject" ? &old_object : nullptr;
      case 11: return key == "subResource" ? &sub_resource : nullptr;
      default: return nullptr;
    }
  }
};

}  // namespace

ReviewDecoding decode_admission_review(std::string_view body) {
  ReviewDecoding result;
  if (body.empty()) {
    result.error = "empty body: expected an admission.k8s.io/v1 AdmissionReview";
    return result;
  }
  AdmissionReview review;
  AdmissionRequest& r = review.request;
  try {
    r.document = std::make_shared<const JsonDocument>(JsonDocument::parse(body, kMaxReviewDepth));
  } catch (const JsonParseError& e) {
    result.error = std::string(e.too_deep() ? "body " : "body is not JSON: ") + e.what();
    return result;
  }
  JsonElement document = r.document->root();
  std::string& error = result.error;
  if (!document.is_object()) {
    error = std::string("body must be a JSON object (an AdmissionReview), not ") + type_name(document);
    return result;
  }
  std::string_view api_version, kind;
  if (!read_string(document, "apiVersion", "", api_version, error, true) ||
      !read_string(document, "kind", "", kind, error, true)) {
    error = error.substr(1);  // drop the leading "." of a top-level field
    return result;
  }
  if (api_version != kReviewApiVersion || kind != "AdmissionReview") {
    error = "expected apiVersion admission.k8s.io/v1 and kind AdmissionReview, got " + std::string(api_version) + " " +
            std::string(kind);
    return result;
  }
  auto request = read_object(document, "request", "", error);
  if (!request) {
    if (error.empty()) error = "request: is required";
    else error = error.substr(1);
    return result;
  }
  const RequestFields fields(*request);
  if (!read_string(fields.uid, "uid", "request", r.uid, error, true)) return result;
  if (r.uid.empty()) {
    error = "request.uid: must not be empty";
    return result;
  }
  auto gvk = read_object(fields.kind, "kind", "request", error);
  if (!gvk) {
    if (error.empty()) error = "request.kind: is required";
    return result;
  }
  if (!read_string(*gvk, "group", "request.kind", r.kind.group, error) ||
      !read_string(*gvk, "version", "request.kind", r.kind.version, error, true) ||
      !read_string(*gvk, "kind", "request.kind", r.kind.kind, error, true)) {
    return result;
  }
  if (auto resource = read_object(fields.resource, "resource", "request", error)) {
    if (!read_string(*resource, "resource", "request.resource", r.resource, error)) return result;
  } else if (!error.empty()) {
    return result;
  }
  if (!read_string(fields.sub_resource, "subResource", "request", r.sub_resource, error) ||
      !read_string(fields.operation, "operation", "request", r.operation, error, true) ||
      !read_string(fields.namespace_name, "namespace", "request", r.namespace_name, error) ||
      !read_string(fields.name, "name", "request", r.name, error)) {
    return result;
  }
  static const char* const kOperations[] = {"CREATE", "UPDATE", "DELETE", "CONNECT"};
  if (std::find(std::begin(kOperations), std::end(kOperations), r.operation) == std::end(kOperations)) {
    error = "request.operation: \"" + r.operation + "\" is not CREATE, UPDATE, DELETE or CONNECT";
    return result;
  }
  if (const auto& dry_run = fields.dry_run; dry_run && !dry_run->is_null()) {
    if (!dry_run->is_bool()) {
      error = std::string("request.dryRun: must be a boolean, not ") + type_name(*dry_run);
      return result;
    }
    r.dry_run = dry_run->get_bool().value_unsafe();
  }
  if (auto user = read_object(fields.user_info, "userInfo", "request", error)) {
    if (!read_string(*user, "username", "request.userInfo", r.username, error)) return result;
  } else if (!error.empty()) {
    return result;
  }
  r.object = read_object(fields.object, "object", "request", error);
  if (!error.empty()) return result;
  r.old_object = read_object(fields.old_object, "oldObject", "request", error);
  if (!error.empty()) return result;
  result.review = std::move(review);
  return result;
}

AdmissionDecision AdmissionDecision::allow(std::string message) {
  AdmissionDecision d;
  d.message = std::move(message);
  return d;
}

AdmissionDecision AdmissionDecision::patched(JsonPatch patch) {
  AdmissionDecision d;
  if (!patch.empty()) d.patch = std::move(patch);
  return d;
}

AdmissionDecision AdmissionDecision::deny(std::string message) {
  AdmissionDecision d;
  d.allowed = false;
  d.code = 403;
  d.reason = "Forbidden";
  d.message = std::move(message);
  return d;
}

AdmissionDecision AdmissionDecision::invalid(std::string message) {
  AdmissionDecision d;
  d.allowed = false;
  d.code = 422;
  d.reason = "Invalid";
  d.message = std::move(message);
  return d;
}

AdmissionDecision AdmissionDecision::unavailable(std::string message) {
  AdmissionDecision d;
  d.allowed = false;
  d.code = 503;
  d.reason = "ServiceUnavailable";
  d.message = std::move(message);
  return d;
}

AdmissionDecision AdmissionDecision::errored(int code, std::string message) {
  AdmissionDecision d;
  d.allowed = false;
  d.code = code;
  d.message = std::move(message);
  return d;
}

namespace {

// `text` cut to `limit` bytes at a character boundary, "..." marking the cut.
std::string_view cut_text(std::string_view text, std::size_t limit, std::string& buffer) {
  if (text.size() <= limit) return text;
  std::size_t cut = limit - 3;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
  buffer.assign(text.substr(0, cut));
  buffer += "...";
  return buffer;
}

}  // namespace

std::string encode_admission_review(const AdmissionDecision& decision, std::string_view uid,
                                    std::string_view review_api_version) {
  // Written directly, members in key order as nlohmann::json would order them: serializing through a
  // json tree escaped the base64 patch byte by byte and cost more than the whole mutation.
  std::string out;
  std::string cut;  // a text cut to its bound
  std::size_t size = 160 + review_api_version.size() + uid.size() + std::min(decision.message.size(), kMaxMessageBytes) +
                     decision.reason.size();
  if (decision.allowed && decision.patch_operations() > 0) size += (decision.patch.text.size() + 2) / 3 * 4;
  size += std::min(decision.warnings.size(), kMaxWarnings) * (kMaxWarningBytes + 3);
  out.reserve(size + size / 8);  // escapes in the texts may lengthen them
  out += "{\"apiVersion\":"sv;
  append_json_string(out, review_api_version);
  out += ",\"kind\":\"AdmissionReview\",\"response\":{\"allowed\":"sv;
  out += decision.allowed ? "true"sv : "false"sv;
  if (decision.allowed && decision.patch_operations() > 0) {
    out += ",\"patch\":\""sv;
    append_base64(out, decision.patch.text);  // base64 needs no escaping
    out += "\",\"patchType\":\"JSONPatch\""sv;
  }
  out += ",\"status\":{\"code\":"sv;
  out += std::to_string(decision.code);
  if (!decision.message.empty()) {
    out += ",\"message\":"sv;
    append_json_string(out, cut_text(decision.message, kMaxMessageBytes, cut));
  }
  if (!decision.reason.empty()) {
    out += ",\"reason\":"sv;
    append_json_string(out, decision.reason);
  }
  out += "},\"uid\":"sv;
  append_json_string(out, uid);
  if (!decision.warnings.empty()) {
    out += ",\"warnings\":["sv;
    const std::size_t shown = std::min(decision.warnings.size(), kMaxWarnings);
    for (std::size_t i = 0; i < shown; ++i) {
      if (i != 0) out += ',';
      if (i + 1 == kMaxWarnings && decision.warnings.size() > kMaxWarnings) {
        append_json_string(out, "and " + std::to_string(decision.warnings.size() - i) + " more warnings");
        break;
      }
      append_json_string(out, cut_text(decision.warnings[i], kMaxWarningBytes, cut));
    }
    out += ']';
  }
  out += "}}"sv;
  return out;
}

AdmissionRequest request_for_object(const json& object, const std::string& operation) {
  AdmissionRequest request;
  request.uid = "offline";
  request.operation = operation;
  request.document = std::make_shared<const JsonDocument>(JsonDocument::from(object));
  if (!object.is_null()) request.object = request.document->root();
  if (object.is_object()) {
    auto text = [&](const json& from, const char* key) {
      auto it = from.find(key);
      return it != from.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    request.kind = GroupVersionKind::from_api_version(text(object, "apiVersion"), text(object, "kind"));
    if (auto metadata = object.find("metadata"); metadata != object.end() && metadata->is_object()) {
      request.name = text(*metadata, "name");
      request.namespace_name = text(*metadata, "namespace");
    }
  }
  return request;
}

}  // namespace karta
