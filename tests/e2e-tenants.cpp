// End to end: the webhook watching the cluster's Namespaces (metadata only) for its tenant rules and
// scheduling.queue.namespaceLabel, against the local API server: a namespace relabelled while serving
// changes the next answer; a namespace it cannot learn is refused (or, as the policy says, gets the global
// policy with a warning), logged and counted; `mutate --namespaces` answers as serve does.
// e2e-namespace-lookups.cpp has how serve looks up a namespace its watch has not told of.

#include <doctest/doctest.h>

#include <fstream>

#include "runtime/namespace_watch.h"
#include "support/fake_api_server.h"
#include "support/kube_fixtures.h"
#include "support/running_webhook.h"
#include "support/test_support.h"

namespace e2e_tenants {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;
using namespace std::chrono_literals;
using test::FakeApiServer;

const char* const kPolicy = R"(
scheduling:
  queue: {label: kai.scheduler/queue, namespaceLabel: runai/queue, default: default-queue}
gang: {minMemberAnnotation: kai.scheduler/batch-min-member}
tenants:
- name: production
  namespaceSelector: {matchLabels: {tier: production}}
  scheduling: {queue: {default: production-q}}
  podTemplates: {labels: {platform.example.com/tier: production}}
)";

const test::FakeResource kNamespaces{.group = "", .version = "v1", .kind = "Namespace", .plural = "namespaces",
                                     .singular = "namespace", .short_names = {"ns"}, .namespaced = false};

json namespace_object(const std::string& name, const json& labels) {
  return {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}, {"labels", labels}}},
          {"spec", {{"finalizers", {"kubernetes"}}}}, {"status", {{"phase", "Active"}}}};
}

json jobset(const std::string& namespace_name) {
  json object = test::document(test::source_dir() / "tests/corpus/samples/jobset-1.yaml");
  object["metadata"]["namespace"] = namespace_name;
  return object;
}

// The JobSet paralleljobs (tests/corpus/samples/jobset-1.yaml) in queue `queue`, its pods with `labels` too.
json jobset_patch(const std::string& queue, json labels = json::object()) {
  labels["kai.scheduler/queue"] = queue;
  return json::array({
      {{"op", "add"}, {"path", "/metadata/labels"}, {"value", {{"kai.scheduler/queue", queue}}}},
      {{"op", "add"}, {"path", "/spec/replicatedJobs/0/template/spec/template/metadata"}, {"value", {{"labels", labels}}}},
      {{"op", "add"}, {"path", "/spec/replicatedJobs/1/template/spec/template/metadata"}, {"value", {{"labels", labels}}}},
      {{"op", "add"}, {"path", "/metadata/annotations"}, {"value", {{"karta.run.ai/written", "label:kai.scheduler/queue"}}}},
  });
}

struct Cluster {
  test::TempDir dir;
  FakeApiServer server{dir.path, {}};
  std::unique_ptr<test::RunningWebhook> running;
  std::unique_ptr<test::HttpsClient> client;

  explicit Cluster(std::vector<json> namespaces, bool forbidden = false, const std::string& policy = kPolicy) {
    server.serve(kNamespaces, std::move(namespaces));
    if (forbidden) server.forbid("", "namespaces");
    running = std::make_unique<test::RunningWebhook>(
        [&](karta::WebhookConfig& config) {
          config.cluster = server.connection();
          config.watcher_options = test::kube_fixtures::test_options();
        },
        policy);
    client = std::make_unique<test::HttpsClient>(running->port, running->certificates.ca);
  }
  json response(const json& object) {
    return json::parse(client->request("POST", "/mutate", test::admission_review(object).dump()).body)["response"];
  }
  json patch(const json& object) { return test::decoded_patch(json{{"response", response(object)}}); }
};

TEST_CASE("a namespace relabelled while serving changes the next admission's answer") {
  Cluster cluster(std::vector<json>{namespace_object("research", {{"runai/queue", "research-q"}})});
  CHECK(cluster.patch(jobset("research")) == jobset_patch("research-q"));
  REQUIRE(test::eventually([&] { return cluster.running->webhook->cluster_namespaces() &&
                                  cluster.running->webhook->cluster_namespaces()->known() == 1; }, 20s));

  cluster.server.change_object("", "namespaces", "MODIFIED", namespace_object("research", {{"tier", "production"}}));
  const json production = jobset_patch("production-q", {{"platform.example.com/tier", "production"}});
  CHECK(test::eventually([&] { return cluster.patch(jobset("research")) == production; }, 20s));

  cluster.server.change_object("", "namespaces", "MODIFIED",
                               namespace_object("research", {{"tier", "production"}, {"runai/queue", "other-q"}}));
  const json other = jobset_patch("other-q", {{"platform.example.com/tier", "production"}});
  CHECK(test::eventually([&] { return cluster.patch(jobset("research")) == other; }, 20s));

  // A namespace created while serving: the watch brings it, or a GET does.
  cluster.server.change_object("", "namespaces", "ADDED", namespace_object("vision", {{"runai/queue", "vision-q"}}));
  CHECK(cluster.patch(jobset("vision")) == jobset_patch("vision-q"));
  CHECK(cluster.response(jobset("vision")).value("warnings", json::array()) == json::array());

  // Metadata only: LIST as PartialObjectMetadataList, WATCH as PartialObjectMetadata.
  bool listed = false, watched = false;
  for (const auto& received : cluster.server.received()) {
    if (!received.target.starts_with("/api/v1/namespaces?")) continue;
    const bool watch = received.target.find("watch=1") != std::string::npos;
    if (watch) {
      watched = true;
      CHECK(received.accept == "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json");
    } else {
      listed = true;
      CHECK(received.accept == "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json");
    }
  }
  CHECK(listed);
  CHECK(watched);
}

TEST_CASE("mutate --namespaces gives the same patch as serve for the same namespace labels") {
  const json labels = {{"tier", "production"}, {"kubernetes.io/metadata.name", "serving"}};
  // A namespace that does not exist ("elsewhere"): serve decides without its labels, as mutate does.
  const std::string policy = std::string(kPolicy) + "namespaceLabels: {whenUnknown: globalPolicy}\n";
  Cluster cluster(std::vector<json>{namespace_object("serving", labels), namespace_object("research", {{"runai/queue", "research-q"}})},
                  /*forbidden=*/false, policy);
  test::TempDir dir;
  std::ofstream(dir.path / "policy.yaml") << policy;
  // As `kubectl get ns -o yaml` prints them: a v1 List.
  std::ofstream(dir.path / "ns.yaml") << json{{"apiVersion", "v1"},
                                              {"kind", "List"},
                                              {"items", {namespace_object("serving", labels),
                                                         namespace_object("research", {{"runai/queue", "research-q"}})}}}
                                             .dump();
  for (const char* namespace_name : {"serving", "research", "elsewhere"}) {
    CAPTURE(namespace_name);
    std::ofstream(dir.path / "jobset.yaml") << jobset(namespace_name).dump();
    auto run = test::run_cli({"karta-webhook", "mutate", "-f", (dir.path / "jobset.yaml").string(), "--policy",
                              (dir.path / "policy.yaml").string(), "--namespaces", (dir.path / "ns.yaml").string()});
    REQUIRE(run.code == 0);
    json offline = json::parse(run.out.substr(run.out.find('[')));
    CHECK(cluster.patch(jobset(namespace_name)) == offline);
  }
  CHECK(cluster.patch(jobset("serving")) == jobset_patch("production-q", {{"platform.example.com/tier", "production"}}));
}

TEST_CASE("a namespace whose labels cannot be read is refused, said and counted; with whenUnknown: globalPolicy it gets the global policy, with a warning") {
  SUBCASE("by default, with a rule that selects by labels: refused, asking to retry") {
    Cluster cluster(std::vector<json>{namespace_object("research", {{"runai/queue", "research-q"}})}, /*forbidden=*/true);
    CHECK(cluster.response(jobset("research")) ==
          json{{"uid", "uid-1"},
               {"allowed", false},
               {"status", {{"code", 503}, {"reason", "ServiceUnavailable"},
                           {"message", "the labels of namespace \"research\" could not be read in time (GET answered 403 "
                                       "Forbidden); the policy decides by them (namespaceLabels.whenUnknown: deny): retry in a "
                                       "few seconds"}}}});
    CHECK(cluster.client->request("GET", "/metrics").body.find("karta_namespace_labels_unknown_total{endpoint=\"mutate\"} 1\n") !=
          std::string::npos);
  }
  SUBCASE("globalPolicy") {
    Cluster cluster(std::vector<json>{namespace_object("research", {{"runai/queue", "research-q"}})}, /*forbidden=*/true,
                    std::string(kPolicy) + "namespaceLabels: {whenUnknown: globalPolicy}\n");
    json response = cluster.response(jobset("research"));
    CHECK(test::decoded_patch(json{{"response", response}}) == jobset_patch("default-queue"));
    CHECK(response["warnings"] ==
          json::array({"namespace \"research\": labels unknown (GET answered 403 Forbidden); decided without them: the "
                       "global policy, no queue from namespace labels"}));
    CHECK(cluster.client->request("GET", "/metrics").body.find("karta_namespace_labels_unknown_total{endpoint=\"mutate\"} 1\n") !=
          std::string::npos);
  }
}

TEST_CASE("audit of a cluster lists its namespaces when the policy reads their labels, and names each tenant") {
  test::TempDir dir;
  FakeApiServer server{dir.path, {}};
  server.serve(kNamespaces, {namespace_object("serving", {{"tier", "production"}}),
                             namespace_object("research", {{"runai/queue", "research-q"}})});
  server.serve({.group = "jobset.x-k8s.io", .version = "v1alpha2", .kind = "JobSet", .plural = "jobsets", .singular = "jobset"},
               {jobset("serving"), jobset("research")});
  test::write_text(dir.path / "kubeconfig", server.kubeconfig("default"));
  std::ofstream(dir.path / "policy.yaml") << kPolicy;
  auto run = test::run_cli({"karta-webhook", "audit", "--kubeconfig", (dir.path / "kubeconfig").string(), "--policy",
                            (dir.path / "policy.yaml").string(), "--output", "json"});
  CHECK(run.err == "");
  json report = json::parse(run.out);
  REQUIRE(report["workloads"].size() == 2);
  CHECK(report["workloads"][0]["namespace"] == "research");
  CHECK(report["workloads"][0]["tenant"] == nullptr);
  CHECK(report["workloads"][0]["patch"]["set"] == jobset_patch("research-q"));
  CHECK(report["workloads"][1]["namespace"] == "serving");
  CHECK(report["workloads"][1]["tenant"] == "production");
  CHECK(report["workloads"][1]["patch"]["set"] == jobset_patch("production-q", {{"platform.example.com/tier", "production"}}));
}

}  // namespace e2e_tenants
