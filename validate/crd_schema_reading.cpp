// The Checker's reading of a jq expression (crd_schema_checker.h): simple paths, pipelines and their
// stages, and the relative paths inside operands, objects, conditionals, reductions and calls, each read at
// the place of the schema it reads from.

#include <algorithm>
#include <cctype>

#include "validate/crd_schema_checker.h"
#include "validate/crd_schema_nodes.h"

namespace karta::crd_schema_checking {
namespace {

using crd_schema_nodes::map_values;
using crd_schema_nodes::member;
using crd_schema_nodes::type_of;

const std::set<std::string, std::less<>> kElementFunctions = {"map",       "map_values", "sort_by", "group_by",
                                                              "unique_by", "min_by",     "max_by"};
const std::set<std::string, std::less<>> kPassThroughFilters = {
    "values", "objects", "arrays", "iterables", "scalars", "strings", "numbers", "booleans", "nulls"};

}  // namespace

std::size_t Checker::path(const View& view, std::size_t begin, std::size_t end, Steps& steps) const {
  const auto& t = view.t;
  std::size_t i = begin;
  if (i >= end) return begin;
  if (t[i].kind == JqToken::Kind::Field) {
    steps.push_back(SimplePath::Field{t[i].text.substr(1)});
    ++i;
  } else if (t[i].kind == JqToken::Kind::Dot) {
    ++i;
    if (i < end && t[i].kind == JqToken::Kind::String && t[i].value) {
      steps.push_back(SimplePath::Field{*t[i].value});
      ++i;
    } else if (i < end && is_punct(t[i], "[")) {
      if (std::size_t after = bracket(view, i, end, steps); after != i)
        i = after;
      else
        return i;
    } else {
      return i;
    }
  } else {
    return begin;
  }
  return suffix(view, i, end, steps);
}

std::size_t Checker::suffix(const View& view, std::size_t i, std::size_t end, Steps& steps) const {
  const auto& t = view.t;
  while (i < end) {
    if (t[i].kind == JqToken::Kind::Field) {
      steps.push_back(SimplePath::Field{t[i].text.substr(1)});
      ++i;
    } else if (t[i].kind == JqToken::Kind::Dot && i + 1 < end && t[i + 1].kind == JqToken::Kind::String &&
               t[i + 1].value) {
      steps.push_back(SimplePath::Field{*t[i + 1].value});
      i += 2;
    } else if (is_punct(t[i], "?")) {
      ++i;
    } else if (is_punct(t[i], "[")) {
      std::size_t after = bracket(view, i, end, steps);
      if (after == i) break;
      i = after;
    } else {
      break;
    }
  }
  return i;
}

std::size_t Checker::bracket(const View& view, std::size_t open, std::size_t end, Steps& steps) const {
  const auto& t = view.t;
  const std::size_t close = view.partner[open];
  if (close >= end) return open;
  // .[keys[]]: every value, in key order
  const bool keys_iteration = close == open + 4 && t[open + 1].kind == JqToken::Kind::Identifier &&
                              (t[open + 1].text == "keys" || t[open + 1].text == "keys_unsorted") &&
                              is_punct(t[open + 2], "[") && is_punct(t[open + 3], "]");
  if (close == open + 1 || keys_iteration) {
    steps.push_back(SimplePath::Iterate{});
  } else if (close == open + 2 && t[open + 1].kind == JqToken::Kind::Number && t[open + 1].text.size() <= 9 &&
             std::all_of(t[open + 1].text.begin(), t[open + 1].text.end(),
                         [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    steps.push_back(SimplePath::Index{std::stoul(t[open + 1].text)});
  } else if (close == open + 2 && t[open + 1].kind == JqToken::Kind::String && t[open + 1].value) {
    steps.push_back(SimplePath::Field{*t[open + 1].value});
  } else {
    return open;
  }
  return close + 1;
}

bool Checker::starts_term(const View& view, std::size_t begin, std::size_t i) {
  if (i == begin) return true;
  const JqToken& previous = view.t[i - 1];
  if (previous.kind == JqToken::Kind::Keyword) return previous.text != "end";
  if (previous.kind != JqToken::Kind::Punct) return false;
  return previous.text != ")" && previous.text != "]" && previous.text != "}" && previous.text != "?";
}

Place Checker::pipeline(const View& view, std::size_t begin, std::size_t end, Place place) {
  for (auto [b, e] : view.split(begin, end, "|")) place = stage(view, b, e, place);
  return place;
}

Place Checker::stage(const View& view, std::size_t begin, std::size_t end, const Place& place) {
  const auto& t = view.t;
  if (begin >= end) return place;
  if (auto parts = view.split(begin, end, ","); parts.size() > 1) {
    for (auto [b, e] : parts) stage(view, b, e, place);
    return computed(place, "the output of `" + snippet(view, begin, end) + "`");
  }
  const bool reduction = is_keyword(t[begin], "reduce") || is_keyword(t[begin], "foreach");
  if (auto as = view.find(begin, end, "as"); as && !reduction) {
    // `X as $v | body`: the body reads the same input as X.
    bind(view, *as + 1, end, pipeline(view, begin, *as, place));
    return place;
  }
  if (auto alternatives = view.split(begin, end, "//"); alternatives.size() > 1) {
    Place first = stage(view, alternatives[0].first, alternatives[0].second, place);
    for (std::size_t k = 1; k < alternatives.size(); ++k)
      stage(view, alternatives[k].first, alternatives[k].second, place);
    return first;
  }
  Steps steps;
  if (std::size_t after = path(view, begin, end, steps); after == end) return read(place, steps, view, begin, end);
  if (t[begin].kind == JqToken::Kind::Variable && suffix(view, begin + 1, end, steps) == end)
    return read(variable(t[begin].text), steps, view, begin, end);
  if (is_punct(t[begin], "(") && view.partner[begin] == end - 1) return pipeline(view, begin + 1, end - 1, place);
  if (t[begin].kind == JqToken::Kind::Identifier) {
    if (t[begin].text == "select" && end > begin + 1 && is_punct(t[begin + 1], "(") &&
        view.partner[begin + 1] == end - 1) {
      scan(view, begin, end, place);
      return place;
    }
    if (end == begin + 1 && kPassThroughFilters.count(t[begin].text) != 0) return place;
  }
  scan(view, begin, end, place);
  return computed(place, "the output of `" + snippet(view, begin, end) + "`");
}

void Checker::scan(const View& view, std::size_t begin, std::size_t end, const Place& place) {
  const auto& t = view.t;
  std::size_t i = begin;
  while (i < end) {
    const JqToken& token = t[i];
    if ((token.kind == JqToken::Kind::Field || token.kind == JqToken::Kind::Dot) && starts_term(view, begin, i)) {
      Steps steps;
      std::size_t after = path(view, i, end, steps);
      if (after > i) {
        read(place, steps, view, i, after);
        i = after;
        continue;
      }
    }
    if (token.kind == JqToken::Kind::Variable) {
      Steps steps;
      std::size_t after = suffix(view, i + 1, end, steps);
      read(variable(token.text), steps, view, i, after);
      i = std::max(after, i + 1);
      continue;
    }
    if (token.kind == JqToken::Kind::String) {
      for (const auto& inner : token.interpolations) {
        View inner_view(inner);
        pipeline(inner_view, 0, inner.size(), place);
      }
      ++i;
    } else if ((is_punct(token, "(") || is_punct(token, "[")) && view.opens(i)) {
      pipeline(view, i + 1, view.partner[i], place);
      i = view.partner[i] + 1;
    } else if (is_punct(token, "{") && view.opens(i)) {
      object(view, i + 1, view.partner[i], place);
      i = view.partner[i] + 1;
    } else if (is_keyword(token, "if") && view.opens(i)) {
      const std::size_t close = view.partner[i];
      for (auto [b, e] : view.split_if(i + 1, close, [](const JqToken& k) {
             return is_keyword(k, "then") || is_keyword(k, "elif") || is_keyword(k, "else");
           }))
        pipeline(view, b, e, place);
      i = close + 1;
    } else if (is_keyword(token, "reduce") || is_keyword(token, "foreach")) {
      auto as = view.find(i + 1, end, "as");
      if (!as) {
        ++i;
        continue;
      }
      // The variable holds each output of the source, the place the source reaches.
      bind(view, *as + 1, end, pipeline(view, i + 1, *as, place));
      std::size_t j = skip_pattern(view, *as + 1, end);
      if (j < end && is_punct(t[j], "(") && view.opens(j)) {
        auto arguments = view.split(j + 1, view.partner[j], ";");
        pipeline(view, arguments[0].first, arguments[0].second, place);
        Place state = computed(place, "the state of `" + token.text + "`");
        for (std::size_t k = 1; k < arguments.size(); ++k)
          pipeline(view, arguments[k].first, arguments[k].second, state);
        j = view.partner[j] + 1;
      }
      i = j;
    } else if (is_keyword(token, "as")) {
      i = skip_pattern(view, i + 1, end);
    } else if (is_keyword(token, "catch")) {
      std::size_t j = i + 1;
      Steps ignored;
      if (j < end && view.opens(j))
        j = view.partner[j] + 1;
      else if (std::size_t after = path(view, j, end, ignored); after > j)
        j = after;
      else
        j = std::min(end, j + 1);
      scan(view, i + 1, j, computed(place, "the error caught by `catch`"));
      i = j;
    } else if (token.kind == JqToken::Kind::Identifier && i + 1 < end && is_punct(t[i + 1], "(") && view.opens(i + 1)) {
      call(view, i, place);
      i = view.partner[i + 1] + 1;
    } else {
      ++i;
    }
  }
}

std::size_t Checker::skip_pattern(const View& view, std::size_t i, std::size_t end) const {
  while (i < end) {
    if (view.t[i].kind == JqToken::Kind::Variable)
      ++i;
    else if (view.opens(i))
      i = view.partner[i] + 1;
    else
      break;
    if (i < end && is_punct(view.t[i], "?//"))
      ++i;
    else
      break;
  }
  return i;
}

void Checker::object(const View& view, std::size_t begin, std::size_t end, const Place& place) {
  const auto& t = view.t;
  for (auto [b, e] : view.split(begin, end, ",")) {
    if (b >= e) continue;
    auto colon = view.find(b, e, ":");
    if (!colon) {
      // `{name}` is `{name: .name}`.
      if (e == b + 1 && (t[b].kind == JqToken::Kind::Identifier || t[b].kind == JqToken::Kind::Keyword))
        read(place, {SimplePath::Field{t[b].text}}, view, b, e);
      else if (e == b + 1 && t[b].kind == JqToken::Kind::String && t[b].value)
        read(place, {SimplePath::Field{*t[b].value}}, view, b, e);
      else
        scan(view, b, e, place);
      continue;
    }
    if (view.opens(b)) pipeline(view, b + 1, view.partner[b], place);
    if (t[b].kind == JqToken::Kind::String) scan(view, b, b + 1, place);
    pipeline(view, *colon + 1, e, place);
  }
}

Place Checker::elements(const Place& place) const {
  if (place.state != State::Known) return place;
  const json& node = *place.node;
  const json* items = member(node, "items");
  if (type_of(node) == "array" && items != nullptr && items->is_object())
    return Place{State::Known, items, plus(place.steps, SimplePath::Iterate{}), {}};
  if (const json* values = map_values(node))
    return Place{State::Known, values, plus(place.steps, SimplePath::Iterate{}), {}};
  return unverified(place);
}

void Checker::call(const View& view, std::size_t at, const Place& place) {
  const std::string& name = view.t[at].text;
  const std::size_t open = at + 1;
  auto arguments = view.split(open + 1, view.partner[open], ";");
  const bool per_element =
      kElementFunctions.count(name) != 0 || ((name == "any" || name == "all") && arguments.size() == 1);
  if (per_element) {
    pipeline(view, arguments[0].first, arguments[0].second, elements(place));
  } else if ((name == "any" || name == "all") && arguments.size() == 2) {
    Place generated = pipeline(view, arguments[0].first, arguments[0].second, place);
    pipeline(view, arguments[1].first, arguments[1].second, generated);
  } else if (name == "with_entries") {
    pipeline(view, arguments[0].first, arguments[0].second, computed(place, "the entries of `with_entries`"));
  } else {
    for (auto [b, e] : arguments) pipeline(view, b, e, place);
  }
}

}  // namespace karta::crd_schema_checking
