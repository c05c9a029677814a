#pragma once

// jq 1.6's lexer (src/lexer.l), rule for rule where it matters: strings with escapes and `\( )`
// interpolations, scanned recursively; comments; numbers; `.field`, `."field"`; `$variables`; keywords;
// operators; `@formats`. The safety check (jq_safety.h) and the schema check of paths (crd_schema.h) read
// expressions through it, so that a name inside a string literal or a field is never taken for a call.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace karta {

// The tokens of a jq 1.6 expression, for checks that need more than a yes or no (validate/crd_schema_reading.cpp).
struct JqToken {
  enum class Kind {
    Identifier,  // `map`, `tonumber`, `true`, `mod::fn`
    Keyword,     // `if`, `as`, `reduce`, `def`, `and`, `__loc__`, ...
    Field,       // `.name` (text is ".name")
    Dot,         // `.` on its own (it may be followed by a String or `[`)
    Recurse,     // `..`
    Number,      // `1`, `1.5e3`, `.5`
    String,      // `"..."`; interpolations hold the tokens of each `\( )`
    Format,      // `@base64` (text is "@base64")
    Variable,    // `$x`, `$ENV`, `$__loc__` (text is "$x", with no space even when the source has one)
    Punct,       // ( ) [ ] { } , ; : ? and operators: | // ?// = |= += -= *= /= %= //= == != < <= > >= + - * / %
  };
  Kind kind;
  std::string text;                                  // as written (a Variable is normalized to "$name")
  std::size_t offset = 0;                            // where it starts in the expression, in bytes
  std::size_t end = 0;                               // one past where it ends
  std::optional<std::string> value;                  // a String without interpolation: its decoded value
  std::vector<std::vector<JqToken>> interpolations;  // a String: the tokens of each `\( )`, in order
};

struct JqTokens {
  std::vector<JqToken> tokens;
  std::optional<std::string> error;  // "the string starting at column 3 is not terminated"
  std::size_t error_offset = 0;
};

// Tokenizes as jq 1.6's lexer does (whitespace and `#` comments dropped). Brackets are checked for
// balance. On an error the tokens before it are kept.
JqTokens tokenize_jq(std::string_view expression);

// "column 4", or "line 2, column 4" in a multi-line expression: where `offset` is in `source`.
std::string jq_source_position(std::string_view source, std::size_t offset);

}  // namespace karta
