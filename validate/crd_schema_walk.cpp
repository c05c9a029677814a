// The Checker's walk through a CRD's schema (crd_schema_checker.h): a simple path from a place of the
// schema, the did-you-mean for a field that is not there, and the places that variables and computed
// values stand for.

#include <algorithm>
#include <cctype>
#include <deque>
#include <unordered_set>
#include <variant>

#include "k8s/edit_distance.h"
#include "validate/crd_schema_checker.h"
#include "validate/crd_schema_nodes.h"

namespace karta::crd_schema_checking {

using crd_schema_nodes::describe;
using crd_schema_nodes::flag;
using crd_schema_nodes::has_properties;
using crd_schema_nodes::inline_pod_fields;
using crd_schema_nodes::is_opaque_object;
using crd_schema_nodes::is_scalar;
using crd_schema_nodes::map_values;
using crd_schema_nodes::member;
using crd_schema_nodes::object_meta_schema;
using crd_schema_nodes::property;
using crd_schema_nodes::property_names;
using crd_schema_nodes::string_schema;
using crd_schema_nodes::type_of;

namespace {

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

}  // namespace

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

bool is_punct(const JqToken& token, std::string_view text) {
  return token.kind == JqToken::Kind::Punct && token.text == text;
}
bool is_keyword(const JqToken& token, std::string_view text) {
  return token.kind == JqToken::Kind::Keyword && token.text == text;
}

Place Checker::walk(Place place, const Steps& steps) {
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
        add(true,
            "`" + upto + "` is not in " + kind_ + "'s schema: `" + here + "` is " + describe(type) + ", not an array");
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

std::string Checker::missing_field_message(const Place& place, const std::string& name, const std::string& upto) {
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
             "resourcesPath: `" +
             here + "." + inline_fields.front() + "`)";
    }
  }
  if (best) return message + "; did you mean `" + *best + "`?";
  if (auto elsewhere = find_elsewhere(name)) return message + "; `" + name + "` exists at `" + *elsewhere + "`";
  return message;
}

std::optional<std::string> Checker::find_elsewhere(const std::string& name) const {
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

Place Checker::read(const Place& place, const Steps& steps, const View& view, std::size_t begin, std::size_t end) {
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

Place Checker::variable(const std::string& name) const {
  auto it = variables_.find(name);
  if (it != variables_.end()) return it->second;
  return Place{State::Computed, nullptr, {}, "`" + name + "`, which holds no place of " + kind_ + "'s schema"};
}

void Checker::bind(const View& view, std::size_t pattern, std::size_t end, const Place& value) {
  if (pattern < end && view.t[pattern].kind == JqToken::Kind::Variable &&
      (pattern + 1 == end || !is_punct(view.t[pattern + 1], "?//")))
    variables_[view.t[pattern].text] = value;
}

Place Checker::computed(const Place& from, std::string producer) const {
  if (from.state == State::Unverified) return from;
  return Place{State::Computed, nullptr, {}, std::move(producer)};
}

std::string Checker::snippet(const View& view, std::size_t begin, std::size_t end) const {
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

}  // namespace karta::crd_schema_checking
