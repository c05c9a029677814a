#pragma once

// The platform's policy file (--policy): what the webhook injects into pod templates and workloads, and
// the label policy it enforces. One YAML document; README.md documents every field.

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "json/documents.h"
#include "policy/tenant_rules.h"

namespace re2 {
class RE2;  // policy/policy.cpp and validate/label_policy.cpp include <re2/re2.h>
}  // namespace re2

namespace karta {

using json = nlohmann::json;

struct PodTemplatePolicy {
  // Values may hold placeholders filled per pod template: {{namespace}} {{name}} {{kind}} {{group}}
  // {{component}} {{instance}} {{gpus}}.
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  bool overwrite = false;  // existing keys keep their values unless true
};

// Which values of a scheduling choice a workload names itself (its queue, its priority class) its tenant
// lets it name: its own resolved value always, and those matching `allowed` (name globs, '*' for any run
// of characters). Unrestricted, as before tenants, when the policy sets no `allowed`. A workload that names
// another is denied by /validate (Enforce), admitted with a warning (Audit), or has its choice replaced by
// its own resolved value with a warning (Replace; /validate still denies one that reaches it unreplaced).
enum class ChoiceEnforcement { Enforce, Audit, Replace };

struct AllowedChoices {
  std::optional<std::vector<std::string>> allowed;  // none: any value
  ChoiceEnforcement enforcement = ChoiceEnforcement::Enforce;
  bool restricted() const { return allowed.has_value(); }
  // Whether a workload may name `value`, its tenant's own value being `resolved` ("" when none).
  bool permits(std::string_view value, std::string_view resolved) const;
  // What may be named, for messages: `research-q (its own), shared-*`; "none" when nothing may.
  std::string describe(const std::string& resolved) const;
};

struct SchedulingPolicy {
  std::string scheduler_name;       // empty: leave the scheduler alone
  bool force_scheduler_name = true; // replace a scheduler name the user set
  std::string queue_label;          // empty: no queue
  std::string default_queue;        // the workload's own value of queue_label wins over this
  // A label of the workload's namespace whose value is the queue of a workload that names none (Run:ai's
  // runai/queue): wins over default_queue, not over the workload's own label. Empty: not read.
  std::string namespace_label;
  AllowedChoices queues;  // scheduling.queue.allowed and .enforcement
  // scheduling.nodePool: KAI Scheduler reads a pod's node pool from this label of the pod
  // (default_grouper.go, the nodePoolLabelKey of --nodepool-label-key): written on every pod template.
  std::string node_pool_label = "kai.scheduler/node-pool";
  std::string node_pool;  // empty: none written
  // The queue a workload of this policy gets when it names none: the namespace's value of
  // namespace_label (when its labels are known and it has one), else default_queue; "" when neither.
  std::string resolved_queue(const std::map<std::string, std::string>* namespace_labels) const;
};

struct GpuPolicy {
  std::vector<std::string> resource_names{"nvidia.com/gpu"};
  json tolerations = json::array();                   // added to templates that request a GPU
  std::string tolerations_text;  // the same as compact JSON text (append_json's bytes), written when read
  std::map<std::string, std::string> node_selector;   // likewise
  std::map<std::string, std::string> pod_annotations; // likewise
  std::string workload_total_annotation;              // total GPUs, on the workload
};

struct GangPolicy {
  std::string min_member_annotation;  // on the workload, for definitions with gangScheduling
  // The kinds ("group/Kind", "Kind" for the core group) the annotation is written on: none by default.
  // KAI Scheduler reads it only on a batch Job (whose default is independent pods) and a JobSet (whose
  // default it computes itself), and computes the minimum itself for the others.
  std::vector<std::string> kinds;
  bool applies_to(const std::string& group, const std::string& kind) const;
};

// KAI Scheduler reads a workload's priority from the `priorityClassName` label of its top owner.
struct PriorityPolicy {
  std::string class_name;  // empty: none written; the workload's own label wins
  AllowedChoices classes;  // priority.allowed and .enforcement: the workload's own class is resolved to class_name
};

// KAI Scheduler v0.17 reads, from the owners first and then the pod (default_grouper.go), whether a
// workload may be preempted (the label kai.scheduler/preemptibility: preemptible or non-preemptible) and
// how long it waits before it may preempt others (the annotation kai.scheduler/preemption-delay, a Go
// duration such as 10m): written on the top owner, the object admitted.
struct PreemptionPolicy {
  std::string preemptibility;  // empty: none written
  std::string delay;           // empty: none written
};

constexpr const char* kPreemptibilityLabel = "kai.scheduler/preemptibility";
constexpr const char* kPreemptionDelayAnnotation = "kai.scheduler/preemption-delay";

// KAI Scheduler's topology-aware scheduling reads three annotations of the top owner.
struct TopologyPolicy {
  std::string name;                 // kai.scheduler/topology: the Topology object
  std::string required_placement;   // kai.scheduler/topology-required-placement: a level's node label
  std::string preferred_placement;  // kai.scheduler/topology-preferred-placement
};

constexpr const char* kPriorityClassLabel = "priorityClassName";
constexpr const char* kTopologyAnnotation = "kai.scheduler/topology";
constexpr const char* kTopologyRequiredAnnotation = "kai.scheduler/topology-required-placement";
constexpr const char* kTopologyPreferredAnnotation = "kai.scheduler/topology-preferred-placement";

struct LabelRules {
  std::vector<std::string> required;
  std::vector<std::pair<std::string, std::string>> allowed_patterns;  // key -> regular expression text
  // Compiled once when the policy loads, with RE2: linear time in the value, no recursion (std::regex
  // overflowed the stack on a long label value). Shared so that a Policy stays copyable.
  std::vector<std::pair<std::string, std::shared_ptr<const re2::RE2>>> allowed;
};

enum class LabelPolicyMode { Enforce, Audit };

struct LabelPolicy {
  bool enabled = false;
  LabelPolicyMode mode = LabelPolicyMode::Enforce;
  std::vector<std::string> exempt_namespaces;
  LabelRules workload;
  LabelRules pod_templates;
};

// What /validate does with a Karta (or ResourceInterface) that has faults: deny it (enforce), or admit it
// with each fault as a warning (warn), for clusters where Workload Map or KAI already apply their own
// definitions. Either way karta-webhook never loads a definition with an unsafe expression.
enum class DefinitionPolicyMode { Enforce, Warn };

struct DefinitionPolicy {
  DefinitionPolicyMode mode = DefinitionPolicyMode::Enforce;
};

// What `serve` does with a workload whose namespace's labels the policy needs (a namespaceSelector, a
// namespaceLabel) but cannot learn in time: refuse it, asking to retry (Deny), or decide without them,
// with a warning (GlobalPolicy: rules matched by name, else the global policy). Global only: a rule chosen
// by labels cannot say what happens when they are unknown. The offline commands always warn.
enum class UnknownLabelsAction { Deny, GlobalPolicy };

struct NamespaceLabelsPolicy {
  // As given (whenUnknown), else Deny when a tenant rule has a namespaceSelector (the labels say who the
  // workload is, and the global policy could lift its tenant's enforce rules), GlobalPolicy otherwise.
  UnknownLabelsAction when_unknown = UnknownLabelsAction::GlobalPolicy;
};

struct Policy {
  std::string source = "(none)";
  PodTemplatePolicy pod_templates;
  SchedulingPolicy scheduling;
  GpuPolicy gpu;
  GangPolicy gang;
  PriorityPolicy priority;
  TopologyPolicy topology;
  PreemptionPolicy preemption;
  LabelPolicy label_policy;
  DefinitionPolicy definition_policy;
  NamespaceLabelsPolicy namespace_labels;
  std::vector<TenantRule> tenants;  // first match wins
  bool says_nothing = false;        // `nothing: true`: the file sets nothing on purpose (as no --policy)
  // Tenant rules that may both match a namespace (overlap_warnings): loaded, and said where it loads.
  std::vector<std::string> warnings;
  json document = json::object();   // the global sections as read (no tenants), for --print-policy
  // Whether deciding needs a namespace's labels: a namespaceSelector rule, or a namespaceLabel anywhere.
  bool needs_namespace_labels() const;
  // Whether a tenant rule chooses namespaces by their labels (a non-empty namespaceSelector).
  bool selects_by_labels() const;
};

// Reads a policy document strictly: an unknown field, a bad label key or value, an unknown placeholder
// or a regular expression that does not compile is an InputError naming the field.
// With `marks` (the document's, json/documents.h), the message starts with the line and column of the
// field it names: "policy.yaml line 4 column 5: tenants[0].nme: unknown field (did you mean \"name\"?)".
Policy parse_policy(const json& document, const std::string& source, const SourceMarks* marks = nullptr);
// Reads a policy file as parse_policy does, and refuses one that sets nothing (empty, comments only,
// `{}`, `tenants: []`, only empty sections) unless it says `nothing: true`: a file emptied by mistake
// would otherwise lift every injection and every denial, at start-up and on reload alike.
Policy load_policy(const std::filesystem::path& file);
// The same from text read elsewhere (the policy ConfigMap's data.policy.yaml, at /validate-policy);
// `source` names it in every message.
Policy load_policy_text(std::string_view text, const std::string& source);

// The values placeholders are filled with, for one pod template.
struct PlaceholderValues {
  std::string namespace_name, name, kind, group, component, instance, gpus;
};
std::string fill_placeholders(const std::string& text, const PlaceholderValues& values);
// Whether `text` holds a placeholder to fill. A label value without one is checked when the policy is read.
inline bool has_placeholder(const std::string& text) { return text.find("{{") != std::string::npos; }
// Whether `text` comes out the same for every pod template of one workload: it has none of the
// placeholders filled per template ({{component}}, {{instance}}, {{gpus}}).
bool same_for_every_template(const std::string& text);

}  // namespace karta
