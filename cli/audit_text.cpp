// `karta-webhook audit` as text (cli/audit.h, render_audit): the workloads with their violations, drift and
// patches, the table per kind and namespace, and what made the audit incomplete.

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "cli/audit.h"
#include "cli/inspect.h"
#include "k8s/terminal_text.h"
#include "policy/tenant_rules.h"

namespace karta {
namespace {

// One patch operation as a line: "add /spec/template/spec/schedulerName \"kai-scheduler\"".
std::string operation_text(const json& operation) {
  std::string text = operation.value("op", "") + " " + operation.value("path", "");
  if (operation.contains("value")) text += " " + operation["value"].dump();
  return text;
}

}  // namespace

std::string render_audit(const json& raw_report) {
  const json report = terminal_strings(raw_report);  // names, label values and the server's errors are others' text
  std::ostringstream out;
  out << "audit of " << report["source"].get<std::string>() << " (label policy: "
      << report["labelPolicy"].get<std::string>() << ")\n";
  if (report.contains("tenants")) {
    for (const json& tenant : report["tenants"]) {
      out << "  tenant " << tenant["name"].get<std::string>() << ": label policy "
          << tenant["labelPolicy"].get<std::string>() << "\n";
    }
  }
  for (const json& kind : report["kinds"]) {
    out << "  " << kind["kind"].get<std::string>() << " (" << kind["apiVersion"].get<std::string>() << "): ";
    if (kind.contains("listed")) {
      out << kind["listed"].get<std::size_t>() << " listed in " << kind["pages"].get<std::size_t>() << " pages\n";
    } else {
      out << (kind.contains("error") ? "NOT LISTED: " + kind["error"].get<std::string>() : kind["note"].get<std::string>())
          << "\n";
    }
  }
  for (const json& definition : report["definitions"]) {
    out << "\nKarta " << definition["name"].get<std::string>()
        << (definition["loaded"].get<bool>() ? " (loaded: the paths at fault yield nothing)" : " (not loaded)") << "\n";
    for (const json& fault : definition["faults"]) out << "  fault: " << fault.get<std::string>() << "\n";
  }
  if (!report["uncovered"].empty()) {
    out << "\nKinds with pods and no definition (their pods get no queue label and no policy check):\n";
    for (const json& kind : report["uncovered"]) {
      std::string versions;
      for (const json& version : kind["versions"]) versions += (versions.empty() ? "" : ", ") + version.get<std::string>();
      out << "  " << kind["kind"].get<std::string>() << " (" << kind["group"].get<std::string>() << ", versions "
          << versions << "; CRD " << kind["crd"].get<std::string>() << ")\n";
      for (const json& place : kind["places"])
        out << "    " << place["shape"].get<std::string>() << " at " << place["path"].get<std::string>() << "\n";
      out << "    draft its Karta: " << kind["command"].get<std::string>() << "\n";
    }
  }
  for (const json& workload : report["workloads"]) {
    std::string name = workload["name"].get<std::string>();
    if (!workload["namespace"].get<std::string>().empty()) name = workload["namespace"].get<std::string>() + "/" + name;
    out << "\n" << workload["kind"].get<std::string>() << " " << name << " (" << workload["apiVersion"].get<std::string>()
        << ")";
    if (workload.contains("source")) out << "  " << workload["source"].get<std::string>();
    out << "\n";
    if (workload.contains("tenant")) {
      out << "  tenant: " << tenant_display_name(workload["tenant"]) << "\n";
    }
    for (const json& violation : workload["violations"]) {
      out << "  violation: " << violation.get<std::string>() << "\n";
    }
    if (workload.contains("drift")) {
      for (const json& drift : workload["drift"]) {
        const std::string entry = drift["key"].get<std::string>();
        out << "  drift: " << entry.substr(0, entry.find(':')) << " " << entry.substr(entry.find(':') + 1) << " is \""
            << drift["value"].get<std::string>() << "\", written by the webhook; the policy now writes \""
            << drift["policy"].get<std::string>() << "\"\n";
      }
    }
    if (const std::string admission = workload["admission"].get<std::string>(); admission != "allowed") {
      out << "  admission: " << (admission == "denied" ? "denied" : "admitted with warnings") << " (label policy "
          << workload["labelPolicy"].get<std::string>() << ")\n";
    }
    const json& patch = workload["patch"];
    if (patch["operations"].get<std::size_t>() > 0) {
      out << "  patch: " << patch["operations"].get<std::size_t>() << " operations\n";
      for (const json& operation : patch["set"]) out << "    " << operation_text(operation) << "\n";
    }
  }
  std::vector<std::vector<std::string>> rows{
      {"KIND", "APIVERSION", "NAMESPACE", "WORKLOADS", "SKIPPED", "VIOLATING", "VIOLATIONS", "PATCHED", "OPERATIONS"}};
  auto numbers = [](const json& row) {
    std::vector<std::string> cells;
    for (const char* key : {"workloads", "skipped", "violating", "violations", "patched", "operations"}) {
      cells.push_back(std::to_string(row[key].get<std::size_t>()));
    }
    return cells;
  };
  for (const json& row : report["summary"]) {
    std::vector<std::string> cells{row["kind"].get<std::string>(), row["apiVersion"].get<std::string>(),
                                   row["namespace"].get<std::string>()};
    for (auto& cell : numbers(row)) cells.push_back(std::move(cell));
    rows.push_back(std::move(cells));
  }
  std::vector<std::string> total{"total", "", ""};
  for (auto& cell : numbers(report["totals"])) total.push_back(std::move(cell));
  rows.push_back(std::move(total));
  out << "\n" << render_columns(rows);
  const json& totals = report["totals"];
  std::size_t violating = totals["violating"].get<std::size_t>();
  out << totals["workloads"].get<std::size_t>() << " workloads audited, " << violating
      << " violate the label policy";
  if (violating > 0) {
    // Each workload's tenant decides: counted by what the cluster would do with it.
    std::size_t denied = 0, warned = 0;
    for (const json& workload : report["workloads"]) {
      if (workload["violations"].empty()) continue;
      (workload["admission"] == "denied" ? denied : warned) += 1;
    }
    if (warned == 0) out << " (enforce: the webhook would deny them)";
    else if (denied == 0) out << " (audit: admitted with warnings)";
    else out << " (" << denied << " denied under enforce, " << warned << " admitted with warnings)";
  }
  out << ", " << totals["patched"].get<std::size_t>() << " would be patched";
  if (const std::size_t drifted = report["drifted"].get<std::size_t>(); drifted > 0) {
    out << ", " << drifted << " carry values the webhook wrote that the policy has changed since (their next UPDATE "
        << "follows the policy)";
  }
  out << "\n";
  for (const json& unsent : report["notSent"]) {
    const std::size_t n = unsent["workloads"].get<std::size_t>();
    out << "NOT SENT: " << n << (n == 1 ? " workload" : " workloads") << " in namespace "
        << unsent["namespace"].get<std::string>() << ": " << unsent["why"].get<std::string>()
        << " (never patched nor checked)\n";
  }
  if (!report["unknownNamespaces"].empty()) {
    std::string names;
    for (const json& name : report["unknownNamespaces"]) names += (names.empty() ? "" : ", ") + name.get<std::string>();
    out << "NAMESPACE LABELS UNKNOWN: " << names
        << ": the policy's tenant rules read them, so these workloads were decided without them (give --namespaces, "
           "or audit the cluster)\n";
  }
  for (const json& unread : report["unchecked"]) {
    std::string name = unread["name"].get<std::string>();
    if (!unread["namespace"].get<std::string>().empty()) name = unread["namespace"].get<std::string>() + "/" + name;
    out << "NOT CHECKED: " << unread["kind"].get<std::string>() << " " << name << " ("
        << unread["apiVersion"].get<std::string>() << "): " << unread["why"].get<std::string>() << "\n";
  }
  if (!report["complete"].get<bool>()) {
    bool unlisted = std::any_of(report["kinds"].begin(), report["kinds"].end(),
                                [](const json& kind) { return kind.contains("error"); });
    std::size_t unread = report["unchecked"].size();
    std::vector<std::string> why;
    if (unlisted) why.push_back("a kind could not be listed");
    if (unread > 0) why.push_back(std::to_string(unread) + (unread == 1 ? " object was" : " objects were") + " not checked");
    if (!report["unknownNamespaces"].empty()) why.push_back("namespace labels the policy reads are unknown");
    out << "the audit is incomplete: ";
    for (std::size_t i = 0; i < why.size(); ++i) out << (i == 0 ? "" : i + 1 == why.size() ? ", and " : ", ") << why[i];
    out << "\n";
  }
  return out.str();
}

}  // namespace karta
