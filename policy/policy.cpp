// Reading the policy file strictly, and choosing the tenant rule a namespace gets.
// Longer than 500 lines because a tenant's sections are the global ones merged with the rule's and read
// again by the same strict reader (Section, parse_sections), which the rules' own checks (globs,
// selectors, unreachable rules) share.

#include "policy/policy.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <set>
#include <string_view>

#include <re2/re2.h>

#include "json/documents.h"
#include "json/json_text.h"
#include "k8s/name_syntax.h"

namespace karta {
namespace {

constexpr const char* kPlaceholders[] = {"namespace", "name", "kind", "group", "component", "instance", "gpus"};

// Names of the placeholders in `text`; throws on an unknown or unterminated one.
void check_placeholders(const std::string& text, const std::string& field) {
  std::size_t pos = 0;
  while ((pos = text.find("{{", pos)) != std::string::npos) {
    std::size_t end = text.find("}}", pos);
    if (end == std::string::npos) throw InputError(field + ": unterminated placeholder in \"" + text + "\"");
    std::string name = text.substr(pos + 2, end - pos - 2);
    if (std::find(std::begin(kPlaceholders), std::end(kPlaceholders), name) == std::end(kPlaceholders)) {
      throw InputError(field + ": unknown placeholder {{" + name +
                       "}} (known: namespace, name, kind, group, component, instance, gpus)");
    }
    pos = end + 2;
  }
}

// Reads the members of one map of the policy, refusing unknown ones.
class Section {
 public:
  Section(const json& value, std::string where) : value_(value), where_(std::move(where)) {
    if (!value_.is_null() && !value_.is_object()) {
      throw InputError(where_ + ": must be a map, not " + std::string(value_.type_name()));
    }
  }
  ~Section() noexcept(false) {
    if (std::uncaught_exceptions() > 0 || !value_.is_object()) return;
    for (const auto& [key, unused] : value_.items()) {
      if (known_.count(key) == 0) throw InputError(field(key) + ": unknown field");
    }
  }
  std::string field(const std::string& key) const { return where_.empty() ? key : where_ + "." + key; }
  const json& get(const std::string& key) {
    known_.insert(key);
    static const json null;
    if (!value_.is_object()) return null;
    auto it = value_.find(key);
    return it == value_.end() ? null : *it;
  }
  std::string string(const std::string& key, const std::string& fallback = "") {
    const json& v = get(key);
    if (v.is_null()) return fallback;
    if (!v.is_string()) throw InputError(field(key) + ": must be a string, not " + v.type_name());
    return v.get<std::string>();
  }
  bool boolean(const std::string& key, bool fallback) {
    const json& v = get(key);
    if (v.is_null()) return fallback;
    if (!v.is_boolean()) throw InputError(field(key) + ": must be true or false");
    return v.get<bool>();
  }
  std::vector<std::string> strings(const std::string& key) {
    const json& v = get(key);
    std::vector<std::string> out;
    if (v.is_null()) return out;
    if (!v.is_array()) throw InputError(field(key) + ": must be a list of strings, not " + v.type_name());
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string()) throw InputError(field(key) + "[" + std::to_string(i) + "]: must be a string");
      out.push_back(v[i].get<std::string>());
    }
    return out;
  }

 private:
  const json& value_;
  std::string where_;
  std::set<std::string> known_;
};

enum class Values { LabelValues, Free };

std::map<std::string, std::string> read_string_map(const json& value, const std::string& field,
                                                   std::string (*key_error)(const std::string&), Values values) {
  if (value.is_null()) return {};
  if (!value.is_object()) throw InputError(field + ": must be a map of strings, not " + value.type_name());
  std::map<std::string, std::string> map;
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string()) {
      throw InputError(field + "." + key + ": must be a string, not " + item.type_name() + " (quote it in YAML)");
    }
    if (auto error = key_error(key); !error.empty()) throw InputError(field + ": key \"" + key + "\" " + error);
    const auto& text = item.get_ref<const std::string&>();
    check_placeholders(text, field + "." + key);
    // With placeholders, validity is known only once filled: checked per template then.
    if (values == Values::LabelValues && !has_placeholder(text)) {
      if (auto error = label_value_error(text); !error.empty()) {
        throw InputError(field + "." + key + ": value \"" + text + "\" " + error);
      }
    }
    map.emplace(key, text);
  }
  return map;
}

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

}  // namespace

std::string fill_placeholders(const std::string& text, const PlaceholderValues& v) {
  if (!has_placeholder(text)) return text;
  std::string out;
  std::size_t pos = 0;
  while (true) {
    std::size_t start = text.find("{{", pos);
    if (start == std::string::npos) break;
    std::size_t end = text.find("}}", start);
    if (end == std::string::npos) break;
    out.append(text, pos, start - pos);
    const std::string_view name = std::string_view(text).substr(start + 2, end - start - 2);
    if (name == "namespace") out += v.namespace_name;
    else if (name == "name") out += v.name;
    else if (name == "kind") out += v.kind;
    else if (name == "group") out += v.group;
    else if (name == "component") out += v.component;
    else if (name == "instance") out += v.instance;
    else if (name == "gpus") out += v.gpus;
    pos = end + 2;
  }
  out.append(text, pos, std::string::npos);
  return out;
}

bool same_for_every_template(const std::string& text) {
  for (const char* name : {"{{component}}", "{{instance}}", "{{gpus}}"}) {
    if (text.find(name) != std::string::npos) return false;
  }
  return true;
}

namespace {

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

}  // namespace

namespace {

// The sections a tenant rule may override (the global policy's, merged with the rule's own).
constexpr const char* kTenantSections[] = {"podTemplates", "scheduling", "gpu", "gang", "labelPolicy", "priority", "topology"};

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
      const std::string& name = policy.priority.class_name;
      if (!name.empty()) {
        // A PriorityClass's name (a DNS subdomain), carried in a label value (at most 63 characters).
        std::string e = dns_subdomain_error(name);
        if (e.empty()) e = label_value_error(name);
        if (!e.empty()) throw InputError("priority.className: \"" + name + "\" " + e);
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

// A namespace name glob: what a namespace name may hold (a DNS label: lowercase letters, digits, '-'),
// and '*'.
std::string glob_error(const std::string& glob) {
  if (glob.empty()) return "is empty";
  if (glob.size() > 63) return "is longer than 63 characters, the most a namespace name has";
  for (char c : glob) {
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '*')) {
      return std::string("is not a namespace name glob: '") + c +
             "' is none of lowercase letters, digits, '-' and '*' (the only wildcard)";
    }
  }
  return "";
}

NamespaceSelector read_selector(const json& value, const std::string& where) {
  NamespaceSelector selector;
  Section s(value, where);
  selector.match_labels = read_string_map(s.get("matchLabels"), where + ".matchLabels", label_key_error, Values::LabelValues);
  for (const auto& [key, text] : selector.match_labels) {
    if (has_placeholder(text)) throw InputError(where + ".matchLabels." + key + ": a selector has no placeholders");
  }
  const json& expressions = s.get("matchExpressions");
  if (expressions.is_null()) return selector;
  if (!expressions.is_array()) throw InputError(where + ".matchExpressions: must be a list, not " + expressions.type_name());
  for (std::size_t i = 0; i < expressions.size(); ++i) {
    const std::string at = where + ".matchExpressions[" + std::to_string(i) + "]";
    NamespaceRequirement requirement;
    std::string op;
    {
      Section e(expressions[i], at);
      requirement.key = e.string("key");
      op = e.string("operator");
      requirement.values = e.strings("values");
    }
    if (!expressions[i].is_object()) throw InputError(at + ": must be a map with key, operator and values");
    if (auto error = label_key_error(requirement.key); !error.empty()) {
      throw InputError(at + ".key: \"" + requirement.key + "\" " + error);
    }
    if (op == "In") requirement.op = NamespaceRequirement::Operator::In;
    else if (op == "NotIn") requirement.op = NamespaceRequirement::Operator::NotIn;
    else if (op == "Exists") requirement.op = NamespaceRequirement::Operator::Exists;
    else if (op == "DoesNotExist") requirement.op = NamespaceRequirement::Operator::DoesNotExist;
    else throw InputError(at + ".operator: \"" + op + "\" is not one of In, NotIn, Exists, DoesNotExist");
    const bool set_operator = op == "In" || op == "NotIn";
    if (set_operator && requirement.values.empty()) throw InputError(at + ".values: must not be empty with " + op);
    if (!set_operator && !requirement.values.empty()) throw InputError(at + ".values: must be empty with " + op);
    for (const auto& v : requirement.values) {
      if (auto error = label_value_error(v); !error.empty()) throw InputError(at + ".values: \"" + v + "\" " + error);
    }
    selector.match_expressions.push_back(std::move(requirement));
  }
  return selector;
}

// Whether every name `narrow` matches, `wide` matches too: `wide` matches `narrow` read as text in which
// each '*' is a letter that only a '*' of `wide` can stand for.
bool glob_covers(std::string_view wide, std::string_view narrow) {
  // Dynamic programming over (position in wide, position in narrow).
  std::vector<std::vector<char>> memo(wide.size() + 1, std::vector<char>(narrow.size() + 1, -1));
  std::function<bool(std::size_t, std::size_t)> at = [&](std::size_t i, std::size_t j) -> bool {
    char& m = memo[i][j];
    if (m >= 0) return m;
    bool result;
    if (i == wide.size()) result = j == narrow.size();
    else if (wide[i] == '*') result = at(i + 1, j) || (j < narrow.size() && at(i, j + 1));
    else result = j < narrow.size() && narrow[j] != '*' && narrow[j] == wide[i] && at(i + 1, j + 1);
    m = result;
    return result;
  };
  return at(0, 0);
}

std::string rule_name(const std::vector<TenantRule>& rules, std::size_t i) {
  return "tenants[" + std::to_string(i) + "] (" + rules[i].name + ")";
}

// A rule that no namespace can reach, because rules before it take every namespace it could match.
void refuse_unreachable(const std::vector<TenantRule>& rules, const std::vector<json>& selectors) {
  for (std::size_t later = 1; later < rules.size(); ++later) {
    for (std::size_t earlier = 0; earlier < later; ++earlier) {
      const TenantRule& first = rules[earlier];
      if (first.matches_every_namespace()) {
        throw InputError(rule_name(rules, later) + " is unreachable: " + rule_name(rules, earlier) +
                         " before it matches every namespace (first match wins; put the catch-all last)");
      }
    }
    const TenantRule& rule = rules[later];
    // Every glob of the rule matched first by a glob of an earlier rule that asks nothing of labels.
    if (!rule.namespaces.empty()) {
      std::string shown;
      bool all_covered = true;
      for (const std::string& glob : rule.namespaces) {
        bool covered = false;
        for (std::size_t earlier = 0; earlier < later && !covered; ++earlier) {
          const TenantRule& first = rules[earlier];
          if (first.selector && !first.selector->empty()) continue;
          for (const std::string& wide : first.namespaces) {
            if (glob_covers(wide, glob)) {
              covered = true;
              shown += (shown.empty() ? "" : ", ") + glob + " by " + wide + " of " + rule_name(rules, earlier);
              break;
            }
          }
        }
        all_covered = all_covered && covered;
      }
      if (all_covered) {
        throw InputError(rule_name(rules, later) + " is unreachable: every namespace it names is matched first (" +
                         shown + ")");
      }
    }
    // The same selector again, on the same names (or any name).
    for (std::size_t earlier = 0; earlier < later; ++earlier) {
      const TenantRule& first = rules[earlier];
      if (selectors[earlier].is_null() || selectors[earlier] != selectors[later]) continue;
      if (first.namespaces.empty() || first.namespaces == rule.namespaces) {
        throw InputError(rule_name(rules, later) + " is unreachable: " + rule_name(rules, earlier) +
                         " before it has the same namespaceSelector" +
                         (first.namespaces.empty() ? "" : " and namespaces"));
      }
    }
  }
}

std::vector<TenantRule> read_tenants(const json& value, const json& global) {
  std::vector<TenantRule> rules;
  std::vector<json> selectors;
  if (value.is_null()) return rules;
  if (!value.is_array()) throw InputError(std::string("tenants: must be a list of rules, not ") + value.type_name());
  std::set<std::string> names;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const std::string where = "tenants[" + std::to_string(i) + "]";
    const json& item = value[i];
    if (!item.is_object()) throw InputError(where + ": must be a map, not " + item.type_name());
    TenantRule rule;
    json merged = global;
    std::vector<std::string> overridden;
    {
      Section s(item, where);
      rule.name = s.string("name");
      if (rule.name.empty()) throw InputError(where + ".name: every rule needs a name (audit and logs name the tenant)");
      if (!names.insert(rule.name).second) throw InputError(where + ".name: \"" + rule.name + "\" names an earlier rule too");
      rule.namespaces = s.strings("namespaces");
      for (std::size_t g = 0; g < rule.namespaces.size(); ++g) {
        if (auto e = glob_error(rule.namespaces[g]); !e.empty()) {
          throw InputError(where + ".namespaces[" + std::to_string(g) + "]: \"" + rule.namespaces[g] + "\" " + e);
        }
      }
      if (!item.contains("namespaces") || item["namespaces"].is_null()) {
        // no names: any name
      } else if (rule.namespaces.empty()) {
        throw InputError(where + ".namespaces: an empty list matches no namespace; leave it out to match any name");
      }
      const json& selector = s.get("namespaceSelector");
      if (!selector.is_null()) rule.selector = read_selector(selector, where + ".namespaceSelector");
      selectors.push_back(selector);
      rule.exempt = s.boolean("exempt", false);
      for (const char* section : kTenantSections) {
        const json& override = s.get(section);
        if (!item.contains(section)) continue;
        overridden.push_back(section);
        // RFC 7386: a map merges into the global section key by key, a list or a value replaces, null removes.
        merged[section].merge_patch(override);
        if (merged[section].is_null()) merged.erase(section);
      }
    }
    if (rule.exempt && !overridden.empty()) {
      throw InputError(where + "." + overridden.front() + ": an exempt rule gets nothing injected and nothing enforced;"
                       " it overrides no section");
    }
    if (!rule.exempt) {
      auto policy = std::make_shared<Policy>();
      try {
        Section top(merged, "");
        parse_sections(top, *policy);
      } catch (const InputError& e) {
        throw InputError(where + " (" + rule.name + "), merged with the global policy: " + e.what());
      }
      policy->document = merged;
      rule.document = merged;
      rule.policy = std::move(policy);
    }
    rules.push_back(std::move(rule));
  }
  refuse_unreachable(rules, selectors);
  return rules;
}

}  // namespace

bool GangPolicy::applies_to(const std::string& group, const std::string& kind) const {
  for (const std::string& entry : kinds) {
    const std::size_t slash = entry.rfind('/');
    if (slash == std::string::npos ? (group.empty() && entry == kind)
                                   : (entry.compare(0, slash, group) == 0 && slash == group.size() &&
                                      entry.compare(slash + 1, std::string::npos, kind) == 0)) {
      return true;
    }
  }
  return false;
}

bool NamespaceSelector::matches(const std::map<std::string, std::string>& labels) const {
  for (const auto& [key, value] : match_labels) {
    auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  for (const auto& r : match_expressions) {
    auto it = labels.find(r.key);
    const bool has = it != labels.end();
    const bool listed = has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    switch (r.op) {
      case NamespaceRequirement::Operator::In:
        if (!listed) return false;
        break;
      case NamespaceRequirement::Operator::NotIn:  // a namespace without the label is not in the set
        if (listed) return false;
        break;
      case NamespaceRequirement::Operator::Exists:
        if (!has) return false;
        break;
      case NamespaceRequirement::Operator::DoesNotExist:
        if (has) return false;
        break;
    }
  }
  return true;
}

bool glob_matches(std::string_view glob, std::string_view text) {
  // Iterative wildcard matching with backtracking to the last '*': linear in practice, no recursion.
  std::size_t g = 0, t = 0, star = std::string_view::npos, resume = 0;
  while (t < text.size()) {
    if (g < glob.size() && glob[g] == '*') {
      star = g++;
      resume = t;
    } else if (g < glob.size() && glob[g] == text[t]) {
      ++g;
      ++t;
    } else if (star != std::string_view::npos) {
      g = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (g < glob.size() && glob[g] == '*') ++g;
  return g == glob.size();
}

bool TenantRule::matches_every_namespace() const {
  const bool any_name = namespaces.empty() ||
                        std::any_of(namespaces.begin(), namespaces.end(), [](const std::string& g) {
                          return g.find_first_not_of('*') == std::string::npos;
                        });
  return any_name && (!selector || selector->empty());
}

bool TenantRule::matches_name(const std::string& namespace_name) const {
  if (namespaces.empty()) return true;
  return std::any_of(namespaces.begin(), namespaces.end(),
                     [&](const std::string& glob) { return glob_matches(glob, namespace_name); });
}

bool Policy::needs_namespace_labels() const {
  if (!scheduling.namespace_label.empty()) return true;
  for (const TenantRule& rule : tenants) {
    if (rule.selector && !rule.selector->empty()) return true;
    if (rule.policy && !rule.policy->scheduling.namespace_label.empty()) return true;
  }
  return false;
}

TenantChoice choose_tenant(const Policy& policy, const std::string& namespace_name,
                           const std::map<std::string, std::string>* labels) {
  for (const TenantRule& rule : policy.tenants) {
    if (!rule.matches_name(namespace_name)) continue;
    if (rule.selector && !rule.selector->empty()) {
      if (labels == nullptr) break;  // undecidable: the global policy
      if (!rule.selector->matches(*labels)) continue;
    }
    return {rule.exempt ? nullptr : rule.policy.get(), &rule};
  }
  return {&policy, nullptr};
}

Policy parse_policy(const json& document, const std::string& source) {
  Policy policy;
  policy.source = source;
  if (document.is_null()) return policy;
  try {
    Section top(document, "");
    parse_sections(top, policy);
    json global = document.is_object() ? document : json::object();
    global.erase("tenants");
    policy.document = global;
    policy.tenants = read_tenants(top.get("tenants"), global);
  } catch (const InputError& e) {
    throw InputError(source + ": " + e.what());
  }
  return policy;
}

Policy load_policy(const std::filesystem::path& file) {
  auto documents = read_documents(file);
  if (documents.size() > 1) {
    throw InputError(file.string() + ": a policy is one YAML document, found " + std::to_string(documents.size()));
  }
  return parse_policy(documents.empty() ? json() : documents[0].value, file.string());
}

}  // namespace karta
