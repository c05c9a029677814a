#pragma once

// Tenant rules (the policy's `tenants:`): which namespaces a rule matches, by name glob and by a
// namespaceSelector over the namespace's labels, and the choice of the rule a namespace gets
// (policy/tenant_rules.cpp).

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace karta {

using json = nlohmann::json;

// A namespaceSelector, as Kubernetes means one (metav1.LabelSelector): every matchLabels pair and every
// expression must hold; an empty selector matches every namespace.
struct NamespaceRequirement {
  enum class Operator { In, NotIn, Exists, DoesNotExist };
  std::string key;
  Operator op = Operator::Exists;
  std::vector<std::string> values;
};

struct NamespaceSelector {
  std::map<std::string, std::string> match_labels;
  std::vector<NamespaceRequirement> match_expressions;
  bool empty() const { return match_labels.empty() && match_expressions.empty(); }
  bool matches(const std::map<std::string, std::string>& labels) const;
};

struct Policy;

// One entry of the policy's `tenants:`: which namespaces it matches, and the policy they get.
struct TenantRule {
  std::string name;
  std::vector<std::string> namespaces;           // name globs ('*': any run of characters); empty: any name
  std::optional<NamespaceSelector> selector;     // none: any labels
  bool exempt = false;                           // nothing injected, nothing enforced
  std::shared_ptr<const Policy> policy;          // the global policy with the rule's sections merged in
  json document;                                 // that policy as a document (--print-policy)
  bool matches_every_namespace() const;
  bool matches_name(const std::string& namespace_name) const;
};

// Pairs of rules that may both match one namespace (neither their names nor their selectors rule it out)
// though neither takes all of the other's: a warning each, naming both, as the later rule does not apply
// there. The last rule, when it matches every namespace, is meant to overlap and is left out.
std::vector<std::string> overlap_warnings(const std::vector<TenantRule>& rules);

// The policy a workload in one namespace gets: the first tenant rule that matches, or the global policy.
// Every command and the server read a choice through these members, so that "the tenant's policy or the
// global one" and the tenant's name in output are decided in one place.
struct TenantChoice {
  const Policy* policy = nullptr;   // null when exempt
  const TenantRule* rule = nullptr; // null: the global policy
  bool exempt() const { return rule != nullptr && rule->exempt; }
  std::string tenant() const { return rule == nullptr ? std::string() : rule->name; }
  // The policy whose settings describe the namespace's workloads (which resources are GPUs, ...): the
  // tenant's, else `global`, which an exempt tenant (nothing injected, nothing enforced) reads too.
  const Policy& settings(const Policy& global) const { return policy != nullptr ? *policy : global; }
  // The tenant as text output names it: the rule's name, or "(global policy)".
  std::string display_name() const;
  // Who decides, in admission messages and warnings: "tenant research", or "the global policy".
  std::string who() const { return rule == nullptr ? std::string("the global policy") : "tenant " + rule->name; }
  // The tenant as JSON output names it, when `global` has tenant rules: the rule's name, or null for the
  // global policy. None without tenant rules, so that output reads as it did before tenants.
  std::optional<json> json_field(const Policy& global) const;
};

// A tenant as json_field() gave it (a name, or null for the global policy), named as display_name() names it:
// for the views that render JSON they made before (inspect KIND/NAME, audit).
std::string tenant_display_name(const json& field);

// The namespace's labels, when known. Unknown labels (null): rules are tried in order while a rule can be
// decided by the name alone; at the first that needs labels, the global policy applies.
TenantChoice choose_tenant(const Policy& policy, const std::string& namespace_name,
                           const std::map<std::string, std::string>* labels);

// Whether `glob` ('*' for any run of characters, nothing else special) matches `text`.
bool glob_matches(std::string_view glob, std::string_view text);

// Reads the policy's `tenants:` list: each rule's sections are the global ones (`global`, the document
// without `tenants`) merged with its own, read as strictly; a rule no namespace can reach is refused.
std::vector<TenantRule> read_tenants(const json& value, const json& global);

}  // namespace karta
