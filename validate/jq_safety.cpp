#include "validate/jq_safety.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <set>
#include <utility>

namespace karta {
namespace {

// ---------------------------------------------------------------------------------------------------
// Tokenizer: jq 1.6's lexer (src/lexer.l), rule for rule where it matters.

constexpr std::array<std::string_view, 19> kKeywords = {
    "__loc__", "and",    "as",      "break", "catch",  "def", "elif",   "else", "end", "foreach",
    "if",      "import", "include", "label", "module", "or",  "reduce", "then", "try"};

bool is_keyword(std::string_view word) {
  return std::find(kKeywords.begin(), kKeywords.end(), word) != kKeywords.end();
}

// "column 4", or "line 2, column 4" in a multi-line expression.
std::string where(std::string_view source, std::size_t offset) {
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
                                              where(open.back().second) + " is never closed");
        if (interpolation_start)
          return fail(*interpolation_start,
                      "the interpolation `\\(` at " + where(*interpolation_start) + " is never closed");
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
          return fail(start, "`$` at " + where(start) + " is not followed by a variable name");
        while (pos_ < src_.size() && is_ident_char(src_[pos_])) ++pos_;
        std::string name(src_.substr(name_start, pos_ - name_start));
        if (name != "__loc__" && is_keyword(name))
          return fail(start, "`$" + name + "` at " + where(start) + " is not a variable: `" + name + "` is a keyword");
        JqToken token{JqToken::Kind::Variable, "$" + name, start, pos_, std::nullopt, {}};
        out.push_back(std::move(token));
        continue;
      }
      if (c == '@') {
        ++pos_;
        while (pos_ < src_.size() && is_ident_char(src_[pos_])) ++pos_;
        if (pos_ == start + 1) return fail(start, "`@` at " + where(start) + " is not followed by a format name");
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
        if (open.empty()) return fail(start, "`" + std::string(1, c) + "` at " + where(start) + " closes nothing");
        if (open.back().first != expected)
          return fail(start, "`" + std::string(1, c) + "` at " + where(start) + " does not close `" +
                                 std::string(1, open.back().first) + "` at " + where(open.back().second));
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
        return fail(start, shown + " at " + where(start) + " is not part of jq's syntax");
      }
      push(out, JqToken::Kind::Punct, start);
    }
  }

  const std::optional<std::string>& error() const { return error_; }
  std::size_t error_offset() const { return error_offset_; }

 private:
  std::string where(std::size_t offset) const { return karta::where(src_, offset); }

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
        return fail(start, "jq 1.6 reads `" + text + "` at " + where(start) + " as a malformed number; write `.[\"" +
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
      if (pos_ >= src_.size()) return fail(start, "the string starting at " + where(start) + " is not terminated");
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
      if (pos_ + 1 >= src_.size()) return fail(start, "the string starting at " + where(start) + " is not terminated");
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
          if (!code) return fail(escape, "the escape `\\u` at " + where(escape) + " needs four hexadecimal digits");
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
          return fail(escape, "`\\" + std::string(1, e) + "` at " + where(escape) + " is not a valid escape");
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

// ---------------------------------------------------------------------------------------------------
// What is allowed.

struct Builtin {
  std::string_view name;
  int arity;
  constexpr bool operator<(const Builtin& other) const {
    return name < other.name || (name == other.name && arity < other.arity);
  }
};

// jq 1.6 builtins a definition may call, by name and arity. Sorted (checked below) for binary search.
constexpr std::array kAllowedBuiltins = std::to_array<Builtin>({
    {"IN", 1},
    {"IN", 2},
    {"add", 0},
    {"all", 0},
    {"all", 1},
    {"all", 2},
    {"any", 0},
    {"any", 1},
    {"any", 2},
    {"arrays", 0},
    {"ascii_downcase", 0},
    {"ascii_upcase", 0},
    {"booleans", 0},
    {"bsearch", 1},
    {"ceil", 0},
    {"contains", 1},
    {"empty", 0},
    {"endswith", 1},
    {"error", 0},
    {"error", 1},
    {"explode", 0},
    {"fabs", 0},
    {"first", 0},
    {"first", 1},
    {"flatten", 0},
    {"flatten", 1},
    {"floor", 0},
    {"from_entries", 0},
    {"fromjson", 0},
    {"getpath", 1},
    {"group_by", 1},
    {"has", 1},
    {"implode", 0},
    {"in", 1},
    {"index", 1},
    {"indices", 1},
    {"infinite", 0},
    {"inside", 1},
    {"isempty", 1},
    {"isinfinite", 0},
    {"isnan", 0},
    {"isnormal", 0},
    {"iterables", 0},
    {"join", 1},
    {"keys", 0},
    {"keys_unsorted", 0},
    {"last", 0},
    {"last", 1},
    {"length", 0},
    {"ltrimstr", 1},
    {"map", 1},
    {"map_values", 1},
    {"max", 0},
    {"max_by", 1},
    {"min", 0},
    {"min_by", 1},
    {"nan", 0},
    {"not", 0},
    {"nth", 1},
    {"nth", 2},
    {"nulls", 0},
    {"numbers", 0},
    {"objects", 0},
    {"path", 1},
    {"reverse", 0},
    {"rindex", 1},
    {"round", 0},
    {"rtrimstr", 1},
    {"scalars", 0},
    {"select", 1},
    {"sort", 0},
    {"sort_by", 1},
    {"split", 1},
    {"sqrt", 0},
    {"startswith", 1},
    {"strings", 0},
    {"to_entries", 0},
    {"tojson", 0},
    {"tonumber", 0},
    {"tostring", 0},
    {"transpose", 0},
    {"type", 0},
    {"unique", 0},
    {"unique_by", 1},
    {"utf8bytelength", 0},
    {"values", 0},
    {"with_entries", 1},
});
static_assert(std::is_sorted(kAllowedBuiltins.begin(), kAllowedBuiltins.end()));
static_assert(std::adjacent_find(kAllowedBuiltins.begin(), kAllowedBuiltins.end(),
                                 [](const Builtin& a, const Builtin& b) { return !(a < b); }) ==
              kAllowedBuiltins.end());

bool is_allowed_builtin(std::string_view name, int arity) {
  return std::binary_search(kAllowedBuiltins.begin(), kAllowedBuiltins.end(), Builtin{name, arity});
}

constexpr std::string_view kEnvironment = "it would expose the webhook's environment";
constexpr std::string_view kInput = "it would read input other than the admitted object";
constexpr std::string_view kLog = "it would write to the webhook's standard error";
constexpr std::string_view kRuntime = "it inspects the jq runtime, not the admitted object";
constexpr std::string_view kHalt = "it would stop jq instead of producing a value";
constexpr std::string_view kModule = "a definition cannot load jq modules";
constexpr std::string_view kRecursion = "it recurses through the whole value, however deep; name the fields instead";
constexpr std::string_view kGenerator = "it is a generator whose length the admitted object does not bound";
constexpr std::string_view kLimit = "it exists to cut unbounded generators, which are not allowed";
constexpr std::string_view kStream = "it streams every leaf of the value, however deep";
constexpr std::string_view kDef = "a user-defined function can recurse forever";
constexpr std::string_view kLabel = "labels exist to stop unbounded generators, which are not allowed";
constexpr std::string_view kUpdate = "a definition reads the object and never updates it";
constexpr std::string_view kRegex = "regular expressions can take exponential time on crafted input";
constexpr std::string_view kTime = "time functions depend on the clock, the time zone or the C library";

struct Refusal {
  std::string_view name;  // a builtin, keyword, variable or operator
  int arity;              // -1: any arity
  std::string_view reason;
};

// Constructs refused with a reason of their own; any other call outside kAllowedBuiltins is refused as
// "not an allowed builtin".
constexpr std::array kRefusals = std::to_array<Refusal>({
    {"env", -1, kEnvironment},
    {"$ENV", -1, kEnvironment},
    {"input", -1, kInput},
    {"inputs", -1, kInput},
    {"debug", -1, kLog},
    {"stderr", -1, kLog},
    {"input_filename", -1, kRuntime},
    {"input_line_number", -1, kRuntime},
    {"$__loc__", -1, kRuntime},
    {"$__prog_args", -1, kRuntime},
    {"builtins", -1, kRuntime},
    {"get_search_list", -1, kRuntime},
    {"get_jq_origin", -1, kRuntime},
    {"get_prog_origin", -1, kRuntime},
    {"modulemeta", -1, kRuntime},
    {"halt", -1, kHalt},
    {"halt_error", -1, kHalt},
    {"import", -1, kModule},
    {"include", -1, kModule},
    {"module", -1, kModule},
    {"..", -1, kRecursion},
    {"recurse", -1, kRecursion},
    {"recurse_down", -1, kRecursion},
    {"walk", -1, kRecursion},
    {"paths", -1, kRecursion},
    {"leaf_paths", -1, kRecursion},
    {"range", -1, kGenerator},
    {"repeat", -1, kGenerator},
    {"while", -1, kGenerator},
    {"until", -1, kGenerator},
    {"combinations", -1, kGenerator},
    {"limit", -1, kLimit},
    {"tostream", -1, kStream},
    {"fromstream", -1, kStream},
    {"truncate_stream", -1, kStream},
    {"def", -1, kDef},
    {"label", -1, kLabel},
    {"break", -1, kLabel},
    {"=", -1, kUpdate},
    {"|=", -1, kUpdate},
    {"+=", -1, kUpdate},
    {"-=", -1, kUpdate},
    {"*=", -1, kUpdate},
    {"/=", -1, kUpdate},
    {"%=", -1, kUpdate},
    {"//=", -1, kUpdate},
    {"del", -1, kUpdate},
    {"setpath", -1, kUpdate},
    {"delpaths", -1, kUpdate},
    {"test", -1, kRegex},
    {"match", -1, kRegex},
    {"capture", -1, kRegex},
    {"scan", -1, kRegex},
    {"split", 2, kRegex},
    {"splits", -1, kRegex},
    {"sub", -1, kRegex},
    {"gsub", -1, kRegex},
    {"now", -1, kTime},
    {"mktime", -1, kTime},
    {"gmtime", -1, kTime},
    {"localtime", -1, kTime},
    {"strftime", -1, kTime},
    {"strflocaltime", -1, kTime},
    {"strptime", -1, kTime},
    {"todate", -1, kTime},
    {"fromdate", -1, kTime},
    {"todateiso8601", -1, kTime},
    {"fromdateiso8601", -1, kTime},
    {"date", -1, kTime},
    {"dateadd", -1, kTime},
    {"datesub", -1, kTime},
});

const Refusal* find_refusal(std::string_view name, int arity) {
  for (const Refusal& refusal : kRefusals)
    if (refusal.name == name && (refusal.arity == -1 || refusal.arity == arity)) return &refusal;
  return nullptr;
}

constexpr std::array<std::string_view, 9> kFormats = {"base64", "base64d", "csv", "html", "json",
                                                      "sh",     "text",    "tsv", "uri"};

// Index of the bracket that closes the one at `open`, or tokens.size().
std::size_t matching(const std::vector<JqToken>& tokens, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < tokens.size(); ++i) {
    if (tokens[i].kind != JqToken::Kind::Punct) continue;
    const std::string& t = tokens[i].text;
    if (t == "(" || t == "[" || t == "{") ++depth;
    if (t == ")" || t == "]" || t == "}") {
      if (--depth == 0) return i;
    }
  }
  return tokens.size();
}

bool is_punct(const JqToken& token, std::string_view text) {
  return token.kind == JqToken::Kind::Punct && token.text == text;
}

// The arguments of the call whose `(` is at `open`: [begin, end) token ranges split at top-level `;`.
std::vector<std::pair<std::size_t, std::size_t>> call_arguments(const std::vector<JqToken>& tokens, std::size_t open) {
  std::vector<std::pair<std::size_t, std::size_t>> arguments;
  const std::size_t close = matching(tokens, open);
  int depth = 0;
  std::size_t begin = open + 1;
  for (std::size_t i = open + 1; i < close; ++i) {
    const JqToken& token = tokens[i];
    if (token.kind != JqToken::Kind::Punct) continue;
    if (token.text == "(" || token.text == "[" || token.text == "{") ++depth;
    if (token.text == ")" || token.text == "]" || token.text == "}") --depth;
    if (depth == 0 && token.text == ";") {
      arguments.emplace_back(begin, i);
      begin = i + 1;
    }
  }
  arguments.emplace_back(begin, close);
  return arguments;
}

struct Located {
  std::size_t offset;
  JqSafetyFault fault;
};

class SafetyChecker {
 public:
  explicit SafetyChecker(std::string_view source) : source_(source) {}

  void collect_definitions(const std::vector<JqToken>& tokens) {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      for (const auto& inner : tokens[i].interpolations) collect_definitions(inner);
      if (tokens[i].kind != JqToken::Kind::Keyword || tokens[i].text != "def") continue;
      if (i + 1 >= tokens.size() || tokens[i + 1].kind != JqToken::Kind::Identifier) continue;
      user_functions_.insert(tokens[i + 1].text);
      if (i + 2 < tokens.size() && is_punct(tokens[i + 2], "(")) {
        const std::size_t close = matching(tokens, i + 2);
        for (std::size_t j = i + 3; j < close; ++j)
          if (tokens[j].kind == JqToken::Kind::Identifier) user_functions_.insert(tokens[j].text);
      }
    }
  }

  void check(const std::vector<JqToken>& tokens) {
    struct Frame {
      char open;
      bool key_expected;
    };
    std::vector<Frame> frames;
    // Destructuring: `?//` is only valid right after a pattern (`as $x ?// [$x]`).
    constexpr std::size_t kNone = static_cast<std::size_t>(-1);
    std::size_t pattern_depth = kNone;  // the bracket depth of the pattern being read, if any
    std::size_t pattern_ended = kNone;  // index of the token that ended the last pattern
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      const JqToken& token = tokens[i];
      const bool key_position = !frames.empty() && frames.back().open == '{' && frames.back().key_expected;
      if (key_position) frames.back().key_expected = false;
      switch (token.kind) {
        case JqToken::Kind::Identifier: {
          if (key_position) break;  // {name: ...} or {name}
          // `def name`, and `import "m" as name` (whose `import` is refused already).
          if (i > 0 && tokens[i - 1].kind == JqToken::Kind::Keyword &&
              (tokens[i - 1].text == "def" || tokens[i - 1].text == "as"))
            break;
          const bool has_arguments = i + 1 < tokens.size() && is_punct(tokens[i + 1], "(");
          if (!has_arguments && (token.text == "true" || token.text == "false" || token.text == "null")) break;
          int arity = 0;
          std::vector<std::pair<std::size_t, std::size_t>> arguments;
          if (has_arguments) {
            arguments = call_arguments(tokens, i + 1);
            arity = static_cast<int>(arguments.size());
          }
          check_call(tokens, i, arity, arguments);
          break;
        }
        case JqToken::Kind::Keyword:
          if (key_position) break;  // {if: 1}
          if (token.text == "def" || token.text == "import" || token.text == "include" || token.text == "module" ||
              token.text == "label" || token.text == "break") {
            refuse(token.offset, token.text);
          } else if (token.text == "as") {
            pattern_depth = frames.size();
            pattern_ended = kNone;
          }
          break;
        case JqToken::Kind::Variable:
          if (token.text == "$ENV" || token.text == "$__loc__" || token.text == "$__prog_args")
            refuse(token.offset, token.text);
          if (pattern_depth == frames.size()) {
            pattern_ended = i;
            pattern_depth = kNone;
          }
          break;
        case JqToken::Kind::Recurse:
          refuse(token.offset, "..");
          break;
        case JqToken::Kind::String:
          for (const auto& inner : token.interpolations) check(inner);
          break;
        case JqToken::Kind::Format: {
          std::string_view name = std::string_view(token.text).substr(1);
          if (std::find(kFormats.begin(), kFormats.end(), name) == kFormats.end())
            add(token.offset, token.text, "`" + token.text + "` is not a format jq 1.6 knows");
          break;
        }
        case JqToken::Kind::Punct: {
          const std::string& t = token.text;
          if (t == "[" && i > 0 && ends_term(tokens[i - 1])) check_index(tokens, i);
          if (t == "%" && (i + 1 >= tokens.size() || tokens[i + 1].kind != JqToken::Kind::Number))
            add(token.offset, "%",
                "`%` is allowed only with a number literal on its right: jq 1.6 crashes the process on `x % -1` "
                "when x is beyond 64 bits");
          if (t == "(" || t == "[" || t == "{") {
            frames.push_back({t[0], t == "{"});
          } else if (t == ")" || t == "]" || t == "}") {
            if (!frames.empty()) frames.pop_back();
            if (pattern_depth == frames.size()) {
              pattern_ended = i;
              pattern_depth = kNone;
            }
          } else if (t == "," && !frames.empty() && frames.back().open == '{') {
            frames.back().key_expected = true;
          } else if (t == "?//") {
            if (pattern_ended != kNone && pattern_ended + 1 == i) {
              pattern_depth = frames.size();
              pattern_ended = kNone;
            } else {
              add(token.offset, "parse",
                  "does not parse: jq 1.6 reads `?//` at " + where(token.offset) +
                      " as the alternative of a destructuring pattern; write `? //`");
            }
          } else if (find_refusal(t, -1) != nullptr) {
            refuse(token.offset, t);
          }
          break;
        }
        case JqToken::Kind::Field:
        case JqToken::Kind::Dot:
        case JqToken::Kind::Number:
          break;
      }
    }
  }

  std::vector<JqSafetyFault> faults() {
    std::stable_sort(found_.begin(), found_.end(),
                     [](const Located& a, const Located& b) { return a.offset < b.offset; });
    std::vector<JqSafetyFault> faults;
    for (auto& located : found_) faults.push_back(std::move(located.fault));
    return faults;
  }

  void add(std::size_t offset, std::string construct, std::string message) {
    found_.push_back({offset, {std::move(construct), std::move(message)}});
  }

  std::string where(std::size_t offset) const { return karta::where(source_, offset); }

 private:
  void refuse(std::size_t offset, const std::string& construct, int arity = -1) {
    const Refusal* refusal = find_refusal(construct, arity);
    std::string shown =
        refusal != nullptr && refusal->arity != -1 ? construct + "/" + std::to_string(arity) : construct;
    add(offset, shown, "`" + shown + "` is not allowed: " + std::string(refusal->reason));
  }

  void check_call(const std::vector<JqToken>& tokens, std::size_t at, int arity,
                  const std::vector<std::pair<std::size_t, std::size_t>>& arguments) {
    const JqToken& token = tokens[at];
    const std::string& name = token.text;
    if (user_functions_.count(name) != 0) return;  // the `def` is refused already
    if (find_refusal(name, arity) != nullptr) {
      refuse(token.offset, name, arity);
      return;
    }
    std::string shown = name + "/" + std::to_string(arity);
    if (!is_allowed_builtin(name, arity)) {
      add(token.offset, shown, "`" + shown + "` is not an allowed builtin");
      return;
    }
    // A path may hold a slice ({"start": ..., "end": ...}), on which jq 1.6 aborts when a bound is NaN.
    if (name == "getpath" && !literal_path(tokens, arguments.front().first, arguments.front().second))
      add(token.offset, shown,
          "`getpath/1` is allowed only with a literal path, as in `getpath([\"spec\", 0])`: jq 1.6 aborts the "
          "process on a slice in a path whose bound is NaN");
    // jq 1.6's string search (_strindices) never ends when the string searched for is empty, so these
    // take a non-empty string literal only.
    if (name == "index" || name == "rindex" || name == "indices") {
      const auto [begin, end] = arguments.front();
      const bool literal = end == begin + 1 && tokens[begin].kind == JqToken::Kind::String && tokens[begin].value &&
                           !tokens[begin].value->empty();
      if (!literal)
        add(token.offset, shown,
            "`" + shown +
                "` is allowed only with a non-empty string literal: jq 1.6 loops forever searching for an "
                "empty string");
    }
  }

  // Whether a token ends a term, so that a `[` after it indexes or slices (rather than building a list).
  static bool ends_term(const JqToken& token) {
    switch (token.kind) {
      case JqToken::Kind::Field:
      case JqToken::Kind::Dot:
      case JqToken::Kind::Identifier:
      case JqToken::Kind::Variable:
      case JqToken::Kind::String:
      case JqToken::Kind::Number:
      case JqToken::Kind::Recurse:
        return true;
      case JqToken::Kind::Keyword:
        return token.text == "end";
      case JqToken::Kind::Punct:
        return token.text == ")" || token.text == "]" || token.text == "}" || token.text == "?";
      case JqToken::Kind::Format:
        return false;
    }
    return false;
  }

  // A number literal, possibly negated, or nothing.
  static bool literal_bound(const std::vector<JqToken>& tokens, std::size_t begin, std::size_t end) {
    if (begin < end && is_punct(tokens[begin], "-")) ++begin;
    return begin == end || (end == begin + 1 && tokens[begin].kind == JqToken::Kind::Number);
  }

  // `["spec", 0, "x"]`
  static bool literal_path(const std::vector<JqToken>& tokens, std::size_t begin, std::size_t end) {
    if (end < begin + 2 || !is_punct(tokens[begin], "[") || !is_punct(tokens[end - 1], "]")) return false;
    bool expect_value = true;
    for (std::size_t i = begin + 1; i + 1 < end; ++i) {
      const JqToken& token = tokens[i];
      if (expect_value) {
        if (is_punct(token, "-") && i + 2 < end && tokens[i + 1].kind == JqToken::Kind::Number) {
          ++i;
        } else if (!(token.kind == JqToken::Kind::String && token.value) && token.kind != JqToken::Kind::Number) {
          return false;
        }
      } else if (!is_punct(token, ",")) {
        return false;
      }
      expect_value = !expect_value;
    }
    return !expect_value || end == begin + 2;
  }

  // `X[...]`: jq 1.6 aborts the process (an assertion in parse_slice) on a slice whose start is NaN,
  // which `tonumber` makes of the string "nan". So slice bounds must be literals, and an index must not
  // be an object built by the expression (an object index is a slice: `.[{"start": 1, "end": 2}]`).
  void check_index(const std::vector<JqToken>& tokens, std::size_t open) {
    const std::size_t close = matching(tokens, open);
    if (close >= tokens.size() || close == open + 1) return;
    std::optional<std::size_t> colon;
    int depth = 0;
    for (std::size_t i = open + 1; i < close; ++i) {
      if (is_opener(tokens[i])) ++depth;
      if (is_closer(tokens[i])) --depth;
      if (depth == 0 && is_punct(tokens[i], ":")) {
        colon = i;
        break;
      }
    }
    if (colon) {
      if (!literal_bound(tokens, open + 1, *colon) || !literal_bound(tokens, *colon + 1, close))
        add(tokens[open].offset, "slice",
            "a slice with computed bounds is not allowed: jq 1.6 aborts the process when a bound is NaN; write "
            "number literals, as in `.[1:]`");
      return;
    }
    static constexpr std::array<std::string_view, 4> kObjectBuilders = {"fromjson", "from_entries", "with_entries",
                                                                        "map_values"};
    for (std::size_t i = open + 1; i < close; ++i) {
      const JqToken& token = tokens[i];
      const bool builds_object = is_punct(token, "{") || (token.kind == JqToken::Kind::Identifier &&
                                                          std::find(kObjectBuilders.begin(), kObjectBuilders.end(),
                                                                    token.text) != kObjectBuilders.end());
      if (builds_object) {
        add(tokens[open].offset, "index",
            "an index that may be an object is not allowed: jq 1.6 aborts the process on an object index "
            "(`{start, end}`) holding NaN; index with a string or a number");
        return;
      }
    }
  }

  static bool is_opener(const JqToken& token) {
    return token.kind == JqToken::Kind::Punct && (token.text == "(" || token.text == "[" || token.text == "{");
  }
  static bool is_closer(const JqToken& token) {
    return token.kind == JqToken::Kind::Punct && (token.text == ")" || token.text == "]" || token.text == "}");
  }

  std::string_view source_;
  std::set<std::string> user_functions_;
  std::vector<Located> found_;
};

// ---------------------------------------------------------------------------------------------------
// `*` on strings.

constexpr std::array<std::string_view, 8> kNumericResults = {"tonumber", "length", "utf8bytelength", "floor",
                                                             "ceil",     "round",  "sqrt",           "fabs"};

bool is_operator_token(const JqToken& token) {
  if (token.kind == JqToken::Kind::Keyword)
    return token.text != "end" && token.text != "__loc__";  // `end` closes a term
  if (token.kind != JqToken::Kind::Punct) return false;
  const std::string& t = token.text;
  return t != "(" && t != ")" && t != "[" && t != "]" && t != "{" && t != "}" && t != "?";
}

bool is_closer(const JqToken& token) {
  return token.kind == JqToken::Kind::Punct && (token.text == ")" || token.text == "]" || token.text == "}");
}
bool is_opener(const JqToken& token) {
  return token.kind == JqToken::Kind::Punct && (token.text == "(" || token.text == "[" || token.text == "{");
}

class MultiplicationChecker {
 public:
  explicit MultiplicationChecker(const std::vector<JqToken>& tokens) : tokens_(tokens) {
    partner_.assign(tokens.size(), tokens.size());
    std::vector<std::size_t> open;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      if (is_opener(tokens[i])) open.push_back(i);
      if (is_closer(tokens[i]) && !open.empty()) {
        partner_[i] = open.back();
        partner_[open.back()] = i;
        open.pop_back();
      }
    }
  }

  bool any_unsafe() const {
    for (std::size_t i = 0; i < tokens_.size(); ++i) {
      if (!is_punct(tokens_[i], "*")) continue;
      // The operand on the left: back to the previous operator or unmatched opener at this level.
      std::size_t begin = i;
      while (begin > 0) {
        const JqToken& previous = tokens_[begin - 1];
        if (is_closer(previous) && partner_[begin - 1] < tokens_.size()) {
          begin = partner_[begin - 1];
          continue;
        }
        if (is_opener(previous) || is_operator_token(previous)) break;
        --begin;
      }
      // The operand on the right: an optional unary minus, then up to the next operator or closer.
      std::size_t end = i + 1;
      if (end < tokens_.size() && is_punct(tokens_[end], "-")) ++end;
      while (end < tokens_.size()) {
        const JqToken& next = tokens_[end];
        if (is_opener(next) && partner_[end] < tokens_.size()) {
          end = partner_[end] + 1;
          continue;
        }
        if (is_closer(next) || is_operator_token(next)) break;
        ++end;
      }
      if (!numeric(begin, i) || !numeric(i + 1, end)) return true;
    }
    return false;
  }

 private:
  // Whether [begin, end) visibly yields numbers (or errors): a number literal, something ending in a
  // builtin that returns a number, or a parenthesized expression whose every result is one of those.
  bool numeric(std::size_t begin, std::size_t end) const {
    if (begin < end && is_punct(tokens_[begin], "-")) ++begin;
    if (begin >= end) return false;
    if (is_punct(tokens_[begin], "(") && partner_[begin] == end - 1) return numeric_expression(begin + 1, end - 1);
    const JqToken& last = tokens_[end - 1];
    if (end - begin == 1 && last.kind == JqToken::Kind::Number) return true;
    return last.kind == JqToken::Kind::Identifier &&
           std::find(kNumericResults.begin(), kNumericResults.end(), last.text) != kNumericResults.end();
  }

  // The last stage of a pipeline; each of its `,` / `//` alternatives; the last operand of its arithmetic.
  bool numeric_expression(std::size_t begin, std::size_t end) const {
    std::size_t stage = begin;
    for (std::size_t i = begin; i < end; i = next(i))
      if (is_punct(tokens_[i], "|")) stage = i + 1;
    std::size_t part = stage;
    for (std::size_t i = stage; i <= end; i = i < end ? next(i) : end + 1) {
      if (i == end || is_punct(tokens_[i], ",") || is_punct(tokens_[i], "//")) {
        if (!numeric_part(part, i)) return false;
        part = i + 1;
      }
    }
    return true;
  }

  bool numeric_part(std::size_t begin, std::size_t end) const {
    std::size_t operand = begin;
    for (std::size_t i = begin; i < end; i = next(i)) {
      const JqToken& t = tokens_[i];
      if (i > begin && t.kind == JqToken::Kind::Punct &&
          (t.text == "+" || t.text == "-" || t.text == "*" || t.text == "/" || t.text == "%"))
        operand = i + 1;
    }
    return numeric(operand, end);
  }

  std::size_t next(std::size_t i) const {
    if (is_opener(tokens_[i]) && partner_[i] < tokens_.size()) return partner_[i] + 1;
    return i + 1;
  }

  const std::vector<JqToken>& tokens_;
  std::vector<std::size_t> partner_;
};

bool any_unsafe_multiplication(const std::vector<JqToken>& tokens) {
  if (MultiplicationChecker(tokens).any_unsafe()) return true;
  for (const JqToken& token : tokens)
    for (const auto& inner : token.interpolations)
      if (any_unsafe_multiplication(inner)) return true;
  return false;
}

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

std::vector<JqSafetyFault> jq_safety_faults(std::string_view expression) {
  JqTokens tokens = tokenize_jq(expression);
  SafetyChecker checker(expression);
  checker.collect_definitions(tokens.tokens);
  checker.check(tokens.tokens);
  if (tokens.error) checker.add(tokens.error_offset, "parse", "does not parse: " + *tokens.error);
  return checker.faults();
}

std::vector<std::string> jq_allowed_builtins() {
  std::vector<std::string> names;
  for (const Builtin& builtin : kAllowedBuiltins)
    names.push_back(std::string(builtin.name) + "/" + std::to_string(builtin.arity));
  return names;
}

std::vector<std::string> jq_safety_warnings(std::string_view expression) {
  JqTokens tokens = tokenize_jq(expression);
  if (tokens.error) return {};
  if (!any_unsafe_multiplication(tokens.tokens)) return {};
  return {"`*` repeats a string when an operand is a string; pipe each operand through tonumber"};
}

}  // namespace karta
