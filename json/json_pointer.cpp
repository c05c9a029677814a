#include "json/json_pointer.h"

#include <charconv>
#include <cstring>

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

namespace {

// Runs without '~' or '/' are appended whole. The specials are found with memchr (a token has none, or a
// label key's one '/'), each character's next place looked for again only once it has been passed, so a
// token full of them is still read once.
template <typename Out, typename Append>
void append_escaped(Out& out, std::string_view token, Append append) {
  const char* const begin = token.data();
  const char* const end = begin + token.size();
  auto next = [end](const char* from, char c) {
    const void* found = from < end ? std::memchr(from, c, static_cast<std::size_t>(end - from)) : nullptr;
    return found != nullptr ? static_cast<const char*>(found) : end;
  };
  const char* slash = next(begin, '/');
  const char* tilde = next(begin, '~');
  const char* plain = begin;  // start of the run not yet appended
  while (slash != end || tilde != end) {
    const char* special = slash < tilde ? slash : tilde;
    append(out, std::string_view(plain, static_cast<std::size_t>(special - plain)));
    append(out, std::string_view(special == slash ? "~1" : "~0"));
    plain = special + 1;
    // The one passed is looked for again. (Compared, not chosen by `special == slash`: GCC, inlining this
    // at link time, could not tell that slash and tilde never meet, and warned of a run of -1 bytes.)
    if (slash < plain) slash = next(plain, '/');
    if (tilde < plain) tilde = next(plain, '~');
  }
  append(out, std::string_view(plain, static_cast<std::size_t>(end - plain)));
}

// Grown once and copied into, not inserted through small_vector's generic range insert.
void append_text(JsonPointer::Text& out, std::string_view text) {
  if (text.empty()) return;
  const std::size_t size = out.size();
  out.resize(size + text.size(), boost::container::default_init);
  std::memcpy(out.data() + size, text.data(), text.size());
}

void append_escaped_text(JsonPointer::Text& out, std::string_view token) { append_escaped(out, token, append_text); }

}  // namespace

void append_escaped_pointer_token(std::string& out, std::string_view token) {
  append_escaped(out, token, [](std::string& o, std::string_view text) { o.append(text); });
}

void append_escaped_pointer_token(std::pmr::string& out, std::string_view token) {
  append_escaped(out, token, [](std::pmr::string& o, std::string_view text) { o.append(text); });
}

std::size_t escaped_pointer_token_size(std::string_view token) {
  std::size_t size = token.size();
  for (char c : token) size += static_cast<std::size_t>(c == '/' || c == '~');
  return size;
}

char* write_escaped_pointer_token(char* out, std::string_view token) {
  append_escaped(out, token, [](char*& o, std::string_view text) {
    std::memcpy(o, text.data(), text.size());
    o += text.size();
  });
  return out;
}

JsonPointer& JsonPointer::operator/=(std::string_view token) {
  text_.push_back('/');
  append_escaped_text(text_, token);
  return *this;
}

JsonPointer& JsonPointer::append_escaped(std::string_view escaped_tokens) {
  append_text(text_, escaped_tokens);
  return *this;
}

JsonPointer& JsonPointer::operator/=(std::size_t index) {
  char digits[24];
  digits[0] = '/';
  auto end = std::to_chars(digits + 1, digits + sizeof digits, index).ptr;
  append_text(text_, std::string_view(digits, static_cast<std::size_t>(end - digits)));
  return *this;
}

JsonPointer JsonPointer::parent_pointer() const {
  std::size_t slash = text().rfind('/');
  return slash == std::string_view::npos ? JsonPointer() : JsonPointer(text().substr(0, slash));
}

std::string JsonPointer::back() const {
  std::size_t slash = text().rfind('/');
  return slash == std::string_view::npos ? std::string() : unescape_pointer_token(text().substr(slash + 1));
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
