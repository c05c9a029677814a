#include "support/terminal_controls.h"

#include <algorithm>

#include "json/json_text.h"

namespace karta::test {

std::string terminal_controls(const std::string& text) {
  std::string found;
  auto report = [&](std::size_t at) {
    static constexpr char kHex[] = "0123456789abcdef";
    auto byte = static_cast<unsigned char>(text[at]);
    found += (found.empty() ? "\\x" : ", \\x") + std::string{kHex[byte >> 4], kHex[byte & 0xF]} + " at " + std::to_string(at);
  };
  for (std::size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    std::size_t length = c < 0x80 ? 1 : utf8_sequence(text, i);
    if (length == 0 || (c < 0x20 && c != '\n') || c == 0x7F) {
      report(i);
    } else if (c == 0xC2 && static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      report(i + 1);
    }
    i += std::max<std::size_t>(length, 1);
  }
  return found;
}

}  // namespace karta::test
