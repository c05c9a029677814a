#include "definitions/simple_path.h"

#include <boost/container/small_vector.hpp>

#include "json/documents.h"

#include <cctype>

namespace karta {
namespace {

bool is_identifier_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool is_valid_utf8(std::string_view text) { return utf8_error_offset(text) == std::string_view::npos; }

// A double-quoted string with no escapes other than \" and \\ (anything richer goes to jq).
std::optional<std::string> read_quoted(std::string_view text, std::size_t& pos) {
  if (pos >= text.size() || text[pos] != '"') return std::nullopt;
  std::string value;
  for (++pos; pos < text.size(); ++pos) {
    char c = text[pos];
    if (c == '"') {
      ++pos;
      // jq turns invalid UTF-8 into U+FFFD; such a name is left to jq rather than imitated.
      if (!is_valid_utf8(value)) return std::nullopt;
      return value;
    }
    if (c == '\\') {
      if (pos + 1 >= text.size() || (text[pos + 1] != '"' && text[pos + 1] != '\\')) return std::nullopt;
      value.push_back(text[++pos]);
      continue;
    }
    if (static_cast<unsigned char>(c) < 0x20) return std::nullopt;
    value.push_back(c);
  }
  return std::nullopt;
}

}  // namespace

bool jq_reads_number_after_dot(std::string_view after_dot) {
  auto digit = [&](std::size_t i) { return i < after_dot.size() && std::isdigit(static_cast<unsigned char>(after_dot[i])); };
  if (after_dot.empty() || (after_dot[0] != 'e' && after_dot[0] != 'E')) return false;
  std::size_t number = 1;
  if (number < after_dot.size() && (after_dot[number] == '+' || after_dot[number] == '-')) ++number;
  if (!digit(number)) return false;
  while (digit(number)) ++number;
  std::size_t field = 0;
  while (field < after_dot.size() && is_identifier_char(after_dot[field])) ++field;
  return number >= field;
}

std::optional<SimplePath> SimplePath::parse(std::string_view text) {
  // jq's own white space only: it refuses \v, \f and \r.
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n'; };
  while (!text.empty() && blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && blank(text.back())) text.remove_suffix(1);
  if (text.empty() || text[0] != '.') return std::nullopt;
  SimplePath path;
  std::size_t pos = 0;
  bool first = true;
  while (pos < text.size()) {
    char c = text[pos];
    if (c == '.') {
      ++pos;
      if (pos >= text.size()) {
        if (first) return path;  // "." alone: the whole document
        return std::nullopt;
      }
      if (is_identifier_start(text[pos])) {
        if (jq_reads_number_after_dot(text.substr(pos))) return std::nullopt;
        std::size_t start = pos;
        while (pos < text.size() && is_identifier_char(text[pos])) ++pos;
        path.steps_.push_back(Field{std::string(text.substr(start, pos - start))});
      } else if (text[pos] == '"') {
        auto name = read_quoted(text, pos);
        if (!name) return std::nullopt;
        path.steps_.push_back(Field{*name});
      } else if (text[pos] == '[' && first) {
        // ".[...]" at the start; jq 1.6 refuses ".a.[0]", so only here.
      } else {
        return std::nullopt;
      }
    } else if (c == '[') {
      if (first) return std::nullopt;  // must start with "."
      ++pos;
      if (pos < text.size() && text[pos] == ']') {
        ++pos;
        bool optional = pos < text.size() && text[pos] == '?';
        if (optional) ++pos;
        path.steps_.push_back(Iterate{optional});
      } else if (pos < text.size() && text[pos] == '"') {
        auto name = read_quoted(text, pos);
        if (!name || pos >= text.size() || text[pos] != ']') return std::nullopt;
        ++pos;
        path.steps_.push_back(Field{*name});
      } else if (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
        std::size_t start = pos;
        while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
        if (pos - start > 9 || pos >= text.size() || text[pos] != ']') return std::nullopt;
        path.steps_.push_back(Index{std::stoul(std::string(text.substr(start, pos - start)))});
        ++pos;
      } else {
        return std::nullopt;
      }
    } else {
      return std::nullopt;
    }
    first = false;
  }
  path.escaped_.reserve(path.steps_.size());
  for (const Step& step : path.steps_) {
    std::string& escaped = path.escaped_.emplace_back();
    if (const auto* field = std::get_if<Field>(&step)) {
      escaped = "/";
      append_escaped_pointer_token(escaped, field->name);
    }
  }
  return path;
}

SimplePath::Result SimplePath::evaluate(JsonElement document, std::size_t max_outputs, bool pointers) const {
  Result result;
  // Depth-first over the steps, in jq's output order; a frame is a place reached after `step` steps.
  struct Frame {
    JsonPointer pointer;
    std::optional<JsonElement> value;
    std::size_t step;
  };
  // Inline storage: a path over a few lists needs no allocation for its stack. A frame's pointer is
  // extended in place, and copied only where a list or map branches.
  boost::container::small_vector<Frame, 16> stack{{JsonPointer(), document, 0}};
  while (!stack.empty()) {
    Frame frame = std::move(stack.back());
    stack.pop_back();
    // Fields and indexes extend this frame in place: only a list or map (below) branches into new frames.
    for (; frame.step < steps_.size() && !std::holds_alternative<Iterate>(steps_[frame.step]); ++frame.step) {
      const std::optional<JsonElement>& value = frame.value;
      const bool null = !value || value->is_null();
      std::optional<JsonElement> next;
      if (const auto* field = std::get_if<Field>(&steps_[frame.step])) {
        if (!null && value->is_object()) {
          next = member(*value, field->name);
        } else if (!null) {
          result.error = std::string("Cannot index ") + type_name(*value) + " with string \"" + field->name + "\"";
          return result;
        }
        if (pointers) frame.pointer.append_escaped(escaped_[frame.step]);
      } else {
        const auto& index = std::get<Index>(steps_[frame.step]);
        if (!null && value->is_array()) {
          auto item = array_of(*value).at(index.index);
          if (!item.error()) next = item.value_unsafe();
        } else if (!null) {
          result.error = std::string("Cannot index ") + type_name(*value) + " with number";
          return result;
        }
        if (pointers) frame.pointer /= index.index;
      }
      frame.value = next;
    }
    if (frame.step == steps_.size()) {
      if (result.matches.size() >= max_outputs) {
        result.capped = true;
        return result;
      }
      if (result.matches.empty()) result.matches.reserve(8);  // one allocation for the usual few matches
      result.matches.push_back({std::move(frame.pointer), frame.value});
      continue;
    }
    const std::optional<JsonElement>& value = frame.value;
    const bool null = !value || value->is_null();
    const bool optional = std::get<Iterate>(steps_[frame.step]).optional;
    if (optional && (null || !(value->is_array() || value->is_object()))) continue;
    if (null || !(value->is_array() || value->is_object())) {
      result.error = !value ? std::string("Cannot iterate over null (null)")
                            : std::string("Cannot iterate over ") + type_name(*value);
      return result;
    }
    // Pushed in reverse so the first element is processed first; each frame built where it is kept.
    auto branch = [&](JsonElement item) -> JsonPointer* {
      Frame& next = stack.emplace_back(Frame{pointers ? frame.pointer : JsonPointer(), item, frame.step + 1});
      return pointers ? &next.pointer : nullptr;
    };
    if (value->is_array()) {
      boost::container::small_vector<JsonElement, 16> items;
      for (auto item : array_of(*value)) items.push_back(item);
      for (std::size_t i = items.size(); i-- > 0;) {
        if (JsonPointer* pointer = branch(items[i])) *pointer /= i;
      }
    } else {
      auto members = sorted_members(*value);
      for (auto it = members.rbegin(); it != members.rend(); ++it) {
        if (JsonPointer* pointer = branch(it->second)) *pointer /= it->first;
      }
    }
  }
  return result;
}

}  // namespace karta
