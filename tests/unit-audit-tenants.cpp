// `karta-webhook audit -f` decides as the cluster does, per tenant (issue 60): each workload's tenant and
// that tenant's mode say whether it is denied or warned; labels are checked after the mutating webhook's
// patch, as /validate sees the stored object; unknown namespace labels make the report incomplete; what
// the shipped registrations never send is reported as not sent.

#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "support/test_support.h"

namespace unit_audit_tenants {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

namespace {

// The global policy only warns; production enforces, and lets only its own queues be named; finance
// enforces a queue pattern its own default does not meet; research reads its queue from the namespace.
const char* const kPolicy = R"(
scheduling:
  queue: {label: kai.scheduler/queue, default: default-queue}
labelPolicy:
  mode: audit
  workload:
    required: [team]
tenants:
- name: production
  namespaces: ["prod-*"]
  scheduling: {queue: {default: prod-q}}
  labelPolicy:
    mode: enforce
    workload: {required: [team, kai.scheduler/queue], allowed: {kai.scheduler/queue: "^prod-"}}
- name: finance
  namespaces: ["fin-*"]
  scheduling: {queue: {default: shared}}
  labelPolicy:
    mode: enforce
    workload: {allowed: {kai.scheduler/queue: "^fin-"}}
- name: research
  namespaceSelector: {matchLabels: {team: research}}
  scheduling: {queue: {namespaceLabel: runai/queue}}
)";

const char* const kNamespaces = R"(
apiVersion: v1
kind: Namespace
metadata: {name: lab, labels: {team: research, runai/queue: lab-q}}
---
apiVersion: v1
kind: Namespace
metadata: {name: other}
)";

std::string deployment(const std::string& namespace_name, const std::string& name, const std::string& labels) {
  return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: " + name + ", namespace: " + namespace_name +
         ", labels: " + labels +
         "}\nspec:\n  selector: {matchLabels: {app: x}}\n  template:\n    metadata: {labels: {app: x}}\n"
         "    spec: {containers: [{name: c, image: busybox}]}\n";
}

struct Files {
  test::TempDir dir;
  std::string policy = (dir.path / "policy.yaml").string();
  std::string namespaces = (dir.path / "namespaces.yaml").string();
  std::string manifest = (dir.path / "workloads.yaml").string();
  explicit Files(const std::string& workloads) {
    std::ofstream(policy) << kPolicy;
    std::ofstream(namespaces) << kNamespaces;
    std::ofstream(manifest) << workloads;
  }
};

// What the webhook writes for `queue` on one of these Deployments: the workload's queue label, its pod
// template's, and the provenance annotation that lists the workload's.
json queue_patch(const std::string& queue) {
  return {{"operations", 3},
          {"set", {{{"op", "add"}, {"path", "/metadata/labels/kai.scheduler~1queue"}, {"value", queue}},
                   {{"op", "add"}, {"path", "/spec/template/metadata/labels/kai.scheduler~1queue"}, {"value", queue}},
                   {{"op", "add"}, {"path", "/metadata/annotations"},
                    {"value", {{"karta.run.ai/written", "label:kai.scheduler/queue"}}}}}}};
}

// A report's workload entry whose patch is queue_patch(queue).
json with_patch(json workload, const std::string& queue) {
  workload["patch"] = queue_patch(queue);
  return workload;
}

json workload_named(const json& report, const std::string& name) {
  for (const json& workload : report["workloads"]) {
    if (workload["name"] == name) return workload;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("a workload whose tenant enforces is reported denied, though the global policy only audits") {
  Files files(deployment("prod-a", "untagged", "{}") + "---\n" + deployment("other", "loose", "{}"));
  auto run = test::run_cli({"karta-webhook", "audit", "-f", files.manifest, "--policy", files.policy, "--namespaces",
                            files.namespaces, "--output", "json"});
  CHECK(run.code == 1);
  json report = json::parse(run.out);
  CHECK(report["labelPolicy"] == "audit");
  CHECK(report["tenants"] == json::parse(R"([{"name": "production", "labelPolicy": "enforce"},
    {"name": "finance", "labelPolicy": "enforce"}, {"name": "research", "labelPolicy": "audit"}])"));
  CHECK(workload_named(report, "untagged") == with_patch(json::parse(R"({
    "apiVersion": "apps/v1", "kind": "Deployment", "namespace": "prod-a", "name": "untagged",
    "source": ")" + files.manifest + R"(#0", "tenant": "production",
    "labelPolicy": "enforce", "enforced": true, "admission": "denied",
    "violations": ["workload: label \"team\" missing"]})"), "prod-q"));
  CHECK(workload_named(report, "loose") == with_patch(json::parse(R"({
    "apiVersion": "apps/v1", "kind": "Deployment", "namespace": "other", "name": "loose",
    "source": ")" + files.manifest + R"(#1", "tenant": null,
    "labelPolicy": "audit", "enforced": false, "admission": "warned",
    "violations": ["workload: label \"team\" missing"]})"), "default-queue"));

  auto text = test::run_cli({"karta-webhook", "audit", "-f", files.manifest, "--policy", files.policy, "--namespaces",
                             files.namespaces});
  CHECK(text.code == 1);
  CHECK(text.out ==
        "audit of files " + files.manifest + " (label policy: audit)\n"
        "  tenant production: label policy enforce\n"
        "  tenant finance: label policy enforce\n"
        "  tenant research: label policy audit\n"
        "\nDeployment prod-a/untagged (apps/v1)  " + files.manifest + "#0\n"
        "  tenant: production\n"
        "  violation: workload: label \"team\" missing\n"
        "  admission: denied (label policy enforce)\n"
        "  patch: 3 operations\n"
        "    add /metadata/labels/kai.scheduler~1queue \"prod-q\"\n"
        "    add /spec/template/metadata/labels/kai.scheduler~1queue \"prod-q\"\n"
        "    add /metadata/annotations {\"karta.run.ai/written\":\"label:kai.scheduler/queue\"}\n"
        "\nDeployment other/loose (apps/v1)  " + files.manifest + "#1\n"
        "  tenant: (global policy)\n"
        "  violation: workload: label \"team\" missing\n"
        "  admission: admitted with warnings (label policy audit)\n"
        "  patch: 3 operations\n"
        "    add /metadata/labels/kai.scheduler~1queue \"default-queue\"\n"
        "    add /spec/template/metadata/labels/kai.scheduler~1queue \"default-queue\"\n"
        "    add /metadata/annotations {\"karta.run.ai/written\":\"label:kai.scheduler/queue\"}\n"
        "\nKIND        APIVERSION  NAMESPACE  WORKLOADS  SKIPPED  VIOLATING  VIOLATIONS  PATCHED  OPERATIONS\n"
        "Deployment  apps/v1     other      1          0        1          1           1        3\n"
        "Deployment  apps/v1     prod-a     1          0        1          1           1        3\n"
        "total                              2          0        2          2           2        6\n"
        "2 workloads audited, 2 violate the label policy (1 denied under enforce, 1 admitted with warnings), 2 would "
        "be patched\n");
}

TEST_CASE("labels are checked after mutation: an injected required label is not missing, an injected forbidden value is") {
  Files files(deployment("prod-a", "tagged", "{team: web}") + "---\n" + deployment("fin-a", "ledger", "{team: books}"));
  auto run = test::run_cli({"karta-webhook", "audit", "-f", files.manifest, "--policy", files.policy, "--namespaces",
                            files.namespaces, "--output", "json"});
  json report = json::parse(run.out);
  // production requires the queue label the webhook injects: nothing is missing, the workload is admitted.
  CHECK(workload_named(report, "tagged") == with_patch(json::parse(R"({
    "apiVersion": "apps/v1", "kind": "Deployment", "namespace": "prod-a", "name": "tagged",
    "source": ")" + files.manifest + R"(#0", "tenant": "production",
    "labelPolicy": "enforce", "enforced": true, "admission": "allowed", "violations": []})"), "prod-q"));
  // finance's default queue is one its own pattern forbids: /validate denies what /mutate wrote.
  CHECK(workload_named(report, "ledger") == with_patch(json::parse(R"({
    "apiVersion": "apps/v1", "kind": "Deployment", "namespace": "fin-a", "name": "ledger",
    "source": ")" + files.manifest + R"(#1", "tenant": "finance",
    "labelPolicy": "enforce", "enforced": true, "admission": "denied",
    "violations": ["workload: label \"kai.scheduler/queue\" value \"shared\" does not match ^fin-"]})"), "shared"));
  CHECK(report["totals"]["violating"] == 1);
  CHECK(report["complete"] == true);
  CHECK(run.code == 1);
}

TEST_CASE("audit -f without the labels a selector tenant reads is incomplete, names the namespaces and exits 2") {
  Files files(deployment("lab", "notebook", "{team: research}") + "---\n" + deployment("elsewhere", "tool", "{team: x}"));
  auto run = test::run_cli({"karta-webhook", "audit", "-f", files.manifest, "--policy", files.policy});
  CHECK(run.code == 2);
  const std::string tail = run.out.substr(run.out.find("2 workloads audited"));
  CHECK(tail ==
        "2 workloads audited, 0 violate the label policy, 2 would be patched\n"
        "NAMESPACE LABELS UNKNOWN: elsewhere, lab: the policy's tenant rules read them, so these workloads were "
        "decided without them (give --namespaces, or audit the cluster)\n"
        "the audit is incomplete: namespace labels the policy reads are unknown\n");
  auto json_run = test::run_cli({"karta-webhook", "audit", "-f", files.manifest, "--policy", files.policy, "--output", "json"});
  CHECK(json_run.code == 2);
  json report = json::parse(json_run.out);
  CHECK(report["complete"] == false);
  CHECK(report["unknownNamespaces"] == json::array({"elsewhere", "lab"}));

  // --namespaces that holds lab but not elsewhere: elsewhere alone is unknown.
  auto partial = test::run_cli({"karta-webhook", "audit", "-f", files.manifest, "--policy", files.policy, "--namespaces",
                                files.namespaces, "--output", "json"});
  CHECK(partial.code == 2);
  report = json::parse(partial.out);
  CHECK(report["unknownNamespaces"] == json::array({"elsewhere"}));
  CHECK(workload_named(report, "notebook")["tenant"] == "research");
  CHECK(workload_named(report, "notebook")["patch"] == queue_patch("lab-q"));
}

TEST_CASE("workloads the shipped webhook registrations never send are reported as not sent, not as patched") {
  Files files(deployment("kube-system", "coredns", "{}") + "---\n" + deployment("kube-system", "metrics", "{}") +
              "---\n" + deployment("karta-system", "self", "{}") + "---\n" + deployment("prod-a", "tagged", "{team: web}"));
  auto run = test::run_cli({"karta-webhook", "audit", "-f", files.manifest, "--policy", files.policy, "--namespaces",
                            files.namespaces, "--output", "json"});
  CHECK(run.code == 0);
  json report = json::parse(run.out);
  CHECK(report["notSent"] == json::parse(R"([
    {"namespace": "karta-system", "workloads": 1, "why": "the webhooks' namespaceSelector excludes namespace karta-system"},
    {"namespace": "kube-system", "workloads": 2, "why": "the webhooks' namespaceSelector excludes namespace kube-system"}])"));
  CHECK(report["workloads"].size() == 1);
  CHECK(report["totals"]["workloads"] == 1);
  auto text = test::run_cli({"karta-webhook", "audit", "-f", files.manifest, "--policy", files.policy, "--namespaces",
                             files.namespaces});
  CHECK(text.out.substr(text.out.find("1 workloads audited")) ==
        "1 workloads audited, 0 violate the label policy, 1 would be patched\n"
        "NOT SENT: 1 workload in namespace karta-system: the webhooks' namespaceSelector excludes namespace "
        "karta-system (never patched nor checked)\n"
        "NOT SENT: 2 workloads in namespace kube-system: the webhooks' namespaceSelector excludes namespace "
        "kube-system (never patched nor checked)\n");
}

}  // namespace unit_audit_tenants
