#include "policy/policy.h"

#include <cctype>
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

Policy parse_policy(const json& document, const std::string& source) {
  Policy policy;
  policy.source = source;
  if (document.is_null()) return policy;
  try {
    Section top(document, "");
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
