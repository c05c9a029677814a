#include "generate/component_names.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "generate/draft_yaml.h"
#include "k8s/terminal_text.h"

namespace karta {
namespace {

using draft_yaml::lower;

// `select(.a or .b)` for the container fields of a place.
std::string container_select(const std::vector<std::string>& containers) {
  if (containers.empty()) return "";
  std::string any;
  for (const auto& name : containers)
    any += (any.empty() ? "" : " or ") +
           jq_path({{SchemaStep::Kind::Field, name, false, nullptr}});
  return "select(" + any + ")";
}

std::string base_name(const SchemaSteps& steps, std::size_t field_index) {
  static const std::vector<std::string> kSuffixes = {"Specs", "Spec", "Templates", "Template"};
  std::string name = steps[field_index].name;
  for (const auto& suffix : kSuffixes) {
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      name.resize(name.size() - suffix.size());
      break;
    }
  }
  const bool collection = field_index + 1 < steps.size() && steps[field_index + 1].kind != SchemaStep::Kind::Field;
  if (collection && name.size() > 3 && name.back() == 's' && !name.ends_with("ss")) name.pop_back();
  std::string out;
  for (unsigned char c : lower(name)) out.push_back(std::isalnum(c) ? static_cast<char>(c) : '-');
  return out.empty() ? "pod" : out;
}

}  // namespace

// Named after the nearest field that is not a generic word (template, spec, ...): `headGroupSpec` ->
// headgroup, `replicatedJobs[]` -> replicatedjob; when taken, qualified by the field before it. The
// shallower places are named first, so that the place a field names outright gets the name (KServe's
// `.spec.predictor` is `predictor`, its canary's `.spec.canary[]?.predictor` `canary-predictor`).
std::vector<DraftComponent> name_components(const std::vector<PodPlace>& places, const std::string& root_name) {
  static const std::set<std::string> kGeneric = {"template", "spec", "podTemplate", "podSpec", "podTemplateSpec"};
  std::set<std::string> taken{root_name};
  std::vector<std::size_t> order(places.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return places[a].steps.size() < places[b].steps.size(); });
  std::vector<DraftComponent> components(places.size());
  for (std::size_t index : order) {
    const PodPlace& place = places[index];
    std::vector<std::size_t> named;
    for (std::size_t i = place.steps.size(); i-- > 0;)
      if (place.steps[i].kind == SchemaStep::Kind::Field && kGeneric.count(place.steps[i].name) == 0)
        named.push_back(i);
    std::string name = named.empty() ? "pod" : base_name(place.steps, named[0]);
    std::string named_after = named.empty() ? "" : "`" + place.steps[named[0]].name + "`";
    if (taken.count(name) != 0 && named.size() > 1) {
      name = base_name(place.steps, named[1]) + "-" + name;
      named_after = "`" + place.steps[named[1]].name + "` and " + named_after;
    }
    const std::string stem = name;
    for (int n = 2; taken.count(name) != 0; ++n) name = stem + "-" + std::to_string(n);
    taken.insert(name);
    components[index] = {name, &place, terminal_text(named_after), container_select(place.containers)};
  }
  return components;
}

}  // namespace karta
