#include "definitions/native_expression.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include <boost/container/small_vector.hpp>

#include "definitions/simple_path.h"

namespace karta {

struct NativeExpression::Node {
  // Comma: `left, right`. Collect: `[left]`, only while parsing (a list is no value here): it must be
  // followed by `| max`, `| min` or `| add`, and the two become one Reduce node.
  enum class Kind { Path, Number, String, ToNumber, Pipe, Alternative, Add, Subtract, Multiply, Comma, Collect, Reduce };
  enum class Reducer { Max, Min, Sum };
  Kind kind = Kind::Path;
  SimplePath path;  // Path: relative to the input; no steps is `.`
  double number = 0;
  std::string text;  // String: the literal's characters (it has no escapes)
  Reducer reducer = Reducer::Max;  // Reduce: of the values `left` gives
  std::shared_ptr<const Node> left, right;
  // Gives exactly one value, whatever the input (or gives up): a path of fields and indexes, a number,
  // tonumber, and pipes, alternatives and arithmetic of such. Evaluated value to value, without streams.
  bool single = false;
};

namespace {

using Node = NativeExpression::Node;
using NodePtr = std::shared_ptr<const Node>;

bool identifier_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  NodePtr parse() {
    NodePtr node = pipe();
    skip();
    return node && pos_ == text_.size() ? node : nullptr;
  }

 private:
  // jq's own white space only.
  void skip() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n')) ++pos_;
  }
  char peek(std::size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

  // An operator, not the start of a longer one (`|=`, `//=`, `*=`...).
  bool eat_operator(std::string_view op) {
    skip();
    if (text_.substr(pos_, op.size()) != op) return false;
    char next = pos_ + op.size() < text_.size() ? text_[pos_ + op.size()] : '\0';
    if (next == '=' || (op == "/" && next == '/') || (op == "|" && next == '|')) return false;
    pos_ += op.size();
    return true;
  }

  static NodePtr binary(Node::Kind kind, NodePtr left, NodePtr right) {
    if (!left || !right) return nullptr;
    // A list is native only as the whole of what `| max` (min, add) reduces: see reduced().
    if (left->kind == Node::Kind::Collect || right->kind == Node::Kind::Collect) return nullptr;
    auto node = std::make_shared<Node>();
    node->kind = kind;
    node->single = kind != Node::Kind::Comma && left->single && right->single;
    node->left = std::move(left);
    node->right = std::move(right);
    return node;
  }

  // `|` binds loosest, then `,`, then `//`.
  NodePtr pipe() {
    NodePtr left = reduced(comma());
    while (left && eat_operator("|")) left = binary(Node::Kind::Pipe, left, reduced(comma()));
    return left;
  }

  // `[...] | max` (or min, add) as one Reduce node; a list followed by anything else gives up.
  NodePtr reduced(NodePtr node) {
    if (!node || node->kind != Node::Kind::Collect) return node;
    if (!eat_operator("|")) return nullptr;
    skip();
    static constexpr std::pair<std::string_view, Node::Reducer> kReducers[] = {
        {"max", Node::Reducer::Max}, {"min", Node::Reducer::Min}, {"add", Node::Reducer::Sum}};
    for (const auto& [name, reducer] : kReducers) {
      if (text_.substr(pos_, name.size()) != name || identifier_char(peek(name.size()))) continue;
      pos_ += name.size();
      auto reduce = std::make_shared<Node>();
      reduce->kind = Node::Kind::Reduce;
      reduce->reducer = reducer;
      reduce->left = node->left;
      return reduce;  // a stream is reduced: not single
    }
    return nullptr;
  }

  NodePtr comma() {
    NodePtr left = alternative();
    while (left && eat_operator(",")) left = binary(Node::Kind::Comma, left, alternative());
    return left;
  }

  // `//` is right-associative and binds looser than arithmetic.
  NodePtr alternative() {
    NodePtr left = additive();
    if (left && eat_operator("//")) return binary(Node::Kind::Alternative, left, alternative());
    return left;
  }

  NodePtr additive() {
    NodePtr left = multiplicative();
    while (left) {
      if (eat_operator("+")) {
        left = binary(Node::Kind::Add, left, multiplicative());
      } else if (eat_operator("-")) {
        left = binary(Node::Kind::Subtract, left, multiplicative());
      } else {
        break;
      }
    }
    return left;
  }

  NodePtr multiplicative() {
    NodePtr left = primary();
    while (left && eat_operator("*")) left = binary(Node::Kind::Multiply, left, primary());
    return left;
  }

  NodePtr primary() {
    skip();
    char c = peek();
    if (c == '(') {
      ++pos_;
      NodePtr inner = pipe();
      skip();
      if (!inner || peek() != ')') return nullptr;
      ++pos_;
      return inner;
    }
    if (c == '[') {  // `[]` gives no inner expression: left to jq
      ++pos_;
      NodePtr inner = pipe();
      skip();
      if (!inner || peek() != ']') return nullptr;
      ++pos_;
      auto node = std::make_shared<Node>();
      node->kind = Node::Kind::Collect;
      node->left = std::move(inner);
      return node;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) return number();
    if (c == '"') return string();
    if (c == '.') return path();
    if (text_.substr(pos_, 8) == "tonumber" && !identifier_char(peek(8))) {
      pos_ += 8;
      auto node = std::make_shared<Node>();
      node->kind = Node::Kind::ToNumber;
      node->single = true;
      return node;
    }
    return nullptr;
  }

  // Digits with an optional fraction; anything richer (exponents, "1.") is left to jq.
  NodePtr number() {
    std::size_t start = pos_;
    while (std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;
    if (peek() == '.') {
      if (!std::isdigit(static_cast<unsigned char>(peek(1)))) return nullptr;
      ++pos_;
      while (std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;
    }
    if (identifier_char(peek()) || peek() == '.') return nullptr;
    auto node = std::make_shared<Node>();
    node->kind = Node::Kind::Number;
    node->number = std::strtod(std::string(text_.substr(start, pos_ - start)).c_str(), nullptr);
    node->single = true;
    return node;
  }

  // A string literal of printable ASCII without escapes or interpolation: Knative's default scale,
  // `// "1" | tonumber`. A backslash gives up (`\(...)` is jq code), and so does any other byte: jq reads
  // a literal's bytes as UTF-8 and replaces what is not (fuzz/README.md, F10).
  NodePtr string() {
    const std::size_t start = ++pos_;  // past '"'
    while (pos_ < text_.size() && peek() != '"') {
      const auto c = static_cast<unsigned char>(peek());
      if (c == '\\' || c < 0x20 || c > 0x7e) return nullptr;
      ++pos_;
    }
    if (peek() != '"') return nullptr;
    auto node = std::make_shared<Node>();
    node->kind = Node::Kind::String;
    node->text = std::string(text_.substr(start, pos_ - start));
    node->single = true;
    ++pos_;
    return node;
  }

  // The longest run of path syntax, handed to SimplePath's own parser.
  NodePtr path() {
    std::size_t start = pos_;
    ++pos_;  // '.'
    bool after_dot = true;
    while (pos_ < text_.size()) {
      char c = peek();
      if (after_dot && identifier_start(c)) {
        // Checked on the whole rest: jq reads ".e+3" as one (invalid) number, not ".e + 3".
        if (jq_reads_number_after_dot(text_.substr(pos_))) return nullptr;
        while (identifier_char(peek())) ++pos_;
      } else if (after_dot && c == '"') {
        if (!skip_string()) return nullptr;
      } else if (c == '[') {
        ++pos_;
        while (pos_ < text_.size() && peek() != ']') {
          if (peek() == '"' && !skip_string()) return nullptr;
          if (peek() != ']' && peek() != '"') ++pos_;
        }
        if (peek() != ']') return nullptr;
        ++pos_;
        if (peek() == '?') {
          // jq's lexer reads "?//" as one token (destructuring alternatives): `.a[]?// 0` does not compile.
          if (peek(1) == '/' && peek(2) == '/') return nullptr;
          ++pos_;
        }
      } else if (c == '.' && (identifier_start(peek(1)) || peek(1) == '"' || peek(1) == '[')) {
        ++pos_;
        after_dot = true;
        continue;
      } else {
        break;
      }
      after_dot = false;
    }
    auto parsed = SimplePath::parse(text_.substr(start, pos_ - start));
    if (!parsed) return nullptr;
    auto node = std::make_shared<Node>();
    node->kind = Node::Kind::Path;
    node->path = std::move(*parsed);
    const auto& steps = node->path.steps();
    node->single = std::none_of(steps.begin(), steps.end(), [](const SimplePath::Step& step) {
      return std::holds_alternative<SimplePath::Iterate>(step);
    });
    return node;
  }

  bool skip_string() {
    ++pos_;  // '"'
    while (pos_ < text_.size() && peek() != '"') pos_ += peek() == '\\' ? 2 : 1;
    if (peek() != '"') return false;
    ++pos_;
    return true;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

// A value met while evaluating: a place in the object, a computed number, a string literal of the
// expression, or null (a missing member).
struct Value {
  enum class Kind { Element, Number, String, Null } kind = Kind::Null;
  JsonElement element;
  union {
    double number = 0;
    const std::string* text;  // String: the literal, held by its node
  };

  static Value of_number(double n) {
    Value v;
    v.kind = Kind::Number;
    v.number = n;
    return v;
  }
};
// Inline for the few values an expression usually yields: no allocation per step.
using Stream = boost::container::small_vector<Value, 8>;

Value element_value(JsonElement element) {
  if (element.is_null()) return {};
  Value v;
  v.kind = Value::Kind::Element;
  v.element = element;
  return v;
}

std::optional<double> number_of(const Value& v) {
  if (v.kind == Value::Kind::Number) return v.number;
  if (v.kind == Value::Kind::Element && v.element.is_number()) return double(v.element.get_double().value_unsafe());
  return std::nullopt;
}

// jq 1.6's tonumber parses a string as JSON text: " 1", "01", "1e2", "+1" and "nan" (null) are numbers
// to it. Only the plain integer spelling is read here, at most 15 digits (exact as a double), and not
// "-0"; anything else gives up and jq decides.
std::optional<double> plain_integer(std::string_view text) {
  std::string_view digits = text.substr(!text.empty() && text[0] == '-' ? 1 : 0);
  if (digits.empty() || digits.size() > 15 || (digits[0] == '0' && text.size() > 1)) return std::nullopt;
  double value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return digits.size() == text.size() ? value : -value;
}

std::optional<double> tonumber_of(const Value& v) {
  if (auto number = number_of(v)) return number;
  if (v.kind == Value::Kind::String) return plain_integer(*v.text);
  if (v.kind == Value::Kind::Element && v.element.is_string()) return plain_integer(*string_of(v.element));
  return std::nullopt;
}

bool truthy(const Value& v) {
  if (v.kind == Value::Kind::Null) return false;
  if (v.kind == Value::Kind::Element && v.element.is_bool()) return v.element.get_bool().value_unsafe();
  return true;
}

// Numbers as jq holds them (doubles), written back as jq_program.h writes them.
json number_json(double number) {
  if (std::isfinite(number) && std::nearbyint(number) == number && std::fabs(number) < 9.007199254740992e15) {
    return static_cast<std::int64_t>(number);
  }
  return number;
}

json jq_json(JsonElement element) {
  if (element.is_number()) return number_json(element.get_double().value_unsafe());
  if (element.is_array()) {
    json array = json::array();
    for (auto item : array_of(element)) array.push_back(jq_json(item));
    return array;
  }
  if (element.is_object()) {
    json object = json::object();
    for (const auto& [key, item] : sorted_members(element)) object[std::string(key)] = jq_json(item);
    return object;
  }
  return to_json(element);
}

class Evaluator {
 public:
  explicit Evaluator(std::size_t max_outputs) : max_(max_outputs) {}

  // False: give up, jq decides.
  bool run(const Node& node, const Value& input, Stream& out) {
    if (node.single) {
      Value value;
      if (!one(node, input, value)) return false;
      out.push_back(value);
      return out.size() <= max_;
    }
    switch (node.kind) {
      case Node::Kind::Path:
        return walk(node.path, input, out);
      case Node::Kind::Number:
      case Node::Kind::String:
      case Node::Kind::ToNumber:
        break;  // always single: one() answered above
      case Node::Kind::Pipe: {
        Stream left;
        if (!run(*node.left, input, left)) return false;
        for (const auto& v : left) {
          if (!run(*node.right, v, out) || out.size() > max_) return false;
        }
        return true;
      }
      case Node::Kind::Alternative: {
        Stream left;
        if (!run(*node.left, input, left)) return false;
        std::size_t before = out.size();
        for (const auto& v : left) {
          if (truthy(v)) out.push_back(v);
        }
        return out.size() > before || run(*node.right, input, out);
      }
      case Node::Kind::Add:
      case Node::Kind::Subtract:
      case Node::Kind::Multiply: {
        Stream left, right;
        if (!run(*node.left, input, left) || !run(*node.right, input, right)) return false;
        if (left.size() != 1 || right.size() != 1) return false;  // jq's cartesian order: not imitated
        Value result;
        if (!arithmetic(node, left[0], right[0], result)) return false;
        out.push_back(result);
        return true;
      }
      case Node::Kind::Comma:
        return run(*node.left, input, out) && run(*node.right, input, out);
      case Node::Kind::Reduce: {
        Stream items;
        if (!run(*node.left, input, items)) return false;
        Value result;  // null: what jq gives for an empty list
        for (const auto& item : items) {
          auto n = number_of(item);
          if (!n) return false;  // jq orders and adds other kinds by rules of its own: not imitated
          // jq 1.6: max keeps the last of equal values, min the first; add sums in order, as its reduce.
          if (result.kind == Value::Kind::Null) result = Value::of_number(*n);
          else if (node.reducer == Node::Reducer::Sum) result.number += *n;
          else if (node.reducer == Node::Reducer::Max ? *n >= result.number : *n < result.number) result.number = *n;
        }
        out.push_back(result);
        return out.size() <= max_;
      }
      case Node::Kind::Collect:  // never in a parsed expression: reduced() made it a Reduce node, or gave up
        break;
    }
    return false;
  }

 private:
  // A field or an index step on one value: null gives null; false where jq stops with an error.
  static bool index_one(const SimplePath::Step& step, const Value& v, Value& result) {
    if (v.kind == Value::Kind::Null) {
      result = Value{};
      return true;
    }
    if (const auto* field = std::get_if<SimplePath::Field>(&step)) {
      if (v.kind != Value::Kind::Element || !v.element.is_object()) return false;  // jq: Cannot index ... with "..."
      auto found = member(v.element, field->name);
      result = found ? element_value(*found) : Value{};
      return true;
    }
    const auto& index = std::get<SimplePath::Index>(step);
    if (v.kind != Value::Kind::Element || !v.element.is_array()) return false;
    auto item = array_of(v.element).at(index.index);
    result = item.error() ? Value{} : element_value(item.value_unsafe());
    return true;
  }

  // A single node's one value, as run() would stream it: the same steps in the same order, the same
  // cases given up.
  static bool one(const Node& node, const Value& input, Value& result) {
    switch (node.kind) {
      case Node::Kind::Path: {
        Value v = input;
        for (const auto& step : node.path.steps()) {  // fields and indexes only
          if (!index_one(step, Value(v), v)) return false;
        }
        result = v;
        return true;
      }
      case Node::Kind::Number:
        result = Value::of_number(node.number);
        return true;
      case Node::Kind::String:
        result = Value{};
        result.kind = Value::Kind::String;
        result.text = &node.text;
        return true;
      case Node::Kind::ToNumber: {
        auto number = tonumber_of(input);
        if (!number) return false;  // a string other than a plain integer: jq decides
        result = Value::of_number(*number);
        return true;
      }
      case Node::Kind::Pipe: {
        Value middle;
        return one(*node.left, input, middle) && one(*node.right, middle, result);
      }
      case Node::Kind::Alternative: {
        Value left;
        if (!one(*node.left, input, left)) return false;
        if (truthy(left)) {
          result = left;
          return true;
        }
        return one(*node.right, input, result);
      }
      default: {
        Value left, right;
        return one(*node.left, input, left) && one(*node.right, input, right) && arithmetic(node, left, right, result);
      }
    }
    return false;
  }

  // The Add, Subtract or Multiply node's value on two operands, or false: null + 1, string * number,
  // object * object follow jq's own rules, not imitated.
  static bool arithmetic(const Node& node, const Value& left, const Value& right, Value& result) {
    auto a = number_of(left), b = number_of(right);
    if (!a || !b) return false;
    result = Value::of_number(node.kind == Node::Kind::Add        ? *a + *b
                              : node.kind == Node::Kind::Subtract ? *a - *b
                                                                  : *a * *b);
    return true;
  }

  bool walk(const SimplePath& path, const Value& input, Stream& out) {
    Stream current{input};
    for (const auto& step : path.steps()) {
      if (!std::holds_alternative<SimplePath::Iterate>(step)) {
        // A field or an index maps each value to one: done in place, in order.
        for (auto& v : current) {
          if (!index_one(step, Value(v), v)) return false;
        }
        continue;
      }
      Stream next;
      for (const auto& v : current) {
        bool iterable = v.kind == Value::Kind::Element && (v.element.is_array() || v.element.is_object());
        if (!iterable) {
          if (std::get<SimplePath::Iterate>(step).optional) continue;
          return false;  // jq: Cannot iterate over ...
        }
        if (v.element.is_array()) {
          for (auto item : array_of(v.element)) next.push_back(element_value(item));
        } else {
          for (const auto& [key, item] : sorted_members(v.element)) next.push_back(element_value(item));
        }
        if (next.size() > max_) return false;
      }
      current = std::move(next);
    }
    out.insert(out.end(), current.begin(), current.end());
    return out.size() <= max_;
  }

  std::size_t max_;
};

}  // namespace

std::optional<NativeExpression> NativeExpression::parse(std::string_view expression) {
  NodePtr root = Parser(expression).parse();
  if (!root) return std::nullopt;
  NativeExpression native;
  native.root_ = std::move(root);
  return native;
}

std::optional<std::vector<json>> NativeExpression::evaluate(JsonElement input, std::size_t max_outputs) const {
  Stream outputs;
  if (!Evaluator(max_outputs).run(*root_, element_value(input), outputs)) return std::nullopt;
  std::vector<json> values;
  values.reserve(outputs.size());
  for (const auto& v : outputs) {
    switch (v.kind) {
      case Value::Kind::Null:
        values.emplace_back(nullptr);
        break;
      case Value::Kind::Number:
        values.push_back(number_json(v.number));
        break;
      case Value::Kind::String:
        values.emplace_back(*v.text);
        break;
      case Value::Kind::Element:
        values.push_back(jq_json(v.element));
        break;
    }
  }
  return values;
}

}  // namespace karta
