#pragma once

// The admitted object, read-only. An AdmissionReview is parsed once, by simdjson, into a JsonDocument
// that lives as long as the request; definitions, the pod-template locator, GPU counting, the label
// policy and the patch builder read it through JsonElement handles and never copy it. nlohmann::json
// stays for what we build (patches, responses) and for configuration (definitions, policy).
//
// Why two libraries: on the demo review (1.5 KB) nlohmann::json::parse takes 21 us and simdjson 0.7 us,
// and parsing was most of an admission (bench/README.md).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <simdjson.h>

#include "json/json_pointer.h"

namespace karta {

using json = nlohmann::json;
// A handle on a value inside a JsonDocument: cheap to copy, valid while the document lives.
using JsonElement = simdjson::dom::element;

class JsonParseError : public std::runtime_error {
 public:
  JsonParseError(const std::string& message, bool too_deep = false) : std::runtime_error(message), too_deep_(too_deep) {}
  bool too_deep() const { return too_deep_; }

 private:
  bool too_deep_;
};

class JsonDocument {
 public:
  // Parses `text` (validating UTF-8). Throws JsonParseError saying what is wrong; nesting deeper than
  // `max_depth` is one such error ("nested deeper than N levels").
  static JsonDocument parse(std::string_view text, std::size_t max_depth = kDefaultMaxDepth);
  // The same value as a JsonDocument (offline commands and tests hold nlohmann::json).
  static JsonDocument from(const json& value);

  JsonElement root() const { return root_; }

  static constexpr std::size_t kDefaultMaxDepth = 1000;

 private:
  JsonDocument() = default;
  // Hands a document's buffers back to the thread's spare slot, so the next parse on that thread writes
  // into memory it has just used (a 1.5 KB review fills a 12 KB tape).
  struct Recycle {
    void operator()(simdjson::dom::document* document) const;
  };
  std::unique_ptr<simdjson::dom::document, Recycle> document_;  // behind a pointer: elements point into it
  JsonElement root_;
};

// Text from outside (a file, an API server's answer, a watch event) as a built value, its nesting
// bounded before it is parsed: nlohmann's parser is iterative, but what walks the value afterwards
// (dump, the CRD schema readers, generate) recurses, and an answer nested 60,000 levels deep overflowed
// the stack. Throws JsonParseError: too_deep() and "nested deeper than N levels", or "not JSON: ..."
// with nlohmann's message (which quotes at most the last token read).
json parse_json_within(std::string_view text, std::size_t max_depth);

// `value` as an object or an array; the caller has checked its type.
inline simdjson::dom::object object_of(JsonElement value) {
  simdjson::dom::object object;
  [[maybe_unused]] auto error = value.get(object);
  return object;
}
inline simdjson::dom::array array_of(JsonElement value) {
  simdjson::dom::array array;
  [[maybe_unused]] auto error = value.get(array);
  return array;
}

// The first sizeof(Word) bytes and the last of a and b (n >= sizeof(Word); overlapping below twice that).
template <typename Word>
inline bool same_ends(const char* a, const char* b, std::size_t n) {
  Word a0, b0, a1, b1;
  std::memcpy(&a0, a, sizeof(Word));
  std::memcpy(&b0, b, sizeof(Word));
  std::memcpy(&a1, a + n - sizeof(Word), sizeof(Word));
  std::memcpy(&b1, b + n - sizeof(Word), sizeof(Word));
  return ((a0 ^ b0) | (a1 ^ b1)) == 0;
}
// Whether the n bytes at a and at b are the same, inline for the short keys of Kubernetes objects:
// simdjson's at_key calls memcmp for each key of equal length, and memcmp, most of it called there, was
// 5% of the demo admission (bench/README.md, issue 24, twelfth round).
inline bool same_bytes(const char* a, const char* b, std::size_t n) {
  if (n > 16) return std::memcmp(a, b, n) == 0;
  if (n >= 8) return same_ends<std::uint64_t>(a, b, n);
  if (n >= 4) return same_ends<std::uint32_t>(a, b, n);
  return n == 0 || (a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1]);
}

// Member `key` of `value`, when `value` is an object holding it (the first, should keys repeat).
std::optional<JsonElement> member(JsonElement value, std::string_view key);
// Member `key` of `value` when both are objects, else nothing (a null member too): a map to work in.
std::optional<JsonElement> object_member(const std::optional<JsonElement>& value, std::string_view key);
// The string `value` holds, or nullopt.
std::optional<std::string_view> string_of(JsonElement value);
// "object", "array", "string", "number", "boolean" or "null": nlohmann::json's names, for messages.
const char* type_name(JsonElement value);
// An object's members in key order (as nlohmann::json and gojq iterate objects); a repeated key once.
std::vector<std::pair<std::string_view, JsonElement>> sorted_members(JsonElement object);
// Deep equality with a built value; numbers compare by value (1 == 1.0), as nlohmann::json does.
bool equals(JsonElement value, const json& other);
json to_json(JsonElement value);
std::string dump(JsonElement value);  // compact JSON

// The value at `pointer`, or nothing when the pointer leads nowhere in `document` (never throws).
std::optional<JsonElement> find_at(JsonElement document, const JsonPointer& pointer);
const json* find_json_at(const json& document, const json::json_pointer& pointer);  // the same in a built value

}  // namespace karta
