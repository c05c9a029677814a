// End to end: /validate of a Karta whose kind no loaded definition uses reads that kind's CRD from the
// API server (runtime/cluster_schemas.h) within the review's deadline (issue 58). It asks discovery which
// CRD serves the kind and GETs that one only, never every CRD of the group; it never admits a Karta
// unchecked under definitionPolicy enforce: when the CRD cannot be read in time, it denies and says to
// retry (warn admits with that warning). The API double answers slowly on demand (delay_gets).

#include <doctest/doctest.h>

#include <algorithm>
#include <future>

#include "support/fake_api_server.h"
#include "support/kube_fixtures.h"
#include "support/running_webhook.h"
#include "support/test_support.h"

namespace e2e_karta_crd_fetch {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kCrds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const std::string kGroup = "tune.example.com";

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// tests/data/trainer-crd.yaml (pod templates at .spec.worker.template and .spec.evaluator.template) as
// the CRD of `kind` in kGroup.
json crd_of(const std::string& kind) {
  json crd = test::document(test::source_dir() / "tests/data/trainer-crd.yaml");
  const std::string plural = lower(kind) + "s";
  crd["metadata"]["name"] = plural + "." + kGroup;
  crd["spec"]["group"] = kGroup;
  crd["spec"]["names"] = {{"kind", kind}, {"plural", plural}, {"singular", lower(kind)}};
  return crd;
}

// A Karta for `kind` whose evaluator's template path is misspelt: its CRD says so, and nothing else does.
json misspelt_karta(const std::string& kind) {
  return test::yaml(R"(
apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: )" + lower(kind) + R"(}
spec:
  structureDefinition:
    rootComponent:
      name: root
      kind: {group: )" + kGroup + R"(, version: v1, kind: )" + kind + R"(}
      statusDefinition:
        phaseDefinition: {path: .status.phase}
        statusMappings:
          running: [{byPhase: Running}]
    childComponents:
      - name: worker
        kind: {group: "", version: v1, kind: Pod}
        ownerRef: root
        specDefinition: {podTemplateSpecPath: .spec.worker.template}
      - name: evaluator
        kind: {group: "", version: v1, kind: Pod}
        ownerRef: root
        specDefinition: {podTemplateSpecPath: .spec.evaluatr.template}
)");
}

json denied_as_invalid(const std::string& kind) {
  return {{"uid", "k-1"}, {"allowed", false},
          {"status", {{"code", 422}, {"reason", "Invalid"},
                      {"message", "Karta " + lower(kind) + " is invalid: spec.structureDefinition.childComponents[1]"
                                  ".specDefinition.podTemplateSpecPath: `.spec.evaluatr` is not in " + kind +
                                  "'s schema at `.spec`; did you mean `evaluator`?"}}}};
}

const std::string kNotInTime = " could not be read in time (no answer within the request's deadline)";

json denied_as_unread(const std::string& kind) {
  return {{"uid", "k-1"}, {"allowed", false},
          {"status", {{"code", 503}, {"reason", "ServiceUnavailable"},
                      {"message", "Karta " + lower(kind) + " not admitted: the CustomResourceDefinition of " + kGroup +
                                  "/v1 " + kind + kNotInTime + ", so its paths cannot be checked "
                                  "(definitionPolicy.mode: enforce); retry"}}}};
}

// The webhook watching an API double that serves the CRDs of `kinds` in kGroup (and, as an API server
// does for an established CRD, their resources in discovery).
struct Cluster {
  test::TempDir dir;
  test::FakeApiServer server;
  std::unique_ptr<test::RunningWebhook> running;

  Cluster(const std::vector<std::string>& kinds, const std::string& policy) : server(dir.path, {}) {
    std::vector<json> crds;
    for (const std::string& kind : kinds) {
      crds.push_back(crd_of(kind));
      server.serve(test::FakeResource{kGroup, "v1", kind, lower(kind) + "s", lower(kind)});
    }
    server.serve(test::crd_resource(), std::move(crds));
    running = std::make_unique<test::RunningWebhook>(
        [&](karta::WebhookConfig& config) {
          config.cluster = server.connection();
          config.watcher_options = test::kube_fixtures::test_options();
        },
        policy);
    test::HttpsClient client(running->port, running->certificates.ca);
    REQUIRE(test::eventually([&] { return client.request("GET", "/readyz").status == 200; }, 20s * test::kSlowdown));
  }

  // The GETs the webhook made for a Karta's CRD since `from`: discovery of kGroup and CRDs by name.
  std::size_t crd_reads(std::size_t from) const {
    auto received = server.received();
    return std::count_if(received.begin() + static_cast<std::ptrdiff_t>(from), received.end(), [](const test::Received& r) {
      return r.target.starts_with(std::string(kCrds) + "/") || r.target.starts_with("/apis/" + kGroup + "/");
    });
  }
};

struct Answer {
  json response;
  Clock::duration took;
};

// /validate of `karta_object`, as the API server calls it (?timeout=), on a connection of its own.
Answer validate(const Cluster& cluster, const json& karta_object, const std::string& timeout = "5s") {
  test::HttpsClient client(cluster.running->port, cluster.running->certificates.ca);
  const std::string body = test::admission_review(karta_object, "CREATE", "k-1").dump();
  const auto sent = Clock::now();
  auto reply = client.request("POST", "/validate?timeout=" + timeout, body);
  const auto took = Clock::now() - sent;
  REQUIRE(reply.status == 200);
  return {json::parse(reply.body)["response"], took};
}

std::vector<std::string> tuner_kinds(int count) {
  std::vector<std::string> kinds;
  for (int i = 0; i < count; ++i) kinds.push_back("Tuner" + std::to_string(i));
  return kinds;
}

}  // namespace

TEST_CASE("a Karta in a 20-CRD group whose GETs take 1 s is checked against its own CRD within its deadline, 20 of 20 "
          "times, with 2 GETs") {
  Cluster cluster(tuner_kinds(20), "nothing: true\n");
  cluster.server.delay_gets(std::string(kCrds) + "/", 1s);
  cluster.server.delay_gets("/apis/" + kGroup + "/", 1s);
  // Each try a kind not read before, so that each reads discovery and a CRD: 20 of them, more than the
  // cache's 16 entries, so that its trim runs under every check.
  for (const std::string& kind : tuner_kinds(20)) {
    CAPTURE(kind);
    const std::size_t before = cluster.server.received().size();
    Answer answer = validate(cluster, misspelt_karta(kind));
    CHECK(answer.response == denied_as_invalid(kind));
    CHECK(answer.took >= 2s);  // both GETs were answered, a second each
    CHECK(answer.took < 3s);   // the deadline: 3 s for a call with ?timeout=5s
    CHECK(cluster.crd_reads(before) == 2);
  }
  // The discovery of kGroup/v1 and each kind's own CRD: no other CRD of the group was asked for.
  auto received = cluster.server.received();
  for (const std::string& kind : tuner_kinds(20)) {
    const std::string target = std::string(kCrds) + "/" + lower(kind) + "s." + kGroup;
    CHECK(std::count_if(received.begin(), received.end(), [&](const test::Received& r) { return r.target == target; }) == 1);
  }
}

TEST_CASE("two Kartas at once while the CRDs take 1 s: each is answered within its own deadline, neither admitted") {
  Cluster cluster(tuner_kinds(20), "nothing: true\n");
  cluster.server.delay_gets(std::string(kCrds) + "/", 1s);
  cluster.server.delay_gets("/apis/" + kGroup + "/", 1s);
  // /validate of a Karta runs on one worker: the second waits for the first, within its own deadline.
  auto first = std::async(std::launch::async, [&] { return validate(cluster, misspelt_karta("Tuner3")); });
  auto second = std::async(std::launch::async, [&] { return validate(cluster, misspelt_karta("Tuner4")); });
  std::vector<Answer> answers{first.get(), second.get()};
  int checked = 0;
  for (std::size_t i = 0; i < answers.size(); ++i) {
    const std::string kind = i == 0 ? "Tuner3" : "Tuner4";
    CAPTURE(kind);
    CHECK(answers[i].took < 3s + 200ms);
    CHECK((answers[i].response == denied_as_invalid(kind) || answers[i].response == denied_as_unread(kind)));
    if (answers[i].response == denied_as_invalid(kind)) ++checked;
  }
  CHECK(checked >= 1);  // the one that had the worker first was checked
}

TEST_CASE("a CRD that cannot be read in time: enforce denies at the deadline and says to retry, warn admits with a warning") {
  SUBCASE("enforce") {
    Cluster cluster({"Tuner"}, "nothing: true\n");
    cluster.server.delay_gets(std::string(kCrds) + "/", 10s);
    // ?timeout=2s leaves 1 s for the CRD; without ?timeout=, 3 s.
    Answer answer = validate(cluster, misspelt_karta("Tuner"), "2s");
    CHECK(answer.response == denied_as_unread("Tuner"));
    CHECK(answer.took >= 1s);
    CHECK(answer.took < 1s + 300ms);
  }
  SUBCASE("warn") {
    Cluster cluster({"Tuner"}, "definitionPolicy: {mode: warn}\n");
    cluster.server.delay_gets("/apis/" + kGroup + "/", 10s);
    Answer answer = validate(cluster, misspelt_karta("Tuner"));
    CHECK(answer.response ==
          json{{"uid", "k-1"}, {"allowed", true}, {"status", {{"code", 200}}},
               {"warnings", {"the CustomResourceDefinition of " + kGroup + "/v1 Tuner" + kNotInTime +
                             ": paths not verified against a schema"}}});
    CHECK(answer.took >= 3s);
    CHECK(answer.took < 3s + 300ms);
  }
}

}  // namespace e2e_karta_crd_fetch
