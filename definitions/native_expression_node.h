#pragma once

// The native expression grammar's tree (native_expression.h): what native_expression_parser.cpp builds
// and native_expression.cpp evaluates. Internal to those two files.

#include <memory>
#include <string>
#include <string_view>

#include "definitions/native_expression.h"
#include "definitions/simple_path.h"

namespace karta {

struct NativeExpression::Node {
  // Keys: `keys[]`, the input's keys one by one. Comma: `left, right`. Collect: `[left]`, only while parsing (a list is no value here): it must be
  // followed by `| max`, `| min` or `| add`, and the two become one Reduce node.
  enum class Kind {
    Path, Number, String, Literal, ToNumber, Length, Floor, Keys, Pipe, Alternative, Add, Subtract, Multiply, Divide,
    Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual, And, Or, If, Comma, Collect, Reduce
  };
  enum class Reducer { Max, Min, Sum };
  Kind kind = Kind::Path;
  SimplePath path;  // Path: relative to the input; no steps is `.`
  double number = 0;
  std::string text;       // String: the literal's characters (it has no escapes),
  std::string_view view;  // and a view of them (the node does not move once made)
  int literal = 0;   // Literal: 0 null, 1 false, 2 true
  Reducer reducer = Reducer::Max;  // Reduce: of the values `left` gives
  std::shared_ptr<const Node> left, right;
  std::shared_ptr<const Node> condition;  // If: `if condition then left else right end` (elif: an If as right)
  // Gives exactly one value, whatever the input (or gives up): a path of fields and indexes, a literal,
  // tonumber, length, floor, and pipes, alternatives, arithmetic, comparisons, `and`, `or` and `if` of
  // such. Evaluated value to value, without streams.
  bool single = false;
};

// The tree of `expression`, or null when it uses anything beyond the grammar.
std::shared_ptr<const NativeExpression::Node> parse_native_expression(std::string_view expression);

}  // namespace karta
