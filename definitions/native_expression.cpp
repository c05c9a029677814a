#include "definitions/native_expression.h"

// Evaluation of the native grammar's tree (native_expression_node.h, read by native_expression_parser.cpp)
// on a simdjson element: streams of values where jq would stream, one value at a time where a node is
// single, giving up wherever jq 1.6's answer could differ. Longer than 500 lines because run() and one()
// take the grammar's nodes case by case, streamed and single, and must agree case for case: they stay
// side by side.

#include <algorithm>
#include <cmath>
#include <forward_list>

#include <boost/container/small_vector.hpp>

#include "definitions/native_expression_node.h"

namespace karta {
namespace {

using Node = NativeExpression::Node;
using NodePtr = std::shared_ptr<const Node>;

// A value met while evaluating: a place in the object, a computed number or boolean, a string (a
// literal of the expression or a key of the object), or null (a missing member).
struct Value {
  enum class Kind { Element, Number, String, Bool, Null } kind = Kind::Null;
  JsonElement element;
  union {
    double number = 0;
    const std::string_view* text;  // String: a literal (its node's view) or a key (the evaluator's)
    bool flag;                     // Bool
  };

  static Value of_text(const std::string_view* text) {
    Value v;
    v.kind = Kind::String;
    v.text = text;
    return v;
  }
  static Value of_bool(bool b) {
    Value v;
    v.kind = Kind::Bool;
    v.flag = b;
    return v;
  }
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

// A list's or an object's size; nullopt where simdjson stops counting (0xFFFFFF), and jq must count.
std::optional<std::size_t> counted_size(JsonElement element) {
  const std::size_t size = element.is_array() ? array_of(element).size() : object_of(element).size();
  if (size >= 0xFFFFFF) return std::nullopt;
  return size;
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
  if (v.kind == Value::Kind::Bool) return v.flag;
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
      case Node::Kind::Literal:
      case Node::Kind::ToNumber:
      case Node::Kind::Length:
      case Node::Kind::Floor:
        break;  // always single: one() answered above
      case Node::Kind::Keys:
        return keys(input, out);
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
      case Node::Kind::Multiply:
      case Node::Kind::Divide:
      case Node::Kind::Equal:
      case Node::Kind::NotEqual:
      case Node::Kind::Less:
      case Node::Kind::LessEqual:
      case Node::Kind::Greater:
      case Node::Kind::GreaterEqual: {
        Stream left, right;
        if (!run(*node.left, input, left) || !run(*node.right, input, right)) return false;
        if (left.size() != 1 || right.size() != 1) return false;  // jq's cartesian order: not imitated
        Value result;
        if (!binary_value(node, left[0], right[0], result)) return false;
        out.push_back(result);
        return true;
      }
      case Node::Kind::And:
      case Node::Kind::Or: {
        // jq 1.6's gen_and and gen_or: for each value of the left, in order, the answer it decides alone
        // (false for `and`, true for `or`), or else one per value of the right, run on the same input.
        const bool decides = node.kind == Node::Kind::Or;
        Stream left;
        if (!run(*node.left, input, left)) return false;
        for (const auto& v : left) {
          if (truthy(v) == decides) {
            out.push_back(Value::of_bool(decides));
            continue;
          }
          Stream right;
          if (!run(*node.right, input, right)) return false;
          for (const auto& w : right) out.push_back(Value::of_bool(truthy(w)));
          if (out.size() > max_) return false;
        }
        return out.size() <= max_;
      }
      case Node::Kind::If: {  // its condition is single (the parser's rule)
        Value condition;
        if (!one(*node.condition, input, condition)) return false;
        return run(truthy(condition) ? *node.left : *node.right, input, out);
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
  // A field or an index step from a place, taken in place: Null where jq gives null (a missing member or
  // item, or a null one), Error where it stops with an error. Values are stepped where they are, never
  // through a copy: each copy was written field by field and read back whole, a store the processor
  // could not forward (a quarter of one()'s samples in a profile: bench/README.md, issue 24, fourteenth
  // round).
  enum class Stepped { Found, Null, Error };
  static Stepped step_from(const SimplePath::Step& step, JsonElement& place) {
    if (const auto* field = std::get_if<SimplePath::Field>(&step)) {
      if (!place.is_object()) return Stepped::Error;  // jq: Cannot index ... with "..."
      auto found = member(place, field->name);
      if (!found || found->is_null()) return Stepped::Null;
      place = *found;
      return Stepped::Found;
    }
    if (!place.is_array()) return Stepped::Error;
    auto item = array_of(place).at(std::get<SimplePath::Index>(step).index);
    if (item.error() || item.value_unsafe().is_null()) return Stepped::Null;
    place = item.value_unsafe();
    return Stepped::Found;
  }

  // A single node's one value, as run() would stream it: the same steps in the same order, the same
  // cases given up.
  static bool one(const Node& node, const Value& input, Value& result) {
    switch (node.kind) {
      case Node::Kind::Path: {  // fields and indexes only; null stays null through every step
        if (node.path.steps().empty() || input.kind == Value::Kind::Null) {
          result = input;
          return true;
        }
        if (input.kind != Value::Kind::Element) return false;  // jq: Cannot index ...
        JsonElement place = input.element;
        for (const auto& step : node.path.steps()) {
          const Stepped stepped = step_from(step, place);
          if (stepped == Stepped::Error) return false;
          if (stepped == Stepped::Null) {
            result = Value{};  // and null past it
            return true;
          }
        }
        result = element_value(place);
        return true;
      }
      case Node::Kind::Number:
        result = Value::of_number(node.number);
        return true;
      case Node::Kind::String:
        result = Value::of_text(&node.view);
        return true;
      case Node::Kind::Literal:
        result = node.literal == 0 ? Value{} : Value::of_bool(node.literal == 2);
        return true;
      case Node::Kind::ToNumber: {
        auto number = tonumber_of(input);
        if (!number) return false;  // a string other than a plain integer: jq decides
        result = Value::of_number(*number);
        return true;
      }
      case Node::Kind::Length:
        return length_of(input, result);
      case Node::Kind::Floor: {
        auto number = number_of(input);
        if (!number) return false;  // jq: ... number required
        result = Value::of_number(std::floor(*number));
        return true;
      }
      case Node::Kind::If: {
        Value condition;
        if (!one(*node.condition, input, condition)) return false;
        return one(truthy(condition) ? *node.left : *node.right, input, result);
      }
      case Node::Kind::And:
      case Node::Kind::Or: {
        const bool decides = node.kind == Node::Kind::Or;
        Value left, right;
        if (!one(*node.left, input, left)) return false;
        if (truthy(left) == decides) {
          result = Value::of_bool(decides);
          return true;
        }
        if (!one(*node.right, input, right)) return false;
        result = Value::of_bool(truthy(right));
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
        return one(*node.left, input, left) && one(*node.right, input, right) && binary_value(node, left, right, result);
      }
    }
    return false;
  }

  // An arithmetic node's value on two numbers, or a comparison's on two values; false where jq's own rules
  // apply and are not imitated (null + 1, string * number, object * object, division by zero, ordering
  // anything but two numbers).
  static bool binary_value(const Node& node, const Value& left, const Value& right, Value& result) {
    if (node.kind == Node::Kind::Equal || node.kind == Node::Kind::NotEqual) {
      auto same = equal(left, right);
      if (!same) return false;
      result = Value::of_bool(*same == (node.kind == Node::Kind::Equal));
      return true;
    }
    auto a = number_of(left), b = number_of(right);
    if (!a || !b) return false;
    switch (node.kind) {
      case Node::Kind::Add: result = Value::of_number(*a + *b); return true;
      case Node::Kind::Subtract: result = Value::of_number(*a - *b); return true;
      case Node::Kind::Multiply: result = Value::of_number(*a * *b); return true;
      case Node::Kind::Divide:
        if (*b == 0) return false;  // jq: cannot be divided because the divisor is zero
        result = Value::of_number(*a / *b);
        return true;
      case Node::Kind::Less: result = Value::of_bool(*a < *b); return true;
      case Node::Kind::LessEqual: result = Value::of_bool(*a <= *b); return true;
      case Node::Kind::Greater: result = Value::of_bool(*a > *b); return true;
      case Node::Kind::GreaterEqual: result = Value::of_bool(*a >= *b); return true;
      default: return false;
    }
  }

  // jq's kinds: null, false, true, number, string, array, object (JV_KIND_*).
  enum class JqKind { Null, False, True, Number, String, Array, Object };
  static JqKind jq_kind(const Value& v) {
    switch (v.kind) {
      case Value::Kind::Null: return JqKind::Null;
      case Value::Kind::Bool: return v.flag ? JqKind::True : JqKind::False;
      case Value::Kind::Number: return JqKind::Number;
      case Value::Kind::String: return JqKind::String;
      case Value::Kind::Element: break;
    }
    const JsonElement& e = v.element;
    if (e.is_bool()) return e.get_bool().value_unsafe() ? JqKind::True : JqKind::False;
    if (e.is_number()) return JqKind::Number;
    if (e.is_string()) return JqKind::String;
    return e.is_array() ? JqKind::Array : JqKind::Object;  // null is never an Element (element_value)
  }
  static std::string_view string_value(const Value& v) {
    return v.kind == Value::Kind::String ? std::string_view(*v.text) : *string_of(v.element);
  }

  // jq's `==`: values of different kinds differ; numbers compare as doubles, strings by their bytes. Two
  // lists or two objects are compared by jq's rules, not imitated (nullopt).
  static std::optional<bool> equal(const Value& left, const Value& right) {
    const JqKind a = jq_kind(left), b = jq_kind(right);
    if (a != b) return false;
    switch (a) {
      case JqKind::Number: return *number_of(left) == *number_of(right);
      case JqKind::String: return string_value(left) == string_value(right);
      case JqKind::Array:
      case JqKind::Object: return std::nullopt;
      default: return true;  // null, false, true
    }
  }

  // jq's length: of null 0, of a number its absolute value, of a list or an object its size. A string's
  // (its code points) is left to jq, and a boolean's is an error.
  static bool length_of(const Value& v, Value& result) {
    switch (jq_kind(v)) {
      case JqKind::Null: result = Value::of_number(0); return true;
      case JqKind::Number: result = Value::of_number(std::fabs(*number_of(v))); return true;
      case JqKind::Array:
      case JqKind::Object: {
        auto size = counted_size(v.element);
        if (!size) return false;
        result = Value::of_number(double(*size));
        return true;
      }
      default:
        return false;
    }
  }

  bool walk(const SimplePath& path, const Value& input, Stream& out) {
    Stream current{input};
    for (const auto& step : path.steps()) {
      if (!std::holds_alternative<SimplePath::Iterate>(step)) {
        // A field or an index maps each value to one: done in place, in order.
        for (auto& v : current) {
          if (v.kind == Value::Kind::Null) continue;
          const Stepped stepped = v.kind == Value::Kind::Element ? step_from(step, v.element) : Stepped::Error;
          if (stepped == Stepped::Error) return false;
          if (stepped == Stepped::Null) v = Value{};
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

  // `keys[]`: an object's keys, sorted bytewise as jq 1.6's jv_keys sorts them (each once: sorted_members
  // keeps the first of a repeated key, as the values handed to jq do); a list's indexes; an error on
  // anything else (given up).
  bool keys(const Value& input, Stream& out) {
    if (input.kind != Value::Kind::Element) return false;
    if (input.element.is_array()) {
      auto size = counted_size(input.element);
      if (!size || out.size() + *size > max_) return false;
      for (std::size_t i = 0; i < *size; ++i) out.push_back(Value::of_number(double(i)));
      return true;
    }
    if (!input.element.is_object()) return false;
    for (const auto& [key, item] : sorted_members(input.element)) out.push_back(Value::of_text(&keys_.emplace_front(key)));
    return out.size() <= max_;
  }

  std::size_t max_;
  std::forward_list<std::string_view> keys_;  // what key Values point to: stable, and no allocation unless used
};

}  // namespace

std::optional<NativeExpression> NativeExpression::parse(std::string_view expression) {
  NodePtr root = parse_native_expression(expression);
  if (!root) return std::nullopt;
  NativeExpression native;
  native.root_ = std::move(root);
  return native;
}

std::optional<std::vector<json>> NativeExpression::evaluate(JsonElement input, std::size_t max_outputs) const {
  Stream outputs;
  Evaluator evaluator(max_outputs);  // holds the keys the outputs may point to, until they are converted
  if (!evaluator.run(*root_, element_value(input), outputs)) return std::nullopt;
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
        values.emplace_back(std::string(*v.text));
        break;
      case Value::Kind::Bool:
        values.emplace_back(v.flag);
        break;
      case Value::Kind::Element:
        values.push_back(jq_json(v.element));
        break;
    }
  }
  return values;
}

}  // namespace karta
