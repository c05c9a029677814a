// Reading a definition's jq expression against a CRD's schema (crd_schema.h says how expressions are read
// and what is reported). Longer than 500 lines because the Checker alone is over 500: it is one recursive
// reading of an expression, where pipeline(), stage(), scan(), object() and call() hand the parts of the
// expression to one another with the place of the schema each reads from, and walk() and check_shape()
// report into the same findings and variables; split across files it would be one class in two places.
// Loading CRDs (crd_schema_set.cpp) and reading schema nodes (crd_schema_nodes.cpp) are apart.

#include "validate/crd_schema.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <optional>
#include <set>
#include <unordered_set>
#include <utility>
#include <variant>

#include "definitions/simple_path.h"
#include "k8s/edit_distance.h"
#include "validate/crd_schema_nodes.h"
#include "validate/jq_lexer.h"

namespace karta {
namespace {

using crd_schema_nodes::describe;
using crd_schema_nodes::flag;
using crd_schema_nodes::has_properties;
using crd_schema_nodes::is_opaque_object;
using crd_schema_nodes::is_scalar;
using crd_schema_nodes::map_values;
using crd_schema_nodes::member;
using crd_schema_nodes::object_meta_schema;
using crd_schema_nodes::property;
using crd_schema_nodes::property_names;
using crd_schema_nodes::string_schema;
using crd_schema_nodes::type_of;

using Step = SimplePath::Step;
using Steps = std::vector<Step>;

// ---------------------------------------------------------------------------------------------------
// Places in jq syntax.

bool is_plain_field(const std::string& name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  // jq 1.6 reads `.e1` as a number.
  if ((name[0] == 'e' || name[0] == 'E') && name.size() > 1 &&
      std::all_of(name.begin() + 1, name.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return false;
  return true;
}

std::string render(const Steps& steps) {
  std::string out;
  for (const Step& step : steps) {
    if (const auto* field = std::get_if<SimplePath::Field>(&step)) {
      out += is_plain_field(field->name) ? "." + field->name : "." + json(field->name).dump();
    } else {
      if (out.empty()) out = ".";
      if (const auto* index = std::get_if<SimplePath::Index>(&step))
        out += "[" + std::to_string(index->index) + "]";
      else
        out += "[]";
    }
  }
  return out.empty() ? "." : out;
}

Steps plus(Steps steps, Step step) {
  steps.push_back(std::move(step));
  return steps;
}

// ---------------------------------------------------------------------------------------------------
// Tokens, with the partner of every bracket and of every `if` / `end`.

bool is_punct(const JqToken& token, std::string_view text) {
  return token.kind == JqToken::Kind::Punct && token.text == text;
}
bool is_keyword(const JqToken& token, std::string_view text) {
  return token.kind == JqToken::Kind::Keyword && token.text == text;
}

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

std::string_view default_field(ExpectedShape expected) {
  switch (expected) {
    case ExpectedShape::PodTemplateSpec:
      return "podTemplateSpecPath";
    case ExpectedShape::PodSpec:
      return "podSpecPath";
    case ExpectedShape::ObjectWithLabels:
      return "metadataPath";
    case ExpectedShape::StringMap:
      return "labelsPath";
    case ExpectedShape::Integer:
      return "replicasPath";
    case ExpectedShape::String:
      return "instanceIdPath";
    case ExpectedShape::ResourceRequirements:
      return "resourcesPath";
    case ExpectedShape::List:
      return "containersPath";
    case ExpectedShape::Object:
    case ExpectedShape::Any:
      break;
  }
  return "this path";
}

const std::set<std::string, std::less<>> kElementFunctions = {"map",       "map_values", "sort_by", "group_by",
                                                              "unique_by", "min_by",     "max_by"};
const std::set<std::string, std::less<>> kPassThroughFilters = {
    "values", "objects", "arrays", "iterables", "scalars", "strings", "numbers", "booleans", "nulls"};

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
  Place walk(Place place, const Steps& steps) {
    for (std::size_t k = 0; k < steps.size(); ++k) {
      const Step& step = steps[k];
      const json& node = *place.node;
      const std::string type = type_of(node);
      const std::string here = render(place.steps);
      const std::string upto = render(plus(place.steps, step));
      auto not_verified = [&] {
        Steps all = place.steps;
        all.insert(all.end(), steps.begin() + static_cast<std::ptrdiff_t>(k), steps.end());
        add(false, "`" + render(all) + "` is not verified below `" + here + "`: " + kind_ +
                       "'s schema does not describe the fields there");
        return unverified(place);
      };
      const json* next = nullptr;
      if (const auto* field = std::get_if<SimplePath::Field>(&step)) {
        if (type == "array") {
          add(true, "`" + upto + "` is not in " + kind_ + "'s schema: `" + here + "` is an array; did you mean `" +
                        render(plus(plus(place.steps, SimplePath::Iterate{}), step)) + "`?");
          return unverified(place);
        }
        if (is_scalar(type)) {
          add(true, "`" + upto + "` is not in " + kind_ + "'s schema: `" + here + "` is " + describe(type));
          return unverified(place);
        }
        const bool holds_object_meta = place.node == &crd_.schema || flag(node, "x-kubernetes-embedded-resource");
        next = property(node, field->name);
        if (holds_object_meta && field->name == "metadata" && (next == nullptr || !has_properties(*next)))
          next = &object_meta_schema();
        if (holds_object_meta && next == nullptr && (field->name == "apiVersion" || field->name == "kind"))
          next = &string_schema();
        if (next == nullptr) next = map_values(node);
        if (next == nullptr) {
          if (is_opaque_object(node) || member(node, "additionalProperties") != nullptr) return not_verified();
          add(true, missing_field_message(place, field->name, upto));
          return unverified(place);
        }
      } else if (std::holds_alternative<SimplePath::Iterate>(step)) {
        if (is_scalar(type)) {
          add(true, "`" + upto + "` is not in " + kind_ + "'s schema: `" + here + "` is " + describe(type) +
                        ", which cannot be iterated");
          return unverified(place);
        }
        const json* items = member(node, "items");
        if (type == "array" || (type.empty() && items != nullptr)) {
          next = items != nullptr && items->is_object() ? items : nullptr;
        } else {
          next = map_values(node);
          if (next == nullptr && !is_opaque_object(node) && member(node, "additionalProperties") == nullptr) {
            add(false, "`" + upto + "` is not verified below `" + here +
                           "`: it iterates the fields of an object, which have schemas of their own");
            return unverified(place);
          }
        }
        if (next == nullptr) return not_verified();
      } else {
        if (type != "array" && !type.empty()) {
          add(true, "`" + upto + "` is not in " + kind_ + "'s schema: `" + here + "` is " + describe(type) +
                        ", not an array");
          return unverified(place);
        }
        const json* items = member(node, "items");
        next = items != nullptr && items->is_object() ? items : nullptr;
        if (next == nullptr) return not_verified();
      }
      place.node = next;
      place.steps.push_back(step);
    }
    return place;
  }

  std::string missing_field_message(const Place& place, const std::string& name, const std::string& upto) {
    std::string message = "`" + upto + "` is not in " + kind_ + "'s schema at `" + render(place.steps) + "`";
    std::optional<std::string> best;
    std::size_t best_distance = 4;
    for (const std::string& candidate : property_names(*place.node)) {
      std::size_t distance = edit_distance(name, candidate);
      if (distance < best_distance && distance < std::max<std::size_t>(name.size(), 2)) {
        best = candidate;
        best_distance = distance;
      }
    }
    if (name == "template" || name == "podTemplate" || name == "spec" || name == "podSpec") {
      if (auto inline_fields = inline_pod_fields(*place.node); inline_fields.size() >= 2) {
        std::string here = render(place.steps);
        std::string list;
        for (const auto& f : inline_fields) list += (list.empty() ? "" : ", ") + f;
        return message + "; `" + here + "` holds the pod's fields inline (" + list +
               ") and has no pod template: describe it with fragmentedPodSpecDefinition (for example "
               "resourcesPath: `" + here + "." + inline_fields.front() + "`)";
      }
    }
    if (best) return message + "; did you mean `" + *best + "`?";
    if (auto elsewhere = find_elsewhere(name)) return message + "; `" + name + "` exists at `" + *elsewhere + "`";
    return message;
  }

  // The fields of a pod that `node` holds itself, as frameworks do that spell out a pod piece by piece
  // (Milvus's components, NIMService's spec): resources first when present.
  static std::vector<std::string> inline_pod_fields(const json& node) {
    std::vector<std::string> found;
    for (const char* name : {"resources", "tolerations", "nodeSelector", "affinity", "schedulerName",
                             "priorityClassName", "podLabels", "podAnnotations"}) {
      if (property(node, name) != nullptr) found.emplace_back(name);
    }
    return found;
  }

  // The shallowest place of the schema that has a field `name`.
  std::optional<std::string> find_elsewhere(const std::string& name) const {
    std::deque<std::pair<const json*, Steps>> queue{{&crd_.schema, {}}};
    std::unordered_set<const json*> visited;
    std::size_t budget = 200000;
    while (!queue.empty() && budget-- > 0) {
      auto [node, steps] = std::move(queue.front());
      queue.pop_front();
      if (!visited.insert(node).second) continue;
      for (const std::string& child : property_names(*node)) {
        Steps child_steps = plus(steps, SimplePath::Field{child});
        if (child == name) return render(child_steps);
        queue.emplace_back(property(*node, child), std::move(child_steps));
      }
      if (const json* items = member(*node, "items"); items != nullptr && items->is_object())
        queue.emplace_back(items, plus(steps, SimplePath::Iterate{}));
      if (const json* values = map_values(*node)) queue.emplace_back(values, plus(steps, SimplePath::Iterate{}));
    }
    return std::nullopt;
  }

  // A relative path read at `place`.
  Place read(const Place& place, const Steps& steps, const View& view, std::size_t begin, std::size_t end) {
    if (steps.empty()) return place;
    switch (place.state) {
      case State::Known:
        return walk(place, steps);
      case State::Unverified:
        return place;
      case State::Computed:
        add(false, "not checked against the schema: `" + snippet(view, begin, end) + "` reads " + place.producer);
        return place;
    }
    return place;
  }

  // What `$name` holds: the place it was bound to by `X as $name` (or reduce / foreach), else a value
  // the schema does not describe.
  Place variable(const std::string& name) const {
    auto it = variables_.find(name);
    if (it != variables_.end()) return it->second;
    return Place{State::Computed, nullptr, {}, "`" + name + "`, which holds no place of " + kind_ + "'s schema"};
  }

  // `as PATTERN`: a single variable is bound to `value`; destructured ones stay unknown.
  void bind(const View& view, std::size_t pattern, std::size_t end, const Place& value) {
    if (pattern < end && view.t[pattern].kind == JqToken::Kind::Variable &&
        (pattern + 1 == end || !is_punct(view.t[pattern + 1], "?//")))
      variables_[view.t[pattern].text] = value;
  }

  Place computed(const Place& from, std::string producer) const {
    if (from.state == State::Unverified) return from;
    return Place{State::Computed, nullptr, {}, std::move(producer)};
  }

  std::string snippet(const View& view, std::size_t begin, std::size_t end) const {
    if (begin >= end) return "";
    std::string_view text = source_.substr(view.t[begin].offset, view.t[end - 1].end - view.t[begin].offset);
    std::string out;
    bool space = false;
    for (char c : text) {
      if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
        space = !out.empty();
        continue;
      }
      if (space) out.push_back(' ');
      space = false;
      out.push_back(c);
    }
    if (out.size() > 60) out = out.substr(0, 57) + "...";
    return out;
  }

  // ------------------------------------------------------------------ reading the expression

  // A maximal simple path starting at `begin`: `.a`, `."a"`, `.["a"]`, `.[]`, `.[N]`, `.[keys[]]`, then
  // more of those (and `?`). Returns where it ends (`begin` when there is none).
  std::size_t path(const View& view, std::size_t begin, std::size_t end, Steps& steps) const {
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

  // The steps that follow a term (`$x.a[]`, `.a.b`), from `i`; where they end.
  std::size_t suffix(const View& view, std::size_t i, std::size_t end, Steps& steps) const {
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

  // `[]`, `[N]`, `["name"]`, `[keys[]]` at `open`; where it ends, or `open` when it is none of those.
  std::size_t bracket(const View& view, std::size_t open, std::size_t end, Steps& steps) const {
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

  // Whether a `.` or `.field` at i starts a term (rather than continuing `$x.a`, `f.a`, `(...).a`).
  static bool starts_term(const View& view, std::size_t begin, std::size_t i) {
    if (i == begin) return true;
    const JqToken& previous = view.t[i - 1];
    if (previous.kind == JqToken::Kind::Keyword) return previous.text != "end";
    if (previous.kind != JqToken::Kind::Punct) return false;
    return previous.text != ")" && previous.text != "]" && previous.text != "}" && previous.text != "?";
  }

  // `A | B | C`: each stage reads what the previous one produced.
  Place pipeline(const View& view, std::size_t begin, std::size_t end, Place place) {
    for (auto [b, e] : view.split(begin, end, "|")) place = stage(view, b, e, place);
    return place;
  }

  Place stage(const View& view, std::size_t begin, std::size_t end, const Place& place) {
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

  // Every relative path inside [begin, end), read at `place`.
  void scan(const View& view, std::size_t begin, std::size_t end, const Place& place) {
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
      } else if (token.kind == JqToken::Kind::Identifier && i + 1 < end && is_punct(t[i + 1], "(") &&
                 view.opens(i + 1)) {
        call(view, i, place);
        i = view.partner[i + 1] + 1;
      } else {
        ++i;
      }
    }
  }

  std::size_t skip_pattern(const View& view, std::size_t i, std::size_t end) const {
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

  // `{key: value, name, "k": v, (expr): v}`: values (and computed keys) read the same input.
  void object(const View& view, std::size_t begin, std::size_t end, const Place& place) {
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

  // The elements of a list or the values of a map at `place`.
  Place elements(const Place& place) const {
    if (place.state != State::Known) return place;
    const json& node = *place.node;
    const json* items = member(node, "items");
    if (type_of(node) == "array" && items != nullptr && items->is_object())
      return Place{State::Known, items, plus(place.steps, SimplePath::Iterate{}), {}};
    if (const json* values = map_values(node))
      return Place{State::Known, values, plus(place.steps, SimplePath::Iterate{}), {}};
    return unverified(place);
  }

  void call(const View& view, std::size_t at, const Place& place) {
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

  // ------------------------------------------------------------------ shapes

  void check_shape(const Place& place, ExpectedShape expected, std::string_view field_name) {
    if (expected == ExpectedShape::Any) return;
    const json& node = *place.node;
    const std::string field(field_name);
    const std::string here = "`" + render(place.steps) + "`";
    const std::string type = type_of(node);
    const bool scalar_or_list = is_scalar(type) || type == "array";
    auto is_pod_spec = [](const json& n) { return property(n, "containers") != nullptr; };
    auto is_pod_template = [](const json& n) {
      const json* spec = property(n, "spec");
      return spec != nullptr && property(*spec, "containers") != nullptr;
    };
    auto not_verified = [&](const std::string& what) {
      add(false, here + " is not verified as " + what + ": " + kind_ + "'s schema does not describe its fields");
    };
    switch (expected) {
      case ExpectedShape::PodTemplateSpec: {
        const std::string needs = ", but " + field + " needs a PodTemplateSpec (`{metadata, spec}`)";
        if (is_pod_template(node)) return;
        if (scalar_or_list) return add(true, here + " is " + describe(type) + needs);
        if (is_pod_spec(node)) return add(true, here + " is a PodSpec" + needs);
        const json* spec = property(node, "spec");
        if (is_opaque_object(node) || (spec != nullptr && is_opaque_object(*spec)))
          return not_verified("a PodTemplateSpec");
        return add(true, here + " is an object without `spec.containers`" + needs);
      }
      case ExpectedShape::PodSpec: {
        const std::string needs = ", but " + field + " needs a PodSpec";
        if (is_pod_spec(node)) return;
        if (scalar_or_list) return add(true, here + " is " + describe(type) + needs);
        if (is_pod_template(node))
          return add(true, here + " is a PodTemplateSpec" + needs + "; did you mean `" +
                               render(plus(place.steps, SimplePath::Field{"spec"})) + "`?");
        if (is_opaque_object(node)) return not_verified("a PodSpec");
        return add(true, here + " is an object without `containers`" + needs);
      }
      case ExpectedShape::ObjectWithLabels:
        if (scalar_or_list)
          add(true,
              here + " is " + describe(type) + ", but " + field + " needs an object with `labels` and `annotations`");
        return;
      case ExpectedShape::StringMap: {
        const std::string needs = ", but " + field + " needs a map of strings";
        if (scalar_or_list) return add(true, here + " is " + describe(type) + needs);
        if (const json* values = map_values(node)) {
          const std::string value_type = type_of(*values);
          if (value_type == "string" || value_type.empty()) return;
          return add(true, here + " is a map of " + (value_type == "integer" ? "integers" : value_type + "s") + needs);
        }
        if (member(node, "additionalProperties") != nullptr || is_opaque_object(node))
          return not_verified("a map of strings");
        return add(true, here + " is an object with fields of its own" + needs);
      }
      case ExpectedShape::Integer:
        if (type == "integer" || type == "number" || type == "int-or-string" || type.empty()) return;
        return add(true, here + " is " + describe(type) + ", but " + field + " needs an integer");
      case ExpectedShape::String:
        if (type == "string" || type == "int-or-string" || type.empty()) return;
        return add(!is_scalar(type), here + " is " + describe(type) + ", but " + field + " needs a string");
      case ExpectedShape::ResourceRequirements: {
        const std::string needs = ", but " + field + " needs a ResourceRequirements (`{limits, requests}`)";
        if (scalar_or_list) return add(true, here + " is " + describe(type) + needs);
        if (property(node, "limits") != nullptr || property(node, "requests") != nullptr) return;
        if (is_opaque_object(node)) return not_verified("a ResourceRequirements");
        return add(true, here + " is an object without `limits` or `requests`" + needs);
      }
      case ExpectedShape::List:
        if (type == "array" || type.empty()) return;
        return add(true, here + " is " + describe(type) + ", but " + field + " needs a list");
      case ExpectedShape::Object:
        if (!scalar_or_list) return;
        return add(true, here + " is " + describe(type) + ", but " + field + " needs an object");
      case ExpectedShape::Any:
        return;
    }
  }

 private:
  const CrdSchema& crd_;
  std::string kind_;
  std::string_view source_;
  std::vector<SchemaFinding> findings_;
  std::set<std::string> seen_;
  std::map<std::string, Place> variables_;  // flat: a later binding of a name replaces an earlier one
};

}  // namespace

std::vector<SchemaFinding> check_path_against_schema(const CrdSchema& crd, std::string_view expression,
                                                     ExpectedShape expected, std::string_view field) {
  const std::string_view field_name = field.empty() ? default_field(expected) : field;
  if (!crd.schema.is_object())
    return {{false, "not checked against the schema: " + crd.kind.kind +
                        "'s CustomResourceDefinition has no schema for " + crd.kind.api_version()}};
  JqTokens tokens = tokenize_jq(expression);
  if (tokens.error) return {{false, "not checked against the schema: it does not parse: " + *tokens.error}};
  if (tokens.tokens.empty()) return {{false, "not checked against the schema: the expression is empty"}};
  Checker checker(crd, expression);
  View view(tokens.tokens);
  Place end = checker.pipeline(view, 0, tokens.tokens.size(), checker.root());
  if (end.state == State::Known) {
    checker.check_shape(end, expected, field_name);
  } else if (end.state == State::Computed && expected != ExpectedShape::Any && expected != ExpectedShape::Integer &&
             expected != ExpectedShape::String) {
    checker.add(false, "not checked against the schema: `" + checker.snippet(view, 0, tokens.tokens.size()) +
                           "` computes a value instead of naming a place, so its shape is unknown");
  }
  return checker.take();
}

}  // namespace karta
