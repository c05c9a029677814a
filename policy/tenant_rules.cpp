// Tenant rules: reading them (names, globs, namespaceSelectors, the sections they override merged with
// the global ones), refusing a rule no namespace can reach, and choosing the rule a namespace gets.

#include "policy/tenant_rules.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <set>

#include "k8s/name_syntax.h"
#include "policy/policy.h"
#include "policy/policy_sections.h"
#include "policy/section_reader.h"

namespace karta {
namespace {

json json_field_of(const TenantRule* rule) { return rule == nullptr ? json(nullptr) : json(rule->name); }

// The sections a tenant rule may override (the global policy's, merged with the rule's own).
constexpr const char* kTenantSections[] = {"podTemplates", "scheduling", "gpu",      "gang",
                                           "labelPolicy",  "priority",   "topology", "preemption"};

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

using Operator = NamespaceRequirement::Operator;

// A selector as the requirements that must all hold: matchLabels k: v is `k In [v]`.
std::vector<NamespaceRequirement> requirements_of(const NamespaceSelector& selector) {
  std::vector<NamespaceRequirement> out;
  for (const auto& [key, value] : selector.match_labels) out.push_back({key, Operator::In, {value}});
  out.insert(out.end(), selector.match_expressions.begin(), selector.match_expressions.end());
  return out;
}

bool subset(const std::vector<std::string>& small, const std::vector<std::string>& large) {
  return std::all_of(small.begin(), small.end(),
                     [&](const std::string& v) { return std::find(large.begin(), large.end(), v) != large.end(); });
}

// Whether the two lists hold a value in common.
bool shares_value(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  return std::any_of(a.begin(), a.end(),
                     [&](const std::string& v) { return std::find(b.begin(), b.end(), v) != b.end(); });
}

// Whether every label set that meets `a` meets `b` (both on the same key): decided conservatively, so
// that "no" may be wrong but "yes" never is.
bool implies(const NamespaceRequirement& a, const NamespaceRequirement& b) {
  if (a.key != b.key) return false;
  const bool disjoint = !shares_value(a.values, b.values);
  switch (a.op) {
    case Operator::In:
      return (b.op == Operator::In && subset(a.values, b.values)) || b.op == Operator::Exists ||
             (b.op == Operator::NotIn && disjoint);
    case Operator::Exists:
      return b.op == Operator::Exists;
    case Operator::NotIn:
      return b.op == Operator::NotIn && subset(b.values, a.values);
    case Operator::DoesNotExist:  // a namespace without the label is in no set
      return b.op == Operator::DoesNotExist || b.op == Operator::NotIn;
  }
  return false;
}

// Whether every requirement of `wide` is implied by one of `narrow`: every namespace `narrow` selects,
// `wide` selects.
bool selects_all_of(const std::vector<NamespaceRequirement>& wide, const std::vector<NamespaceRequirement>& narrow) {
  return std::all_of(wide.begin(), wide.end(), [&](const NamespaceRequirement& w) {
    return std::any_of(narrow.begin(), narrow.end(), [&](const NamespaceRequirement& n) { return implies(n, w); });
  });
}

std::string describe(const std::vector<NamespaceRequirement>& requirements) {
  static const char* names[] = {"In", "NotIn", "Exists", "DoesNotExist"};
  std::string text;
  for (const auto& r : requirements) {
    text += (text.empty() ? "" : ", ") + r.key + " " + names[static_cast<int>(r.op)];
    if (!r.values.empty()) {
      text += " [";
      for (std::size_t i = 0; i < r.values.size(); ++i) text += (i == 0 ? "" : ", ") + r.values[i];
      text += "]";
    }
  }
  return "{" + text + "}";
}

// Whether every name `narrow` matches, `wide` matches (no globs: any name).
bool names_cover(const TenantRule& wide, const TenantRule& narrow) {
  auto covered = [&](std::string_view glob) {
    return std::any_of(wide.namespaces.begin(), wide.namespaces.end(),
                       [&](const std::string& w) { return glob_covers(w, glob); });
  };
  if (wide.namespaces.empty()) return true;
  if (narrow.namespaces.empty()) return covered("*");
  return std::all_of(narrow.namespaces.begin(), narrow.namespaces.end(), covered);
}

// A rule whose selector is equivalent to, or narrower than, an earlier rule's with the same names or wider:
// under label-selector semantics no namespace reaches it.
void refuse_selected_first(const std::vector<TenantRule>& rules, std::size_t later) {
  const TenantRule& rule = rules[later];
  if (!rule.selector || rule.selector->empty()) return;
  const auto mine = requirements_of(*rule.selector);
  for (std::size_t earlier = 0; earlier < later; ++earlier) {
    const TenantRule& first = rules[earlier];
    if (!first.selector || first.selector->empty() || !names_cover(first, rule)) continue;
    const auto theirs = requirements_of(*first.selector);
    if (!selects_all_of(theirs, mine)) continue;
    const bool same = selects_all_of(mine, theirs);
    throw InputError(rule_name(rules, later) + " is unreachable: its namespaceSelector " + describe(mine) + " is " +
                     (same ? "equivalent to" : "narrower than") + " " + describe(theirs) + " of " +
                     rule_name(rules, earlier) + " before it, on " +
                     (first.namespaces.empty() ? "any name" : names_cover(rule, first) ? "the same names" : "wider names") +
                     " (first match wins)");
  }
}

// Whether no namespace name matches both globs: one is a name the other does not match, or their literal
// beginnings (before the first '*') or endings (after the last '*') differ. Conservative: "no" may be wrong.
bool globs_disjoint(std::string_view a, std::string_view b) {
  if (a.find('*') == std::string_view::npos) return !glob_matches(b, a);
  if (b.find('*') == std::string_view::npos) return !glob_matches(a, b);
  const std::string_view head_a = a.substr(0, a.find('*')), head_b = b.substr(0, b.find('*'));
  const std::string_view tail_a = a.substr(a.rfind('*') + 1), tail_b = b.substr(b.rfind('*') + 1);
  return (!head_a.starts_with(head_b) && !head_b.starts_with(head_a)) ||
         (!tail_a.ends_with(tail_b) && !tail_b.ends_with(tail_a));
}

bool names_disjoint(const TenantRule& a, const TenantRule& b) {
  if (a.namespaces.empty() || b.namespaces.empty()) return false;
  return std::all_of(a.namespaces.begin(), a.namespaces.end(), [&](const std::string& ga) {
    return std::all_of(b.namespaces.begin(), b.namespaces.end(),
                       [&](const std::string& gb) { return globs_disjoint(ga, gb); });
  });
}

// Whether no label set meets both requirements (on the same key).
bool contradicts(const NamespaceRequirement& a, const NamespaceRequirement& b) {
  if (a.key != b.key) return false;
  const bool shared = shares_value(a.values, b.values);
  switch (a.op) {
    case Operator::In:
      return (b.op == Operator::In && !shared) || b.op == Operator::DoesNotExist ||
             (b.op == Operator::NotIn && subset(a.values, b.values));
    case Operator::Exists:
      return b.op == Operator::DoesNotExist;
    case Operator::NotIn:
      return b.op == Operator::In && subset(b.values, a.values);
    case Operator::DoesNotExist:
      return b.op == Operator::In || b.op == Operator::Exists;
  }
  return false;
}

bool selectors_disjoint(const TenantRule& a, const TenantRule& b) {
  if (!a.selector || !b.selector) return false;
  const auto ra = requirements_of(*a.selector), rb = requirements_of(*b.selector);
  return std::any_of(ra.begin(), ra.end(), [&](const NamespaceRequirement& x) {
    return std::any_of(rb.begin(), rb.end(), [&](const NamespaceRequirement& y) { return contradicts(x, y); });
  });
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
    refuse_selected_first(rules, later);
  }
}

}  // namespace

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


std::vector<std::string> overlap_warnings(const std::vector<TenantRule>& rules) {
  std::vector<std::string> warnings;
  for (std::size_t later = 1; later < rules.size(); ++later) {
    if (rules[later].matches_every_namespace()) continue;  // the catch-all, last: overlapping is its purpose
    for (std::size_t earlier = 0; earlier < later; ++earlier) {
      if (names_disjoint(rules[earlier], rules[later]) || selectors_disjoint(rules[earlier], rules[later])) continue;
      warnings.push_back(rule_name(rules, later) + " may match namespaces that " + rule_name(rules, earlier) +
                         " before it matches: there " + rule_name(rules, earlier) + " applies" +
                         (rules[later].exempt && !rules[earlier].exempt ? ", not the exemption" : "") +
                         " (first match wins)");
    }
  }
  return warnings;
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


std::string TenantChoice::display_name() const { return tenant_display_name(json_field_of(rule)); }

std::string tenant_display_name(const json& field) {
  return field.is_string() ? field.get<std::string>() : std::string("(global policy)");
}

std::optional<json> TenantChoice::json_field(const Policy& global) const {
  if (global.tenants.empty()) return std::nullopt;
  return json_field_of(rule);
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

}  // namespace karta
