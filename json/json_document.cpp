#include "json/json_document.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include "json/documents.h"

namespace karta {
namespace {

using simdjson::dom::element_type;

// A parser reuses its buffers between documents; each thread keeps one. One that grew for a big
// document is dropped afterwards, so a single 7 MB review does not pin its buffers for good.
constexpr std::size_t kKeptParserCapacity = 1 << 20;

simdjson::dom::parser& thread_parser(std::unique_ptr<simdjson::dom::parser>& slot, std::size_t max_depth) {
  if (!slot || slot->max_depth() != max_depth) {
    slot = std::make_unique<simdjson::dom::parser>();
    if (auto error = slot->allocate(simdjson::dom::MINIMAL_DOCUMENT_CAPACITY, max_depth)) {
      throw JsonParseError(simdjson::error_message(error));
    }
  }
  return *slot;
}

std::string parse_error_text(simdjson::error_code error, std::size_t max_depth) {
  switch (error) {
    case simdjson::DEPTH_ERROR:
      return "nested deeper than " + std::to_string(max_depth) + " levels";
    case simdjson::UTF8_ERROR:
      return "not valid UTF-8";
    case simdjson::EMPTY:
      return "empty";
    case simdjson::NUMBER_ERROR:
      return "a number is malformed or out of range";
    case simdjson::STRING_ERROR:
    case simdjson::UNCLOSED_STRING:
    case simdjson::UNESCAPED_CHARS:
      return "a string is malformed (unclosed, a bad escape, or a raw control character)";
    default:
      return simdjson::error_message(error);
  }
}

bool number_equals(JsonElement value, const json& other) {
  if (!other.is_number()) return false;
  switch (value.type()) {
    case element_type::INT64: {
      std::int64_t v = value.get_int64().value_unsafe();
      if (other.is_number_integer() && !other.is_number_unsigned()) return v == other.get<std::int64_t>();
      if (other.is_number_unsigned()) return v >= 0 && static_cast<std::uint64_t>(v) == other.get<std::uint64_t>();
      return static_cast<double>(v) == other.get<double>();
    }
    case element_type::UINT64: {
      std::uint64_t v = value.get_uint64().value_unsafe();
      if (other.is_number_unsigned()) return v == other.get<std::uint64_t>();
      if (other.is_number_integer()) return other.get<std::int64_t>() >= 0 && v == static_cast<std::uint64_t>(other.get<std::int64_t>());
      return static_cast<double>(v) == other.get<double>();
    }
    default:
      return value.get_double().value_unsafe() == other.get<double>();
  }
}

// One spare document per thread: the last one released on it, unless it is big (its tape is 8 bytes per
// input byte, so a document kept for a 32 KiB review holds about 300 KiB).
constexpr std::size_t kKeptDocumentCapacity = 32 * 1024;
// Set when the thread's spare slot is destroyed (at thread exit): a document released after that (one
// held by a static object, say) is freed instead. A bool needs no destruction, so it stays readable.
thread_local bool spare_gone = false;
struct SpareDocument {
  std::unique_ptr<simdjson::dom::document> document;
  ~SpareDocument() { spare_gone = true; }
};
thread_local SpareDocument spare;

}  // namespace

void JsonDocument::Recycle::operator()(simdjson::dom::document* document) const {
  std::unique_ptr<simdjson::dom::document> owned(document);
  if (!spare_gone && owned->capacity() <= kKeptDocumentCapacity) spare.document = std::move(owned);
}

JsonDocument JsonDocument::parse(std::string_view text, std::size_t max_depth) {
  thread_local std::unique_ptr<simdjson::dom::parser> parser_slot;
  simdjson::dom::parser& parser = thread_parser(parser_slot, max_depth);
  JsonDocument document;
  document.document_.reset(!spare_gone && spare.document ? spare.document.release() : new simdjson::dom::document());
  auto result = parser.parse_into_document(*document.document_, text.data(), text.size());
  if (parser.capacity() > kKeptParserCapacity) parser_slot.reset();
  if (result.error()) {
    throw JsonParseError(parse_error_text(result.error(), max_depth), result.error() == simdjson::DEPTH_ERROR);
  }
  document.root_ = result.value_unsafe();
  return document;
}

json parse_json_within(std::string_view text, std::size_t max_depth) {
  const int limit = static_cast<int>(std::min<std::size_t>(max_depth, std::numeric_limits<int>::max() - 1));
  if (json_nesting_depth(text, limit) > limit) {
    throw JsonParseError("nested deeper than " + std::to_string(max_depth) + " levels", /*too_deep=*/true);
  }
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw JsonParseError(std::string("not JSON: ") + e.what());
  }
}

JsonDocument JsonDocument::from(const json& value) {
  // nlohmann::json holds no invalid UTF-8 it would dump; replace it if it does, as its parser would refuse.
  return parse(value.dump(-1, ' ', false, json::error_handler_t::replace), kDefaultMaxDepth + 1);
}

std::optional<JsonElement> member(JsonElement value, std::string_view key) {
  if (!value.is_object()) return std::nullopt;
  // simdjson's at_key, with the keys compared inline.
  const simdjson::dom::object object = object_of(value);
  for (auto field = object.begin(), end = object.end(); field != end; ++field) {
    if (field.key_length() == key.size() && same_bytes(field.key_c_str(), key.data(), key.size())) return field.value();
  }
  return std::nullopt;
}

std::optional<JsonElement> object_member(const std::optional<JsonElement>& value, std::string_view key) {
  if (!value || !value->is_object()) return std::nullopt;
  auto found = member(*value, key);
  if (!found || !found->is_object()) return std::nullopt;
  return found;
}

std::optional<std::string_view> string_of(JsonElement value) {
  if (!value.is_string()) return std::nullopt;
  return value.get_string().value_unsafe();
}

const char* type_name(JsonElement value) {
  switch (value.type()) {
    case element_type::OBJECT:
      return "object";
    case element_type::ARRAY:
      return "array";
    case element_type::STRING:
      return "string";
    case element_type::BOOL:
      return "boolean";
    case element_type::NULL_VALUE:
      return "null";
    default:
      return "number";
  }
}

std::vector<std::pair<std::string_view, JsonElement>> sorted_members(JsonElement object) {
  std::vector<std::pair<std::string_view, JsonElement>> members;
  if (!object.is_object()) return members;
  for (auto field : object_of(object)) members.emplace_back(field.key, field.value);
  std::stable_sort(members.begin(), members.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  members.erase(std::unique(members.begin(), members.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
                members.end());
  return members;
}

bool equals(JsonElement value, const json& other) {
  switch (value.type()) {
    case element_type::OBJECT: {
      if (!other.is_object()) return false;
      auto members = sorted_members(value);
      if (members.size() != other.size()) return false;
      for (const auto& [key, item] : members) {
        auto it = other.find(std::string(key));
        if (it == other.end() || !equals(item, *it)) return false;
      }
      return true;
    }
    case element_type::ARRAY: {
      if (!other.is_array()) return false;
      auto array = array_of(value);
      if (array.size() != other.size()) return false;
      std::size_t i = 0;
      for (auto item : array) {
        if (!equals(item, other[i++])) return false;
      }
      return true;
    }
    case element_type::STRING:
      return other.is_string() && value.get_string().value_unsafe() == other.get_ref<const std::string&>();
    case element_type::BOOL:
      return other.is_boolean() && value.get_bool().value_unsafe() == other.get<bool>();
    case element_type::NULL_VALUE:
      return other.is_null();
    default:
      return number_equals(value, other);
  }
}

json to_json(JsonElement value) {
  switch (value.type()) {
    case element_type::OBJECT: {
      json object = json::object();
      for (auto field : object_of(value)) object.emplace(std::string(field.key), to_json(field.value));
      return object;
    }
    case element_type::ARRAY: {
      json array = json::array();
      for (auto item : array_of(value)) array.push_back(to_json(item));
      return array;
    }
    case element_type::STRING:
      return std::string(value.get_string().value_unsafe());
    case element_type::INT64:
      return value.get_int64().value_unsafe();
    case element_type::UINT64:
      return value.get_uint64().value_unsafe();
    case element_type::DOUBLE:
      return value.get_double().value_unsafe();
    case element_type::BOOL:
      return value.get_bool().value_unsafe();
    case element_type::NULL_VALUE:
      return nullptr;
  }
  return nullptr;
}

std::string dump(JsonElement value) { return simdjson::minify(value); }

namespace {

// json_pointer exposes its tokens only through to_string and parent_pointer/back.
std::vector<std::string> tokens_of(const json::json_pointer& pointer) {
  std::vector<std::string> tokens;
  for (json::json_pointer p = pointer; !p.empty(); p = p.parent_pointer()) tokens.push_back(p.back());
  std::reverse(tokens.begin(), tokens.end());
  return tokens;
}

bool array_index(std::string_view token, std::size_t& index) {
  auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), index);
  return ec == std::errc() && end == token.data() + token.size();
}

}  // namespace

const json* find_json_at(const json& document, const json::json_pointer& pointer) {
  const json* node = &document;
  for (const auto& token : tokens_of(pointer)) {
    if (node->is_object()) {
      auto found = node->find(token);
      if (found == node->end()) return nullptr;
      node = &*found;
    } else if (node->is_array()) {
      std::size_t index = 0;
      if (!array_index(token, index) || index >= node->size()) return nullptr;
      node = &(*node)[index];
    } else {
      return nullptr;
    }
  }
  return node;
}

std::optional<JsonElement> find_at(JsonElement document, const JsonPointer& pointer) {
  JsonElement node = document;
  bool found = pointer.for_each_escaped([&](std::string_view escaped) {
    std::string unescaped;
    std::string_view token = escaped;
    if (escaped.find('~') != std::string_view::npos) token = unescaped = unescape_pointer_token(escaped);
    if (node.is_object()) {
      auto next = member(node, token);
      if (!next) return false;
      node = *next;
      return true;
    }
    if (node.is_array()) {
      std::size_t index = 0;
      auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), index);
      if (ec != std::errc() || end != token.data() + token.size()) return false;
      auto item = array_of(node).at(index);
      if (item.error()) return false;
      node = item.value_unsafe();
      return true;
    }
    return false;
  });
  if (!found) return std::nullopt;
  return node;
}

}  // namespace karta
