#include "admission/admission_review.h"

#include <algorithm>

namespace karta {
namespace {

// Reads an optional string member; a present non-string is an error naming the field.
bool read_string(JsonElement object, const char* key, const std::string& where, std::string& out, std::string& error,
                 bool required = false) {
  auto value = member(object, key);
  if (!value || value->is_null()) {
    if (required) error = where + "." + key + ": is required";
    return !required;
  }
  auto text = string_of(*value);
  if (!text) {
    error = where + "." + key + ": must be a string, not " + type_name(*value);
    return false;
  }
  out = std::string(*text);
  return true;
}

std::optional<JsonElement> read_object(JsonElement object, const char* key, const std::string& where,
                                       std::string& error) {
  auto value = member(object, key);
  if (!value || value->is_null()) return std::nullopt;
  if (!value->is_object()) {
    error = where + "." + key + ": must be an object, not " + type_name(*value);
    return std::nullopt;
  }
  return value;
}

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
  std::string api_version, kind;
  if (!read_string(document, "apiVersion", "", api_version, error, true) ||
      !read_string(document, "kind", "", kind, error, true)) {
    error = error.substr(1);  // drop the leading "." of a top-level field
    return result;
  }
  if (api_version != "admission.k8s.io/v1" || kind != "AdmissionReview") {
    error = "expected apiVersion admission.k8s.io/v1 and kind AdmissionReview, got " + api_version + " " + kind;
    return result;
  }
  auto request = read_object(document, "request", "", error);
  if (!request) {
    if (error.empty()) error = "request: is required";
    else error = error.substr(1);
    return result;
  }
  r.review_api_version = api_version;
  if (!read_string(*request, "uid", "request", r.uid, error, true)) return result;
  if (r.uid.empty()) {
    error = "request.uid: must not be empty";
    return result;
  }
  auto gvk = read_object(*request, "kind", "request", error);
  if (!gvk) {
    if (error.empty()) error = "request.kind: is required";
    return result;
  }
  if (!read_string(*gvk, "group", "request.kind", r.kind.group, error) ||
      !read_string(*gvk, "version", "request.kind", r.kind.version, error, true) ||
      !read_string(*gvk, "kind", "request.kind", r.kind.kind, error, true)) {
    return result;
  }
  if (auto resource = read_object(*request, "resource", "request", error)) {
    if (!read_string(*resource, "resource", "request.resource", r.resource, error)) return result;
  } else if (!error.empty()) {
    return result;
  }
  if (!read_string(*request, "subResource", "request", r.sub_resource, error) ||
      !read_string(*request, "operation", "request", r.operation, error, true) ||
      !read_string(*request, "namespace", "request", r.namespace_name, error) ||
      !read_string(*request, "name", "request", r.name, error)) {
    return result;
  }
  static const char* const kOperations[] = {"CREATE", "UPDATE", "DELETE", "CONNECT"};
  if (std::find(std::begin(kOperations), std::end(kOperations), r.operation) == std::end(kOperations)) {
    error = "request.operation: \"" + r.operation + "\" is not CREATE, UPDATE, DELETE or CONNECT";
    return result;
  }
  if (auto dry_run = member(*request, "dryRun"); dry_run && !dry_run->is_null()) {
    if (!dry_run->is_bool()) {
      error = std::string("request.dryRun: must be a boolean, not ") + type_name(*dry_run);
      return result;
    }
    r.dry_run = dry_run->get_bool().value_unsafe();
  }
  if (auto user = read_object(*request, "userInfo", "request", error)) {
    if (!read_string(*user, "username", "request.userInfo", r.username, error)) return result;
  } else if (!error.empty()) {
    return result;
  }
  r.object = read_object(*request, "object", "request", error);
  if (!error.empty()) return result;
  r.old_object = read_object(*request, "oldObject", "request", error);
  if (!error.empty()) return result;
  result.review = std::move(review);
  return result;
}

AdmissionDecision AdmissionDecision::allow(std::string message) {
  AdmissionDecision d;
  d.message = std::move(message);
  return d;
}

AdmissionDecision AdmissionDecision::patched(json patch) {
  AdmissionDecision d;
  if (patch.is_array() && !patch.empty()) d.patch = std::move(patch);
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

AdmissionDecision AdmissionDecision::errored(int code, std::string message) {
  AdmissionDecision d;
  d.allowed = false;
  d.code = code;
  d.message = std::move(message);
  return d;
}

namespace {

// The length of the valid UTF-8 sequence starting at text[i] (a byte >= 0x80), or 0 (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF).
std::size_t utf8_sequence(std::string_view text, std::size_t i) {
  auto byte = [&](std::size_t k) { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u; };
  auto continuation = [&](std::size_t k) { return (byte(k) & 0xC0) == 0x80; };
  unsigned char c = byte(0);
  if (c >= 0xC2 && c <= 0xDF) return continuation(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    unsigned char d = byte(1);
    if ((c == 0xE0 && d < 0xA0) || (c == 0xED && d > 0x9F)) return 0;
    return continuation(1) && continuation(2) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    unsigned char d = byte(1);
    if ((c == 0xF0 && d < 0x90) || (c == 0xF4 && d > 0x8F)) return 0;
    return continuation(1) && continuation(2) && continuation(3) ? 4 : 0;
  }
  return 0;
}

// A JSON string. Invalid UTF-8 (a message cut short inside a character, say) becomes U+FFFD, as
// nlohmann::json's error_handler_t::replace would write it, rather than failing the response.
void append_string(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  std::size_t plain = 0;  // start of the run not yet copied
  for (std::size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') continue;
    if (c >= 0x80) {
      if (std::size_t length = utf8_sequence(text, i)) {
        i += length - 1;
        continue;
      }
    }
    out.append(text.substr(plain, i - plain));
    plain = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c >= 0x80) {
          out += "\xEF\xBF\xBD";
        } else {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        }
    }
  }
  out.append(text.substr(plain));
  out += '"';
}

// Compact JSON, keys in nlohmann::json's order; the same bytes json::dump() gives for valid text.
void append_json(std::string& out, const json& value) {
  switch (value.type()) {
    case json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, item] : value.items()) {
        if (!first) out += ',';
        first = false;
        append_string(out, key);
        out += ':';
        append_json(out, item);
      }
      out += '}';
      return;
    }
    case json::value_t::array: {
      out += '[';
      for (std::size_t i = 0; i < value.size(); ++i) {
        if (i != 0) out += ',';
        append_json(out, value[i]);
      }
      out += ']';
      return;
    }
    case json::value_t::string:
      append_string(out, value.get_ref<const std::string&>());
      return;
    default:
      out += value.dump();  // numbers, booleans, null: nlohmann's own formatting
  }
}

}  // namespace

std::string encode_admission_review(const AdmissionDecision& decision, const std::string& uid,
                                    const std::string& review_api_version) {
  // Written directly, members in key order as nlohmann::json would order them: serializing through a
  // json tree escaped the base64 patch byte by byte and cost more than the whole mutation.
  std::string out;
  out.reserve(256 + decision.message.size() + decision.patch_operations() * 160);
  out += "{\"apiVersion\":";
  append_string(out, review_api_version);
  out += ",\"kind\":\"AdmissionReview\",\"response\":{\"allowed\":";
  out += decision.allowed ? "true" : "false";
  if (decision.allowed && decision.patch_operations() > 0) {
    std::string patch;
    append_json(patch, decision.patch);
    out += ",\"patch\":\"";
    out += base64_encode(patch);  // base64 needs no escaping
    out += "\",\"patchType\":\"JSONPatch\"";
  }
  out += ",\"status\":{\"code\":";
  out += std::to_string(decision.code);
  if (!decision.message.empty()) {
    out += ",\"message\":";
    append_string(out, decision.message);
  }
  if (!decision.reason.empty()) {
    out += ",\"reason\":";
    append_string(out, decision.reason);
  }
  out += "},\"uid\":";
  append_string(out, uid);
  if (!decision.warnings.empty()) {
    out += ",\"warnings\":[";
    for (std::size_t i = 0; i < decision.warnings.size(); ++i) {
      if (i != 0) out += ',';
      append_string(out, decision.warnings[i]);
    }
    out += ']';
  }
  out += "}}";
  return out;
}

std::string base64_encode(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out((bytes.size() + 2) / 3 * 4, '=');
  auto at = [&](std::size_t i) { return static_cast<unsigned>(static_cast<unsigned char>(bytes[i])); };
  std::size_t i = 0, o = 0;
  for (; i + 2 < bytes.size(); i += 3, o += 4) {
    unsigned n = (at(i) << 16) | (at(i + 1) << 8) | at(i + 2);
    out[o] = kAlphabet[(n >> 18) & 63];
    out[o + 1] = kAlphabet[(n >> 12) & 63];
    out[o + 2] = kAlphabet[(n >> 6) & 63];
    out[o + 3] = kAlphabet[n & 63];
  }
  if (i < bytes.size()) {  // one or two bytes left; the '=' padding is already there
    unsigned n = at(i) << 16;
    if (i + 1 < bytes.size()) n |= at(i + 1) << 8;
    out[o] = kAlphabet[(n >> 18) & 63];
    out[o + 1] = kAlphabet[(n >> 12) & 63];
    if (i + 1 < bytes.size()) out[o + 2] = kAlphabet[(n >> 6) & 63];
  }
  return out;
}

}  // namespace karta

namespace karta {

AdmissionRequest request_for_object(const json& object, const std::string& operation) {
  AdmissionRequest request;
  request.uid = "offline";
  request.review_api_version = "admission.k8s.io/v1";
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
