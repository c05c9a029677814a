#include "json/json_pointer.h"

#include <charconv>

namespace karta {

std::string unescape_pointer_token(std::string_view escaped) {
  std::string token;
  token.reserve(escaped.size());
  for (std::size_t i = 0; i < escaped.size(); ++i) {
    if (escaped[i] == '~' && i + 1 < escaped.size()) {
      token += escaped[i + 1] == '1' ? '/' : '~';
      ++i;
    } else {
      token += escaped[i];
    }
  }
  return token;
}

void append_escaped_pointer_token(std::string& out, std::string_view token) {
  // Runs without '~' or '/' (nearly every token) are appended whole. (A plain loop: find_first_of
  // calls memchr on the two-character set for every character.)
  std::size_t plain = 0;
  for (std::size_t i = 0; i < token.size(); ++i) {
    char c = token[i];
    if (c != '~' && c != '/') continue;
    out.append(token.data() + plain, i - plain);
    out += c == '~' ? "~0" : "~1";
    plain = i + 1;
  }
  out.append(token.data() + plain, token.size() - plain);
}

JsonPointer& JsonPointer::operator/=(std::string_view token) {
  text_ += '/';
  append_escaped_pointer_token(text_, token);
  return *this;
}

JsonPointer& JsonPointer::operator/=(std::size_t index) {
  char digits[24];
  auto end = std::to_chars(digits, digits + sizeof digits, index).ptr;
  text_ += '/';
  text_.append(digits, end);
  return *this;
}

JsonPointer JsonPointer::parent_pointer() const {
  std::size_t slash = text_.rfind('/');
  return slash == std::string::npos ? JsonPointer() : JsonPointer(text_.substr(0, slash));
}

std::string JsonPointer::back() const {
  std::size_t slash = text_.rfind('/');
  return slash == std::string::npos ? std::string() : unescape_pointer_token(std::string_view(text_).substr(slash + 1));
}

std::vector<std::string> JsonPointer::tokens() const {
  std::vector<std::string> tokens;
  for_each_escaped([&](std::string_view token) {
    tokens.push_back(unescape_pointer_token(token));
    return true;
  });
  return tokens;
}

}  // namespace karta
