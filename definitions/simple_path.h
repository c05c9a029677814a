#pragma once

// Paths made only of `.field`, `."quoted field"`, `.["field"]`, `[N]`, `[]` and `[]?` are evaluated
// natively on the admitted object, with jq 1.6's own semantics (tests compare both on every catalog path
// and sample, and a fuzzer compares them on arbitrary paths and documents):
// - `.field` on null gives null; on anything but an object or null it is an error;
// - `[N]` on null gives null, past the end gives null; on anything but an array or null it is an error;
// - `[]` iterates an array's elements or an object's values in key order; on anything else (null too)
//   it is an error; `[]?` gives nothing there instead;
// - an error ends the stream; what came before it is kept.

#include <cstdint>
#include <memory_resource>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "json/json_document.h"

namespace karta {

// Whether jq 1.6's lexer reads the text after a '.' as part of a number, not as a field name. Its
// number rule, `([0-9]+(\.[0-9]*)?|\.[0-9]*)([eE][+-]?[0-9]+)?`, also matches ".e3", and flex takes the
// longer match, or the number on a tie: ".e3", ".E10" and ".e+3" do not compile ("Invalid numeric
// literal"), while ".e", ".e3x" and ".ex3" are fields. (Fuzz finding F9.)
bool jq_reads_number_after_dot(std::string_view after_dot);

class SimplePath {
 public:
  struct Field {
    std::string name;
  };
  struct Index {
    std::size_t index;
  };
  struct Iterate {
    bool optional = false;  // `[]?`: nothing, rather than an error, on what cannot be iterated
  };
  using Step = std::variant<Field, Index, Iterate>;

  // The path, or nullopt when `expression` uses anything beyond the simple grammar.
  static std::optional<SimplePath> parse(std::string_view expression);

  struct Match {
    JsonPointer pointer;
    std::optional<JsonElement> value;  // nullopt where the path leads to a missing member or index
  };
  struct Result {
    std::vector<Match> matches;
    std::optional<std::string> error;
    bool capped = false;
  };

  // Every place the path reaches in `document`, as jq's path(EXPR) would list it. Without `pointers`,
  // only the values: each match's pointer is left empty (an expression read for its values).
  Result evaluate(JsonElement document, std::size_t max_outputs, bool pointers = true) const;
  // The same, each match appended to `places` (what it reaches) and, when `pointers` is given, to
  // `pointers` (where it is): a definition's evaluation keeps its outcome in these without a copy.
  // Returns the error that ended the stream, if any; `capped` says whether outputs were cut at max_outputs.
  std::optional<std::string> evaluate_into(JsonElement document, std::size_t max_outputs,
                                           std::pmr::vector<JsonPointer>* pointers,
                                           std::pmr::vector<std::optional<JsonElement>>& places, bool& capped) const;

  const std::vector<Step>& steps() const { return steps_; }

 private:
  std::vector<Step> steps_;
  std::vector<std::string> escaped_;  // per step: a Field's reference token, escaped, with its '/'; else ""
};

}  // namespace karta
