// `inspect KIND/NAME`, `list` and `audit` with tenant rules, against the local API server: the tenant of a live
// workload is decided as serve decides it, from the labels of its namespace as the cluster has them (one
// GET for inspect and `list -n`, one paged LIST for `list -A` and audit) or as --namespaces FILE gives them; the
// GPUs counted are the tenant's gpu.resourceNames; labels the cluster will not give are named in a note
// and the global policy applies, as serve's warning says. The seed's demo JobSet (support/demo_cluster):
// three pods of 4 nvidia.com/gpu each.

#include <doctest/doctest.h>

#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "cli/live_inspect.h"
#include "support/demo_cluster.h"
#include "support/fake_api_server.h"
#include "support/test_support.h"

namespace unit_live_tenants {  // this file's names, apart from other tests' in a unity build

using karta::test::demo_cluster::inspect;
using karta::test::demo_cluster::list;
using karta::test::demo_cluster::twenty_seconds_later;

using karta::json;
namespace test = karta::test;

namespace {

using test::demo_cluster::demo_jobs;
using test::demo_cluster::demo_jobset;
using test::demo_cluster::demo_pods;

// The research tenant counts another vendor's GPUs only: the demo's 12 nvidia.com/gpu are 0 there; and it
// has a queue of its own.
const char* const kPolicy = R"(
gpu: {resourceNames: [nvidia.com/gpu]}
scheduling: {queue: {label: kai.scheduler/queue, default: default-queue}}
tenants:
- name: research
  namespaceSelector: {matchLabels: {tier: research}}
  gpu: {resourceNames: [amd.com/gpu]}
  scheduling: {queue: {default: research-q}}
- name: sandbox
  namespaces: [sandbox-*]
  exempt: true
)";

const test::FakeResource kNamespaces{.group = "", .version = "v1", .kind = "Namespace", .plural = "namespaces",
                                     .singular = "namespace", .short_names = {"ns"}, .namespaced = false};

json namespace_object(const std::string& name, const json& labels) {
  return {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}, {"labels", labels}}},
          {"status", {{"phase", "Active"}}}};
}

struct Cluster {
  test::TempDir dir;
  test::FakeApiServer server{dir.path, {}};
  std::filesystem::path kubeconfig = dir.path / "kubeconfig";
  std::filesystem::path policy = dir.path / "policy.yaml";

  // The demo JobSet in namespace research, which the cluster labels `tier: research_tier`.
  Cluster(const std::string& research_tier, bool namespaces_forbidden = false) {
    server.serve(test::demo_cluster::pods(), demo_pods());
    server.serve(test::demo_cluster::jobs(), demo_jobs());
    server.serve(test::demo_cluster::jobsets(), {demo_jobset()});
    server.serve(kNamespaces, {namespace_object("research", {{"tier", research_tier}}),
                               namespace_object("sandbox-1", json::object()), namespace_object("default", json::object())});
    if (namespaces_forbidden) server.forbid("", "namespaces");
    test::write_text(kubeconfig, server.kubeconfig("research"));
    test::write_text(policy, kPolicy);
  }

  karta::LiveOptions options(const std::string& target = "") const {
    karta::LiveOptions o;
    o.target = target;
    o.kubeconfig = kubeconfig.string();
    o.policy = policy.string();
    return o;
  }

  // What was asked of /api/v1/namespaces.
  std::vector<std::string> namespace_requests() const {
    std::vector<std::string> asked;
    for (const auto& target : server.targets()) {
      if (target.starts_with("/api/v1/namespaces") && target.find("/pods") == std::string::npos) asked.push_back(target);
    }
    return asked;
  }
};

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// The header of `inspect jobset/demo` up to its age, which is now's.
std::string header_before_age(const std::string& out) {
  const std::string line = first_line(out);
  return line.substr(0, line.find("   age: "));
}

}  // namespace

TEST_CASE("inspect KIND/NAME names the tenant the namespace's cluster labels select, and counts its GPUs") {
  Cluster cluster("research");
  karta::LiveOptions options = cluster.options("jobset/demo");
  test::CliRun text = inspect(options);
  CHECK(text.code == 0);
  CHECK(text.err == "");
  CHECK(header_before_age(text.out) ==
        "JobSet/demo   namespace: research   tenant: research   definition: jobset-v1alpha2 (catalog)");
  CHECK(text.out.ends_with("TOTAL       3          0     0     0\n"));
  // One GET of the workload's namespace, nothing else of the namespaces.
  CHECK(cluster.namespace_requests() == std::vector<std::string>{"/api/v1/namespaces/research"});

  options.output = "json";
  test::CliRun view = inspect(options);
  CHECK(view.code == 0);
  json parsed = json::parse(view.out);
  CHECK(parsed["tenant"] == "research");
  CHECK(parsed["exempt"] == false);
  CHECK(parsed["totals"] == json{{"replicas", {{"desired", 3}, {"current", 3}, {"ready", 3}}},
                                 {"resources", {{"gpus", 0}, {"cpu", 0}, {"memoryBytes", 0}}}});
}

TEST_CASE("inspect KIND/NAME --namespaces FILE takes the file's labels over the cluster's, and asks for none") {
  Cluster cluster("research");
  const std::filesystem::path file = cluster.dir.path / "ns.yaml";
  test::write_text(file, "apiVersion: v1\nkind: Namespace\nmetadata: {name: research, labels: {tier: other}}\n");
  // The command line, as a user types it: --namespaces reaches the live command.
  const std::vector<std::string> command{"karta-webhook", "inspect", "jobset/demo", "--kubeconfig", cluster.kubeconfig.string(),
                                         "--policy", cluster.policy.string(), "--namespaces", file.string()};
  test::CliRun text = test::run_cli(command);
  CHECK(text.code == 0);
  CHECK(text.err == "");
  CHECK(header_before_age(text.out) ==
        "JobSet/demo   namespace: research   tenant: (global policy)   definition: jobset-v1alpha2 (catalog)");
  CHECK(text.out.ends_with("TOTAL       3          12    0     0\n"));
  CHECK(cluster.namespace_requests().empty());

  // The same for list.
  test::CliRun listed = test::run_cli({"karta-webhook", "list", "--kubeconfig", cluster.kubeconfig.string(), "--policy",
                                       cluster.policy.string(), "--namespaces", file.string(), "--output", "json"});
  CHECK(listed.code == 0);
  CHECK(json::parse(listed.out)["items"][0]["tenant"] == nullptr);
  CHECK(json::parse(listed.out)["items"][0]["gpus"] == 12);
  CHECK(cluster.namespace_requests().empty());

  // A file that holds no Namespace is an error naming it, as for the offline commands.
  test::write_text(file, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n");
  test::CliRun refused = test::run_cli(command);
  CHECK(refused.code == 1);
  CHECK(refused.out == "");
  CHECK(refused.err == "karta-webhook: " + file.string() +
                           "#0: not a v1 Namespace (or a List of them, as kubectl get ns -o yaml prints): kind ConfigMap\n");
}

TEST_CASE("inspect KIND/NAME where the namespace's labels are forbidden applies the global policy and says why") {
  Cluster cluster("research", /*namespaces_forbidden=*/true);
  test::CliRun text = inspect(cluster.options("jobset/demo"));
  CHECK(text.code == 0);
  CHECK(header_before_age(text.out) ==
        "JobSet/demo   namespace: research   tenant: (global policy)   definition: jobset-v1alpha2 (catalog)");
  CHECK(text.out.ends_with("TOTAL       3          12    0     0\n"));
  CHECK(text.err ==
        "note: namespace \"research\": labels unknown (could not get namespace \"research\": 403 namespaces \"research\" is "
        "forbidden: User \"system:serviceaccount:karta-system:karta-webhook\" cannot get resource \"namespaces\" in API "
        "group \"\" at the cluster scope); decided without them: the global policy, no queue from namespace labels\n");
}

TEST_CASE("list -A names each row's tenant, reading the namespaces in one LIST; an exempt tenant is named too") {
  Cluster cluster("research");
  // A second JobSet in a sandbox namespace, which the exempt rule matches by name.
  json sandboxed = demo_jobset();
  sandboxed["metadata"]["namespace"] = "sandbox-1";
  sandboxed["metadata"]["uid"] = "sandbox-uid";
  cluster.server.serve(test::demo_cluster::jobsets(), {demo_jobset(), sandboxed});
  karta::LiveOptions options = cluster.options();
  options.all_namespaces = true;
  options.output = "json";
  test::CliRun listed = list(options);
  CHECK(listed.code == 0);
  json items = json::parse(listed.out)["items"];
  REQUIRE(items.size() == 2);
  CHECK(items[0]["namespace"] == "research");
  CHECK(items[0]["tenant"] == "research");
  CHECK(items[0]["gpus"] == 0);
  CHECK(items[1]["namespace"] == "sandbox-1");
  CHECK(items[1]["tenant"] == "sandbox");
  CHECK(items[1]["gpus"] == 12);  // exempt: nothing injected, GPUs counted as the global policy counts them
  CHECK(cluster.namespace_requests() == std::vector<std::string>{"/api/v1/namespaces?limit=100"});

  options.output = "text";
  test::CliRun text = list(options);
  CHECK(text.code == 0);
  CHECK(first_line(text.out) == "NAMESPACE   TENANT     NAME   KIND     PHASE     COMPONENTS             GPU   AGE");
  const std::string second = text.out.substr(text.out.find('\n') + 1);
  CHECK(first_line(second).starts_with("research    research   demo   JobSet   Running   leader(1), worker(2)   0     "));
}

TEST_CASE("without tenant rules, inspect and list neither ask for namespaces nor show a tenant") {
  Cluster cluster("research");
  karta::LiveOptions options = cluster.options("jobset/demo");
  options.policy = "";
  test::CliRun text = inspect(options);
  CHECK(text.code == 0);
  CHECK(header_before_age(text.out) == "JobSet/demo   namespace: research   definition: jobset-v1alpha2 (catalog)");
  options.output = "json";
  CHECK_FALSE(json::parse(inspect(options).out).contains("tenant"));
  options.all_namespaces = true;
  CHECK_FALSE(json::parse(list(options).out)["items"][0].contains("tenant"));
  CHECK(cluster.namespace_requests().empty());
}

// The demo JobSet as audit reports it with queue `queue`, under `tenant` (null: the global policy).
json audited_demo(const json& tenant, const std::string& queue) {
  return {{"apiVersion", "jobset.x-k8s.io/v1alpha2"}, {"kind", "JobSet"}, {"name", "demo"}, {"namespace", "research"},
          {"tenant", tenant}, {"labelPolicy", "off"}, {"enforced", false}, {"admission", "allowed"},
          {"violations", json::array()},
          {"patch",
           {{"operations", 4},
            {"set",
             {{{"op", "add"}, {"path", "/metadata/labels/kai.scheduler~1queue"}, {"value", queue}},
              {{"op", "add"}, {"path", "/spec/replicatedJobs/0/template/spec/template/metadata/labels/kai.scheduler~1queue"},
               {"value", queue}},
              {{"op", "add"}, {"path", "/spec/replicatedJobs/1/template/spec/template/metadata"},
               {"value", {{"labels", {{"kai.scheduler/queue", queue}}}}}},
              {{"op", "add"}, {"path", "/metadata/annotations"},
               {"value", {{"karta.run.ai/written", "label:kai.scheduler/queue"}}}}}}}}};
}

TEST_CASE("audit reads the namespaces' labels in one LIST; when they are forbidden it says so once and audits with the global policy") {
  for (bool forbidden : {false, true}) {
    CAPTURE(forbidden);
    Cluster cluster("research", forbidden);
    test::CliRun audited = test::run_cli({"karta-webhook", "audit", "--kubeconfig", cluster.kubeconfig.string(), "--policy",
                                          cluster.policy.string(), "--namespace", "research", "--output", "json"});
    // Without the labels the tenant rules read, the audit is incomplete (exit 2) and names the namespace.
    CHECK(audited.code == (forbidden ? 2 : 0));
    json report = json::parse(audited.out);
    CHECK(report["unknownNamespaces"] == (forbidden ? json::array({"research"}) : json::array()));
    REQUIRE(report["workloads"].size() == 1);
    CHECK(cluster.namespace_requests() == std::vector<std::string>{"/api/v1/namespaces?limit=100"});
    if (!forbidden) {
      CHECK(audited.err == "");
      CHECK(report["workloads"][0] == audited_demo("research", "research-q"));
    } else {
      CHECK(audited.err ==
            "karta-webhook audit: namespaces not listed, tenant rules decided without their labels: could not list "
            "namespaces: 403 namespaces is forbidden: User \"system:serviceaccount:karta-system:karta-webhook\" cannot "
            "list resource \"namespaces\" in API group \"\" at the cluster scope\n");
      CHECK(report["workloads"][0] == audited_demo(nullptr, "default-queue"));
    }
  }
}

}  // namespace unit_live_tenants
