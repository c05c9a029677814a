#pragma once

// Which jq 1.6 expressions a definition may hold. Definitions are data that anyone allowed to install one
// can write, and their expressions run inside the webhook on every admission, so only a read-only,
// bounded subset of jq is allowed:
// - no access to the webhook's environment, inputs, logs, modules or the jq runtime (`env`, `$ENV`,
//   `input`, `debug`, `$__loc__`, `import`, ...);
// - no recursion and no generator whose output is not bounded by the admitted object (`..`, `recurse`,
//   `walk`, `range`, `repeat`, `def`, ...); `limit`, `label` and `break`, which only cut a generator
//   short, are allowed;
// - no assignment or update (`=`, `|=`, `+=`, ..., `del`, `setpath`, `delpaths`);
// - no regular expressions (`test`, `match`, `split/2`, `sub`, ...) and no time functions (`now`,
//   `strftime`, `todate`, ...);
// - every function called must be in an explicit allow-list of jq 1.6 builtins, by name and arity;
// - no construct on which jq 1.6 itself hangs or kills the process, whatever the admitted object holds:
//   slice bounds (`.[1:]`) are number literals and `getpath` takes a literal path (a NaN slice bound, which `tonumber`
//   makes of "nan", fails an assertion); an index (`.[X]`) is not built by `{...}`, `fromjson`,
//   `from_entries`, `with_entries` or `map_values` (an object index is a slice); `%` has a number literal
//   on its right (`x % -1` raises SIGFPE when x is beyond 64 bits). `index`, `rindex` and `indices` take
//   any argument: jq 1.6 loops forever searching a string for "", and every program runs after a prelude
//   that answers that case (definitions/jq_program.cpp).
//
// The check works on a real tokenization of jq 1.6 (strings with escapes and `\( )` interpolations,
// scanned recursively; comments; numbers; `.field`, `."field"`; `$variables`; keywords; operators;
// `@formats`), so a forbidden name inside a string literal (`"env"`), as a field (`.env`, `."input"`) or as
// an object key (`{env: 1}`) is fine, while one inside an interpolation (`"\(env)"`) is not.

#include <string>
#include <string_view>
#include <vector>

#include "validate/jq_allow_list.h"
#include "validate/jq_lexer.h"

namespace karta {

struct JqSafetyFault {
  // "env", "$ENV", "..", "|=", "split/2", "foo/1", "def", "slice", "index", "%"; "parse" when it does not parse
  std::string construct;
  std::string message;  // "`env` is not allowed: it would expose the webhook's environment"
};

// Every forbidden construct in a jq expression, in order of appearance; empty when it is safe.
// An expression that does not tokenize (an unterminated string or interpolation, an invalid escape, an
// unbalanced bracket, a character jq does not know) has a fault with construct "parse" whose message
// starts with "does not parse".
std::vector<JqSafetyFault> jq_safety_faults(std::string_view expression);

// Findings that do not make the expression unsafe but deserve a look. Today one: `*` whose operands are
// not visibly numbers (each operand must be a number literal or end in `tonumber`, `length`,
// `utf8bytelength`, `floor`, `ceil`, `round`, `sqrt` or `fabs`), because in jq 1.6 `"x" * 1e9` repeats
// the string (gigabytes). The message is given at most once per expression:
// "`*` repeats a string when an operand is a string; pipe each operand through tonumber".
// Empty when the expression does not tokenize (jq_safety_faults reports that).
std::vector<std::string> jq_safety_warnings(std::string_view expression);

}  // namespace karta
