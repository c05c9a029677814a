#include "definitions/simple_path.h"

#include <boost/container/small_vector.hpp>

#include "json/documents.h"

#include <algorithm>
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
  std::pmr::vector<JsonPointer> found;
  std::pmr::vector<std::optional<JsonElement>> places;
  result.error = evaluate_into(document, max_outputs, pointers ? &found : nullptr, places, result.capped);
  result.matches.reserve(places.size());
  for (std::size_t i = 0; i < places.size(); ++i) {
    result.matches.push_back({pointers ? std::move(found[i]) : JsonPointer(), places[i]});
  }
  return result;
}

std::optional<std::string> SimplePath::evaluate_into(JsonElement document, std::size_t max_outputs,
                                                     std::pmr::vector<JsonPointer>* pointers,
                                                     std::pmr::vector<std::optional<JsonElement>>& places,
                                                     bool& capped) const {
  std::optional<std::string> error;  // what ended the stream
  capped = false;
  const std::size_t first = places.size();
  // Depth first, in jq's output order, with one pointer that is extended as the walk goes down and cut
  // back to where a list's (or map's) element starts: a place is copied only when it is a match. Each
  // `[]` being iterated is a level; fields and indexes between them are walked in place.
  struct Level {
    Level() noexcept {}  // written out: emplace_back() would clear the whole level first (`rep stos`)
    std::size_t step = 0;          // the Iterate step
    std::size_t pointer_size = 0;  // the pointer's length at the list or map
    bool is_array = false;
    simdjson::dom::array::iterator item{}, end{};                // an array's next element
    std::size_t index = 0;                                       // and its index (or the member's)
    std::vector<std::pair<std::string_view, JsonElement>> members;  // a map's members, in key order
  };
  boost::container::small_vector<Level, 4> levels;
  JsonPointer pointer;

  // Walks from `step` with `value` (nullopt: a missing place, which reads as null) up to the end of the
  // path, a match, or the next `[]`, which becomes a level. False when an error ends the stream.
  auto walk = [&](std::optional<JsonElement> value, std::size_t step) -> bool {
    for (; step < steps_.size(); ++step) {
      const Step& s = steps_[step];
      const bool null = !value || value->is_null();
      if (const auto* field = std::get_if<Field>(&s)) {
        if (null) {
          value.reset();
        } else if (value->is_object()) {
          value = member(*value, field->name);
        } else {
          error = std::string("Cannot index ") + type_name(*value) + " with string \"" + field->name + "\"";
          return false;
        }
        if (pointers) pointer.append_escaped(escaped_[step]);
      } else if (const auto* index = std::get_if<Index>(&s)) {
        if (null) {
          value.reset();
        } else if (value->is_array()) {
          auto item = array_of(*value).at(index->index);
          value = item.error() ? std::nullopt : std::optional<JsonElement>(item.value_unsafe());
        } else {
          error = std::string("Cannot index ") + type_name(*value) + " with number";
          return false;
        }
        if (pointers) pointer /= index->index;
      } else {
        const bool iterable = !null && (value->is_array() || value->is_object());
        if (!iterable) {
          if (std::get<Iterate>(s).optional) return true;
          error = !value ? std::string("Cannot iterate over null (null)")
                         : std::string("Cannot iterate over ") + type_name(*value);
          return false;
        }
        Level& level = levels.emplace_back();
        level.step = step;
        level.pointer_size = pointer.text().size();
        level.is_array = value->is_array();
        if (level.is_array) {
          auto array = array_of(*value);
          level.item = array.begin();
          level.end = array.end();
        } else {
          level.members = sorted_members(*value);
        }
        return true;
      }
    }
    if (places.size() - first >= max_outputs) {
      capped = true;
      return false;
    }
    if (places.size() == places.capacity()) {  // one allocation for the usual few matches, then doubling
      const std::size_t room = std::max<std::size_t>(8, 2 * places.capacity());
      places.reserve(room);
      if (pointers) pointers->reserve(room);
    }
    places.push_back(value);
    if (pointers) pointers->push_back(pointer);
    return true;
  };

  if (!walk(document, 0)) return error;
  while (!levels.empty()) {
    Level& level = levels.back();
    JsonElement element;
    if (level.is_array) {
      if (level.item == level.end) {
        levels.pop_back();
        continue;
      }
      element = *level.item;
      ++level.item;
      if (pointers) {
        pointer.truncate(level.pointer_size);
        pointer /= level.index;
      }
    } else {
      if (level.index == level.members.size()) {
        levels.pop_back();
        continue;
      }
      element = level.members[level.index].second;
      if (pointers) {
        pointer.truncate(level.pointer_size);
        pointer /= level.members[level.index].first;
      }
    }
    ++level.index;
    // `level` may move when walk() adds one: nothing of it is used past this call.
    if (!walk(element, level.step + 1)) return error;
  }
  return std::nullopt;
}

}  // namespace karta
