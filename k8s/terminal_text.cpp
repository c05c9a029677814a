#include "k8s/terminal_text.h"

#include <algorithm>

#include "json/documents.h"
#include "json/json_text.h"

namespace karta {
namespace {

void append_hex(std::string& out, const char* prefix, unsigned value, int digits) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += prefix;
  for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) out += kHex[(value >> shift) & 0xF];
}

// A C0 control or DEL (a byte below 0x80 that is not printable ASCII).
void append_control(std::string& out, unsigned char c) {
  switch (c) {
    case 0x1B: out += "^["; return;  // kubectl's
    case '\a': out += "\\a"; return;
    case '\b': out += "\\b"; return;
    case '\t': out += "\\t"; return;
    case '\n': out += "\\n"; return;
    case '\v': out += "\\v"; return;
    case '\f': out += "\\f"; return;
    case '\r': out += "\\r"; return;  // kubectl's and Go's
    default: append_hex(out, "\\x", c, 2);
  }
}

bool printable_ascii(char c) { return c >= 0x20 && c < 0x7F; }

}  // namespace

std::string terminal_text(std::string_view text) {
  if (std::all_of(text.begin(), text.end(), printable_ascii)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 16);
  for (std::size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (printable_ascii(static_cast<char>(c))) {
        out += static_cast<char>(c);
      } else {
        append_control(out, c);
      }
      ++i;
      continue;
    }
    std::size_t length = utf8_sequence(text, i);
    if (length == 0) {
      append_hex(out, "\\x", c, 2);
      ++i;
    } else if (c == 0xC2 && static_cast<unsigned char>(text[i + 1]) <= 0x9F) {  // U+0080..U+009F
      append_hex(out, "\\u", static_cast<unsigned char>(text[i + 1]), 4);
      i += 2;
    } else {
      out.append(text, i, length);
      i += length;
    }
  }
  return out;
}

std::string bounded_text(std::string_view text, std::size_t limit) {
  if (text.size() <= limit) return terminal_text(text);
  std::size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
  return terminal_text(text.substr(0, cut)) + "... (" + std::to_string(text.size()) + " bytes)";
}

nlohmann::json terminal_strings(const nlohmann::json& value) {
  if (value.is_string()) return terminal_text(value.get_ref<const std::string&>());
  if (value.is_array()) {
    nlohmann::json escaped = nlohmann::json::array();
    for (const auto& element : value) escaped.push_back(terminal_strings(element));
    return escaped;
  }
  if (value.is_object()) {
    nlohmann::json escaped = nlohmann::json::object();
    for (const auto& [key, member] : value.items()) escaped[terminal_text(key)] = terminal_strings(member);
    return escaped;
  }
  return value;
}

std::size_t terminal_width(std::string_view escaped) {
  return static_cast<std::size_t>(
      std::count_if(escaped.begin(), escaped.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string error_text(const std::exception& error) {
  if (dynamic_cast<const InputLinesError*>(&error) != nullptr) return error.what();
  return terminal_text(error.what());
}

}  // namespace karta
