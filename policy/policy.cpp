// The resolved policy: placeholders filled per pod template, what a policy needs of namespaces, and
// loading a policy file (its sections: policy/policy_sections.cpp; its tenant rules: policy/tenant_rules.cpp).

#include "policy/policy.h"

#include <algorithm>

#include "json/documents.h"
#include "policy/policy_sections.h"
#include "policy/section_reader.h"

namespace karta {

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

bool AllowedChoices::permits(std::string_view value, std::string_view resolved) const {
  if (!allowed || (!resolved.empty() && value == resolved)) return true;
  return std::any_of(allowed->begin(), allowed->end(), [&](const std::string& glob) { return glob_matches(glob, value); });
}

std::string AllowedChoices::describe(const std::string& resolved) const {
  std::string text = resolved.empty() ? "" : resolved + " (its own)";
  if (allowed) {
    for (const std::string& glob : *allowed) {
      if (glob != resolved) text += (text.empty() ? "" : ", ") + glob;
    }
  }
  return text.empty() ? "none" : text;
}

std::string SchedulingPolicy::resolved_queue(const std::map<std::string, std::string>* namespace_labels) const {
  if (!namespace_label.empty() && namespace_labels != nullptr) {
    auto it = namespace_labels->find(namespace_label);
    if (it != namespace_labels->end() && !it->second.empty()) return it->second;
  }
  return default_queue;
}

bool Policy::needs_namespace_labels() const {
  if (!scheduling.namespace_label.empty() || selects_by_labels()) return true;
  return std::any_of(tenants.begin(), tenants.end(), [](const TenantRule& rule) {
    return rule.policy && !rule.policy->scheduling.namespace_label.empty();
  });
}

bool Policy::selects_by_labels() const {
  return std::any_of(tenants.begin(), tenants.end(),
                     [](const TenantRule& rule) { return rule.selector && !rule.selector->empty(); });
}

Policy parse_policy(const json& document, const std::string& source) {
  Policy policy;
  policy.source = source;
  if (document.is_null()) return policy;
  try {
    Section top(document, "");
    parse_sections(top, policy);
    const std::optional<UnknownLabelsAction> when_unknown = read_when_unknown(top);
    json global = document.is_object() ? document : json::object();
    global.erase("tenants");
    policy.document = global;
    global.erase("namespaceLabels");  // global only: not a section a tenant rule merges into
    policy.tenants = read_tenants(top.get("tenants"), global);
    policy.namespace_labels.when_unknown =
        when_unknown.value_or(policy.selects_by_labels() ? UnknownLabelsAction::Deny : UnknownLabelsAction::GlobalPolicy);
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
