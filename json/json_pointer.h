#pragma once

// A JSON Pointer (RFC 6901) held as its escaped text ("/spec/a~1b/0"). It stands in for
// nlohmann::json::json_pointer on the request path: appending a token is one append, and walking one
// costs no copies, where nlohmann's keeps a vector of tokens and rebuilds its text on every
// to_string(). The pod-template locator, the patch builder and find_at work with these.
//
// The text is kept inline up to kInlineSize bytes, on the heap only beyond: a pod template's pointers
// ("/spec/replicatedJobs/0/template/spec/template/metadata/annotations", 67 bytes) are built, copied and
// extended several times per admission, and std::string's 15 inline bytes made each of those an
// allocation (bench/README.md, issue 24).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory_resource>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/container/small_vector.hpp>

namespace karta {

// Whether the escaped pointer `pointer` is `prefix` or lies under it ("/a/b" is under "/a", "/ab" is not).
inline bool at_or_under(std::string_view pointer, std::string_view prefix) {
  return pointer.starts_with(prefix) && (pointer.size() == prefix.size() || pointer[prefix.size()] == '/');
}

// A hash of an escaped pointer's text, for tables of pointers: inline, sixteen bytes at a time in two
// independent lanes, so that a sixty-byte path (a pod template's labels) waits on four multiplications in
// a row, not eight (std::hash's out-of-line call was 2.7% of the demo JobSet's admission; one lane of
// this, 3%: bench/README.md, issue 24). Not for untrusted keys an attacker could collide: the tables it
// serves hold the patch's own paths.
inline std::size_t hash_pointer_text(std::string_view text) {
  auto mix = [](std::uint64_t h, std::uint64_t word) {
    h = (h ^ word) * 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 31);
  };
  std::uint64_t a = 0x9E3779B97F4A7C15ull ^ text.size();
  std::uint64_t b = 0xC2B2AE3D27D4EB4Full;
  const char* p = text.data();
  std::size_t n = text.size();
  for (; n >= 16; p += 16, n -= 16) {
    std::uint64_t first, second;
    std::memcpy(&first, p, 8);
    std::memcpy(&second, p + 8, 8);
    a = mix(a, first);
    b = mix(b, second);
  }
  if (n >= 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    a = mix(a, word);
    p += 8;
    n -= 8;
  }
  if (n != 0) {
    std::uint64_t word = 0;
    std::memcpy(&word, p, n);
    b = mix(b, word);
  }
  const std::uint64_t h = mix(a, b * 0x94D049BB133111EBull);
  return static_cast<std::size_t>(h ^ (h >> 29));
}

// The number of reference tokens of an escaped pointer's text, without splitting it: its '/'s (an
// escaped '/' is "~1").
inline std::size_t escaped_token_count(std::string_view escaped) {
  return static_cast<std::size_t>(std::count(escaped.begin(), escaped.end(), '/'));
}

// Calls visit(escaped_token) for each reference token of an escaped pointer's text (empty, or starting
// with '/'), in order; each token is a view into `escaped`. Stops, returning false, when visit does.
template <typename Visit>
bool for_each_escaped_token(std::string_view escaped, Visit&& visit) {
  std::string_view rest = escaped;
  while (!rest.empty()) {
    rest.remove_prefix(1);
    std::size_t end = rest.find('/');
    if (!visit(rest.substr(0, end))) return false;
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end);
  }
  return true;
}

class JsonPointer {
 public:
  static constexpr std::size_t kInlineSize = 88;
  using Text = boost::container::small_vector<char, kInlineSize>;

  JsonPointer() = default;
  // From escaped text: empty (the whole document) or starting with '/'.
  explicit JsonPointer(std::string_view escaped) : text_(escaped.begin(), escaped.end()) {}

  std::string_view text() const { return {text_.data(), text_.size()}; }
  std::string to_string() const { return std::string(text()); }
  bool empty() const { return text_.empty(); }

  JsonPointer& operator/=(std::string_view token);  // an unescaped token
  JsonPointer& operator/=(std::size_t index);
  // Appends reference tokens already escaped, each with its '/' ("/a~1b/c"): a path compiled once
  // appends its tokens without scanning them again per request.
  JsonPointer& append_escaped(std::string_view escaped_tokens);
  // By value and returned as is, so `a / "b" / "c"` moves one string along instead of copying it.
  friend JsonPointer operator/(JsonPointer pointer, std::string_view token) {
    pointer /= token;
    return pointer;
  }
  friend JsonPointer operator/(JsonPointer pointer, std::size_t index) {
    pointer /= index;
    return pointer;
  }

  // Drops the text past `size` bytes (a size this pointer had before tokens were appended).
  void truncate(std::size_t size) { text_.resize(size < text_.size() ? size : text_.size()); }

  JsonPointer parent_pointer() const;
  std::string back() const;               // the last token, unescaped
  std::vector<std::string> tokens() const;  // every token, unescaped

  friend bool operator==(const JsonPointer& a, const JsonPointer& b) { return a.text() == b.text(); }

  // Calls visit(escaped_token) for each token, in order, without copying; stops when it returns false.
  template <typename Visit>
  bool for_each_escaped(Visit&& visit) const {
    return for_each_escaped_token(text(), std::forward<Visit>(visit));
  }

 private:
  Text text_;
};

// "~1" is '/', "~0" is '~'.
std::string unescape_pointer_token(std::string_view escaped);
void append_escaped_pointer_token(std::string& out, std::string_view token);
void append_escaped_pointer_token(std::pmr::string& out, std::string_view token);
// The length of `token` escaped, and `token` written escaped at `out` (which has room for that many
// bytes), returning the end: for a text sized once and written in place (the patch builder's paths).
std::size_t escaped_pointer_token_size(std::string_view token);
char* write_escaped_pointer_token(char* out, std::string_view token);

}  // namespace karta
