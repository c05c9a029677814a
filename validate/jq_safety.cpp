#include "validate/jq_safety.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <set>
#include <utility>

namespace karta {
namespace {

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
          if (token.text == "def" || token.text == "import" || token.text == "include" || token.text == "module") {
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

  std::string where(std::size_t offset) const { return jq_source_position(source_, offset); }

 private:
  void refuse(std::size_t offset, const std::string& construct, int arity = -1) {
    const JqRefusal* refusal = find_refusal(construct, arity);
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

std::vector<JqSafetyFault> jq_safety_faults(std::string_view expression) {
  JqTokens tokens = tokenize_jq(expression);
  SafetyChecker checker(expression);
  checker.collect_definitions(tokens.tokens);
  checker.check(tokens.tokens);
  if (tokens.error) checker.add(tokens.error_offset, "parse", "does not parse: " + *tokens.error);
  return checker.faults();
}

std::vector<std::string> jq_safety_warnings(std::string_view expression) {
  JqTokens tokens = tokenize_jq(expression);
  if (tokens.error) return {};
  if (!any_unsafe_multiplication(tokens.tokens)) return {};
  return {"`*` repeats a string when an operand is a string; pipe each operand through tonumber"};
}

}  // namespace karta
