#include "mutate/mutation.h"

#include <set>

#include "definitions/workload.h"
#include "json/json_members.h"
#include "k8s/name_syntax.h"
#include "k8s/terminal_text.h"
#include "mutate/json_patch_builder.h"
#include "mutate/kai_gang.h"

namespace karta {
namespace {

// The warning of a choice replaced: `choice` ("queue") `named` by the workload is not one `tenant` permits.
std::string not_permitted_warning(const char* choice, const std::string& named, const std::string& tenant,
                                  const AllowedChoices& allowed, const std::string& resolved) {
  return std::string(choice) + " \"" + bounded_text(named) + "\" is not one " + tenant + " may name (" +
         allowed.describe(resolved) + "): replaced with " + resolved;
}

// Where a change is made, for messages: the workload itself, or one pod template. Written out only
// when a message needs it.
struct Where {
  const std::string* instance = nullptr;  // the template's instance; null: the workload
  std::string text() const { return instance == nullptr ? "workload" : *instance + " pod template"; }
};

class Mutator {
 public:
  Mutator(JsonElement object, MutationOutcome& outcome) : patch_(object), outcome_(outcome) {}

  // `found`: what `map` reaches in the object, when the caller holds it (see JsonPatchBuilder::set_member).
  PatchChange set(const JsonPointer& map, std::string_view key, std::string_view value, bool overwrite, Where where,
                  const std::optional<JsonElement>& found = std::nullopt) {
    PatchChange change = patch_.set_member(map, found, key, value, overwrite);
    if (change == PatchChange::Blocked) block(where);
    return change;
  }

  // `values` (an array) must outlive the mutator: the patch may hold it rather than a copy.
  // `text`, when given, is `values` as compact JSON text, kept as long.
  void append_all(const JsonPointer& list, const json& values, std::string_view text, Where where) {
    if (patch_.append_all_unique(list, values, text) == PatchChange::Blocked) block(where);
  }

  // A label value, checked once its placeholders are filled.
  void label(const JsonPointer& map, const std::string& key, const std::string& value, bool overwrite, Where where) {
    label_checked(map, key, value, label_value_error(value), overwrite, where);
  }
  // The same for a value already checked: `error` is what label_value_error said of it. (The policy's
  // values without placeholders were checked when it was read, and the queue is checked once per workload.)
  PatchChange label_checked(const JsonPointer& map, const std::string& key, const std::string& value,
                            const std::string& error, bool overwrite, Where where,
                            const std::optional<JsonElement>& found = std::nullopt) {
    if (!error.empty()) {
      outcome_.warnings.push_back(where.text() + ": label " + key + " skipped: value \"" + bounded_text(value) + "\" " + error);
      return PatchChange::Kept;
    }
    return set(map, key, value, overwrite, where, found);
  }

  // The template being worked on: its containers are looked up from it.
  void remember(const PodTemplateLocation& t) {
    if (t.element) patch_.remember(t.location, *t.element);
  }

  JsonPatch patch() const { return patch_.patch(); }

 private:
  void block(Where where) {
    std::string note = where.text() + ": " + patch_.blocked_reason() + "; left as is";
    if (noted_.insert(note).second) outcome_.notes.push_back(note);
  }
  JsonPatchBuilder patch_;
  MutationOutcome& outcome_;
  std::set<std::string> noted_;
};

// The same value at `pointer` in both objects (absent in both counts as the same).
bool same_at(JsonElement object, JsonElement old_object, const JsonPointer& pointer) {
  auto now = find_at(object, pointer);
  auto before = find_at(old_object, pointer);
  if (!now || !before) return !now && !before;
  return equals(*now, to_json(*before));
}

// Whether an UPDATE leaves a pod template as it was: the template (or pod spec, or a fragmented pod's
// root), the objects that hold its labels and annotations, and each fragmented piece; a place under the
// template was compared with it.
bool unchanged(JsonElement object, JsonElement old_object, const PodTemplateLocation& t) {
  if (!same_at(object, old_object, t.location)) return false;
  auto same_outside_template = [&](const JsonPointer& pointer) {
    return at_or_under(pointer.text(), t.location.text()) || same_at(object, old_object, pointer);
  };
  for (const auto* pointer : {&t.labels, &t.annotations}) {
    if (*pointer && !same_outside_template(pointer->value().parent_pointer())) return false;
  }
  for (const auto* pointer : {&t.scheduler_name, &t.tolerations, &t.node_selector, &t.resources, &t.containers,
                              &t.container}) {
    if (*pointer && !same_outside_template(**pointer)) return false;
  }
  return true;
}

// The labels the webhook wrote on the workload itself: read from the object's annotation, and made anew by
// this admission. On UPDATE, a listed label the request changes to a value that is not the policy's is the
// user's now; one changed to the policy's value is the webhook's still (its own earlier patch, reinvoked).
class Provenance {
 public:
  Provenance(const std::optional<JsonElement>& labels, const std::optional<JsonElement>& annotations,
             const std::optional<JsonElement>& old_object)
      : labels_(labels), annotations_(annotations) {
    listed_ = written_entries(string_member(annotations, kWrittenAnnotation));
    if (old_object) old_labels_ = object_member(member(*old_object, "metadata"), "labels");
    updating_ = old_object.has_value();
  }
  static std::string label(std::string_view key) { return "label:" + std::string(key); }
  // Whether the label `key` holds the webhook's value, to follow the policy's `value`.
  bool follows(std::string_view key, std::string_view value) const {
    if (listed_.count(label(key)) == 0) return false;
    if (!updating_) return true;
    const std::string now = string_member(labels_, key);
    return now == value || now == string_member(old_labels_, key);
  }
  // What writing at `key` came to, the policy's value there being `value`: the webhook's value now when it
  // wrote it, or when it was the webhook's and already is the policy's.
  void record(std::string_view key, std::string_view value, PatchChange change) {
    if (change == PatchChange::Added || change == PatchChange::Replaced ||
        (change == PatchChange::Unchanged && follows(key, value))) {
      written_.insert(label(key));
    }
  }
  // The annotation's new value, when it changes.
  std::optional<std::string> annotation_update() const {
    std::string text;
    for (const std::string& entry : written_) text += (text.empty() ? "" : ",") + entry;
    auto current = annotations_ ? member(*annotations_, kWrittenAnnotation) : std::nullopt;
    if (!current) return text.empty() ? std::nullopt : std::optional<std::string>(text);
    auto current_text = string_of(*current);
    if (current_text && *current_text == text) return std::nullopt;
    return text;
  }

 private:
  std::optional<JsonElement> labels_, annotations_, old_labels_;
  bool updating_ = false;
  std::set<std::string> listed_, written_;
};

}  // namespace

std::set<std::string> written_entries(std::string_view annotation) {
  std::set<std::string> entries;
  annotation = annotation.substr(0, kMaxWrittenText);
  while (!annotation.empty() && entries.size() < kMaxWrittenEntries) {
    const std::size_t comma = annotation.find(',');
    const std::string_view entry = annotation.substr(0, comma);
    if (entry.starts_with("label:") && entry.size() > 6) entries.emplace(entry);  // other kinds: none written yet
    if (comma == std::string_view::npos) break;
    annotation.remove_prefix(comma + 1);
  }
  return entries;
}

MutationOutcome mutate_workload(const json& object, const CompiledDefinition& definition, const Policy& policy,
                                const WorkloadContext& context) {
  JsonDocument document = JsonDocument::from(object);
  return mutate_workload(document.root(), definition, policy, context);
}

MutationOutcome mutate_workload(JsonElement object, const CompiledDefinition& definition, const Policy& policy,
                                const WorkloadContext& context) {
  MutationOutcome outcome;
  DefinitionEvaluation evaluation(definition, object);
  WorkloadAnalysis analysis = analyze_workload(evaluation, policy.gpu.resource_names, Counted::GpusOnly);
  outcome.notes = std::move(analysis.layout.notes);
  outcome.templates = analysis.layout.templates.size();
  outcome.total_gpus = analysis.total_gpus;
  Mutator mutator(object, outcome);

  const GroupVersionKind& kind = definition.root_kind();
  const JsonPointer workload_labels("/metadata/labels");
  const JsonPointer workload_annotations("/metadata/annotations");
  const std::optional<JsonElement> metadata = member(object, "metadata");
  const std::optional<JsonElement> labels_found = object_member(metadata, "labels");
  const std::optional<JsonElement> annotations_found = object_member(metadata, "annotations");
  // A Pod's spec is immutable after creation: on UPDATE only its metadata may change.
  const bool update = context.operation == "UPDATE";
  const bool spec_mutable = !(kind.group.empty() && kind.kind == "Pod" && update);
  Provenance provenance(labels_found, annotations_found, update ? context.old_object : std::nullopt);

  const SchedulingPolicy& scheduling = policy.scheduling;
  std::string queue, queue_error;
  if (!scheduling.queue_label.empty()) {
    // The workload's own queue label wins over the namespace's and the default, unless its tenant does
    // not let it name that queue and says to replace it (scheduling.queue.enforcement: replace); under
    // enforce and audit it stays, for /validate to deny or warn about (validate/scheduling_choices.h).
    const std::string resolved = scheduling.resolved_queue(context.namespace_labels);
    queue = string_member(labels_found, scheduling.queue_label);
    bool replaced = false;
    if (!queue.empty() && !resolved.empty() && provenance.follows(scheduling.queue_label, resolved)) {
      queue = resolved;  // the webhook's own value, not the user's: it follows the policy
      replaced = true;
    } else if (!queue.empty() && !resolved.empty() && scheduling.queues.enforcement == ChoiceEnforcement::Replace &&
               !scheduling.queues.permits(queue, resolved)) {
      outcome.warnings.push_back(not_permitted_warning("queue", queue, context.tenant, scheduling.queues, resolved));
      queue = resolved;
      replaced = true;
    }
    if (queue.empty()) queue = resolved;
    queue_error = label_value_error(queue);
    if (!queue.empty()) {
      provenance.record(scheduling.queue_label, resolved,  // judged against the policy's queue, not the user's
                        mutator.label_checked(workload_labels, scheduling.queue_label, queue, queue_error, replaced,
                                              Where{}, labels_found));
    }
  }
  // The priority class a pod template names (its pod spec's priorityClassName, or its priorityClassName
  // label): KAI Scheduler reads the workload's label first, so the policy's class is written only on a
  // workload none of whose templates names one. A class the tenant does not permit is replaced where
  // priority.enforcement says so.
  const AllowedChoices& classes = policy.priority.classes;
  const bool replace_classes = classes.enforcement == ChoiceEnforcement::Replace && !policy.priority.class_name.empty();
  bool template_names_class = false;
  const std::string no_error;
  // A policy label's value for one template: without placeholders (checked when the policy was read, by
  // parse_policy) used as it is, with them filled into `filled` and checked.
  std::string filled, filled_error;
  auto policy_label = [&](const std::string& value, const PlaceholderValues& values) -> std::pair<const std::string*, const std::string*> {
    if (!has_placeholder(value)) return {&value, &no_error};
    filled = fill_placeholders(value, values);
    filled_error = label_value_error(filled);
    return {&filled, &filled_error};
  };

  PlaceholderValues values;
  values.namespace_name = context.namespace_name;
  values.name = string_member(metadata, "name");
  if (values.namespace_name.empty()) values.namespace_name = string_member(metadata, "namespace");
  values.kind = kind.kind;
  values.group = kind.group;

  const PodTemplatePolicy& pod_policy = policy.pod_templates;
  JsonPointer under_spec;  // a list or map of a template's pod spec, built in place for each
  for (std::size_t i = 0; i < analysis.layout.templates.size(); ++i) {
    const PodTemplateLocation& t = analysis.layout.templates[i];
    const PodRequests& requests = analysis.per_pod[i];
    const Where where{&t.instance};
    if (update && context.old_object && unchanged(object, *context.old_object, t)) continue;
    mutator.remember(t);
    values.component = t.component;
    values.instance = t.instance;
    values.gpus = format_count(requests.gpus);

    for (const auto& [place, found] : {std::pair{&t.pod_spec, &t.pod_spec_found}, std::pair{&t.labels, &t.labels_found}}) {
      if (!*place) continue;
      const std::optional<JsonElement> map = *found ? *found : find_at(object, **place);
      const std::string named = string_member(map, kPriorityClassLabel);
      if (named.empty()) continue;
      template_names_class = true;
      if (replace_classes && !classes.permits(named, policy.priority.class_name)) {
        outcome.warnings.push_back(not_permitted_warning("priority class", named, context.tenant, classes,
                                                         policy.priority.class_name));
        mutator.set(**place, kPriorityClassLabel, policy.priority.class_name, true, where, map);
      }
    }
    if (t.labels) {
      for (const auto& [key, value] : pod_policy.labels) {
        auto [label, error] = policy_label(value, values);
        mutator.label_checked(*t.labels, key, *label, *error, pod_policy.overwrite, where, t.labels_found);
      }
      // KAI reads the node pool from the pod's own label.
      if (!scheduling.node_pool.empty()) {
        mutator.label_checked(*t.labels, scheduling.node_pool_label, scheduling.node_pool, no_error, false, where,
                              t.labels_found);
      }
      // The workload's queue on every pod: pods that name another queue would bypass its quota.
      if (!queue.empty()) {
        mutator.label_checked(*t.labels, scheduling.queue_label, queue, queue_error, true, where, t.labels_found);
      }
    }
    if (t.annotations) {
      for (const auto& [key, value] : pod_policy.annotations) {
        mutator.set(*t.annotations, key, fill_placeholders(value, values), pod_policy.overwrite, where, t.annotations_found);
      }
      if (requests.gpus > 0) {
        for (const auto& [key, value] : policy.gpu.pod_annotations) {
          mutator.set(*t.annotations, key, fill_placeholders(value, values), false, where, t.annotations_found);
        }
      }
    }
    if (!spec_mutable) continue;

    if (!scheduling.scheduler_name.empty()) {
      if (t.pod_spec) {
        mutator.set(*t.pod_spec, "schedulerName", scheduling.scheduler_name, scheduling.force_scheduler_name, where,
                    t.pod_spec_found);
      } else if (t.scheduler_name && !t.scheduler_name->empty()) {
        mutator.set(t.scheduler_name->parent_pointer(), t.scheduler_name->back(), scheduling.scheduler_name,
                    scheduling.force_scheduler_name, where);
      }
    }
    if (requests.gpus > 0) {
      // The pod spec's list or map, or the fragmented template's own pointer to it. (A pointer and not a
      // std::optional<JsonPointer>: GCC clears an empty optional's whole storage, 120 bytes, with `rep
      // stos`.)
      auto in_pod_spec = [&](const std::optional<JsonPointer>& fragment, std::string_view member) -> const JsonPointer* {
        if (!t.pod_spec) return fragment ? &*fragment : nullptr;
        under_spec = *t.pod_spec;
        under_spec.append_escaped(member);
        return &under_spec;
      };
      if (!policy.gpu.tolerations.empty()) {
        if (const JsonPointer* tolerations = in_pod_spec(t.tolerations, "/tolerations")) {
          mutator.append_all(*tolerations, policy.gpu.tolerations, policy.gpu.tolerations_text, where);
        }
      }
      if (!policy.gpu.node_selector.empty()) {
        if (const JsonPointer* node_selector = in_pod_spec(t.node_selector, "/nodeSelector")) {
          for (const auto& [key, value] : policy.gpu.node_selector) {  // written unfilled: checked when read
            if (has_placeholder(value)) mutator.label(*node_selector, key, value, false, where);
            else mutator.label_checked(*node_selector, key, value, no_error, false, where);
          }
        }
      }
    }
  }

  // A kind whose operator copies one label map onto every pod of the workload (the definition's
  // workloadPodLabelsPath extension, Milvus's .spec.components.podLabels) and an object that spells out no
  // pod template: the operator builds every pod from its defaults, so the labels that are the same on
  // every pod (the queue, policy labels without a per-template placeholder) go into that map, created
  // when absent. Per-template labels have no place there and stay out.
  if (analysis.layout.templates.empty() && definition.workload_pod_labels() != kNoExpression) {
    const auto& shared = evaluation.outcome(definition.workload_pod_labels());
    const std::string field = definition.definition().workload_pod_labels->field;
    if (shared.error) {
      outcome.notes.push_back(field + ": " + *shared.error);
    } else if (shared.pointers.size() != 1) {
      outcome.notes.push_back(field + ": gave " + std::to_string(shared.pointers.size()) +
                              " places, not one; no workload-wide pod label written");
    } else {
      const JsonPointer& map = shared.pointers.front();
      for (const auto& [key, value] : pod_policy.labels) {
        if (same_for_every_template(value)) {
          auto [label, error] = policy_label(value, values);
          mutator.label_checked(map, key, *label, *error, pod_policy.overwrite, Where{});
        }
      }
      if (!queue.empty()) mutator.label_checked(map, scheduling.queue_label, queue, queue_error, true, Where{});
    }
  }

  // A kind whose own controller reads a queue from the object (the definition's queuePath extension:
  // Volcano's .spec.queue, Spark's .spec.batchSchedulerOptions.queue) gets the resolved queue there when it
  // names none, on CREATE, so the scheduler that admits it and the queue label agree (the map holding it
  // is created when absent). A queue the user set there is theirs: Volcano's own webhook refuses a Job
  // whose queue does not exist and any UPDATE that changes spec.queue (volcano-sh/volcano
  // pkg/webhooks/admission/jobs/validate/admit_job.go), so it is never replaced and never written on
  // UPDATE; one that differs from the workload's queue is a warning, and /validate denies one the tenant
  // does not permit (validate/scheduling_choices.h).
  if (!queue.empty() && queue_error.empty() && definition.queue_path() != kNoExpression && !update) {
    const auto& places = evaluation.outcome(definition.queue_path());
    if (places.error) {
      outcome.notes.push_back(definition.definition().queue_path->field + ": " + *places.error);
    } else {
      for (const JsonPointer& place : places.pointers) {
        if (place.empty()) continue;
        const JsonPointer holder = place.parent_pointer();
        const std::string own = string_member(find_at(object, holder), place.back());
        if (own.empty()) {
          mutator.set(holder, place.back(), queue, true, Where{});
        } else if (own != queue) {
          outcome.warnings.push_back(definition.definition().queue_path->field + " (" + place.to_string() + "): \"" +
                                     bounded_text(own) + "\" kept, though the workload's queue is \"" + queue + "\" (" +
                                     scheduling.queue_label + ")");
        }
      }
    }
  }

  if (!policy.gpu.workload_total_annotation.empty() && analysis.total_gpus > 0) {
    // Always the workload's count, whoever wrote it: nothing for provenance to tell apart.
    mutator.set(workload_annotations, policy.gpu.workload_total_annotation, format_count(analysis.total_gpus), true,
                Where{}, annotations_found);
  }
  // KAI Scheduler reads priority and topology on the top owner, which is the object admitted here (an
  // object owned by a kind with a definition is skipped before mutation): never on the pod templates.
  // Each label the webhook wrote before (listed in kWrittenAnnotation) follows the policy: overwritten.
  if (!policy.priority.class_name.empty()) {
    const std::string& class_name = policy.priority.class_name;
    const std::string own = string_member(labels_found, kPriorityClassLabel);
    const bool follows = provenance.follows(kPriorityClassLabel, class_name);
    if (!own.empty() && replace_classes && !classes.permits(own, class_name)) {
      outcome.warnings.push_back(not_permitted_warning("priority class", own, context.tenant, classes, class_name));
      provenance.record(kPriorityClassLabel, class_name,
                        mutator.set(workload_labels, kPriorityClassLabel, class_name, true, Where{}, labels_found));
    } else if ((own.empty() || follows) && !template_names_class) {
      provenance.record(kPriorityClassLabel, class_name,
                        mutator.label_checked(workload_labels, kPriorityClassLabel, class_name, no_error, follows,
                                              Where{}, labels_found));
    }
  }
  if (const std::string& preemptibility = policy.preemption.preemptibility; !preemptibility.empty()) {
    provenance.record(kPreemptibilityLabel, preemptibility,
                      mutator.label_checked(workload_labels, kPreemptibilityLabel, preemptibility, no_error,
                                            provenance.follows(kPreemptibilityLabel, preemptibility), Where{},
                                            labels_found));
  }
  if (!policy.preemption.delay.empty()) {
    mutator.set(workload_annotations, kPreemptionDelayAnnotation, policy.preemption.delay, false, Where{}, annotations_found);
  }
  for (const auto& [key, value] : {std::pair{kTopologyAnnotation, &policy.topology.name},
                                   std::pair{kTopologyRequiredAnnotation, &policy.topology.required_placement},
                                   std::pair{kTopologyPreferredAnnotation, &policy.topology.preferred_placement}}) {
    if (!value->empty()) mutator.set(workload_annotations, key, *value, false, Where{}, annotations_found);
  }
  // Written only where the policy asks for a gang (gang.kinds, empty by default: KAI Scheduler's own
  // default for a batch Job is independent pods, and it computes a JobSet's itself), and never over a value
  // the user set. A JobSet gets what KAI v0.16+ reads there (mutate/kai_gang.h); any other kind named
  // gets its gang's pods, from its definition's gangScheduling, or every pod template (a batch Job:
  // min(parallelism, completions)) when it has none.
  static const GangPlan kWholeWorkload{true, {}, std::nullopt};
  const std::string& gang_key = policy.gang.min_member_annotation;
  if (!gang_key.empty() && policy.gang.applies_to(kind.group, kind.kind)) {
    if (kind.group == "jobset.x-k8s.io" && kind.kind == "JobSet") {
      for (const GangAnnotation& write : jobset_gang(object, gang_key, !update)) {
        if (!write.user_set) mutator.set(write.annotations, gang_key, write.value, false, Where{});
      }
    } else {
      const GangPlan& plan = definition.gang() ? *definition.gang() : kWholeWorkload;
      GangMinimum gang = gang_minimum(plan, analysis.layout);
      // The gang size the kind's own controller uses (gangMinMemberPath: Volcano's minAvailable), when the
      // object sets one; else the members' pods.
      if (definition.gang_min_member() != kNoExpression && !gang.not_computed) {
        const auto& size = evaluation.outcome(definition.gang_min_member());
        if (!size.error && size.values.size() == 1 && size.values[0].is_number_integer() && size.values[0].get<std::int64_t>() >= 0) {
          gang.min_member = size.values[0].get<std::int64_t>();
        }
      }
      if (gang.not_computed) {
        outcome.notes.push_back(gang_key + " not written: " + *gang.not_computed);
      } else if (*gang.min_member > 0) {
        mutator.set(workload_annotations, gang_key, std::to_string(*gang.min_member), false, Where{}, annotations_found);
      }
    }
  }
  if (auto written = provenance.annotation_update()) {
    mutator.set(workload_annotations, kWrittenAnnotation, *written, true, Where{}, annotations_found);
  }
  outcome.patch = mutator.patch();
  return outcome;
}

}  // namespace karta
