#include "cli/validate_command.h"

// Moved out of cli/commands.cpp, which holds the command line and the other offline commands.

#include <memory>
#include <ostream>

#include "admission/namespace_labels.h"
#include "definitions/api/published_api.h"
#include "json/documents.h"
#include "k8s/terminal_text.h"
#include "policy/policy.h"
#include "validate/crd_schema_set.h"
#include "validate/definition_validation.h"

namespace karta {

// validate --policy FILE [--namespaces FILE]: the policy loaded as serve loads it (a fault is thrown, so
// exit 1 with the loader's message); with namespaces, the tenant each gets and what looks like a mistake.
int validate_policy(const std::string& policy_file, const std::string& namespaces_file, std::ostream& out) {
  const Policy policy = load_policy(policy_file);
  out << terminal_text(policy_file) << ": valid, ";
  if (policy.says_nothing) {
    out << "nothing: true (nothing injected, nothing enforced)\n";
  } else {
    out << policy.tenants.size() << " tenant rule" << (policy.tenants.size() == 1 ? "" : "s") << "\n";
  }
  for (const std::string& warning : policy.warnings) out << "warning: " << terminal_text(warning) << "\n";
  if (namespaces_file.empty()) return 0;
  const NamespaceFile namespaces = NamespaceFile::load(namespaces_file);
  std::vector<bool> matched(policy.tenants.size(), false), shadowed(policy.tenants.size(), false);
  for (const auto& [name, labels] : namespaces.namespaces()) {
    const TenantChoice choice = choose_tenant(policy, name, &labels);
    out << "namespace " << terminal_text(bounded_text(name)) << ": ";
    if (choice.rule == nullptr) {
      out << "the global policy\n";
    } else {
      const std::size_t index = static_cast<std::size_t>(choice.rule - policy.tenants.data());
      matched[index] = true;
      out << "tenant " << choice.rule->name << " (tenants[" << index << "])" << (choice.exempt() ? ", exempt" : "")
          << "\n";
      // Later rules that match the namespace too never apply to it (first match wins): an exempt rule put
      // after a selector rule is the usual case.
      for (std::size_t later = index + 1; later < policy.tenants.size(); ++later) {
        const TenantRule& rule = policy.tenants[later];
        if (!rule.matches_name(name) || (rule.selector && !rule.selector->matches(labels))) continue;
        shadowed[later] = true;
        out << "  note: tenants[" << later << "] (" << rule.name << ")" << (rule.exempt ? ", exempt," : "")
            << " matches it too, but never applies here: tenants[" << index << "] comes first (first match wins)\n";
      }
    }
    if (choice.exempt()) continue;
    const SchedulingPolicy& scheduling = choice.settings(policy).scheduling;
    if (scheduling.namespace_label.empty()) continue;
    auto label = labels.find(scheduling.namespace_label);
    if (label != labels.end() && !label->second.empty()) continue;
    out << "  note: no label " << scheduling.namespace_label << ", which " << choice.who()
        << " reads for the queue: a workload that names none gets "
        << (scheduling.default_queue.empty() ? std::string("no queue") : "the default queue " + scheduling.default_queue)
        << "\n";
  }
  for (std::size_t i = 0; i < matched.size(); ++i) {
    if (!matched[i]) {
      out << "note: tenants[" << i << "] (" << policy.tenants[i].name << ") "
          << (shadowed[i] ? "applies to no namespace of " : "matches no namespace of ") << terminal_text(namespaces_file)
          << (shadowed[i] ? ": an earlier rule takes each it matches\n" : "\n");
    }
  }
  return 0;
}

int validate_offline(const std::vector<std::string>& names, const std::vector<std::string>& crd_directories,
                     std::ostream& out) {
  auto crds = std::make_shared<CrdSchemaSet>();
  for (const auto& directory : crd_directories) crds->add_directory(directory);
  CrdLookup lookup = [&](const GroupVersionKind& kind) { return crds->find(kind); };
  PublishedSchemaHold schemas;  // parsed once for every definition checked
  std::size_t definitions = 0, faulty = 0;
  for (const auto& file : expand_manifest_paths(names)) {
    std::size_t in_file = 0;
    for (const auto& document : read_documents(file)) {
      if (!is_definition_object(document.value)) continue;
      ++definitions, ++in_file;
      DefinitionReport report = validate_definition(document.value, lookup);
      std::string name = document.value.value("metadata", json::object()).value("name", "");
      out << terminal_text(document.source + " " + name) << ": " << (report.ok() ? "valid" : "INVALID") << "\n";
      for (const auto& fault : report.faults) out << "  fault: " << terminal_text(fault) << "\n";
      for (const auto& warning : report.warnings) out << "  warning: " << terminal_text(warning) << "\n";
      if (!report.ok()) ++faulty;
    }
    if (in_file == 0) {
      out << file << ": no Karta or ResourceInterface object found\n";
      ++faulty;
    }
  }
  out << definitions << " definitions, " << faulty << " with faults\n";
  return faulty == 0 ? 0 : 1;
}

}  // namespace karta
