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

std::string quoted(const std::string& text) { return json(text).dump(-1, ' ', false, json::error_handler_t::replace); }

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
