// The native expression grammar (native_expression.h) read into a tree (native_expression_node.h): a
// recursive descent with jq 1.6's precedence, refusing whatever it does not know.

#include <cctype>
#include <cstdlib>
#include <string>

#include "definitions/native_expression_node.h"

namespace karta {
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
    static constexpr std::pair<std::string_view, Node::Reducer> kReducers[] = {
        {"max", Node::Reducer::Max}, {"min", Node::Reducer::Min}, {"add", Node::Reducer::Sum}};
    for (const auto& [name, reducer] : kReducers) {
      if (!eat_keyword(name)) continue;
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
    NodePtr left = disjunction();
    if (left && eat_operator("//")) return binary(Node::Kind::Alternative, left, alternative());
    return left;
  }

  // `or` binds looser than `and`, both looser than comparisons (jq 1.6's parser.y).
  NodePtr disjunction() {
    NodePtr left = conjunction();
    while (left && eat_keyword("or")) left = binary(Node::Kind::Or, left, conjunction());
    return left;
  }

  NodePtr conjunction() {
    NodePtr left = comparison();
    while (left && eat_keyword("and")) left = binary(Node::Kind::And, left, comparison());
    return left;
  }

  // Comparisons do not chain in jq (`a == b == c` does not compile): at most one here, and a second is
  // left unparsed, so the whole expression is refused.
  NodePtr comparison() {
    NodePtr left = additive();
    static constexpr std::pair<std::string_view, Node::Kind> kComparisons[] = {
        {"==", Node::Kind::Equal},    {"!=", Node::Kind::NotEqual}, {"<=", Node::Kind::LessEqual},
        {">=", Node::Kind::GreaterEqual}, {"<", Node::Kind::Less},  {">", Node::Kind::Greater}};
    for (const auto& [op, kind] : kComparisons) {
      if (left && eat_operator(op)) return binary(kind, left, additive());
    }
    return left;
  }

  // Left-associative operators of one level over `operand` (additive over multiplicative, ...).
  template <std::size_t N>
  NodePtr left_associative(NodePtr (Parser::*operand)(), const std::pair<std::string_view, Node::Kind> (&ops)[N]) {
    NodePtr left = (this->*operand)();
    for (bool more = true; left && more;) {
      more = false;
      for (const auto& [op, kind] : ops) {
        if (!eat_operator(op)) continue;
        left = binary(kind, left, (this->*operand)());
        more = true;
        break;
      }
    }
    return left;
  }

  NodePtr additive() {
    static constexpr std::pair<std::string_view, Node::Kind> kOps[] = {{"+", Node::Kind::Add}, {"-", Node::Kind::Subtract}};
    return left_associative(&Parser::multiplicative, kOps);
  }

  NodePtr multiplicative() {
    static constexpr std::pair<std::string_view, Node::Kind> kOps[] = {{"*", Node::Kind::Multiply}, {"/", Node::Kind::Divide}};
    return left_associative(&Parser::primary, kOps);
  }

  // A keyword or builtin's name, whole: `and` is not the start of `android`.
  bool eat_keyword(std::string_view word) {
    skip();
    if (text_.substr(pos_, word.size()) != word || identifier_char(peek(word.size()))) return false;
    pos_ += word.size();
    return true;
  }

  static std::shared_ptr<Node> leaf(Node::Kind kind) {
    auto node = std::make_shared<Node>();
    node->kind = kind;
    node->single = true;
    return node;
  }

  // `if C then A elif C2 then A2 ... else B end`; jq 1.6 requires the else. Native only where every
  // condition gives one value (jq runs a branch per value of the condition).
  NodePtr conditional() {
    auto node = std::make_shared<Node>();
    node->kind = Node::Kind::If;
    node->condition = pipe();
    if (!node->condition || !node->condition->single || !eat_keyword("then")) return nullptr;
    node->left = pipe();
    if (!node->left) return nullptr;
    if (eat_keyword("elif")) {
      if (depth_ >= kMaxNesting) return nullptr;  // an elif is an if nested in the else
      ++depth_;
      node->right = conditional();
      --depth_;
    } else if (eat_keyword("else")) {
      node->right = pipe();
      if (!node->right || !eat_keyword("end")) return nullptr;
    }
    if (!node->right) return nullptr;
    node->single = node->left->single && node->right->single;
    return node;
  }

  // Nesting (parentheses, lists, ifs) deeper than this gives up: each level is a dozen frames of this
  // descent, and an expression is text from a definition (fuzz/README.md, F11). The catalog nests 4 deep.
  static constexpr int kMaxNesting = 32;

  NodePtr primary() {
    skip();
    if (depth_ >= kMaxNesting) return nullptr;
    struct Nested {
      int& depth;
      explicit Nested(int& d) : depth(++d) {}
      ~Nested() { --depth; }
    } nested(depth_);
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
    if (eat_keyword("tonumber")) return leaf(Node::Kind::ToNumber);
    if (eat_keyword("length")) return leaf(Node::Kind::Length);
    if (text_.substr(pos_, 6) == "keys[]" && peek(6) != '?') {
      // `keys` alone is a list, no value here; `keys[]?` would also catch keys' own error. A path after
      // `keys[]` is no operator, so the expression is refused.
      pos_ += 6;
      auto node = leaf(Node::Kind::Keys);
      node->single = false;
      return node;
    }
    if (eat_keyword("floor")) return leaf(Node::Kind::Floor);
    if (eat_keyword("if")) return conditional();
    static constexpr std::string_view kLiterals[] = {"null", "false", "true"};
    for (int i = 0; i < 3; ++i) {
      if (!eat_keyword(kLiterals[i])) continue;
      auto node = leaf(Node::Kind::Literal);
      node->literal = i;
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
    node->view = node->text;
    node->single = true;
    ++pos_;
    return node;
  }

  // The longest run of path syntax, handed to SimplePath's own parser.
  NodePtr path() {
    std::size_t start = pos_;
    bool keys_first = false;  // the path starts `.[keys[]]`
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
        if (text_.substr(pos_, 8) == "[keys[]]" && pos_ == start + 1) {
          // `.[keys[]]` is `.[]`: each member in the order of its key (jq sorts keys bytewise, as
          // sorted_members does), each item of a list in order, and an error on anything else. Only as
          // the first step: inside brackets, `keys` reads the path's input, so `.a[keys[]]` indexes .a
          // with the keys of `.`.
          keys_first = true;
          pos_ += 8;
          if (peek() == '?') return nullptr;  // jq's `?` here does not catch keys' own error: not imitated
        } else {
          ++pos_;
          while (pos_ < text_.size() && peek() != ']') {
            if (peek() != '"') ++pos_;
            else if (!skip_string()) return nullptr;
          }
          if (peek() != ']') return nullptr;
          ++pos_;
        }
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
    std::string path_text(text_.substr(start, pos_ - start));
    if (keys_first) path_text.replace(1, 8, "[]");
    auto parsed = SimplePath::parse(path_text);
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
    // (A backslash ending the text is passed alone: the position never runs past the end.)
    while (pos_ < text_.size() && peek() != '"') pos_ += peek() == '\\' && pos_ + 1 < text_.size() ? 2 : 1;
    if (peek() != '"') return false;
    ++pos_;
    return true;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  int depth_ = 0;  // primaries open around the one being read
};

}  // namespace

std::shared_ptr<const NativeExpression::Node> parse_native_expression(std::string_view expression) {
  return Parser(expression).parse();
}

}  // namespace karta
