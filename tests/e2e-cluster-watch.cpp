// End to end: the whole webhook watching the local API server for Kartas and CRDs, and /readyz until it has them.

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <thread>

#include "admission/admission_service.h"
#include "definitions/api/published_api.h"
#include "json/documents.h"
#include "k8s/openapi_schema.h"
#include "support/fake_api_server.h"
#include "support/kube_fixtures.h"
#include "support/running_webhook.h"
#include "support/test_support.h"

namespace e2e_cluster_watch {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

using test::FakeApiServer;
using namespace test::kube_fixtures;

// ---------------------------------------------------------------------------------------------------
// The webhook on a cluster: definitions arrive over the watch

TEST_CASE("a Karta arriving over a watch stream is used by the webhook, then removed when deleted") {
  test::TempDir dir;
  FakeApiServer server{dir.path, {}};
  test::RunningWebhook running([&](karta::WebhookConfig& config) {
    config.cluster = server.connection();
    config.watcher_options = test_options();
  });
  test::HttpsClient client(running.port, running.certificates.ca);
  json trainer = json::parse(R"({"apiVersion":"acme.example.com/v1","kind":"Trainer","metadata":{"name":"t","namespace":"ml"},
      "spec":{"worker":{"template":{"spec":{"containers":[{"name":"w","image":"i"}]}}}}})");
  auto mutate = [&] {
    return json::parse(client.request("POST", "/mutate", test::admission_review(trainer).dump()).body)["response"];
  };
  CHECK_FALSE(mutate().contains("patch"));

  json definition = test::document(test::source_dir() / "tests/data/trainer-karta.yaml");
  definition["metadata"]["resourceVersion"] = "1";
  server.add(definition);
  REQUIRE(eventually([&] { return mutate().contains("patch"); }, 20s));
  CHECK(test::decoded_patch(json{{"response", mutate()}}) == json::parse(R"([{"op":"add","path":"/spec/worker/template/metadata",
      "value":{"labels":{"platform.example.com/managed":"true"},"annotations":{"platform.example.com/owner":"platform"}}}])"));

  // A definition that fails validation is not loaded (an `env` in an expression).
  json hostile = definition;
  hostile["metadata"]["name"] = "hostile";
  hostile["spec"]["structureDefinition"]["rootComponent"]["kind"]["kind"] = "Other";
  hostile["spec"]["structureDefinition"]["childComponents"][0]["specDefinition"]["podTemplateSpecPath"] = "env.HOME";
  server.add(hostile);

  server.remove("trainer");
  CHECK(eventually([&] { return !mutate().contains("patch"); }, 20s));
  CHECK(client.request("GET", "/metrics").body.find("karta_reload_errors_total{source=\"cluster\"}") != std::string::npos);
}

TEST_CASE("Kartas as the API server stores them with the published CRD are loaded and used, every catalog kind") {
  // Each catalog definition as a GET of it returns after `kubectl apply`: the CRD's defaults filled in,
  // the server's metadata, kubectl's last-applied annotation and a status with conditions, fields the
  // webhook does not use.
  std::vector<json> stored;
  std::vector<std::string> names;
  const karta::PublishedSchemaHold schemas;  // parsed once for the whole catalog
  for (const auto& entry : fs::directory_iterator(test::source_dir() / "definitions/catalog")) {
    if (entry.path().extension() != ".yaml") continue;
    json object = test::document(entry.path());
    json applied = object;
    object["metadata"]["name"] = "cluster-" + object["metadata"]["name"].get<std::string>();
    REQUIRE(karta::prune_unknown_fields(*karta::karta_schema(), object) == std::vector<std::string>{});
    karta::apply_schema_defaults(*karta::karta_schema(), object);
    object["metadata"]["uid"] = "3f1c2b9e-0000-4000-8000-" + std::to_string(100000000000 + stored.size());
    object["metadata"]["generation"] = 1;
    object["metadata"]["creationTimestamp"] = "2026-11-30T10:00:00Z";
    object["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = applied.dump();
    object["metadata"]["managedFields"] = json::array(
        {{{"manager", "kubectl-client-side-apply"}, {"operation", "Update"}, {"apiVersion", "run.ai/v1alpha1"},
          {"time", "2026-11-30T10:00:00Z"}, {"fieldsType", "FieldsV1"}, {"fieldsV1", {{"f:spec", json::object()}}}}});
    object["status"] = {{"conditions", json::array({{{"type", "Valid"}, {"status", "True"}, {"reason", "Validated"},
                                                     {"message", ""}, {"lastTransitionTime", "2026-11-30T10:00:01Z"},
                                                     {"observedGeneration", 1}}})}};
    CHECK(karta::validate_against_schema(*karta::karta_schema(), object) == std::vector<karta::SchemaViolation>{});
    names.push_back(object["metadata"]["name"]);
    stored.push_back(std::move(object));
  }
  REQUIRE(stored.size() == 35);
  // A defaulted field is there, as the API server writes it.
  json jobset = *std::find_if(stored.begin(), stored.end(), [](const json& o) { return o["metadata"]["name"] == "cluster-jobset-v1alpha2"; });
  CHECK(jobset["spec"]["structureDefinition"]["rootComponent"]["statusDefinition"]["conditionsDefinition"] ==
        json::parse(R"({"path":".status.conditions","typeFieldName":"type","statusFieldName":"status",
                        "messageFieldName":"message","reasonFieldName":"reason"})"));

  test::TempDir dir;
  FakeApiServer server{dir.path, stored};
  std::ofstream(dir.path / "policy.yaml") << karta::read_text_file(test::source_dir() / "examples/policy.yaml");
  test::RunningWebhook running([&](karta::WebhookConfig& config) {
    config.cluster = server.connection();
    config.watcher_options = test_options();
    config.policy_file = dir.path / "policy.yaml";
  });
  test::HttpsClient client(running.port, running.certificates.ca);
  // Every stored Karta is in force: a second definition of each kind is refused, naming the stored one.
  auto validate = [&](json karta_object) {
    karta_object["metadata"] = {{"name", "another"}};
    json review = test::admission_review(karta_object, "CREATE", "v-1");
    review["request"]["kind"] = {{"group", "run.ai"}, {"version", "v1alpha1"}, {"kind", "Karta"}};
    return json::parse(client.request("POST", "/validate", review.dump()).body)["response"];
  };
  // Loading checks and compiles all 35 (about 2 s, ten times that under the sanitizers).
  REQUIRE(eventually([&] { return validate(stored[0])["allowed"] == false; }, 60s * test::kSlowdown));
  for (const json& object : stored) {
    CAPTURE(object["metadata"]["name"]);
    json response = validate(object);
    CHECK(response["allowed"] == false);
    CHECK(response["status"]["message"].get<std::string>().find("is already defined by Karta \"" +
                                                               object["metadata"]["name"].get<std::string>() + "\"") !=
          std::string::npos);
  }
  // None was rejected (a rejected Karta counts as a reload error of the cluster source).
  CHECK(client.request("GET", "/metrics").body.find("karta_reload_errors_total{source=\"cluster\"}") == std::string::npos);
  // And the demo JobSet gets the patch the built-in definition gives.
  json demo = test::document(test::source_dir() / "examples/jobset-demo.yaml");
  karta::AdmissionState builtin{test::builtin_catalog(), test::policy_from_yaml(karta::read_text_file(dir.path / "policy.yaml"))};
  json expected = karta::AdmissionService::mutate(karta::request_for_object(demo), builtin).decision.patch.value();
  CHECK(expected.size() == 9);
  CHECK(test::decoded_patch(json::parse(client.request("POST", "/mutate", test::admission_review(demo).dump()).body)) ==
        expected);
}

TEST_CASE("watching a cluster, /readyz waits until the first LISTs of Kartas and CRDs are loaded and served") {
  // Ready means the cluster's definitions are in force: a pod taking traffic before then would admit
  // workloads of the cluster's kinds unpatched.
  test::TempDir dir;
  json definition = test::document(test::source_dir() / "tests/data/trainer-karta.yaml");
  definition["metadata"]["resourceVersion"] = "1";
  FakeApiServer server{dir.path, {definition}};  // the CRD collection is not served yet: its LIST fails
  test::RunningWebhook running([&](karta::WebhookConfig& config) {
    config.cluster = server.connection();
    config.watcher_options = test_options();
  });
  test::HttpsClient client(running.port, running.certificates.ca);
  REQUIRE(eventually([&] { return server.targets().size() >= 4; }, 10s));  // both LISTs tried, and retried
  auto waiting = client.request("GET", "/readyz");
  CHECK(waiting.status == 503);
  CHECK(waiting.body == "waiting for the first LIST of Kartas and CustomResourceDefinitions\n");
  CHECK_FALSE(running.webhook->ready());

  server.serve(test::crd_resource());
  REQUIRE(eventually([&] { return client.request("GET", "/readyz").status == 200; }, 20s));
  CHECK(running.webhook->ready());
  // Once ready, the cluster's Karta is what admission uses.
  json trainer = json::parse(R"({"apiVersion":"acme.example.com/v1","kind":"Trainer","metadata":{"name":"t","namespace":"ml"},
      "spec":{"worker":{"template":{"spec":{"containers":[{"name":"w","image":"i"}]}}}}})");
  auto review = json::parse(client.request("POST", "/mutate", test::admission_review(trainer).dump()).body);
  CHECK(test::decoded_patch(review) == json::parse(R"([{"op":"add","path":"/spec/worker/template/metadata",
      "value":{"labels":{"platform.example.com/managed":"true"},"annotations":{"platform.example.com/owner":"platform"}}}])"));
}

TEST_CASE("without a cluster to watch, /readyz is ready as soon as the definitions are loaded") {
  test::RunningWebhook running;
  test::HttpsClient client(running.port, running.certificates.ca);
  auto reply = client.request("GET", "/readyz");
  CHECK(reply.status == 200);
  CHECK(reply.body == "ok\n");
}

TEST_CASE("an API server that answers every watch of Kartas with 410 gets a handful of LISTs and no reloads") {
  // Issue 26: `serve` re-LISTed in a loop (45 LISTs of Kartas and 86 reloads in 10 s). With client-go's
  // backoff (production defaults: 0.8 s doubling, jitter up to as much again) the LISTs come at 0 s, then
  // 0.8-1.6 s later, then 1.6-3.2 s after that: three within 5 s at most, the fourth at 5.6 s at the soonest.
  test::TempDir dir;
  json definition = test::document(test::source_dir() / "tests/data/trainer-karta.yaml");
  definition["metadata"]["resourceVersion"] = "1";
  FakeApiServer server{dir.path, {definition}, {.every_watch_expires = true}};
  server.serve(test::crd_resource());
  test::RunningWebhook running([&](karta::WebhookConfig& config) {
    config.cluster = server.connection();
    config.watcher_options = {};  // production defaults
  });
  test::HttpsClient client(running.port, running.certificates.ca);
  const std::string karta_list = "/apis/run.ai/v1alpha1/kartas?limit=100";  // pages of kube::kListPageSize
  auto lists = [&] {
    std::vector<std::chrono::steady_clock::time_point> at;
    for (const auto& request : server.received()) {
      if (request.target == karta_list) at.push_back(request.at);
    }
    return at;
  };
  auto cluster_reloads = [&] {
    std::string metrics = client.request("GET", "/metrics").body;
    const std::string name = "karta_reloads_total{source=\"cluster\"} ";
    std::size_t at = metrics.find(name);
    return at == std::string::npos ? std::string("none") : metrics.substr(at + name.size(), metrics.find('\n', at) - at - name.size());
  };
  REQUIRE(eventually([&] { return client.request("GET", "/readyz").status == 200; }, 20s));
  REQUIRE(eventually([&] { return lists().size() >= 2; }, 5s));
  std::this_thread::sleep_for(200ms);  // the reload of the first LIST, if still pending, is done
  std::string reloads = cluster_reloads();
  CHECK(reloads != "none");
  auto first = lists().at(0);
  std::this_thread::sleep_until(first + 5s);
  auto at = lists();
  std::size_t within = std::count_if(at.begin(), at.end(), [&](auto t) { return t < first + 5s; });
  CHECK(within <= 3);
  CHECK(within >= 2);
  REQUIRE(at.size() >= 3);
  CHECK(at[1] - at[0] >= 800ms);
  CHECK(at[1] - at[0] < 1600ms + 200ms * test::kSlowdown);
  CHECK(at[2] - at[1] >= 1600ms);
  CHECK(at[2] - at[1] < 3200ms + 200ms * test::kSlowdown);
  // The LISTs after the first found the same Karta: no reload of the catalog.
  CHECK(cluster_reloads() == reloads);
  // And the webhook serves with it all along.
  json trainer = json::parse(R"({"apiVersion":"acme.example.com/v1","kind":"Trainer","metadata":{"name":"t","namespace":"ml"},
      "spec":{"worker":{"template":{"spec":{"containers":[{"name":"w","image":"i"}]}}}}})");
  CHECK(json::parse(client.request("POST", "/mutate", test::admission_review(trainer).dump()).body)["response"].contains("patch"));
}

}  // namespace e2e_cluster_watch
