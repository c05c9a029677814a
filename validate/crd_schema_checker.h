#pragma once

// The Checker behind check_path_against_schema (crd_schema.h says how an expression is read and what is
// reported): one recursive reading of an expression, where pipeline(), stage(), scan(), object() and call()
// hand the parts of the expression to one another with the place of the schema each reads from, and walk()
// and check_shape() report into the same findings and variables. Declared here, defined in three parts:
// walking the schema (crd_schema_walk.cpp), reading the expression (crd_schema_reading.cpp) and checking
// shapes (crd_schema.cpp). Internal to those files.

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "definitions/simple_path.h"
#include "validate/crd_schema.h"
#include "validate/jq_lexer.h"

namespace karta::crd_schema_checking {

using Step = SimplePath::Step;
using Steps = std::vector<Step>;

// ---------------------------------------------------------------------------------------------------
// Places in jq syntax.

std::string render(const Steps& steps);
Steps plus(Steps steps, Step step);

// ---------------------------------------------------------------------------------------------------
// Tokens, with the partner of every bracket and of every `if` / `end`.

bool is_punct(const JqToken& token, std::string_view text);
bool is_keyword(const JqToken& token, std::string_view text);

struct View {
  const std::vector<JqToken>& t;
  std::vector<std::size_t> partner;

  explicit View(const std::vector<JqToken>& tokens) : t(tokens), partner(tokens.size(), tokens.size()) {
    std::vector<std::size_t> open;
    for (std::size_t i = 0; i < t.size(); ++i) {
      // `{if: 1}`: a keyword in key position is a key.
      const bool key_position = !open.empty() && is_punct(t[open.back()], "{") && i > 0 &&
                                (is_punct(t[i - 1], "{") || is_punct(t[i - 1], ","));
      if (is_punct(t[i], "(") || is_punct(t[i], "[") || is_punct(t[i], "{") ||
          (is_keyword(t[i], "if") && !key_position)) {
        open.push_back(i);
      } else if (is_punct(t[i], ")") || is_punct(t[i], "]") || is_punct(t[i], "}") ||
                 (is_keyword(t[i], "end") && !key_position)) {
        if (open.empty()) continue;
        partner[i] = open.back();
        partner[open.back()] = i;
        open.pop_back();
      }
    }
  }

  bool opens(std::size_t i) const { return partner[i] < t.size() && partner[i] > i; }
  // The index after token i, past its group when it opens one.
  std::size_t next(std::size_t i) const { return opens(i) ? partner[i] + 1 : i + 1; }

  template <class Predicate>
  std::vector<std::pair<std::size_t, std::size_t>> split_if(std::size_t begin, std::size_t end, Predicate&& at) const {
    std::vector<std::pair<std::size_t, std::size_t>> parts;
    std::size_t start = begin;
    for (std::size_t i = begin; i < end; i = next(i)) {
      if (at(t[i])) {
        parts.emplace_back(start, i);
        start = i + 1;
      }
    }
    parts.emplace_back(start, end);
    return parts;
  }
  std::vector<std::pair<std::size_t, std::size_t>> split(std::size_t begin, std::size_t end,
                                                         std::string_view punct) const {
    return split_if(begin, end, [&](const JqToken& token) { return is_punct(token, punct); });
  }

  std::optional<std::size_t> find(std::size_t begin, std::size_t end, std::string_view keyword_or_punct) const {
    for (std::size_t i = begin; i < end; i = next(i))
      if ((t[i].kind == JqToken::Kind::Keyword || t[i].kind == JqToken::Kind::Punct) && t[i].text == keyword_or_punct)
        return i;
    return std::nullopt;
  }
};

// ---------------------------------------------------------------------------------------------------
// The checker.

enum class State {
  Known,       // a place of the schema
  Unverified,  // below a place the schema does not describe (already reported)
  Computed,    // a value computed by the expression: relative paths on it are not checked
};

struct Place {
  State state = State::Known;
  const json* node = nullptr;
  Steps steps;
  std::string producer;  // Computed: what produced it, for messages
};

class Checker {
 public:
  Checker(const CrdSchema& crd, std::string_view source) : crd_(crd), kind_(crd.kind.kind), source_(source) {}

  Place root() const { return Place{State::Known, &crd_.schema, {}, {}}; }

  std::vector<SchemaFinding> take() { return std::move(findings_); }

  void add(bool fault, std::string message) {
    if (seen_.insert(message).second) findings_.push_back({fault, std::move(message)});
  }

  // ------------------------------------------------------------------ walking

  Place unverified(Place place) const {
    place.state = State::Unverified;
    return place;
  }

  // Walks `steps` from a known place, reporting what is wrong; the place reached, or Unverified.
  Place walk(Place place, const Steps& steps);
  std::string missing_field_message(const Place& place, const std::string& name, const std::string& upto);
  // The shallowest place of the schema that has a field `name`.
  std::optional<std::string> find_elsewhere(const std::string& name) const;
  // A relative path read at `place`.
  Place read(const Place& place, const Steps& steps, const View& view, std::size_t begin, std::size_t end);
  // What `$name` holds: the place it was bound to by `X as $name` (or reduce / foreach), else a value
  // the schema does not describe.
  Place variable(const std::string& name) const;
  // `as PATTERN`: a single variable is bound to `value`; destructured ones stay unknown.
  void bind(const View& view, std::size_t pattern, std::size_t end, const Place& value);
  Place computed(const Place& from, std::string producer) const;
  std::string snippet(const View& view, std::size_t begin, std::size_t end) const;

  // ------------------------------------------------------------------ reading the expression

  // A maximal simple path starting at `begin`: `.a`, `."a"`, `.["a"]`, `.[]`, `.[N]`, `.[keys[]]`, then
  // more of those (and `?`). Returns where it ends (`begin` when there is none).
  std::size_t path(const View& view, std::size_t begin, std::size_t end, Steps& steps) const;
  // The steps that follow a term (`$x.a[]`, `.a.b`), from `i`; where they end.
  std::size_t suffix(const View& view, std::size_t i, std::size_t end, Steps& steps) const;
  // `[]`, `[N]`, `["name"]`, `[keys[]]` at `open`; where it ends, or `open` when it is none of those.
  std::size_t bracket(const View& view, std::size_t open, std::size_t end, Steps& steps) const;
  // Whether a `.` or `.field` at i starts a term (rather than continuing `$x.a`, `f.a`, `(...).a`).
  static bool starts_term(const View& view, std::size_t begin, std::size_t i);
  // `A | B | C`: each stage reads what the previous one produced.
  Place pipeline(const View& view, std::size_t begin, std::size_t end, Place place);
  Place stage(const View& view, std::size_t begin, std::size_t end, const Place& place);
  // Every relative path inside [begin, end), read at `place`.
  void scan(const View& view, std::size_t begin, std::size_t end, const Place& place);
  std::size_t skip_pattern(const View& view, std::size_t i, std::size_t end) const;
  // `{key: value, name, "k": v, (expr): v}`: values (and computed keys) read the same input.
  void object(const View& view, std::size_t begin, std::size_t end, const Place& place);
  // The elements of a list or the values of a map at `place`.
  Place elements(const Place& place) const;
  void call(const View& view, std::size_t at, const Place& place);

  // ------------------------------------------------------------------ shapes

  void check_shape(const Place& place, ExpectedShape expected, std::string_view field_name);

 private:
  const CrdSchema& crd_;
  std::string kind_;
  std::string_view source_;
  std::vector<SchemaFinding> findings_;
  std::set<std::string> seen_;
  std::map<std::string, Place> variables_;  // flat: a later binding of a name replaces an earlier one
};

}  // namespace karta::crd_schema_checking
