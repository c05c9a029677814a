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

namespace {

// The position of the field that `message` (an error of the policy's reader) names first, or none. The
// message starts with the field's path; for a tenant rule merged with the global sections, the path in
// the merged document is the rule's own override when it has one, else the global section's. A path past
// what the file holds (a field read from a default) falls back to the nearest enclosing one.
const SourcePosition* position_named(const std::string& message, const SourceMarks& marks) {
  auto find = [&marks](std::string path) -> const SourcePosition* {
    while (!path.empty()) {
      if (auto it = marks.find(path); it != marks.end()) return &it->second;
      const std::size_t cut = path.find_last_of(".[");
      if (cut == std::string::npos) return nullptr;
      path.erase(cut);
    }
    return nullptr;
  };
  const std::string path = message.substr(0, message.find_first_of(" :"));
  static const std::string merged = ", merged with the global policy: ";
  if (const std::size_t at = message.find(merged); at != std::string::npos && path.starts_with("tenants[")) {
    const std::string rest = message.substr(at + merged.size());
    const std::string inner = rest.substr(0, rest.find_first_of(" :"));
    const std::string own = path + "." + inner;
    const std::string section = inner.substr(0, inner.find_first_of(".["));
    if (marks.count(path + "." + section) != 0) return find(own);
    if (const SourcePosition* global = find(inner)) return global;
  }
  return find(path);
}

}  // namespace

Policy parse_policy(const json& document, const std::string& source, const SourceMarks* marks) {
  Policy policy;
  policy.source = source;
  if (document.is_null()) return policy;
  try {
    Section top(document, "");
    policy.says_nothing = top.boolean("nothing", false);
    if (policy.says_nothing) {
      for (const auto& [key, unused] : document.items()) {
        if (key != "nothing") throw InputError("nothing: true says the policy sets nothing, yet it sets " + key);
      }
    }
    parse_sections(top, policy);
    const std::optional<UnknownLabelsAction> when_unknown = read_when_unknown(top);
    json global = document.is_object() ? document : json::object();
    global.erase("tenants");
    global.erase("nothing");
    policy.document = global;
    global.erase("namespaceLabels");  // global only: not a section a tenant rule merges into
    policy.tenants = read_tenants(top.get("tenants"), global);
    policy.warnings = overlap_warnings(policy.tenants);
    policy.namespace_labels.when_unknown =
        when_unknown.value_or(policy.selects_by_labels() ? UnknownLabelsAction::Deny : UnknownLabelsAction::GlobalPolicy);
  } catch (const InputError& e) {
    const SourcePosition* at = marks == nullptr ? nullptr : position_named(e.what(), *marks);
    if (at == nullptr) throw InputError(source + ": " + e.what());
    throw InputError(source + " line " + std::to_string(at->line) + " column " + std::to_string(at->column) + ": " +
                     e.what());
  }
  return policy;
}

namespace {

// Whether a document holds any value: a scalar, or a map or list that holds one.
bool sets_something(const json& value) {
  if (value.is_null()) return false;
  if (!value.is_object() && !value.is_array()) return true;
  return std::any_of(value.begin(), value.end(), [](const json& item) { return sets_something(item); });
}

}  // namespace

Policy load_policy_text(std::string_view text, const std::string& source) {
  auto documents = parse_documents(text, source, /*keep_marks=*/true);
  if (documents.size() > 1) {
    throw InputError(source + ": a policy is one YAML document, found " + std::to_string(documents.size()));
  }
  const json document = documents.empty() ? json() : documents[0].value;
  json rest = document;
  if (rest.is_object() && rest.contains("nothing") && rest["nothing"].is_boolean()) rest.erase("nothing");
  const bool says_nothing = document.is_object() && document.contains("nothing") && document["nothing"] == json(true);
  if (!says_nothing && !sets_something(rest)) {
    throw InputError(source + ": the policy sets nothing (the file is empty, only comments, or only empty "
                     "sections); to load no policy on purpose, write `nothing: true`");
  }
  return parse_policy(document, source, documents.empty() ? nullptr : documents[0].marks.get());
}

Policy load_policy(const std::filesystem::path& file) { return load_policy_text(read_text_file(file), file.string()); }

}  // namespace karta
