#include "k8s/openapi_schema.h"

// The subset of x-kubernetes-validations (CEL) rules that openapi_schema.h describes, evaluated without a
// CEL implementation by a small recursive-descent reader. Apart from the validator that reports the
// results (openapi_schema.cpp) because it knows nothing of schemas.

#include <cctype>
#include <optional>
#include <string>
#include <string_view>

namespace karta {
namespace {

// ---- x-kubernetes-validations rules: `has(self.f)`, `!`, `&&`, `||`, parentheses

class RuleEvaluator {
 public:
  RuleEvaluator(std::string_view rule, const json& self) : text_(rule), self_(self) {}

  std::optional<bool> evaluate() {
    auto value = disjunction();
    skip_space();
    if (!value || pos_ != text_.size()) return std::nullopt;
    return value;
  }

 private:
  std::optional<bool> disjunction() {
    auto value = conjunction();
    while (value && eat("||")) {
      auto right = conjunction();
      if (!right) return std::nullopt;
      value = *value || *right;
    }
    return value;
  }

  std::optional<bool> conjunction() {
    auto value = unary();
    while (value && eat("&&")) {
      auto right = unary();
      if (!right) return std::nullopt;
      value = *value && *right;
    }
    return value;
  }

  std::optional<bool> unary() {
    if (eat("!")) {
      auto value = unary();
      if (!value) return std::nullopt;
      return !*value;
    }
    if (eat("(")) {
      auto value = disjunction();
      if (!value || !eat(")")) return std::nullopt;
      return value;
    }
    // has(self.FIELD)
    if (!eat_word("has") || !eat("(") || !eat_word("self") || !eat(".")) return std::nullopt;
    std::string field = identifier();
    if (field.empty() || !eat(")")) return std::nullopt;
    if (!self_.is_object()) return false;
    auto it = self_.find(field);
    return it != self_.end() && !it->is_null();
  }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  bool eat(std::string_view token) {
    skip_space();
    if (text_.substr(pos_, token.size()) != token) return false;
    // `!` must not be the start of `!=`.
    if (token == "!" && text_.substr(pos_, 2) == "!=") return false;
    pos_ += token.size();
    return true;
  }

  // A whole word: `has` but not `hasX`.
  bool eat_word(std::string_view word) {
    skip_space();
    if (text_.substr(pos_, word.size()) != word) return false;
    std::size_t end = pos_ + word.size();
    if (end < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '_')) return false;
    pos_ = end;
    return true;
  }

  std::string identifier() {
    std::size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    std::string word(text_.substr(start, pos_ - start));
    if (!word.empty() && std::isdigit(static_cast<unsigned char>(word[0]))) return {};
    return word;
  }

  std::string_view text_;
  const json& self_;
  std::size_t pos_ = 0;
};

}  // namespace

std::optional<bool> evaluate_validation_rule(std::string_view rule, const json& self) {
  return RuleEvaluator(rule, self).evaluate();
}

}  // namespace karta
