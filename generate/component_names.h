#pragma once

// The child components of a draft, one per pod place, and their names: after the nearest field that is
// not a generic word (template, spec, ...), qualified by the field before it when taken.

#include <string>
#include <vector>

#include "generate/pod_places.h"

namespace karta {

// One child component of a draft: the place it stands for and the name it gets.
struct DraftComponent {
  std::string name;
  const PodPlace* place = nullptr;
  std::string named_after;  // the fields the name comes from, "" for the fallback `pod`
  // For a pod spelt out around a container of its own: the filter that keeps the places where one of its
  // container fields is set (`select(.container or .script)`), so that the others make no instance.
  std::string select;

  // The place as a stream, and a field of it.
  std::string stream() const { return select.empty() ? jq_path(place->steps) : jq_path(place->steps) + " | " + select; }
  std::string field(const std::string& relative) const {
    return select.empty() ? jq_path(place->steps) + relative : stream() + " | " + relative;
  }
};

// A component for each place, named so that no two names, nor a name and `root_name`, are the same.
std::vector<DraftComponent> name_components(const std::vector<PodPlace>& places, const std::string& root_name);

}  // namespace karta
