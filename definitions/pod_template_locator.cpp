#include "definitions/pod_template_locator.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string_view>

#include <boost/container/small_vector.hpp>

namespace karta {
namespace {

bool present(const std::optional<JsonElement>& value) { return value && !value->is_null(); }

bool is_object_at(JsonElement object, const JsonPointer& pointer) {
  auto value = find_at(object, pointer);
  return value && value->is_object();
}

// `pointer` names an object, or a place an object can be added (its parent is an object).
bool object_or_addable(JsonElement object, const JsonPointer& pointer) {
  auto value = find_at(object, pointer);
  if (present(value)) return value->is_object();
  return pointer.empty() || is_object_at(object, pointer.parent_pointer());
}

// The longest common prefix of the parents of `pointers`: a fragmented instance's root. Compared on the
// escaped texts, whole tokens at a time (escaping is one to one, so equal texts are equal tokens).
JsonPointer instance_root(const std::vector<JsonPointer>& pointers) {
  auto parent = [](std::string_view text) {
    const auto slash = text.rfind('/');
    return slash == std::string_view::npos ? std::string_view() : text.substr(0, slash);
  };
  std::string_view common = pointers.empty() ? std::string_view() : parent(pointers.front().text());
  for (std::size_t i = 1; i < pointers.size() && !common.empty(); ++i) {
    const std::string_view other = parent(pointers[i].text());
    std::size_t n = 0;
    while (n < common.size() && n < other.size() && common[n] == other[n]) ++n;
    const bool whole_tokens = (n == common.size() || common[n] == '/') && (n == other.size() || other[n] == '/');
    if (!whole_tokens) n = n == 0 ? 0 : common.rfind('/', n - 1);  // back to the start of the token that differs
    common = common.substr(0, n);
  }
  return JsonPointer(common);
}

// Room for `more` templates after those already located, growing geometrically: an exact reserve per
// component moved every template located so far once per component (Milvus has fifteen, each template
// a dozen pointers).
void reserve_more(std::vector<PodTemplateLocation>& all, std::size_t more) {
  const std::size_t needed = all.size() + more;
  if (needed > all.capacity()) all.reserve(std::max(needed, 2 * all.capacity()));
}

std::string describe(const ExpressionOutcome& outcome, const CompiledExpression& expression) {
  std::string note = expression.field.field + " (" + expression.field.expression + ")";
  if (outcome.error) note += ": stopped on error: " + *outcome.error;
  if (outcome.capped) note += ": more than " + std::to_string(kMaxExpressionOutputs) + " outputs, the rest ignored";
  return note;
}

// An instance id as a name: a string as it is, null as "" (the id by position is used), anything else as
// its JSON text.
std::string instance_name(const json& id) {
  if (id.is_string()) return id.get<std::string>();
  if (id.is_null()) return "";
  return id.dump();
}
std::string instance_name(JsonElement id) {
  if (auto text = string_of(id)) return std::string(*text);  // the usual case, without a json copy
  return instance_name(to_json(id));
}

class Locator {
 public:
  explicit Locator(DefinitionEvaluation& evaluation) : evaluation_(evaluation) {}

  const std::pmr::vector<JsonPointer>* pointers(ExpressionId id) {
    if (id == kNoExpression) return nullptr;
    const auto& outcome = evaluation_.outcome(id);
    note_problems(outcome, id);
    return &outcome.pointers;
  }

  // What the i-th pointer of expression `id` reaches, without walking the object again when the
  // evaluation already knows.
  std::optional<JsonElement> place(ExpressionId id, std::size_t i) {
    const auto& outcome = evaluation_.outcome(id);
    if (i < outcome.places.size()) return outcome.places[i];
    return find_at(evaluation_.object(), outcome.pointers[i]);
  }

  const std::vector<json>* values(ExpressionId id) {
    if (id == kNoExpression) return nullptr;
    const auto& outcome = evaluation_.outcome(id);
    note_problems(outcome, id);
    return &outcome.values;
  }

  // The instance ids expression `id` gives, as names (instance_name); nothing without the expression.
  // A simple path's ids are read where they are in the object, not converted to json first.
  std::optional<std::vector<std::string>> names(ExpressionId id) {
    if (id == kNoExpression) return std::nullopt;
    const auto& outcome = evaluation_.places_of(id);
    note_problems(outcome, id);
    std::vector<std::string> names;
    if (!outcome.places.empty()) {
      names.reserve(outcome.places.size());
      for (const auto& place : outcome.places) names.push_back(place ? instance_name(*place) : std::string());
    } else {
      names.reserve(outcome.values.size());
      for (const auto& value : outcome.values) names.push_back(instance_name(value));
    }
    return names;
  }

  std::vector<std::string> notes;

 private:
  void note_problems(const ExpressionOutcome& outcome, ExpressionId id) {
    if ((outcome.error || outcome.capped) && noted_.insert(id).second) {
      notes.push_back(describe(outcome, evaluation_.definition().expressions()[id]));
    }
  }
  DefinitionEvaluation& evaluation_;
  std::set<ExpressionId> noted_;
};

std::optional<JsonPointer> at(const std::pmr::vector<JsonPointer>* list, std::size_t i) {
  if (list == nullptr || i >= list->size()) return std::nullopt;
  return (*list)[i];
}

}  // namespace

WorkloadLayout locate_pod_templates(DefinitionEvaluation& evaluation) {
  WorkloadLayout layout;
  Locator locator(evaluation);
  JsonElement object = evaluation.object();
  // Two components naming the same template patch it once: each kept template's (location, labels), by
  // hash, beside layout.templates (a set of strings cost two allocations per template).
  boost::container::small_vector<std::size_t, 16> kept_hashes;
  auto same_place = [](const PodTemplateLocation& a, const PodTemplateLocation& b) {
    return a.location == b.location && a.labels.has_value() == b.labels.has_value() && (!a.labels || *a.labels == *b.labels);
  };

  for (const ComponentPlan& plan : evaluation.definition().components()) {
    if (plan.spec_kind == SpecKind::None) continue;
    const std::string& component = plan.component->name;

    // The i-th output of every location expression belongs to instance i: instance i is built in place at
    // layout.templates[first + i] (a location is some twelve pointers: moving one costs), and the instances
    // skipped or found twice are dropped once all are known.
    std::vector<PodTemplateLocation>& all = layout.templates;
    const std::size_t first = all.size();
    auto instance = [&](std::size_t i) -> PodTemplateLocation& { return all[first + i]; };
    auto skip = [&](PodTemplateLocation& t) { t = PodTemplateLocation(); };  // kind None: dropped below
    if (plan.spec_kind == SpecKind::Fragmented) {
      const auto* labels = locator.pointers(plan.labels);
      const auto* annotations = locator.pointers(plan.annotations);
      const auto* scheduler = locator.pointers(plan.scheduler_name);
      const auto* tolerations = locator.pointers(plan.tolerations);
      const auto* node_selector = locator.pointers(plan.node_selector);
      const auto* resources = locator.pointers(plan.resources);
      const auto* containers = locator.pointers(plan.containers);
      const auto* container = locator.pointers(plan.container);
      std::size_t count = 0;
      for (const auto* list : {labels, annotations, scheduler, tolerations, node_selector, resources, containers, container}) {
        if (list != nullptr) count = std::max(count, list->size());
      }
      reserve_more(all, count);
      for (std::size_t i = 0; i < count; ++i) {
        PodTemplateLocation& t = all.emplace_back();
        t.kind = SpecKind::Fragmented;
        t.labels = at(labels, i);
        t.annotations = at(annotations, i);
        t.scheduler_name = at(scheduler, i);
        t.tolerations = at(tolerations, i);
        t.node_selector = at(node_selector, i);
        t.resources = at(resources, i);
        t.containers = at(containers, i);
        t.container = at(container, i);
        // The instance's root is what its pieces share (a Dynamo service, a Milvus component, a NIMService's
        // spec). The instance exists when its root does; maps missing below the root are created.
        std::vector<JsonPointer> pieces;
        for (const auto* piece : {&t.labels, &t.annotations, &t.scheduler_name, &t.tolerations, &t.node_selector,
                                  &t.resources, &t.containers, &t.container}) {
          if (*piece) pieces.push_back(**piece);
        }
        JsonPointer root = instance_root(pieces);
        if (pieces.empty() || !is_object_at(object, root)) {
          skip(t);  // kept in place, so that positions stay aligned with ids and replicas
          continue;
        }
        t.location = std::move(root);
      }
    } else {
      const auto* locations = locator.pointers(plan.location);
      const auto* metadata = locator.pointers(plan.metadata);
      if (metadata != nullptr && locations != nullptr && metadata->size() != locations->size()) {
        layout.notes.push_back(component + ": metadataPath gave " + std::to_string(metadata->size()) +
                               " places for " + std::to_string(locations->size()) + " pod specs; labels skipped");
        metadata = nullptr;
      }
      if (locations != nullptr) reserve_more(all, locations->size());
      for (std::size_t i = 0; locations != nullptr && i < locations->size(); ++i) {
        const JsonPointer& pointer = (*locations)[i];
        auto value = locator.place(plan.location, i);
        PodTemplateLocation& t = all.emplace_back();
        if (!present(value)) continue;  // never create a template the user did not write (kind None)
        t.kind = plan.spec_kind;
        t.location = pointer;
        t.element = value;
        if (!value->is_object()) {
          layout.notes.push_back(component + ": " + pointer.to_string() + " is " + (value->is_array() ? "an array" : std::string("a ") + type_name(*value)) +
                                 ", not an object; skipped");
          skip(t);
          continue;
        }
        // Tokens known here are appended escaped as they are (JsonPointer::append_escaped).
        if (plan.spec_kind == SpecKind::PodTemplateSpec) {
          t.labels.emplace(pointer).append_escaped("/metadata/labels");
          t.annotations.emplace(pointer).append_escaped("/metadata/annotations");
          t.pod_spec.emplace(pointer).append_escaped("/spec");
          const auto metadata = object_member(value, "metadata");
          t.labels_found = object_member(metadata, "labels");
          t.annotations_found = object_member(metadata, "annotations");
          t.pod_spec_found = object_member(value, "spec");
        } else {
          t.pod_spec = pointer;
          t.pod_spec_found = value;  // an object: checked above
          if (auto m = at(metadata, i); m && object_or_addable(object, *m)) {
            t.labels.emplace(*m).append_escaped("/labels");
            t.annotations.emplace(*m).append_escaped("/annotations");
          }
        }
      }
    }
    const std::size_t count = all.size() - first;

    for (ExpressionId extra : plan.additional_containers) {
      const auto* places = locator.pointers(extra);
      for (std::size_t i = 0; places != nullptr && i < places->size() && i < count; ++i) {
        auto container = find_at(object, (*places)[i]);
        if (container && container->is_object()) instance(i).additional_containers.push_back((*places)[i]);
      }
    }

    if (const auto* places = locator.pointers(plan.gpu_request)) {
      for (std::size_t i = 0; i < places->size() && i < count; ++i) {
        auto request = find_at(object, (*places)[i]);
        if (request && request->is_object()) instance(i).gpu_request = (*places)[i];
      }
    }

    auto ids = locator.names(plan.instance_id);
    if (ids && ids->size() != count) {
      layout.notes.push_back(component + ": instanceIdPath gave " + std::to_string(ids->size()) + " ids for " +
                             std::to_string(count) + " locations; ids by position used");
      ids.reset();
    }
    const auto* replicas = locator.values(plan.replicas);
    if (replicas != nullptr && replicas->size() != count) {
      layout.notes.push_back(component + ": replicasPath gave " + std::to_string(replicas->size()) +
                             " values for " + std::to_string(count) + " locations; 1 assumed");
      replicas = nullptr;
    }
    std::size_t kept = first;  // instances kept so far are all[first, kept)
    for (std::size_t i = 0; i < count; ++i) {
      PodTemplateLocation& t = instance(i);
      if (t.kind == SpecKind::None) continue;
      const std::size_t key =
          hash_pointer_text(t.location.text()) * 31 + (t.labels ? hash_pointer_text(t.labels->text()) : 0);
      bool seen = false;
      for (std::size_t k = 0; k < kept_hashes.size() && !seen; ++k) {
        seen = kept_hashes[k] == key && same_place(layout.templates[k], t);
      }
      if (seen) continue;
      t.component = component;
      if (ids && !(*ids)[i].empty()) {
        t.instance = std::move((*ids)[i]);
      } else {
        t.instance = count == 1 ? component : component + "-" + std::to_string(i);
      }
      if (replicas != nullptr) {
        const json& r = (*replicas)[i];
        // Every replicas field of Kubernetes is an int32; a number beyond it (1e300, say: no schema of a
        // custom resource need bound it) is refused before the cast, which would be undefined behaviour.
        constexpr double kMaxReplicas = 2147483647;
        if (r.is_number() && r.get<double>() >= 0 && r.get<double>() <= kMaxReplicas &&
            std::nearbyint(r.get<double>()) == r.get<double>()) {
          t.replicas = static_cast<std::int64_t>(r.get<double>());
        } else if (!r.is_null()) {
          layout.notes.push_back(component + " " + t.instance + ": replicas " + r.dump() +
                                 " is not a replica count (an integer from 0 to 2147483647); 1 assumed");
        }
      }
      if (first + i != kept) all[kept] = std::move(t);  // moved only past a dropped one
      ++kept;
      kept_hashes.push_back(key);
    }
    all.resize(kept);
  }
  for (auto& note : locator.notes) layout.notes.push_back(std::move(note));
  return layout;
}

}  // namespace karta
