#include "definitions/json_pointer.h"

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
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
}

JsonPointer& JsonPointer::operator/=(std::string_view token) {
  text_ += '/';
  append_escaped_pointer_token(text_, token);
  return *this;
}

JsonPointer& JsonPointer::operator/=(std::size_t index) {
  text_ += '/';
  text_ += std::to_string(index);
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
