#pragma once

// Pieces of the fake API server (support/fake_api_server.h) that are about what it serves rather than how:
// label selectors as the API server parses them, Kubernetes' version priority, a path's segments.
// fake_api_objects.cpp also defines the encodings (base64, continue tokens), Status objects and client
// certificates fake_api_server.h declares.

#include <algorithm>
#include <cctype>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "support/test_support.h"

namespace karta::test {

// A label selector as the API server parses it (k8s.io/apimachinery/pkg/labels/selector.go): equality
// (=, ==, !=), set-based (in, notin), existence (key, !key), requirements joined by commas (AND). The
// error messages are the parser's.
class LabelSelector {
 public:
  // Throws std::invalid_argument with the parser's message.
  explicit LabelSelector(const std::string& text) : text_(text) {
    for (;;) {
      Token token = peek();
      if (token.type == End) return;
      if (token.type != Identifier && token.type != Bang) {
        fail("found '" + token.text + "', expected: !, identifier, or 'end of string'");
      }
      requirement();
      Token after = next();
      if (after.type == End) return;
      if (after.type != Comma) fail("found '" + after.text + "', expected: ',' or 'end of string'");
      Token following = peek();
      if (following.type != Identifier && following.type != Bang) {
        fail("found '" + following.text + "', expected: identifier after ','");
      }
    }
  }

  bool matches(const json& object) const {
    const json* labels = nullptr;
    if (auto metadata = object.find("metadata"); metadata != object.end() && metadata->is_object()) {
      if (auto found = metadata->find("labels"); found != metadata->end() && found->is_object()) labels = &*found;
    }
    for (const Requirement& r : requirements_) {
      std::optional<std::string> value;
      if (labels != nullptr) {
        if (auto found = labels->find(r.key); found != labels->end() && found->is_string()) value = found->get<std::string>();
      }
      bool in = value && std::find(r.values.begin(), r.values.end(), *value) != r.values.end();
      bool ok = r.op == "exists"         ? value.has_value()
                : r.op == "!"            ? !value.has_value()
                : r.op == "=" || r.op == "==" || r.op == "in" ? in
                                                                : !in;  // != and notin
      if (!ok) return false;
    }
    return true;
  }

 private:
  enum Type { End, Identifier, Bang, Comma, Open, Close, Operator };
  struct Token {
    Type type;
    std::string text;
  };
  struct Requirement {
    std::string key, op;
    std::vector<std::string> values;
  };

  [[noreturn]] static void fail(const std::string& message) { throw std::invalid_argument(message); }

  Token lex(std::size_t& at) const {
    while (at < text_.size() && std::isspace(static_cast<unsigned char>(text_[at]))) ++at;
    if (at >= text_.size()) return {End, ""};
    char c = text_[at];
    auto two = text_.substr(at, 2);
    if (two == "!=" || two == "==") return at += 2, Token{Operator, two};
    if (c == '!') return ++at, Token{Bang, "!"};
    if (c == '=') return ++at, Token{Operator, "="};
    if (c == ',') return ++at, Token{Comma, ","};
    if (c == '(') return ++at, Token{Open, "("};
    if (c == ')') return ++at, Token{Close, ")"};
    std::size_t start = at;
    while (at < text_.size() && !std::isspace(static_cast<unsigned char>(text_[at])) &&
           std::string_view("!=,()").find(text_[at]) == std::string_view::npos) {
      ++at;
    }
    return {Identifier, text_.substr(start, at - start)};
  }
  Token peek() const {
    std::size_t at = position_;
    return lex(at);
  }
  Token next() { return lex(position_); }

  void requirement() {
    try {
      Requirement r;
      Token token = next();
      if (token.type == Bang) {
        r.op = "!";
        token = next();
      }
      if (token.type != Identifier) fail("found '" + token.text + "', expected: identifier");
      r.key = token.text;
      Type after = peek().type;
      if (after == End || after == Comma) {
        if (r.op.empty()) r.op = "exists";
        requirements_.push_back(std::move(r));
        return;
      }
      Token op = next();
      if (op.type == Operator || (op.type == Identifier && (op.text == "in" || op.text == "notin"))) {
        r.op = op.text;
      } else {
        fail("found '" + op.text + "', expected: '=', '!=', '==', 'in', notin'");
      }
      if (r.op == "in" || r.op == "notin") {
        Token open = next();
        if (open.type != Open) fail("found '" + open.text + "' expected: '('");
        for (;;) {
          Token value = next();
          if (value.type == Close) break;
          if (value.type != Identifier) fail("found '" + value.text + "', expected: ',', or identifier");
          r.values.push_back(value.text);
          Token separator = next();
          if (separator.type == Close) break;
          if (separator.type != Comma) fail("found '" + separator.text + "', expected: ',' or ')'");
        }
      } else {
        Type value = peek().type;
        if (value == End || value == Comma) {
          r.values.push_back("");
        } else {
          Token token_value = next();
          if (token_value.type != Identifier) fail("found '" + token_value.text + "', expected: identifier");
          r.values.push_back(token_value.text);
        }
      }
      requirements_.push_back(std::move(r));
    } catch (const std::invalid_argument& e) {
      fail(std::string("unable to parse requirement: ") + e.what());
    }
  }

  std::string text_;
  std::size_t position_ = 0;
  std::vector<Requirement> requirements_;
};

// Kubernetes' version priority (k8s.io/apimachinery/pkg/version): GA before beta before alpha, higher
// numbers first; anything else after them, alphabetically.
bool higher_priority(const std::string& a, const std::string& b);

// The object as the API server answers for it to a client that asked for metadata only: a meta.k8s.io/v1
// PartialObjectMetadata (k8s.io/apimachinery/pkg/apis/meta/v1, PartialObjectMetadata), its metadata whole.
json partial_object_metadata(const json& object);

// What the API server answers with, from a request's Accept header (k8s.io/apiserver's negotiation: the
// first media type in the list it can serve; no Accept, or */*, is plain JSON). `metadata_as` is the kind
// asked for metadata only: "PartialObjectMetadataList" for a LIST, "PartialObjectMetadata" for a GET or a
// WATCH; a type asking for the other (or for a Table) is skipped. Nothing servable: 406 Not Acceptable.
enum class AnswerForm { Full, Metadata, NotAcceptable };
AnswerForm answer_form(const std::string& accept, const std::string& metadata_as);

// The non-empty segments of a URL path: "/apis/run.ai/v1alpha1" -> apis, run.ai, v1alpha1.
std::vector<std::string> path_segments(const std::string& path);

}  // namespace karta::test
