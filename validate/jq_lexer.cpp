#include "validate/jq_lexer.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

namespace karta {

std::string jq_source_position(std::string_view source, std::size_t offset) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < offset && i < source.size(); ++i) {
    if (source[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  if (source.find('\n') == std::string_view::npos) return "column " + std::to_string(column);
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

namespace {

// ---------------------------------------------------------------------------------------------------
// Tokenizer: jq 1.6's lexer (src/lexer.l), rule for rule where it matters.

constexpr std::array<std::string_view, 19> kKeywords = {
    "__loc__", "and",    "as",      "break", "catch",  "def", "elif",   "else", "end", "foreach",
    "if",      "import", "include", "label", "module", "or",  "reduce", "then", "try"};

bool is_keyword(std::string_view word) {
  return std::find(kKeywords.begin(), kKeywords.end(), word) != kKeywords.end();
}

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

void append_utf8(std::string& out, std::uint32_t code) {
  if (code < 0x80) {
    out.push_back(static_cast<char>(code));
  } else if (code < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (code >> 6)));
    out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
  } else if (code < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (code >> 12)));
    out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (code >> 18)));
    out.push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
  }
}

class Lexer {
 public:
  explicit Lexer(std::string_view source) : src_(source) {}

  // Tokens from the current position to the end of the source or, in an interpolation, to the `)`
  // that closes it. False on an error (recorded in error_).
  bool run(std::vector<JqToken>& out, std::optional<std::size_t> interpolation_start) {
    std::vector<std::pair<char, std::size_t>> open;  // bracket, where
    for (;;) {
      skip_blank();
      if (pos_ >= src_.size()) {
        if (!open.empty())
          return fail(open.back().second, "`" + std::string(1, open.back().first) + "` at " +
                                              jq_source_position(open.back().second) + " is never closed");
        if (interpolation_start)
          return fail(*interpolation_start,
                      "the interpolation `\\(` at " + jq_source_position(*interpolation_start) + " is never closed");
        return true;
      }
      const std::size_t start = pos_;
      const char c = src_[pos_];
      if (c == ')' && open.empty() && interpolation_start) {
        ++pos_;
        return true;
      }
      if (c == '"') {
        JqToken token;
        if (!string(token)) return false;
        out.push_back(std::move(token));
        continue;
      }
      if (c == '.') {
        if (!dot(out)) return false;
        continue;
      }
      if (is_digit(c)) {
        while (pos_ < src_.size() && is_digit(src_[pos_])) ++pos_;
        if (pos_ < src_.size() && src_[pos_] == '.') {
          ++pos_;
          while (pos_ < src_.size() && is_digit(src_[pos_])) ++pos_;
        }
        exponent();
        push(out, JqToken::Kind::Number, start);
        continue;
      }
      if (is_ident_start(c)) {
        identifier();
        std::string_view word = src_.substr(start, pos_ - start);
        push(out, is_keyword(word) ? JqToken::Kind::Keyword : JqToken::Kind::Identifier, start);
        continue;
      }
      if (c == '$') {
        ++pos_;
        skip_blank();
        const std::size_t name_start = pos_;
        if (pos_ >= src_.size() || !is_ident_start(src_[pos_]))
          return fail(start, "`$` at " + jq_source_position(start) + " is not followed by a variable name");
        while (pos_ < src_.size() && is_ident_char(src_[pos_])) ++pos_;
        std::string name(src_.substr(name_start, pos_ - name_start));
        if (name != "__loc__" && is_keyword(name))
          return fail(start, "`$" + name + "` at " + jq_source_position(start) + " is not a variable: `" + name + "` is a keyword");
        JqToken token{JqToken::Kind::Variable, "$" + name, start, pos_, std::nullopt, {}};
        out.push_back(std::move(token));
        continue;
      }
      if (c == '@') {
        ++pos_;
        while (pos_ < src_.size() && is_ident_char(src_[pos_])) ++pos_;
        if (pos_ == start + 1) return fail(start, "`@` at " + jq_source_position(start) + " is not followed by a format name");
        push(out, JqToken::Kind::Format, start);
        continue;
      }
      if (c == '(' || c == '[' || c == '{') {
        open.emplace_back(c, start);
        ++pos_;
        push(out, JqToken::Kind::Punct, start);
        continue;
      }
      if (c == ')' || c == ']' || c == '}') {
        const char expected = c == ')' ? '(' : c == ']' ? '[' : '{';
        if (open.empty()) return fail(start, "`" + std::string(1, c) + "` at " + jq_source_position(start) + " closes nothing");
        if (open.back().first != expected)
          return fail(start, "`" + std::string(1, c) + "` at " + jq_source_position(start) + " does not close `" +
                                 std::string(1, open.back().first) + "` at " + jq_source_position(open.back().second));
        open.pop_back();
        ++pos_;
        push(out, JqToken::Kind::Punct, start);
        continue;
      }
      static constexpr std::array<std::string_view, 14> kLong = {
          "?//", "//=", "|=", "+=", "-=", "*=", "/=", "%=", "==", "!=", "<=", ">=", "//", "?"};
      bool matched = false;
      for (std::string_view op : kLong) {
        if (src_.substr(pos_, op.size()) == op) {
          pos_ += op.size();
          matched = true;
          break;
        }
      }
      if (!matched && std::string_view("|,;:=<>+-*/%").find(c) != std::string_view::npos) {
        ++pos_;
        matched = true;
      }
      if (!matched) {
        std::string shown = static_cast<unsigned char>(c) < 0x20    ? "a control character"
                            : static_cast<unsigned char>(c) >= 0x80 ? "a non-ASCII character"
                                                                    : "`" + std::string(1, c) + "`";
        return fail(start, shown + " at " + jq_source_position(start) + " is not part of jq's syntax");
      }
      push(out, JqToken::Kind::Punct, start);
    }
  }

  const std::optional<std::string>& error() const { return error_; }
  std::size_t error_offset() const { return error_offset_; }

 private:
  std::string jq_source_position(std::size_t offset) const { return karta::jq_source_position(src_, offset); }

  bool fail(std::size_t offset, std::string message) {
    if (!error_) {
      error_ = std::move(message);
      error_offset_ = offset;
    }
    return false;
  }

  void push(std::vector<JqToken>& out, JqToken::Kind kind, std::size_t start) {
    out.push_back(JqToken{kind, std::string(src_.substr(start, pos_ - start)), start, pos_, std::nullopt, {}});
  }

  void skip_blank() {
    while (pos_ < src_.size()) {
      char c = src_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < src_.size() && src_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  // ([a-zA-Z_][a-zA-Z_0-9]*::)*[a-zA-Z_][a-zA-Z_0-9]*
  void identifier() {
    for (;;) {
      while (pos_ < src_.size() && is_ident_char(src_[pos_])) ++pos_;
      if (src_.substr(pos_, 2) == "::" && pos_ + 2 < src_.size() && is_ident_start(src_[pos_ + 2])) {
        pos_ += 2;
        continue;
      }
      return;
    }
  }

  // [eE][+-]?[0-9]+, when present.
  bool exponent() {
    if (pos_ >= src_.size() || (src_[pos_] != 'e' && src_[pos_] != 'E')) return false;
    std::size_t p = pos_ + 1;
    if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
    if (p >= src_.size() || !is_digit(src_[p])) return false;
    while (p < src_.size() && is_digit(src_[p])) ++p;
    pos_ = p;
    return true;
  }

  // `..`, a number such as `.5`, a field `.name`, or a lone `.`. When a number and a field are as long
  // (`.e1`), flex takes the earlier rule, the number, and jq then fails to read it.
  bool dot(std::vector<JqToken>& out) {
    const std::size_t start = pos_;
    if (src_.substr(pos_, 2) == "..") {
      pos_ += 2;
      push(out, JqToken::Kind::Recurse, start);
      return true;
    }
    std::size_t field_end = start + 1;
    if (field_end < src_.size() && is_ident_start(src_[field_end]))
      while (field_end < src_.size() && is_ident_char(src_[field_end])) ++field_end;
    pos_ = start + 1;
    std::size_t digits = 0;
    while (pos_ < src_.size() && is_digit(src_[pos_])) ++pos_, ++digits;
    bool has_exponent = exponent();
    const std::size_t number_end = pos_;
    if ((digits > 0 || has_exponent) && number_end - start >= field_end - start) {
      if (digits == 0) {
        std::string text(src_.substr(start, number_end - start));
        return fail(start, "jq 1.6 reads `" + text + "` at " + jq_source_position(start) + " as a malformed number; write `.[\"" +
                               text.substr(1) + "\"]`");
      }
      push(out, JqToken::Kind::Number, start);
      return true;
    }
    pos_ = field_end;
    push(out, field_end > start + 1 ? JqToken::Kind::Field : JqToken::Kind::Dot, start);
    return true;
  }

  bool string(JqToken& token) {
    const std::size_t start = pos_;
    token.kind = JqToken::Kind::String;
    token.offset = start;
    std::string value;
    bool interpolated = false;
    ++pos_;
    for (;;) {
      if (pos_ >= src_.size()) return fail(start, "the string starting at " + jq_source_position(start) + " is not terminated");
      char c = src_[pos_];
      if (c == '"') {
        ++pos_;
        break;
      }
      if (c != '\\') {
        value.push_back(c);
        ++pos_;
        continue;
      }
      const std::size_t escape = pos_;
      if (pos_ + 1 >= src_.size()) return fail(start, "the string starting at " + jq_source_position(start) + " is not terminated");
      char e = src_[pos_ + 1];
      pos_ += 2;
      switch (e) {
        case '"':
          value.push_back('"');
          break;
        case '\\':
          value.push_back('\\');
          break;
        case '/':
          value.push_back('/');
          break;
        case 'b':
          value.push_back('\b');
          break;
        case 'f':
          value.push_back('\f');
          break;
        case 'n':
          value.push_back('\n');
          break;
        case 'r':
          value.push_back('\r');
          break;
        case 't':
          value.push_back('\t');
          break;
        case 'u': {
          auto hex4 = [&](std::size_t at) -> std::optional<std::uint32_t> {
            if (at + 4 > src_.size()) return std::nullopt;
            std::uint32_t v = 0;
            for (std::size_t i = at; i < at + 4; ++i) {
              if (!is_hex(src_[i])) return std::nullopt;
              char h = src_[i];
              v = v * 16 + static_cast<std::uint32_t>(is_digit(h) ? h - '0' : (h | 0x20) - 'a' + 10);
            }
            return v;
          };
          auto code = hex4(pos_);
          if (!code) return fail(escape, "the escape `\\u` at " + jq_source_position(escape) + " needs four hexadecimal digits");
          pos_ += 4;
          if (*code >= 0xD800 && *code < 0xDC00 && src_.substr(pos_, 2) == "\\u") {
            auto low = hex4(pos_ + 2);
            if (low && *low >= 0xDC00 && *low < 0xE000) {
              *code = 0x10000 + ((*code - 0xD800) << 10) + (*low - 0xDC00);
              pos_ += 6;
            }
          }
          if (*code >= 0xD800 && *code < 0xE000) *code = 0xFFFD;
          append_utf8(value, *code);
          break;
        }
        case '(': {
          std::vector<JqToken> inner;
          if (!run(inner, escape)) return false;
          token.interpolations.push_back(std::move(inner));
          interpolated = true;
          break;
        }
        default:
          return fail(escape, "`\\" + std::string(1, e) + "` at " + jq_source_position(escape) + " is not a valid escape");
      }
    }
    token.end = pos_;
    token.text = std::string(src_.substr(start, pos_ - start));
    if (!interpolated) token.value = std::move(value);
    return true;
  }

  std::string_view src_;
  std::size_t pos_ = 0;
  std::optional<std::string> error_;
  std::size_t error_offset_ = 0;
};

}  // namespace

JqTokens tokenize_jq(std::string_view expression) {
  JqTokens result;
  Lexer lexer(expression);
  if (!lexer.run(result.tokens, std::nullopt)) {
    result.error = lexer.error();
    result.error_offset = lexer.error_offset();
  }
  return result;
}

}  // namespace karta
