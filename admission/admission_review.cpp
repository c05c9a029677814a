#include "admission/admission_review.h"

#include "json/json_text.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

namespace karta {
namespace {

// Reads an optional string member; a present non-string is an error naming the field.
bool read_string(JsonElement object, const char* key, std::string_view where, std::string& out, std::string& error,
                 bool required = false) {
  auto value = member(object, key);
  if (!value || value->is_null()) {
    if (required) error = std::string(where) + "." + key + ": is required";
    return !required;
  }
  auto text = string_of(*value);
  if (!text) {
    error = std::string(where) + "." + key + ": must be a string, not " + type_name(*value);
    return false;
  }
  out = std::string(*text);
  return true;
}

std::optional<JsonElement> read_object(JsonElement object, const char* key, std::string_view where,
                                       std::string& error) {
  auto value = member(object, key);
  if (!value || value->is_null()) return std::nullopt;
  if (!value->is_object()) {
    error = std::string(where) + "." + key + ": must be an object, not " + type_name(*value);
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

AdmissionDecision AdmissionDecision::errored(int code, std::string message) {
  AdmissionDecision d;
  d.allowed = false;
  d.code = code;
  d.message = std::move(message);
  return d;
}

std::string encode_admission_review(const AdmissionDecision& decision, const std::string& uid,
                                    const std::string& review_api_version) {
  // Written directly, members in key order as nlohmann::json would order them: serializing through a
  // json tree escaped the base64 patch byte by byte and cost more than the whole mutation.
  std::string out;
  std::size_t size = 160 + review_api_version.size() + uid.size() + decision.message.size() + decision.reason.size();
  if (decision.allowed && decision.patch_operations() > 0) size += (decision.patch.text.size() + 2) / 3 * 4;
  for (const auto& warning : decision.warnings) size += warning.size() + 3;
  out.reserve(size + size / 8);  // escapes in the texts may lengthen them
  out += "{\"apiVersion\":";
  append_json_string(out, review_api_version);
  out += ",\"kind\":\"AdmissionReview\",\"response\":{\"allowed\":";
  out += decision.allowed ? "true" : "false";
  if (decision.allowed && decision.patch_operations() > 0) {
    out += ",\"patch\":\"";
    append_base64(out, decision.patch.text);  // base64 needs no escaping
    out += "\",\"patchType\":\"JSONPatch\"";
  }
  out += ",\"status\":{\"code\":";
  out += std::to_string(decision.code);
  if (!decision.message.empty()) {
    out += ",\"message\":";
    append_json_string(out, decision.message);
  }
  if (!decision.reason.empty()) {
    out += ",\"reason\":";
    append_json_string(out, decision.reason);
  }
  out += "},\"uid\":";
  append_json_string(out, uid);
  if (!decision.warnings.empty()) {
    out += ",\"warnings\":[";
    for (std::size_t i = 0; i < decision.warnings.size(); ++i) {
      if (i != 0) out += ',';
      append_json_string(out, decision.warnings[i]);
    }
    out += ']';
  }
  out += "}}";
  return out;
}

namespace {

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// The two base64 characters of every 12-bit group: two lookups per three bytes instead of four.
constexpr std::array<char, 2 * 4096> kBase64Pairs = [] {
  std::array<char, 2 * 4096> table{};
  for (int i = 0; i < 4096; ++i) {
    table[2 * i] = kBase64[i >> 6];
    table[2 * i + 1] = kBase64[i & 63];
  }
  return table;
}();

}  // namespace

void append_base64(std::string& out, std::string_view bytes) {
  const std::size_t start = out.size();
  out.resize(start + (bytes.size() + 2) / 3 * 4, '=');
  char* o = out.data() + start;
  const auto* in = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t size = bytes.size();
  std::size_t i = 0;
  // Six bytes at a time from one eight-byte load (read as big-endian: the first byte is the highest), four
  // lookups written as one eight-byte store.
  for (; i + 8 <= size; i += 6, o += 8) {
    std::uint64_t w;
    std::memcpy(&w, in + i, 8);
    if constexpr (std::endian::native == std::endian::little) w = __builtin_bswap64(w);
    char chars[8];
    std::memcpy(chars, &kBase64Pairs[2 * ((w >> 52) & 4095)], 2);
    std::memcpy(chars + 2, &kBase64Pairs[2 * ((w >> 40) & 4095)], 2);
    std::memcpy(chars + 4, &kBase64Pairs[2 * ((w >> 28) & 4095)], 2);
    std::memcpy(chars + 6, &kBase64Pairs[2 * ((w >> 16) & 4095)], 2);
    std::memcpy(o, chars, 8);
  }
  for (; i + 2 < size; i += 3, o += 4) {
    unsigned n = (unsigned{in[i]} << 16) | (unsigned{in[i + 1]} << 8) | in[i + 2];
    std::memcpy(o, &kBase64Pairs[2 * (n >> 12)], 2);
    std::memcpy(o + 2, &kBase64Pairs[2 * (n & 4095)], 2);
  }
  if (i < size) {  // one or two bytes left; the '=' padding is already there
    unsigned n = unsigned{in[i]} << 16;
    if (i + 1 < size) n |= unsigned{in[i + 1]} << 8;
    o[0] = kBase64[(n >> 18) & 63];
    o[1] = kBase64[(n >> 12) & 63];
    if (i + 1 < size) o[2] = kBase64[(n >> 6) & 63];
  }
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  append_base64(out, bytes);
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
