// The jq safety check: every refusal with its exact message and the danger it prevents, the allowed
// subset, and the prelude that makes index/rindex/indices safe. Longer than 500 lines because each refusal
// group has its danger shown next to its messages; the prelude cases could move to a file of their own.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "definitions/compiled_definition.h"
#include "definitions/jq_program.h"
#include "json/json_document.h"
#include "support/test_support.h"
#include "validate/crd_schema_set.h"
#include "validate/definition_validation.h"
#include "validate/jq_safety.h"

namespace unit_jq_safety {  // this file's names, apart from other tests' in a unity build

using karta::jq_safety_faults;
using karta::jq_safety_warnings;
using karta::json;
namespace test = karta::test;

namespace {

// "construct: message", one a fault, in order.
std::vector<std::string> faults(const std::string& expression) {
  std::vector<std::string> out;
  for (const auto& fault : jq_safety_faults(expression)) out.push_back(fault.construct + ": " + fault.message);
  return out;
}

using Lines = std::vector<std::string>;

struct Refused {
  std::string expression;
  std::string construct;
  std::string message;
};

void check_refused(const std::vector<Refused>& cases) {
  for (const auto& c : cases) {
    CAPTURE(c.expression);
    CHECK(faults(c.expression) == Lines{c.construct + ": " + c.message});
    // Each case is valid jq 1.6, so the refusal is ours and not a syntax error.
    CHECK(karta::jq_compile_error(c.expression) == std::nullopt);
  }
}

const std::string kMultiplication =
    "`*` repeats a string when an operand is a string; pipe each operand through tonumber";

}  // namespace

TEST_CASE("the environment, other inputs, logs, the jq runtime, halting and modules are refused by name") {
  const std::string environment = "it would expose the webhook's environment";
  const std::string input = "it would read input other than the admitted object";
  const std::string log = "it would write to the webhook's standard error";
  const std::string runtime = "it inspects the jq runtime, not the admitted object";
  const std::string halt = "it would stop jq instead of producing a value";
  check_refused({
      {"env", "env", "`env` is not allowed: " + environment},
      {"env.HOME", "env", "`env` is not allowed: " + environment},
      {"$ENV.HOME", "$ENV", "`$ENV` is not allowed: " + environment},
      {"$ ENV | keys", "$ENV", "`$ENV` is not allowed: " + environment},
      {"input", "input", "`input` is not allowed: " + input},
      {"[inputs]", "inputs", "`inputs` is not allowed: " + input},
      {"debug", "debug", "`debug` is not allowed: " + log},
      {"stderr", "stderr", "`stderr` is not allowed: " + log},
      {"input_filename", "input_filename", "`input_filename` is not allowed: " + runtime},
      {"input_line_number", "input_line_number", "`input_line_number` is not allowed: " + runtime},
      {"$__loc__.line", "$__loc__", "`$__loc__` is not allowed: " + runtime},
      {"builtins", "builtins", "`builtins` is not allowed: " + runtime},
      {"get_search_list", "get_search_list", "`get_search_list` is not allowed: " + runtime},
      {"modulemeta", "modulemeta", "`modulemeta` is not allowed: " + runtime},
      {"halt", "halt", "`halt` is not allowed: " + halt},
      {"halt_error", "halt_error", "`halt_error` is not allowed: " + halt},
      {"halt_error(1)", "halt_error", "`halt_error` is not allowed: " + halt},
  });
  // Not valid jq 1.6 (no --args, no module file), refused all the same.
  CHECK(faults("$__prog_args") == Lines{"$__prog_args: `$__prog_args` is not allowed: " + runtime});
  CHECK(faults("import \"a\" as a; .") ==
        Lines{"import: `import` is not allowed: a definition cannot load jq modules"});
  CHECK(faults("include \"a\"; .") == Lines{"include: `include` is not allowed: a definition cannot load jq modules"});
}

namespace {

// What the jq 1.6 CLI (the libjq we link) prints for `program`, stdout and stderr, and its exit code:
// 124 when it ran past `seconds`, 134 when it aborted, 136 on SIGFPE.
std::pair<std::string, int> jq_cli(const std::string& options, const std::string& program, int seconds = 2) {
  test::TempDir dir;
  std::ofstream(dir.path / "program.jq") << program;
  int code = 0;
  std::string out = test::run_command("timeout " + std::to_string(seconds) + " jq " + options + " -f " +
                                          (dir.path / "program.jq").string() + " 2>&1",
                                      &code);
  return {out, code};
}

}  // namespace

TEST_CASE("the danger of each refusal: leaks, I/O and answers from the host") {
  // env and $ENV: the webhook's own environment, through our JqProgram.
  ::setenv("KARTA_TEST_TOKEN", "s3cret", 1);
  karta::JqInput null_input(nullptr);
  CHECK(karta::JqProgram("[env.KARTA_TEST_TOKEN, $ENV.KARTA_TEST_TOKEN]", 1).run(null_input, 1).outputs ==
        std::vector<json>{{"s3cret", "s3cret"}});
  // input: the next input, not the admitted object.
  CHECK(test::run_command("printf '1 2' | jq -c '[., input]'") == "[1,2]\n");
  // debug, stderr: the value on standard error; stderr does so from libjq too.
  CHECK(jq_cli("-n", "{token: \"s3cret\"} | debug | empty") ==
        std::pair<std::string, int>{"[\"DEBUG:\",{\"token\":\"s3cret\"}]\n", 0});
  CHECK(jq_cli("-n", "{token: \"s3cret\"} | stderr | empty") ==
        std::pair<std::string, int>{"{\"token\":\"s3cret\"}", 0});
  // The runtime: the host's directories, and module files read from its disk.
  std::string jq_path = test::run_command("command -v jq");
  jq_path.pop_back();  // the newline
  CHECK(test::run_command("'" + jq_path + "' -n get_jq_origin") ==
        "\"" + std::filesystem::path(jq_path).parent_path().string() + "\"\n");
  test::TempDir modules;
  std::ofstream(modules.path / "m.jq") << "module {owner: \"from the host's disk\"}; def secret: \"read from it\";";
  CHECK(jq_cli("-n -L " + modules.path.string(), "include \"m\"; secret") ==
        std::pair<std::string, int>{"\"read from it\"\n", 0});
  CHECK(jq_cli("-n -L " + modules.path.string(), "\"m\" | modulemeta | .owner") ==
        std::pair<std::string, int>{"\"from the host's disk\"\n", 0});
  // $__loc__ names a line of the text the webhook compiles (its prelude is line 1), not the definition's.
  CHECK(karta::JqProgram("$__loc__.line", 1).run(null_input, 1).outputs == std::vector<json>{2});
  // halt ends the run with no value (halt_error with a string, run again on the same state, corrupts
  // libjq 1.6's heap: too unsafe to run here).
  CHECK(karta::JqProgram("1, halt, 2", 1).run(null_input, 3).outputs == std::vector<json>{1});
}

TEST_CASE("the danger of each refusal: runs that never end and crashes") {
  constexpr int kTimedOut = 124, kAborted = 134;
  // Recursion and generators the expression sizes: still running after a second.
  CHECK(jq_cli("-n", "[1] | recurse([.]) | empty", 1).second == kTimedOut);
  CHECK(jq_cli("-n", "[range(1e18)] | length", 1).second == kTimedOut);
  CHECK(jq_cli("-n", "[repeat(1)] | length", 1).second == kTimedOut);
  CHECK(jq_cli("-n", "[1 | while(true; .)] | length", 1).second == kTimedOut);
  CHECK(jq_cli("-n", "1 | until(false; .)", 1).second == kTimedOut);
  CHECK(jq_cli("-n", "[[range(1e9)], [1]] | [combinations] | length", 1).second == kTimedOut);
  CHECK(jq_cli("-n", "def f: f; f", 1).second == kTimedOut);
  // Regular expressions: backtracking up to Oniguruma's retry limit, for each of 40 strings.
  CHECK(jq_cli("-n", "[range(40) | \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\"] | [.[] | try test(\"^(a+)+$\") catch false]",
               1)
            .second == kTimedOut);
  // Time functions: jq 1.6 aborts on an assertion.
  CHECK(jq_cli("-n", "-1e20 | todate").second == kAborted);
  CHECK(jq_cli("-n", "1e300 | strftime(\"%Y\")").second == kAborted);
  // Slices with computed bounds, and `%` by -1: abort and SIGFPE.
  CHECK(jq_cli("-n", "\"nan\" | tonumber as $n | [1, 2, 3] | .[$n:]").second == kAborted);
  CHECK(jq_cli("-n", "1e19 % -1").second == 136);
}

TEST_CASE("limit, label and break are allowed: they only end early a generator that ends anyway") {
  for (const std::string expression : {"[limit(2; .a[])]", "[label $out | .a[] | if . > 1 then ., break $out else . end]",
                                       "first(.a[])"}) {
    CAPTURE(expression);
    CHECK(faults(expression).empty());
  }
  karta::JqInput input(json::parse(R"({"a": [1, 2, 3]})"));
  CHECK(karta::JqProgram("[limit(2; .a[])]", 1).run(input, 1).outputs == std::vector<json>{{1, 2}});
  CHECK(karta::JqProgram("[label $out | .a[] | if . > 1 then ., break $out else . end]", 1).run(input, 1).outputs ==
        std::vector<json>{{1, 2}});
}

TEST_CASE("recursion, unbounded generators, streams and def are refused by name") {
  const std::string recursion = "it recurses through the whole value, however deep; name the fields instead";
  const std::string generator = "it is a generator whose length the admitted object does not bound";
  const std::string stream = "it streams every leaf of the value, however deep";
  check_refused({
      {"..", "..", "`..` is not allowed: " + recursion},
      {".. | .name?", "..", "`..` is not allowed: " + recursion},
      {"recurse", "recurse", "`recurse` is not allowed: " + recursion},
      {"recurse(.children[])", "recurse", "`recurse` is not allowed: " + recursion},
      {"recurse(.a; . != null)", "recurse", "`recurse` is not allowed: " + recursion},
      {"recurse_down", "recurse_down", "`recurse_down` is not allowed: " + recursion},
      {"walk(.)", "walk", "`walk` is not allowed: " + recursion},
      {"[paths]", "paths", "`paths` is not allowed: " + recursion},
      {"[paths(type == \"number\")]", "paths", "`paths` is not allowed: " + recursion},
      {"[leaf_paths]", "leaf_paths", "`leaf_paths` is not allowed: " + recursion},
      {"range(10)", "range", "`range` is not allowed: " + generator},
      {"range(0; 10; 2)", "range", "`range` is not allowed: " + generator},
      {"repeat(.)", "repeat", "`repeat` is not allowed: " + generator},
      {"[while(. < 9; . + 1)]", "while", "`while` is not allowed: " + generator},
      {"until(. > 9; . + 1)", "until", "`until` is not allowed: " + generator},
      {"[combinations]", "combinations", "`combinations` is not allowed: " + generator},
      {"[combinations(2)]", "combinations", "`combinations` is not allowed: " + generator},
      {"[tostream]", "tostream", "`tostream` is not allowed: " + stream},
      {"fromstream(.[])", "fromstream", "`fromstream` is not allowed: " + stream},
      {"[1 | truncate_stream([[0], 1])]", "truncate_stream", "`truncate_stream` is not allowed: " + stream},
      {"def f: f; f", "def", "`def` is not allowed: a user-defined function can recurse forever"},
      {"def f(g; $x): g + $x; f(.; 1)", "def", "`def` is not allowed: a user-defined function can recurse forever"},
  });
  CHECK(faults("[tostream] | fromstream(.[])") ==
        Lines{"tostream: `tostream` is not allowed: " + stream, "fromstream: `fromstream` is not allowed: " + stream});
}

TEST_CASE("assignment, update and deletion are refused by name") {
  const std::string update = "a definition reads the object and never updates it";
  check_refused({
      {".a = 1", "=", "`=` is not allowed: " + update},
      {".a |= 1", "|=", "`|=` is not allowed: " + update},
      {".a += 1", "+=", "`+=` is not allowed: " + update},
      {".a -= 1", "-=", "`-=` is not allowed: " + update},
      {".a *= 2", "*=", "`*=` is not allowed: " + update},
      {".a /= 2", "/=", "`/=` is not allowed: " + update},
      {".a %= 2", "%=", "`%=` is not allowed: " + update},
      {".a //= 1", "//=", "`//=` is not allowed: " + update},
      {"del(.a)", "del", "`del` is not allowed: " + update},
      {"setpath([\"a\"]; 1)", "setpath", "`setpath` is not allowed: " + update},
      {"delpaths([[\"a\"]])", "delpaths", "`delpaths` is not allowed: " + update},
  });
}

TEST_CASE("regular expressions and time functions are refused by name") {
  const std::string regex = "regular expressions can take exponential time on crafted input";
  const std::string time = "time functions depend on the clock, the time zone or the C library";
  check_refused({
      {"test(\"a\")", "test", "`test` is not allowed: " + regex},
      {"test(\"a\"; \"x\")", "test", "`test` is not allowed: " + regex},
      {"match(\"(a+)+b\")", "match", "`match` is not allowed: " + regex},
      {"capture(\"(?<x>a)\")", "capture", "`capture` is not allowed: " + regex},
      {"[scan(\"a\")]", "scan", "`scan` is not allowed: " + regex},
      {"split(\"a\"; \"g\")", "split/2", "`split/2` is not allowed: " + regex},
      {"[splits(\", *\")]", "splits", "`splits` is not allowed: " + regex},
      {"sub(\"a\"; \"b\")", "sub", "`sub` is not allowed: " + regex},
      {"gsub(\"a\"; \"b\"; \"g\")", "gsub", "`gsub` is not allowed: " + regex},
      {"now", "now", "`now` is not allowed: " + time},
      {"mktime", "mktime", "`mktime` is not allowed: " + time},
      {"gmtime", "gmtime", "`gmtime` is not allowed: " + time},
      {"localtime", "localtime", "`localtime` is not allowed: " + time},
      {"strftime(\"%Y\")", "strftime", "`strftime` is not allowed: " + time},
      {"strflocaltime(\"%Y\")", "strflocaltime", "`strflocaltime` is not allowed: " + time},
      {"strptime(\"%Y\")", "strptime", "`strptime` is not allowed: " + time},
      {"todate", "todate", "`todate` is not allowed: " + time},
      {"fromdate", "fromdate", "`fromdate` is not allowed: " + time},
      {"todateiso8601", "todateiso8601", "`todateiso8601` is not allowed: " + time},
      {"fromdateiso8601", "fromdateiso8601", "`fromdateiso8601` is not allowed: " + time},
  });
  // Not in jq 1.6, refused all the same in case a later jq brings them.
  CHECK(faults("date") == Lines{"date: `date` is not allowed: " + time});
  CHECK(faults("dateadd(\"seconds\"; 1)") == Lines{"dateadd: `dateadd` is not allowed: " + time});
  CHECK(faults("datesub(\"seconds\"; 1)") == Lines{"datesub: `datesub` is not allowed: " + time});
  CHECK(faults("split(\"/\")").empty());
}

TEST_CASE("a call outside the allow-list is refused with its name and arity") {
  check_refused({
      {"format(\"json\")", "format/1", "`format/1` is not an allowed builtin"},
      {"tojson | ltrimstr(\"x\") | significand", "significand/0", "`significand/0` is not an allowed builtin"},
      {"_match_impl(\"a\"; null; false)", "_match_impl/3", "`_match_impl/3` is not an allowed builtin"},
      {"[.[] | getpath([\"a\"]) | pow(.; 2)]", "pow/2", "`pow/2` is not an allowed builtin"},
  });
  // Not defined in jq 1.6 either.
  CHECK(faults("ascii") == Lines{"ascii/0: `ascii/0` is not an allowed builtin"});
  CHECK(faults("foo") == Lines{"foo/0: `foo/0` is not an allowed builtin"});
  CHECK(faults("foo(1)") == Lines{"foo/1: `foo/1` is not an allowed builtin"});
  CHECK(faults("mod::fn(1; 2)") == Lines{"mod::fn/2: `mod::fn/2` is not an allowed builtin"});
  CHECK(faults("first(.a; .b)") == Lines{"first/2: `first/2` is not an allowed builtin"});
  CHECK(faults("true(1)") == Lines{"true/1: `true/1` is not an allowed builtin"});
}

TEST_CASE("the arity of a call counts its top-level semicolons only") {
  CHECK(faults("any(.a[]; . == \"x;y\")").empty());
  CHECK(faults("map(reduce .[] as $x (0; . + $x))").empty());
  CHECK(faults("nth(0; .a[] | select(has(\"b\")))").empty());
  CHECK(faults("first(.a[]; [.b; .c])") == Lines{"first/2: `first/2` is not an allowed builtin"});
  CHECK(faults("error({a: 1, b: 2})").empty());
}

TEST_CASE("the read-only, bounded expressions a definition needs have no fault and compile in jq 1.6") {
  const std::vector<std::string> allowed = {
      ".spec.replicatedJobs[] | (.replicas // 1 | tonumber) * (.template.spec.parallelism // 1 | tonumber)",
      "[.status.conditions[]? | select(.type == \"Ready\")] | length > 0",
      ".spec.pytorchReplicaSpecs | keys[]",
      "\"\\(.a)-\\(.b)\"",
      "{name: .x, type}",
      ".a as $x | $x",
      "reduce .[] as $i (0; . + $i)",
      "foreach .[] as $i (0; . + $i; [$i, .])",
      ".spec.\"a-b\"",
      ".[\"x\"]",
      ".a == .b",
      ".a != .b and (.c < 1 or .d >= 2) and (.e <= 3 | not)",
      ".a // \"d\"",
      "if .a then 1 elif .b then 2 else 3 end",
      "try .a catch null",
      ".a?",
      ".items[1:3] | .[-1]",
      "-(.a | length) + 1 - 2 / 3 % 4",
      ". as [$a, {b: $c, $d}] | [$a, $c, $d]",
      ". as [$a] ?// $a | $a",
      "@base64 \"x\\(.a)\" | @base64d",
      "[@text, @json, @uri, @csv, @tsv, @html, @sh] | length",
      ".metadata.labels | to_entries | map(select(.key | startswith(\"a\"))) | from_entries",
      ".metadata.annotations | with_entries(.)",
      ".spec.containers | map(.resources.limits[\"nvidia.com/gpu\"] // \"0\" | tonumber) | add // 0",
      "[.[] | ascii_downcase | ltrimstr(\"x\") | rtrimstr(\"y\") | explode | implode] | unique | join(\",\")",
      "getpath([\"spec\", \"replicas\"]) | isnan | not",
      ".a | split(\"/\") | first, last, nth(0)",
      ".a | tojson | fromjson | type",
      "{(.a): 1, \"b\": 2, \"c\\(.d)\": 3}",
      "[.[] | numbers, strings, booleans, nulls, arrays, objects, iterables, scalars, values] | length",
      ".a | index(\"-\"), rindex(\"-\"), indices(\"-\")",
      "[.a | floor, ceil, round, sqrt, fabs, infinite, nan, isinfinite, isnormal]",
      "{if: 1, then: 2, def: 3, env: 4, input: 5} | .env",
      "# a comment: env, input\n.a  # and another\n",
  };
  for (const auto& expression : allowed) {
    CAPTURE(expression);
    CHECK(faults(expression).empty());
    CHECK(karta::jq_compile_error(expression) == std::nullopt);
  }
}

TEST_CASE("a forbidden name in a string, a field, a quoted field, an object key or a comment is fine") {
  for (const std::string expression :
       {"\"env\"", "\"input | $ENV | ..\"", ".env", ".input.debug", ".\"input\"", ".[\"env\"]", "{env: 1}", "{env}",
        "{input: .a, \"halt\": 2}", "{def: 1, import: 2, label: 3}", "# env\n.a", ".a # | env", ".a.b", ".spec.\"..\"",
        "\"\\\\(env)\""}) {
    CAPTURE(expression);
    CHECK(faults(expression).empty());
  }
}

TEST_CASE("a forbidden name inside a string interpolation is refused, however deeply nested") {
  const std::string environment = "env: `env` is not allowed: it would expose the webhook's environment";
  CHECK(faults("\"\\(env.HOME)\"") == Lines{environment});
  CHECK(faults("\"a\\(\"b\\(env)\")\"") == Lines{environment});
  CHECK(faults("{\"\\(env)\": 1}") == Lines{environment});
  CHECK(faults(".\"\\(env)\"") == Lines{environment});
  CHECK(faults("@base64 \"\\(input)\"") ==
        Lines{"input: `input` is not allowed: it would read input other than the admitted object"});
  // Computed keys, values and shorthand variables of objects are expressions too.
  CHECK(faults("{(env.HOME): 1}") == Lines{environment});
  CHECK(faults("{a: env}") == Lines{environment});
  CHECK(faults("{$ENV}") == Lines{"$ENV: `$ENV` is not allowed: it would expose the webhook's environment"});
}

TEST_CASE("faults come in order of appearance, one for each forbidden construct") {
  CHECK(faults("\"\\(input)\" as $x | env | .. | .a = $ENV") ==
        Lines{"input: `input` is not allowed: it would read input other than the admitted object",
              "env: `env` is not allowed: it would expose the webhook's environment",
              "..: `..` is not allowed: it recurses through the whole value, however deep; name the fields instead",
              "=: `=` is not allowed: a definition reads the object and never updates it",
              "$ENV: `$ENV` is not allowed: it would expose the webhook's environment"});
  // The user function is refused once, at its `def`; its calls are not refused again.
  CHECK(faults("def f(g): g | g; f(.a)") ==
        Lines{"def: `def` is not allowed: a user-defined function can recurse forever"});
}

TEST_CASE("an expression that does not tokenize is a parse fault saying what and where") {
  CHECK(faults("\"abc") == Lines{"parse: does not parse: the string starting at column 1 is not terminated"});
  // The `"` after `.b` opens a string inside the interpolation.
  CHECK(faults(".a | \"x\\(.b\"") ==
        Lines{"parse: does not parse: the string starting at column 12 is not terminated"});
  CHECK(faults("\"x\\(.b") == Lines{"parse: does not parse: the interpolation `\\(` at column 3 is never closed"});
  CHECK(faults("\"\\q\"") == Lines{"parse: does not parse: `\\q` at column 2 is not a valid escape"});
  CHECK(faults("\"\\u12\"") ==
        Lines{"parse: does not parse: the escape `\\u` at column 2 needs four hexadecimal digits"});
  CHECK(faults(".a)") == Lines{"parse: does not parse: `)` at column 3 closes nothing"});
  CHECK(faults("[.a}") == Lines{"parse: does not parse: `}` at column 4 does not close `[` at column 1"});
  CHECK(faults("(.a") == Lines{"parse: does not parse: `(` at column 1 is never closed"});
  CHECK(faults(".a ! .b") == Lines{"parse: does not parse: `!` at column 4 is not part of jq's syntax"});
  CHECK(faults("$") == Lines{"parse: does not parse: `$` at column 1 is not followed by a variable name"});
  CHECK(faults("@") == Lines{"parse: does not parse: `@` at column 1 is not followed by a format name"});
  CHECK(faults(". as $if | 1") ==
        Lines{"parse: does not parse: `$if` at column 6 is not a variable: `if` is a keyword"});
  CHECK(faults(".\n| \"abc") ==
        Lines{"parse: does not parse: the string starting at line 2, column 3 is not terminated"});
  // jq 1.6 lexes `.e1` as a number and `?//` as one token: both fail to compile there.
  CHECK(faults(".spec.e1") ==
        Lines{"parse: does not parse: jq 1.6 reads `.e1` at column 6 as a malformed number; write `.[\"e1\"]`"});
  CHECK(faults(".a[]?//1") ==
        Lines{"parse: does not parse: jq 1.6 reads `?//` at column 5 as the alternative of a destructuring pattern; "
              "write `? //`"});
  CHECK(karta::jq_compile_error(".spec.e1").has_value());
  CHECK(karta::jq_compile_error(".a[]?//1").has_value());
  CHECK(faults(".a[]? // 1").empty());
  // What came before the error is still checked.
  CHECK(faults("env | \"abc") == Lines{"env: `env` is not allowed: it would expose the webhook's environment",
                                       "parse: does not parse: the string starting at column 7 is not terminated"});
}

TEST_CASE("index, rindex and indices take any argument, as the published Grove definition's selector needs") {
  CHECK(faults(".a | index(\"-\")").empty());
  CHECK(faults(".a | index(\"\")").empty());
  CHECK(faults(".a | rindex(.b)").empty());
  CHECK(faults(".a | indices(\"\\(.b)\")").empty());
  CHECK(faults(".spec.template as $t | $t.cliques[] | select(.name as $n | ([$t.podCliqueScalingGroups[]?"
               ".cliqueNames[]?] | index($n) | not)) | .name")
            .empty());
}

TEST_CASE("\"\" searched in a string answers as jq 1.7 does, where jq 1.6 searches forever") {
  // The danger: the jq 1.6 CLI (the libjq we link) never ends.
  for (const std::string expression : {"index(\"\")", "rindex(\"\")", "indices(\"\")"}) {
    CAPTURE(expression);
    int code = 0;
    test::run_command("timeout 1 jq -n '\"abc\" | " + expression + "' 2>&1", &code);
    CHECK(code == 124);
  }
  // JqProgram answers; on arrays and other strings, as jq 1.6 does.
  auto answer = [&](const std::string& input, const std::string& search) {
    karta::JqProgram bound(". as $in | " + search + " as $v | $in | [index($v), rindex($v), indices($v)]", 1);
    auto outcome = bound.run(karta::JqInput(json::parse(input)), 10);
    REQUIRE_FALSE(outcome.error.has_value());
    REQUIRE(outcome.outputs.size() == 1);
    return outcome.outputs[0];
  };
  CHECK(answer(R"("abc")", R"("")") == json::parse("[null, null, []]"));
  CHECK(answer(R"("")", R"("")") == json::parse("[null, null, []]"));
  CHECK(answer(R"("a,b, cd, efg")", R"(", ")") == json::parse("[3, 7, [3, 7]]"));
  CHECK(answer(R"(["a", "", "b", ""])", R"("")") == json::parse("[1, 3, [1, 3]]"));
  CHECK(answer(R"([1, 2, 1, 3, 1, 2])", "[1, 2]") == json::parse("[0, 4, [0, 4]]"));
  CHECK(answer(R"([])", R"("")") == json::parse("[null, null, []]"));
  CHECK(answer("null", R"("")") == json::parse("[null, null, null]"));
}

TEST_CASE("the prelude gives jq 1.6's own answer, error included, for every other input and argument") {
  const std::vector<std::string> inputs = {R"("a,b, cd, efg")", R"("aaa")", R"("")",        R"("é-é")",
                                           "[1,2,1,3,1,2]",     "[]",         R"(["a","","b",""])", "[[1],[1,2],1]",
                                           "null",              R"({"a":1})", "1",                  "true"};
  const std::vector<std::string> searched = {R"(", ")", R"("a")", R"("aa")", R"("")", R"("-")", "1",
                                             "[1,2]",   "[]",     "[1]",     "null",  R"({"a":1})"};
  json cases = json::array();
  for (const auto& input : inputs) {
    for (const auto& search : searched) {
      // The one case jq 1.6 never answers; the test above has it.
      if (input.front() == '"' && search == R"("")") continue;
      cases.push_back({json::parse(input), json::parse(search)});
    }
  }
  const std::string program =
      ".[] | . as [$in, $v] | $in | [(try index($v) catch \"error: \\(.)\"), (try rindex($v) catch \"error: \\(.)\"), "
      "(try indices($v) catch \"error: \\(.)\")]";
  test::TempDir dir;
  std::ofstream(dir.path / "cases.json") << cases.dump();
  int code = 0;
  const std::string cli = test::run_command("timeout 10 jq -c '" + program + "' " + (dir.path / "cases.json").string(), &code);
  REQUIRE(code == 0);
  std::vector<json> expected;
  std::istringstream lines(cli);
  for (std::string line; std::getline(lines, line);) expected.push_back(json::parse(line));
  auto ours = karta::JqProgram(program, 1).run(karta::JqInput(cases), 1000);
  CHECK_FALSE(ours.error.has_value());
  CHECK(expected.size() == cases.size());
  CHECK(ours.outputs == expected);
  // Errors are among the answers compared, as jq 1.6 words them.
  CHECK(std::count(expected.begin(), expected.end(),
                   json::parse(R"(["error: Cannot index number with string \"a\"", "error: Cannot index number with string \"a\"", "error: Cannot index number with string \"a\""])")) == 1);
}

TEST_CASE("compile errors keep the line numbers of the program, not of the prelude before it") {
  CHECK(karta::jq_compile_error(".a |\n foo(1)") ==
        std::optional<std::string>("jq: error: foo/1 is not defined at <top-level>, line 2:\n foo(1) ; jq: 1 compile error"));
  CHECK(karta::jq_compile_error("1 +") ==
        std::optional<std::string>("jq: error: syntax error, unexpected $end (Unix shell quoting issues?) at "
                                   "<top-level>, line 1:\n1 +  ; jq: 1 compile error"));
}

TEST_CASE("a definition using index, rindex and indices on strings and arrays validates and answers \"\" at once") {
  const std::string karta = test::made_up_karta("searches", "Search") +
                            "      statusDefinition:\n"
                            "        statusMappings:\n"
                            "          running:\n"
                            "            - byExpression:\n"
                            "                expression: '.spec.sep as $v | [(.spec.name, .spec.names) | index($v)]'\n"
                            "                expectedResult: 'true'\n"
                            "            - byExpression:\n"
                            "                expression: '.spec.sep as $v | [(.spec.name, .spec.names) | rindex($v)]'\n"
                            "                expectedResult: 'true'\n"
                            "            - byExpression:\n"
                            "                expression: '.spec.sep as $v | [(.spec.name, .spec.names) | indices($v)]'\n"
                            "                expectedResult: 'true'\n";
  const auto report = karta::validate_definition(test::yaml(karta), [](const karta::GroupVersionKind&) {
    return static_cast<const karta::CrdSchema*>(nullptr);
  });
  CHECK(report.faults == std::vector<std::string>{});
  const auto definition = test::compile_definition(karta);
  REQUIRE(definition->status().has_value());
  std::vector<karta::ExpressionId> ids;
  for (const auto& [status, rules] : definition->status()->mappings)
    for (const auto& rule : rules) ids.push_back(rule.expression);
  REQUIRE(ids.size() == 3);
  auto answers = [&](const std::string& sep) {
    auto document = karta::JsonDocument::parse(R"({"spec":{"name":"a-b-a","names":["a","","b",""],"sep":)" + sep + "}}");
    karta::DefinitionEvaluation evaluation(*definition, document.root());
    std::vector<json> out;
    for (auto id : ids) {
      const auto& outcome = evaluation.outcome(id);
      CHECK_FALSE(outcome.error.has_value());
      out.push_back(outcome.values);
    }
    return out;
  };
  // "" in the string "a-b-a": jq 1.7's answers; in the array, the elements equal to "".
  CHECK(answers(R"("")") == std::vector<json>{json::parse("[[null, 1]]"), json::parse("[[null, 3]]"),
                                              json::parse("[[[], [1, 3]]]")});
  CHECK(answers(R"("a")") == std::vector<json>{json::parse("[[0, 0]]"), json::parse("[[4, 0]]"),
                                               json::parse("[[[0, 4], [0]]]")});
}

TEST_CASE("a Grove-like definition selecting cliques with index($n) validates against the CRD and selects them") {
  const auto corpus = test::corpus_dir();
  REQUIRE(corpus.has_value());
  const auto crds = karta::CrdSchemaSet::load_directory(*corpus / "crds");
  const std::string standalone =
      ".spec.template as $t | $t.cliques[] | select(.name as $n | ([$t.podCliqueScalingGroups[]?.cliqueNames[]?] | "
      "index($n) | not))";
  const std::string karta = "apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata: {name: cliques}\nspec:\n"
                            "  structureDefinition:\n"
                            "    rootComponent:\n"
                            "      name: set\n"
                            "      kind: {group: grove.io, version: v1alpha1, kind: PodCliqueSet}\n"
                            "      statusDefinition:\n"
                            "        conditionsDefinition: {path: .status.conditions}\n"
                            "        statusMappings:\n"
                            "          running: [{byConditions: [{type: Ready, status: 'True'}]}]\n"
                            "    childComponents:\n"
                            "      - name: clique\n"
                            "        kind: {group: grove.io, version: v1alpha1, kind: PodClique}\n"
                            "        ownerRef: set\n"
                            "        instanceIdPath: '" + standalone + " | .name'\n"
                            "        podSelector:\n"
                            "          componentInstanceSelector: {idPath: '.metadata.labels[\"grove.io/podclique\"]'}\n"
                            "        specDefinition:\n"
                            "          podSpecPath: '" + standalone + " | .spec.podSpec'\n";
  const auto report = karta::validate_definition(test::yaml(karta), [&](const karta::GroupVersionKind& kind) {
    return crds.find(kind);
  });
  CHECK(report.faults == std::vector<std::string>{});
  const auto definition = test::compile_definition(karta);
  karta::ExpressionId instances = karta::kNoExpression;
  for (const auto& plan : definition->components())
    if (plan.instance_id != karta::kNoExpression) instances = plan.instance_id;
  REQUIRE(instances != karta::kNoExpression);
  auto cliques = [&](const std::string& sample) {
    auto document = karta::JsonDocument::from(test::document(*corpus / "samples" / sample));
    karta::DefinitionEvaluation evaluation(*definition, document.root());
    const auto& outcome = evaluation.outcome(instances);
    CHECK_FALSE(outcome.error.has_value());
    return outcome.values;
  };
  // The cliques that no scaling group names.
  CHECK(cliques("podcliqueset-1.yaml") == std::vector<json>{"pca", "pcd"});
  CHECK(cliques("podcliqueset-2.yaml") == std::vector<json>{});
  CHECK(cliques("podcliqueset-3.yaml") == std::vector<json>{"model-worker"});
}

TEST_CASE("slices, object indexes, getpath and % take the literals that keep jq 1.6 from aborting") {
  // jq 1.6 fails an assertion (and so kills the webhook) on a slice whose start is NaN, which
  // `"nan" | tonumber` gives; and raises SIGFPE on `1e19 % -1`.
  const std::string slice =
      "slice: a slice with computed bounds is not allowed: jq 1.6 aborts the process when a bound is NaN; write "
      "number literals, as in `.[1:]`";
  const std::string index =
      "index: an index that may be an object is not allowed: jq 1.6 aborts the process on an object index "
      "(`{start, end}`) holding NaN; index with a string or a number";
  const std::string getpath =
      "getpath/1: `getpath/1` is allowed only with a literal path, as in `getpath([\"spec\", 0])`: jq 1.6 aborts "
      "the process on a slice in a path whose bound is NaN";
  const std::string modulo =
      "%: `%` is allowed only with a number literal on its right: jq 1.6 crashes the process on `x % -1` when x "
      "is beyond 64 bits";
  CHECK(faults(".a[1:]").empty());
  CHECK(faults(".a[-2:-1] | .[:3]").empty());
  CHECK(faults(".a[:(.n | tonumber)]") == Lines{slice});
  CHECK(faults(".a[.b:]") == Lines{slice});
  CHECK(faults(".a[.b]").empty());
  CHECK(faults(".[keys[]]").empty());
  CHECK(faults("[1, 2][0]").empty());
  CHECK(faults(".a[{start: (.s | tonumber), end: 1}]") == Lines{index});
  CHECK(faults(".a[.s | fromjson]") == Lines{index});
  CHECK(faults("getpath([\"spec\", \"replicas\", 0, -1])").empty());
  CHECK(faults("getpath(.path)") == Lines{getpath});
  CHECK(faults("getpath([{start: 0, end: 1}])") == Lines{getpath});
  CHECK(faults(".a % 2").empty());
  CHECK(faults(".a % .b") == Lines{modulo});
  CHECK(faults(".a % -1") == Lines{modulo});
}

TEST_CASE("a format outside jq 1.6's list is refused") {
  CHECK(faults("@base32") == Lines{"@base32: `@base32` is not a format jq 1.6 knows"});
  CHECK(faults("@foo \"x\"") == Lines{"@foo: `@foo` is not a format jq 1.6 knows"});
  CHECK(faults("@base64d").empty());
}

TEST_CASE("every allowed builtin is one of jq 1.6's, and every other jq 1.6 builtin is refused") {
  karta::JqProgram program("[builtins[]]", 1);
  karta::JqInput input(nullptr);
  auto outcome = program.run(input, 1);
  REQUIRE(outcome.outputs.size() == 1);
  std::vector<std::string> jq_builtins = outcome.outputs[0].get<std::vector<std::string>>();
  const std::vector<std::string> allowed = karta::jq_allowed_builtins();
  CHECK(std::is_sorted(allowed.begin(), allowed.end()));
  for (const auto& name : allowed) {
    CAPTURE(name);
    CHECK(std::find(jq_builtins.begin(), jq_builtins.end(), name) != jq_builtins.end());
  }
  for (const auto& builtin : jq_builtins) {
    const std::string name = builtin.substr(0, builtin.find('/'));
    const int arity = std::stoi(builtin.substr(builtin.find('/') + 1));
    std::string call = name;
    const std::string argument = name == "getpath" ? "[\"x\"]" : "\"x\"";
    for (int k = 0; k < arity; ++k) call += (k == 0 ? "(" : "; ") + argument;
    if (arity > 0) call += ")";
    CAPTURE(call);
    const bool is_allowed = std::find(allowed.begin(), allowed.end(), builtin) != allowed.end();
    CHECK(faults(call).empty() == is_allowed);
  }
}

TEST_CASE("`*` whose operands are not visibly numbers is a warning, not a fault") {
  CHECK(jq_safety_warnings(".a * 2") == Lines{kMultiplication});
  CHECK(jq_safety_warnings("\"x\" * 1e9") == Lines{kMultiplication});
  CHECK(jq_safety_warnings(".spec.replicatedJobs[] | (.replicas // 1) * (.template.spec.parallelism // 1)") ==
        Lines{kMultiplication});
  CHECK(jq_safety_warnings("(.a | tonumber) * (.b | tonumber) * .c") == Lines{kMultiplication});
  CHECK(jq_safety_warnings("\"\\(.a * 2)\"") == Lines{kMultiplication});
  CHECK(faults(".a * 2").empty());
  // Once per expression, however many.
  CHECK(jq_safety_warnings(".a * .b * .c") == Lines{kMultiplication});

  CHECK(jq_safety_warnings(
            ".spec.replicatedJobs[] | (.replicas // 1 | tonumber) * (.template.spec.parallelism // 1 | tonumber)")
            .empty());
  CHECK(jq_safety_warnings("2 * 3").empty());
  CHECK(jq_safety_warnings("(.a | length) * -2").empty());
  CHECK(jq_safety_warnings("(.a | tonumber) * (.b | floor) * (1 + (.c | tonumber))").empty());
  CHECK(jq_safety_warnings("(.a // 1 | tonumber, 2) * (.b | utf8bytelength)").empty());
  CHECK(jq_safety_warnings(".a + .b - .c / .d").empty());
  CHECK(jq_safety_warnings("\"*\" + .a").empty());
  CHECK(jq_safety_warnings("\"abc").empty());  // a parse fault, not a warning
}

TEST_CASE("the tokens keep their kind, text, place and decoded value") {
  auto tokens = karta::tokenize_jq(".a.\"b c\" | $ x | \"\\u00e9\\(.d)\" # note\n| @sh");
  REQUIRE_FALSE(tokens.error.has_value());
  std::vector<std::string> seen;
  for (const auto& token : tokens.tokens)
    seen.push_back(std::to_string(static_cast<int>(token.kind)) + " " + token.text);
  using Kind = karta::JqToken::Kind;
  auto line = [](Kind kind, const std::string& text) { return std::to_string(static_cast<int>(kind)) + " " + text; };
  CHECK(seen == Lines{line(Kind::Field, ".a"), line(Kind::Dot, "."), line(Kind::String, "\"b c\""),
                      line(Kind::Punct, "|"), line(Kind::Variable, "$x"), line(Kind::Punct, "|"),
                      line(Kind::String, "\"\\u00e9\\(.d)\""), line(Kind::Punct, "|"), line(Kind::Format, "@sh")});
  CHECK(tokens.tokens[2].value == "b c");
  CHECK(tokens.tokens[2].offset == 3);
  CHECK_FALSE(tokens.tokens[6].value.has_value());
  REQUIRE(tokens.tokens[6].interpolations.size() == 1);
  CHECK(tokens.tokens[6].interpolations[0][0].text == ".d");
  CHECK(karta::tokenize_jq("\"\\u00e9\\ud83d\\ude00\"").tokens[0].value == "\xc3\xa9\xf0\x9f\x98\x80");
}

TEST_CASE("every expression of the built-in catalog is safe") {
  std::size_t checked = 0;
  for (const auto& compiled : karta::test::builtin_catalog().definitions()) {
    for (const auto& field : karta::jq_fields(compiled->definition())) {
      CAPTURE(compiled->definition().source);
      CAPTURE(field.field);
      CHECK(faults(field.expression) == Lines{});
      ++checked;
    }
  }
  CHECK(checked > 100);
}

}  // namespace unit_jq_safety
