#include "generate/draft_yaml.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <nlohmann/json.hpp>

#include "k8s/terminal_text.h"

namespace karta::draft_yaml {

using json = nlohmann::json;

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// The JSON writer escapes the C0 controls but leaves DEL and the C1 controls (U+0080..U+009F) as they are:
// YAML does not take them raw (they are not among its printable characters, and U+0085 is a line break to
// it), and a terminal acts on them (U+009B is the 8-bit CSI). Both are escaped here as `\u00XX`, which a
// double-quoted YAML scalar reads back as the same character; the writer's own output is ASCII apart from
// other characters beyond ASCII, so no escape it wrote is touched.
std::string quoted(const std::string& text) {
  const std::string dumped = json(text).dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(dumped.size());
  auto escape = [&](unsigned char c) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += "\\u00";
    out += kHex[c >> 4];
    out += kHex[c & 0xF];
  };
  for (std::size_t i = 0; i < dumped.size(); ++i) {
    const auto c = static_cast<unsigned char>(dumped[i]);
    if (c == 0x7F) {
      escape(c);
    } else if (c == 0xC2 && i + 1 < dumped.size() && static_cast<unsigned char>(dumped[i + 1]) <= 0x9F) {
      escape(static_cast<unsigned char>(dumped[++i]));  // U+0080..U+009F, two bytes in UTF-8: C2 80..C2 9F
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string scalar(const std::string& text) {
  static const std::set<std::string> kReserved = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"};
  if (text.empty() || kReserved.count(lower(text)) != 0) return quoted(text);
  const unsigned char first = static_cast<unsigned char>(text[0]);
  if (!(std::isalpha(first) || first == '.' || first == '_')) return quoted(text);
  bool has_letter = false;
  for (unsigned char c : text) {
    if (!(std::isalnum(c) || c == '.' || c == '_' || c == '/' || c == '-' || c == '[' || c == ']')) return quoted(text);
    has_letter = has_letter || std::isalpha(c);
  }
  return has_letter ? text : quoted(text);
}

// Appended, not `"`" + terminal_text(text) + "`"`: inlined as the release build's profile leads GCC 12 to,
// that operator+ draws a false -Wrestrict warning (GCC bug 105651).
std::string code(const std::string& text) {
  std::string out = "`";
  out += terminal_text(text);
  out += '`';
  return out;
}

}  // namespace karta::draft_yaml
