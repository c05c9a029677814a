// End to end: what `serve` does with the cluster's CustomResourceDefinitions (issue 48). It indexes every
// CRD from a metadata-only watch and fetches, one GET each, only the CRDs of the groups definitions use;
// an event of any other CRD touches the index and nothing else. Figures (memory, CPU, time) are measured
// by scripts/scale-test.sh, not here: these tests assert what is asked for and what is rebuilt.

#include <doctest/doctest.h>

#include <algorithm>
#include <thread>

#include "kube/api_client.h"
#include "runtime/cluster_schemas.h"
#include "support/fake_api_server.h"
#include "support/kube_fixtures.h"
#include "support/running_webhook.h"
#include "support/test_support.h"

namespace e2e_cluster_scale {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;
using namespace std::chrono_literals;

using test::FakeApiServer;
using namespace test::kube_fixtures;

namespace {

constexpr const char* kCrds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

// tests/data/trainer-crd.yaml (acme.example.com/v1 Trainer: pod templates at .spec.worker.template and
// .spec.evaluator.template), renamed to `kind` in `group`.
json trainer_crd(const std::string& group = "acme.example.com", const std::string& kind = "Trainer") {
  json crd = test::document(test::source_dir() / "tests/data/trainer-crd.yaml");
  std::string plural = kind;
  std::transform(plural.begin(), plural.end(), plural.begin(), [](unsigned char c) { return std::tolower(c); });
  plural += "s";
  crd["metadata"]["name"] = plural + "." + group;
  crd["spec"]["group"] = group;
  crd["spec"]["names"] = {{"kind", kind}, {"plural", plural}, {"singular", plural.substr(0, plural.size() - 1)}};
  return crd;
}

// A Karta for `kind` of `group` whose worker's template is at .spec.worker.template, and, when
// `evaluator_path` is given, an evaluator's there.
json karta_for(const std::string& name, const std::string& group, const std::string& kind,
               const std::string& evaluator_path = "") {
  json karta = test::yaml(R"(
apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: )" + name + R"(, resourceVersion: "1"}
spec:
  structureDefinition:
    rootComponent:
      name: root
      kind: {group: )" + group + R"(, version: v1, kind: )" + kind + R"(}
      statusDefinition:
        phaseDefinition: {path: .status.phase}
        statusMappings:
          running: [{byPhase: Running}]
    childComponents:
      - name: worker
        kind: {group: "", version: v1, kind: Pod}
        ownerRef: root
        specDefinition: {podTemplateSpecPath: .spec.worker.template}
)");
  if (!evaluator_path.empty()) {
    karta["spec"]["structureDefinition"]["childComponents"].push_back(
        {{"name", "evaluator"},
         {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
         {"ownerRef", "root"},
         {"specDefinition", {{"podTemplateSpecPath", evaluator_path}}}});
  }
  return karta;
}

json workload(const std::string& group, const std::string& kind) {
  return test::yaml("{apiVersion: " + group + "/v1, kind: " + kind + R"(, metadata: {name: t, namespace: ml},
      spec: {worker: {template: {spec: {containers: [{name: w, image: i}]}}}}})");
}

// The webhook watching `server`, with the test API server's objects and a short reload interval.
struct Watching {
  test::TempDir dir;
  FakeApiServer server;
  std::unique_ptr<test::RunningWebhook> running;
  std::unique_ptr<test::HttpsClient> client;

  Watching(std::vector<json> kartas, std::vector<json> crds) : server(dir.path, std::move(kartas)) {
    // Each CRD's resource in discovery, as the API server serves an established CRD's (/validate asks
    // discovery which CRD serves a Karta's kind).
    for (const json& crd : crds) {
      const json& names = crd["spec"]["names"];
      server.serve(test::FakeResource{crd["spec"]["group"].get<std::string>(), "v1", names["kind"].get<std::string>(),
                                      names["plural"].get<std::string>(), names["singular"].get<std::string>()});
    }
    server.serve(test::crd_resource(), std::move(crds));
    running = std::make_unique<test::RunningWebhook>([&](karta::WebhookConfig& config) {
      config.cluster = server.connection();
      config.watcher_options = test_options();
      config.reload_interval = 100ms;
    });
    client = std::make_unique<test::HttpsClient>(running->port, running->certificates.ca);
    REQUIRE(eventually([&] { return client->request("GET", "/readyz").status == 200; }, 20s));
  }

  // The value of a metric line without labels or with exactly these ("name{...}"), "none" when absent.
  std::string metric(const std::string& name) {
    std::string metrics = client->request("GET", "/metrics").body;
    std::size_t at = metrics.find("\n" + name + " ");
    if (at == std::string::npos) return "none";
    at += name.size() + 2;
    return metrics.substr(at, metrics.find('\n', at) - at);
  }
  std::string cluster_reloads() { return metric("karta_reloads_total{source=\"cluster\"}"); }

  // GETs of one CRD by name.
  std::size_t gets_of(const std::string& crd_name) {
    const std::string target = std::string(kCrds) + "/" + crd_name;
    auto received = server.received();
    return std::count_if(received.begin(), received.end(), [&](const test::Received& r) { return r.target == target; });
  }
  std::size_t crd_gets() {
    auto received = server.received();
    return std::count_if(received.begin(), received.end(),
                         [&](const test::Received& r) { return r.target.starts_with(std::string(kCrds) + "/"); });
  }

  json validate(const json& karta, const std::string& operation = "CREATE") {
    auto reply = client->request("POST", "/validate", test::admission_review(karta, operation, "k-1").dump());
    REQUIRE(reply.status == 200);
    return json::parse(reply.body)["response"];
  }
  bool patches(const json& object) {
    auto reply = client->request("POST", "/mutate", test::admission_review(object, "CREATE", "w-1").dump());
    REQUIRE(reply.status == 200);
    return json::parse(reply.body)["response"].contains("patch");
  }
};

const json kIdleLabel = {{"team", "observability"}};

}  // namespace

TEST_CASE("the CRDs are watched by metadata only, and only the CRDs of the groups definitions use are fetched") {
  Watching w({karta_for("trainer", "acme.example.com", "Trainer")},
             {trainer_crd(), trainer_crd("metrics.example.com", "Probe"), trainer_crd("mesh.example.com", "Route")});
  // The LIST (two pages of test_options()'s 2) and the watch asked for PartialObjectMetadata, as
  // client-go's metadata client does.
  std::vector<std::string> list_accepts, watch_accepts;
  for (const auto& request : w.server.received()) {
    if (request.target.starts_with(std::string(kCrds) + "?limit=2")) list_accepts.push_back(request.accept);
    if (request.target.starts_with(std::string(kCrds) + "?watch=1")) watch_accepts.push_back(request.accept);
  }
  CHECK(list_accepts == std::vector<std::string>(2, karta::kube::kMetadataListAccept));
  REQUIRE(eventually([&] { return w.server.open_watches() == 2; }));
  watch_accepts.clear();
  for (const auto& request : w.server.received()) {
    if (request.target.starts_with(std::string(kCrds) + "?watch=1")) watch_accepts.push_back(request.accept);
  }
  CHECK(watch_accepts == std::vector<std::string>{karta::kube::kMetadataAccept});
  // One GET, of the one CRD a definition uses; the other two are only indexed.
  CHECK(w.gets_of("trainers.acme.example.com") == 1);
  CHECK(w.crd_gets() == 1);
  CHECK(w.metric("karta_cluster_crds_indexed") == "3");
  CHECK(w.metric("karta_cluster_crd_schemas_held") == "1");
  CHECK(w.metric("karta_cluster_crd_gets_total") == "1");
  CHECK(w.patches(workload("acme.example.com", "Trainer")));
}

TEST_CASE("an event of a CRD no definition uses updates the index and does not rebuild the served state") {
  Watching w({karta_for("trainer", "acme.example.com", "Trainer")},
             {trainer_crd(), trainer_crd("metrics.example.com", "Probe")});
  REQUIRE(eventually([&] { return w.server.open_watches() == 2; }));
  std::this_thread::sleep_for(300ms);  // three reload intervals: any reload of the start is done
  const std::string reloads = w.cluster_reloads();
  REQUIRE(reloads != "none");
  json probe = trainer_crd("metrics.example.com", "Probe");
  probe["metadata"]["labels"] = kIdleLabel;
  w.server.modify_in("apiextensions.k8s.io", "customresourcedefinitions", probe);
  w.server.add_to("apiextensions.k8s.io", "customresourcedefinitions", trainer_crd("mesh.example.com", "Route"));
  REQUIRE(eventually([&] { return w.metric("karta_cluster_crd_events_ignored_total") == "2"; }));
  CHECK(w.metric("karta_cluster_crds_indexed") == "3");
  std::this_thread::sleep_for(300ms);
  CHECK(w.cluster_reloads() == reloads);  // nothing was rebuilt
  CHECK(w.crd_gets() == 1);               // and nothing fetched
  w.server.remove_from("apiextensions.k8s.io", "customresourcedefinitions", "probes.metrics.example.com");
  REQUIRE(eventually([&] { return w.metric("karta_cluster_crd_events_ignored_total") == "3"; }));
  CHECK(w.metric("karta_cluster_crds_indexed") == "2");
  std::this_thread::sleep_for(300ms);
  CHECK(w.cluster_reloads() == reloads);
}

TEST_CASE("a Karta that adds a kind makes exactly one GET of that kind's CRD") {
  Watching w({}, {trainer_crd(), trainer_crd("tune.example.com", "Tuner")});
  CHECK(w.crd_gets() == 0);  // no definition uses either group
  CHECK_FALSE(w.patches(workload("tune.example.com", "Tuner")));
  w.server.add(karta_for("tuner", "tune.example.com", "Tuner"));
  REQUIRE(eventually([&] { return w.patches(workload("tune.example.com", "Tuner")); }, 20s));
  std::this_thread::sleep_for(300ms);
  CHECK(w.gets_of("tuners.tune.example.com") == 1);
  CHECK(w.crd_gets() == 1);
  CHECK(w.metric("karta_cluster_crd_schemas_held") == "1");
}

TEST_CASE("/validate of a Karta whose kind no definition uses fetches its CRD on demand, and applying it fetches no more") {
  Watching w({}, {trainer_crd("tune.example.com", "Tuner")});
  // The path is checked against the CRD fetched for this request: a misspelt one is named.
  json misspelt = karta_for("tuner", "tune.example.com", "Tuner", ".spec.evaluatr.template");
  json response = w.validate(misspelt);
  CHECK(response["allowed"] == false);
  CHECK(response["status"]["message"].get<std::string>().find(
            "spec.structureDefinition.childComponents[1].specDefinition.podTemplateSpecPath: `.spec.evaluatr` is not in "
            "Tuner's schema at `.spec`; did you mean `evaluator`?") != std::string::npos);
  CHECK(w.gets_of("tuners.tune.example.com") == 1);
  json right = karta_for("tuner", "tune.example.com", "Tuner", ".spec.evaluator.template");
  CHECK(w.validate(right)["allowed"] == true);
  CHECK(w.gets_of("tuners.tune.example.com") == 1);  // from the cache
  // Applied, it is loaded with the schema already held.
  w.server.add(right);
  REQUIRE(eventually([&] { return w.patches(workload("tune.example.com", "Tuner")); }, 20s));
  std::this_thread::sleep_for(300ms);
  CHECK(w.gets_of("tuners.tune.example.com") == 1);
  // A kind no CRD of the cluster serves: nothing to fetch, the paths are not verified (a warning).
  json unknown = karta_for("unknown", "nowhere.example.com", "Ghost");
  json answer = w.validate(unknown);
  CHECK(answer["allowed"] == true);
  CHECK(w.crd_gets() == 1);
}

TEST_CASE("a CRD the definitions use that changes its schema changes what /validate answers") {
  json narrow = trainer_crd();
  narrow["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"].erase("evaluator");
  Watching w({karta_for("trainer", "acme.example.com", "Trainer")}, {narrow});
  json update = karta_for("trainer", "acme.example.com", "Trainer", ".spec.evaluator.template");
  json before = w.validate(update, "UPDATE");
  CHECK(before["allowed"] == false);
  CHECK(before["status"]["message"].get<std::string>().find("`.spec.evaluator` is not in Trainer's schema at `.spec`") !=
        std::string::npos);
  const std::string reloads = w.cluster_reloads();
  w.server.modify_in("apiextensions.k8s.io", "customresourcedefinitions", trainer_crd());
  REQUIRE(eventually([&] { return w.validate(update, "UPDATE")["allowed"] == true; }, 20s));
  CHECK(w.gets_of("trainers.acme.example.com") == 2);
  CHECK(w.cluster_reloads() != reloads);
  CHECK(w.metric("karta_cluster_crd_events_ignored_total") == "0");
}

TEST_CASE("a 410 when the CRDs are listed again keeps the state served") {
  Watching w({karta_for("trainer", "acme.example.com", "Trainer")}, {trainer_crd()});
  REQUIRE(eventually([&] { return w.server.open_watches() == 2; }));
  std::this_thread::sleep_for(300ms);
  const std::string reloads = w.cluster_reloads();
  const std::size_t lists_before = w.server.received().size();
  // etcd compacted past both watchers' resourceVersions, and the LISTs that follow fail with 410 a few times.
  w.server.fail_next(4, 410);
  w.server.compact(500);
  auto relisted = [&] {
    auto received = w.server.received();
    return std::count_if(received.begin() + static_cast<std::ptrdiff_t>(lists_before), received.end(),
                         [](const test::Received& r) { return r.target == std::string(kCrds) + "?limit=2"; });
  };
  // Served all along: ready, the Karta in force, the schema still there to check paths against.
  for (int i = 0; i < 10; ++i) {
    CHECK(w.client->request("GET", "/readyz").status == 200);
    CHECK(w.patches(workload("acme.example.com", "Trainer")));
    CHECK(w.validate(karta_for("trainer", "acme.example.com", "Trainer", ".spec.evaluatr.template"), "UPDATE")["allowed"] ==
          false);
    std::this_thread::sleep_for(50ms);
  }
  REQUIRE(eventually([&] { return relisted() >= 1 && w.server.open_watches() == 2; }, 20s));
  std::this_thread::sleep_for(300ms);
  // The LIST that finally came found the CRDs as they were: nothing fetched again, nothing rebuilt.
  CHECK(w.crd_gets() == 1);
  CHECK(w.cluster_reloads() == reloads);
  CHECK(w.patches(workload("acme.example.com", "Trainer")));
}

}  // namespace e2e_cluster_scale
