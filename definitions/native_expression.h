#pragma once

// The value expressions definitions use most, evaluated without jq: replica counts such as
//   .spec.replicas // 1
//   .spec.replicatedJobs[] | (.replicas // 1 | tonumber) * (.template.spec.parallelism // 1 | tonumber)
//   .spec.workerGroupSpecs[]? | ([.replicas // 0, .minReplicas // 0 | tonumber] | max | tonumber) * ...
// The grammar is a small part of jq's: `|`, `,`, `//`, `+`, `-`, `*`, `/`, `==`, `!=`, `<`, `<=`, `>`,
// `>=`, `and`, `or`, `if`/`elif`/`else`/`end`, parentheses, number literals, string literals of printable
// ASCII without escapes, `null`, `true`, `false`, `tonumber` (of numbers, and of strings that spell a plain
// integer), `length`, `floor`, `keys[]`, simple paths (simple_path.h) relative to the input, one that
// starts `.[keys[]]` (which is `.[]`), and a list `[...]` only as the whole of what `| max`, `| min` or
// `| add` reduces. jq runs once per request otherwise (about 20 us, plus converting the object to jq's
// values, which for a RayCluster of 50 groups was 60% of its admission); with this grammar, 23 of the 25
// built-in kinds need no jq on admission (tests/unit-native-expression.cpp lists them). The tree is
// native_expression_node.h, read by native_expression_parser.cpp.
//
// Native when provably the same, jq otherwise: evaluation gives up (nullopt) on anything whose jq 1.6
// semantics it does not reproduce exactly: an error, a non-number in arithmetic, in an ordering or in a
// list reduced, `==` between two lists or two objects, `tonumber` of anything but a number or a plain
// integer's digits, the length of a string, an operand with other than one value. The caller then runs
// the expression through jq. Tests compare both on every catalog expression and sample, and a fuzzer on
// arbitrary expressions and documents.

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "json/json_document.h"

namespace karta {

class NativeExpression {
 public:
  // The expression, or nullopt when it uses anything beyond the grammar above.
  static std::optional<NativeExpression> parse(std::string_view expression);

  // jq's outputs on `input`, as jq_program.h converts them (integral numbers as integers); nullopt
  // where jq's answer may differ, and jq must decide. At most `max_outputs` outputs, else nullopt.
  std::optional<std::vector<json>> evaluate(JsonElement input, std::size_t max_outputs) const;

  struct Node;

 private:
  std::shared_ptr<const Node> root_;
};

}  // namespace karta
