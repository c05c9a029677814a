#include "admission/admission_review.h"

#include "json/json_text.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

AdmissionDecision AdmissionDecision::errored(int code, std::string message) {
  AdmissionDecision d;
  d.allowed = false;
  d.code = code;
  d.message = std::move(message);
  return d;
}

std::string encode_admission_review(const AdmissionDecision& decision, std::string_view uid,
                                    std::string_view review_api_version) {
  // Written directly, members in key order as nlohmann::json would order them: serializing through a
  // json tree escaped the base64 patch byte by byte and cost more than the whole mutation.
  std::string out;
  std::size_t size = 160 + review_api_version.size() + uid.size() + decision.message.size() + decision.reason.size();
  if (decision.allowed && decision.patch_operations() > 0) size += (decision.patch.text.size() + 2) / 3 * 4;
  for (const auto& warning : decision.warnings) size += warning.size() + 3;
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
    append_json_string(out, decision.message);
  }
  if (!decision.reason.empty()) {
    out += ",\"reason\":"sv;
    append_json_string(out, decision.reason);
  }
  out += "},\"uid\":"sv;
  append_json_string(out, uid);
  if (!decision.warnings.empty()) {
    out += ",\"warnings\":["sv;
    for (std::size_t i = 0; i < decision.warnings.size(); ++i) {
      if (i != 0) out += ',';
      append_json_string(out, decision.warnings[i]);
    }
    out += ']';
  }
  out += "}}"sv;
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

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define KARTA_BASE64_SSSE3 1
// Twelve bytes to sixteen characters a step with SSSE3's byte shuffle (Wojciech Muła's method, "Base64
// encoding with SIMD instructions"): each three bytes spread over a 32-bit lane, their four 6-bit fields
// moved to a byte each by two multiplies, and each field made its character by adding an offset from a
// 16-entry table. Each step reads 16 bytes, so it stops at least 4 bytes before the end; returns the
// bytes encoded. Compiled for SSSE3 alone and called only where the processor has it.
__attribute__((target("ssse3"))) std::size_t append_base64_ssse3(char* out, const unsigned char* in, std::size_t size) {
  const __m128i spread = _mm_set_epi8(10, 11, 9, 10, 7, 8, 6, 7, 4, 5, 3, 4, 1, 2, 0, 1);
  const __m128i offsets = _mm_setr_epi8('a' - 26, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52,
                                        '0' - 52, '0' - 52, '0' - 52, '+' - 62, '/' - 63, 'A', 0, 0);
  std::size_t i = 0;
  for (; i + 16 <= size; i += 12, out += 16) {
    const __m128i v = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i)), spread);
    const __m128i first_and_third =
        _mm_mulhi_epu16(_mm_and_si128(v, _mm_set1_epi32(0x0fc0fc00)), _mm_set1_epi32(0x04000040));
    const __m128i second_and_fourth =
        _mm_mullo_epi16(_mm_and_si128(v, _mm_set1_epi32(0x003f03f0)), _mm_set1_epi32(0x01000010));
    const __m128i fields = _mm_or_si128(first_and_third, second_and_fourth);  // a 6-bit value a byte
    // Which offset: 13 for 0-25 ('A'), 0 for 26-51 ('a'), 1-10 for the digits, 11 for '+', 12 for '/'.
    __m128i row = _mm_subs_epu8(fields, _mm_set1_epi8(51));
    row = _mm_or_si128(row, _mm_and_si128(_mm_cmpgt_epi8(_mm_set1_epi8(26), fields), _mm_set1_epi8(13)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm_add_epi8(fields, _mm_shuffle_epi8(offsets, row)));
  }
  return i;
}
#endif

}  // namespace

void append_base64(std::string& out, std::string_view bytes) {
  const std::size_t start = out.size();
  out.resize(start + (bytes.size() + 2) / 3 * 4, '=');
  char* o = out.data() + start;
  const auto* in = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t size = bytes.size();
  std::size_t i = 0;
#if defined(KARTA_BASE64_SSSE3)
  static const bool ssse3 = __builtin_cpu_supports("ssse3");
  if (ssse3) {
    i = append_base64_ssse3(o, in, size);
    o += i / 3 * 4;
  }
#endif
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
