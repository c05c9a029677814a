#include "validate/jq_allow_list.h"

#include <algorithm>
#include <array>

namespace karta {
namespace {

// ---------------------------------------------------------------------------------------------------
// What is allowed, and what is refused with a reason of its own.

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
    {"limit", 2},
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

// Why each construct is refused: each can hang the webhook, crash it, leak what it holds or do I/O, or
// answers from the webhook's host rather than from the object. tests/unit-jq-safety.cpp refuses each with
// its exact message, and its "the danger of each refusal" cases show the danger with the jq 1.6 CLI (the
// libjq we link) or our own JqProgram:
// - env, $ENV: JqProgram answers `env.NAME` with the webhook's environment (service account paths,
//   credentials handed in by variables).
// - input, inputs: read the next input instead of the admitted object; in the CLI that is more of stdin.
// - debug, stderr: write the value to standard error (stderr does so from libjq too): an object logged on
//   every admission.
// - the runtime: get_search_list, get_jq_origin and get_prog_origin name the host's directories;
//   modulemeta reads module files; $__loc__ names the line of the text the webhook compiles (after its
//   prelude and bundling), not the definition's; input_filename, input_line_number, builtins and
//   $__prog_args describe the jq process, never the object, and a definition has no use for them.
// - halt, halt_error: stop jq with no value; `"a fault" | halt_error` corrupts libjq 1.6's heap when the
//   state runs again (malloc aborts the process).
// - import, include, module: read jq files from the host's disk.
// - `..`, recurse, recurse_down, walk, paths, leaf_paths: `recurse(f)` runs forever when f always has an
//   output (`recurse([.])`); the others visit every value however deep, and paths/leaf_paths build a path
//   as long as the depth for every leaf (depth x leaves for a crafted object). Definitions name fields.
// - range, repeat, while, until, combinations: generators whose length the expression, not the object,
//   chooses (`range(1e18)` does not end).
// - tostream, fromstream, truncate_stream: one path per leaf, as paths does.
// - def: a function can call itself (`def f: f; f` never ends).
// - updates (=, |=, +=, ..., del, setpath, delpaths): a definition reads the object; an update can only
//   build a new object, of a size the expression chooses.
// - regular expressions: Oniguruma backtracks (`^(a+)+$`) up to its retry limit, a tenth of a second a
//   string on this machine, for every string the object holds.
// - time functions: `-1e20 | todate` and `1e300 | strftime("%Y")` abort jq 1.6 on an assertion; the rest
//   answer from the clock, the time zone or the C library, not from the object.
// `limit`, `label` and `break` are allowed: each only ends early a generator that, being allowed, ends
// anyway.
constexpr std::string_view kEnvironment = "it would expose the webhook's environment";
constexpr std::string_view kInput = "it would read input other than the admitted object";
constexpr std::string_view kLog = "it would write to the webhook's standard error";
constexpr std::string_view kRuntime = "it inspects the jq runtime, not the admitted object";
constexpr std::string_view kHalt = "it would stop jq instead of producing a value";
constexpr std::string_view kModule = "a definition cannot load jq modules";
constexpr std::string_view kRecursion = "it recurses through the whole value, however deep; name the fields instead";
constexpr std::string_view kGenerator = "it is a generator whose length the admitted object does not bound";
constexpr std::string_view kStream = "it streams every leaf of the value, however deep";
constexpr std::string_view kDef = "a user-defined function can recurse forever";
constexpr std::string_view kUpdate = "a definition reads the object and never updates it";
constexpr std::string_view kRegex = "regular expressions can take exponential time on crafted input";
constexpr std::string_view kTime = "time functions depend on the clock, the time zone or the C library";

// Constructs refused with a reason of their own; any other call outside kAllowedBuiltins is refused as
// "not an allowed builtin".
constexpr std::array kRefusals = std::to_array<JqRefusal>({
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
    {"tostream", -1, kStream},
    {"fromstream", -1, kStream},
    {"truncate_stream", -1, kStream},
    {"def", -1, kDef},
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

}  // namespace

bool is_allowed_builtin(std::string_view name, int arity) {
  return std::binary_search(kAllowedBuiltins.begin(), kAllowedBuiltins.end(), Builtin{name, arity});
}

const JqRefusal* find_refusal(std::string_view name, int arity) {
  for (const JqRefusal& refusal : kRefusals)
    if (refusal.name == name && (refusal.arity == -1 || refusal.arity == arity)) return &refusal;
  return nullptr;
}

std::vector<std::string> jq_allowed_builtins() {
  std::vector<std::string> names;
  for (const Builtin& builtin : kAllowedBuiltins)
    names.push_back(std::string(builtin.name) + "/" + std::to_string(builtin.arity));
  return names;
}

}  // namespace karta
