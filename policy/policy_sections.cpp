// The sections of a policy (podTemplates, scheduling, gpu, gang, priority, topology, labelPolicy,
// definitionPolicy), read strictly into the resolved Policy: the global ones, and a tenant's merged with
// them; and namespaceLabels, the global policy's only.

#include "policy/policy_sections.h"

#include <algorithm>
#include <cctype>

#include <re2/re2.h>

#include "json/json_text.h"
#include "k8s/name_syntax.h"
#include "policy/section_reader.h"

namespace karta {
namespace {

LabelRules read_rules(const json& value, const std::string& where) {
  LabelRules rules;
  Section s(value, where);
  rules.required = s.strings("required");
  for (const auto& key : rules.required) {
    if (auto error = label_key_error(key); !error.empty()) {
      throw InputError(s.field("required") + ": \"" + key + "\" " + error);
    }
  }
  const json& allowed = s.get("allowed");
  if (!allowed.is_null()) {
    if (!allowed.is_object()) throw InputError(s.field("allowed") + ": must be a map of key to regular expression");
    for (const auto& [key, pattern] : allowed.items()) {
      if (!pattern.is_string()) throw InputError(s.field("allowed") + "." + key + ": must be a string");
      // RE2 syntax: linear time, so no backreferences and no lookaround; RE2 refuses those here, at load.
      const auto& text = pattern.get_ref<const std::string&>();
      RE2::Options options;
      options.set_log_errors(false);  // the error is ours to report, naming the field
      auto compiled = std::make_shared<const RE2>(text, options);
      if (!compiled->ok()) {
        throw InputError(s.field("allowed") + "." + key + ": not a regular expression: " + compiled->error());
      }
      rules.allowed.emplace_back(key, std::move(compiled));
      rules.allowed_patterns.emplace_back(key, text);
    }
  }
  return rules;
}


// An annotation key the policy names for the webhook to set: checked as the API server will check it.
std::string annotation_key(Section& section, const std::string& name) {
  std::string key = section.string(name);
  if (auto e = key.empty() ? std::string() : annotation_key_error(key); !e.empty()) {
    throw InputError(section.field(name) + ": \"" + key + "\" " + e);
  }
  return key;
}

// A toleration, as the API server validates one in a pod spec (core v1 Toleration and
// ValidateTolerations): a patch carrying a bad one would be refused, and with it the user's workload.
void check_toleration(const json& toleration, const std::string& where) {
  if (!toleration.is_object()) throw InputError(where + ": must be a toleration (a map), not " + toleration.type_name());
  std::string key, op, value, effect;
  json seconds;
  {
    Section t(toleration, where);  // refuses unknown fields when it goes
    key = t.string("key");
    op = t.string("operator");
    value = t.string("value");
    effect = t.string("effect");
    seconds = t.get("tolerationSeconds");
  }
  if (auto e = key.empty() ? std::string() : label_key_error(key); !e.empty()) {
    throw InputError(where + ".key: \"" + key + "\" " + e);
  }
  if (!op.empty() && op != "Exists" && op != "Equal") {
    throw InputError(where + ".operator: \"" + op + "\" is not one of Exists, Equal");
  }
  if (key.empty() && op != "Exists") throw InputError(where + ".operator: must be Exists when key is empty");
  if (op == "Exists" && !value.empty()) throw InputError(where + ".value: must be empty when operator is Exists");
  if (auto e = label_value_error(value); !e.empty()) throw InputError(where + ".value: \"" + value + "\" " + e);
  if (!effect.empty() && effect != "NoSchedule" && effect != "PreferNoSchedule" && effect != "NoExecute") {
    throw InputError(where + ".effect: \"" + effect + "\" is not one of NoSchedule, PreferNoSchedule, NoExecute");
  }
  if (!seconds.is_null()) {
    if (!seconds.is_number_integer()) throw InputError(where + ".tolerationSeconds: must be an integer");
    if (effect != "NoExecute") throw InputError(where + ".tolerationSeconds: only with effect NoExecute");
  }
}

// Whether `text` is a duration as Go's time.ParseDuration reads it (metav1.Duration, which KAI parses
// kai.scheduler/preemption-delay with): one or more decimal numbers each with a unit, "10m", "1h30m",
// "1.5s"; a lone "0" too.
bool go_duration(const std::string& text) {
  if (text == "0") return true;
  static const char* kUnits[] = {"ns", "us", "\u00b5s", "ms", "s", "m", "h"};
  std::size_t i = 0;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
  if (i == text.size()) return false;
  while (i < text.size()) {
    const std::size_t digits = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    bool number = i > digits;
    if (i < text.size() && text[i] == '.') {
      const std::size_t fraction = ++i;
      while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
      number = number || i > fraction;
    }
    if (!number) return false;
    std::size_t unit_length = 0;
    for (const char* unit : kUnits) {
      const std::string_view u(unit);
      if (text.compare(i, u.size(), u) == 0 && u.size() > unit_length) unit_length = u.size();
    }
    if (unit_length == 0) return false;
    i += unit_length;
  }
  return true;
}

// `allowed` and `enforcement` of a scheduling choice (scheduling.queue, priority): globs of what a
// workload may name, each a label value with '*' (the values are label values).
AllowedChoices read_allowed_choices(Section& section) {
  AllowedChoices choices;
  if (!section.get("allowed").is_null()) {
    choices.allowed = section.strings("allowed");
    for (std::size_t i = 0; i < choices.allowed->size(); ++i) {
      const std::string& glob = (*choices.allowed)[i];
      // A queue or class name is a label value (at most 63 of alphanumerics, '-', '_' and '.'): a glob
      // of one holds those and '*'.
      std::string error;
      if (glob.empty()) error = "is empty";
      else if (glob.size() > 63) error = "is longer than 63 characters, the most a label value has";
      for (char c : glob) {
        if (error.empty() && !(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '*'))
          error = std::string("holds '") + c + "': only alphanumerics, '-', '_', '.' and '*' (any run of characters)";
      }
      if (!error.empty()) {
        throw InputError(section.field("allowed") + "[" + std::to_string(i) + "]: \"" + glob + "\" " + error);
      }
    }
  }
  const std::string enforcement = section.string("enforcement", "enforce");
  if (enforcement == "enforce") choices.enforcement = ChoiceEnforcement::Enforce;
  else if (enforcement == "audit") choices.enforcement = ChoiceEnforcement::Audit;
  else if (enforcement == "replace") choices.enforcement = ChoiceEnforcement::Replace;
  else throw InputError(section.field("enforcement") + ": must be enforce, audit or replace, not \"" + enforcement + "\"");
  if (!choices.allowed && !section.get("enforcement").is_null()) {
    throw InputError(section.field("enforcement") + ": needs " + section.field("allowed") +
                     " (without it any value may be named, and there is nothing to enforce)");
  }
  return choices;
}

}  // namespace

// Reads every section of the global policy but `tenants` into `policy`; `top` refuses unknown fields.
void parse_sections(Section& top, Policy& policy) {
    {
      Section pt(top.get("podTemplates"), "podTemplates");
      policy.pod_templates.labels =
          read_string_map(pt.get("labels"), "podTemplates.labels", label_key_error, Values::LabelValues);
      policy.pod_templates.annotations =
          read_string_map(pt.get("annotations"), "podTemplates.annotations", annotation_key_error, Values::Free);
      policy.pod_templates.overwrite = pt.boolean("overwrite", false);
    }
    {
      Section sc(top.get("scheduling"), "scheduling");
      policy.scheduling.scheduler_name = sc.string("schedulerName");
      if (!policy.scheduling.scheduler_name.empty()) {
        // A scheduler name is a DNS subdomain, as the API server validates pod.spec.schedulerName.
        if (auto e = dns_subdomain_error(policy.scheduling.scheduler_name); !e.empty()) {
          throw InputError("scheduling.schedulerName: \"" + policy.scheduling.scheduler_name + "\" is not a DNS subdomain");
        }
      }
      policy.scheduling.force_scheduler_name = sc.boolean("forceSchedulerName", true);
      Section queue(sc.get("queue"), "scheduling.queue");
      policy.scheduling.queue_label = queue.string("label");
      policy.scheduling.default_queue = queue.string("default");
      policy.scheduling.namespace_label = queue.string("namespaceLabel");
      policy.scheduling.queues = read_allowed_choices(queue);
      Section pool(sc.get("nodePool"), "scheduling.nodePool");
      policy.scheduling.node_pool_label = pool.string("label", policy.scheduling.node_pool_label);
      policy.scheduling.node_pool = pool.string("name");
      if (auto e = label_key_error(policy.scheduling.node_pool_label); !e.empty()) {
        throw InputError("scheduling.nodePool.label: \"" + policy.scheduling.node_pool_label + "\" " + e);
      }
      if (auto e = label_value_error(policy.scheduling.node_pool); !e.empty()) {
        throw InputError("scheduling.nodePool.name: \"" + policy.scheduling.node_pool + "\" " + e);
      }
      if (policy.scheduling.queues.restricted() && policy.scheduling.queue_label.empty()) {
        throw InputError("scheduling.queue.allowed: needs scheduling.queue.label");
      }
      if (!policy.scheduling.queue_label.empty()) {
        if (auto e = label_key_error(policy.scheduling.queue_label); !e.empty()) {
          throw InputError("scheduling.queue.label: \"" + policy.scheduling.queue_label + "\" " + e);
        }
      }
      if (auto e = label_value_error(policy.scheduling.default_queue); !e.empty()) {
        throw InputError("scheduling.queue.default: \"" + policy.scheduling.default_queue + "\" " + e);
      }
      if (!policy.scheduling.default_queue.empty() && policy.scheduling.queue_label.empty()) {
        throw InputError("scheduling.queue.default: needs scheduling.queue.label");
      }
      if (!policy.scheduling.namespace_label.empty()) {
        if (auto e = label_key_error(policy.scheduling.namespace_label); !e.empty()) {
          throw InputError("scheduling.queue.namespaceLabel: \"" + policy.scheduling.namespace_label + "\" " + e);
        }
        if (policy.scheduling.queue_label.empty()) {
          throw InputError("scheduling.queue.namespaceLabel: needs scheduling.queue.label");
        }
      }
    }
    {
      Section gpu(top.get("gpu"), "gpu");
      if (!gpu.get("resourceNames").is_null()) policy.gpu.resource_names = gpu.strings("resourceNames");
      const json& tolerations = gpu.get("tolerations");
      if (!tolerations.is_null()) {
        if (!tolerations.is_array()) throw InputError("gpu.tolerations: must be a list of tolerations");
        for (std::size_t i = 0; i < tolerations.size(); ++i) {
          check_toleration(tolerations[i], "gpu.tolerations[" + std::to_string(i) + "]");
        }
        policy.gpu.tolerations = tolerations;
        append_json(policy.gpu.tolerations_text, policy.gpu.tolerations);  // written into every GPU template's patch
      }
      policy.gpu.node_selector = read_string_map(gpu.get("nodeSelector"), "gpu.nodeSelector", label_key_error,
                                                 Values::LabelValues);
      policy.gpu.pod_annotations = read_string_map(gpu.get("podAnnotations"), "gpu.podAnnotations",
                                                   annotation_key_error, Values::Free);
      policy.gpu.workload_total_annotation = annotation_key(gpu, "workloadTotalAnnotation");
    }
    {
      Section gang(top.get("gang"), "gang");
      policy.gang.min_member_annotation = annotation_key(gang, "minMemberAnnotation");
      if (!gang.get("kinds").is_null()) {
        policy.gang.kinds = gang.strings("kinds");
        for (std::size_t i = 0; i < policy.gang.kinds.size(); ++i) {
          const std::string& kind = policy.gang.kinds[i];
          const std::size_t slash = kind.rfind('/');
          const std::string group = slash == std::string::npos ? "" : kind.substr(0, slash);
          const std::string name = slash == std::string::npos ? kind : kind.substr(slash + 1);
          bool kind_ok = !name.empty() && std::isupper(static_cast<unsigned char>(name[0])) &&
                         std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)); });
          if (!kind_ok || (slash != std::string::npos && !dns_subdomain_error(group).empty())) {
            throw InputError("gang.kinds[" + std::to_string(i) + "]: \"" + kind +
                             "\" is not GROUP/Kind (batch/Job, jobset.x-k8s.io/JobSet) or Kind for the core group");
          }
        }
      }
    }
    {
      Section priority(top.get("priority"), "priority");
      policy.priority.class_name = priority.string("className");
      policy.priority.classes = read_allowed_choices(priority);
      const std::string& name = policy.priority.class_name;
      if (!name.empty()) {
        // A PriorityClass's name (a DNS subdomain), carried in a label value (at most 63 characters).
        std::string e = dns_subdomain_error(name);
        if (e.empty()) e = label_value_error(name);
        if (!e.empty()) throw InputError("priority.className: \"" + name + "\" " + e);
      }
    }
    {
      Section preemption(top.get("preemption"), "preemption");
      policy.preemption.preemptibility = preemption.string("preemptibility");
      policy.preemption.delay = preemption.string("delay");
      const std::string& p = policy.preemption.preemptibility;
      if (!p.empty() && p != "preemptible" && p != "non-preemptible") {
        throw InputError("preemption.preemptibility: \"" + p + "\" is not one of preemptible, non-preemptible");
      }
      if (!policy.preemption.delay.empty() && !go_duration(policy.preemption.delay)) {
        throw InputError("preemption.delay: \"" + policy.preemption.delay +
                         "\" is not a duration as KAI reads it (Go's: 30s, 10m, 1h30m)");
      }
    }
    {
      Section topology(top.get("topology"), "topology");
      policy.topology.name = topology.string("name");
      policy.topology.required_placement = topology.string("requiredPlacement");
      policy.topology.preferred_placement = topology.string("preferredPlacement");
      if (!policy.topology.name.empty()) {
        if (auto e = dns_subdomain_error(policy.topology.name); !e.empty()) {
          throw InputError("topology.name: \"" + policy.topology.name + "\" is not a Topology's name: " + e);
        }
      }
      for (const auto& [field, level] : {std::pair{"requiredPlacement", &policy.topology.required_placement},
                                         std::pair{"preferredPlacement", &policy.topology.preferred_placement}}) {
        if (level->empty()) continue;
        if (policy.topology.name.empty()) throw InputError(std::string("topology.") + field + ": needs topology.name");
        // A level of the Topology is a node label key.
        if (auto e = label_key_error(*level); !e.empty()) {
          throw InputError(std::string("topology.") + field + ": \"" + *level + "\" " + e);
        }
      }
    }
    {
      const json& lp = top.get("labelPolicy");
      Section labels(lp, "labelPolicy");
      policy.label_policy.enabled = !lp.is_null();
      std::string mode = labels.string("mode", "enforce");
      if (mode != "enforce" && mode != "audit") throw InputError("labelPolicy.mode: must be enforce or audit");
      policy.label_policy.mode = mode == "enforce" ? LabelPolicyMode::Enforce : LabelPolicyMode::Audit;
      policy.label_policy.exempt_namespaces = labels.strings("exemptNamespaces");
      policy.label_policy.workload = read_rules(labels.get("workload"), "labelPolicy.workload");
      policy.label_policy.pod_templates = read_rules(labels.get("podTemplates"), "labelPolicy.podTemplates");
    }
    {
      Section definitions(top.get("definitionPolicy"), "definitionPolicy");
      std::string mode = definitions.string("mode", "enforce");
      if (mode != "enforce" && mode != "warn") {
        throw InputError("definitionPolicy.mode: must be enforce or warn, not \"" + mode + "\"");
      }
      policy.definition_policy.mode = mode == "warn" ? DefinitionPolicyMode::Warn : DefinitionPolicyMode::Enforce;
    }
}

std::optional<UnknownLabelsAction> read_when_unknown(Section& top) {
  Section section(top.get("namespaceLabels"), "namespaceLabels");
  if (section.get("whenUnknown").is_null()) return std::nullopt;
  const std::string when = section.string("whenUnknown");
  if (when == "deny") return UnknownLabelsAction::Deny;
  if (when == "globalPolicy") return UnknownLabelsAction::GlobalPolicy;
  throw InputError("namespaceLabels.whenUnknown: must be deny or globalPolicy, not \"" + when + "\"");
}

}  // namespace karta
