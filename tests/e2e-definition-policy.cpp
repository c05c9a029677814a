// End to end over HTTPS: definitionPolicy.mode. With `warn`, /validate admits a Karta with faults and
// returns each fault as a warning, counted in /metrics; the webhook then loads a cluster Karta whose only
// faults are paths (those paths yield nothing) and never one with unsafe jq. With `enforce` (the default)
// both are denied.

#include <doctest/doctest.h>

#include <algorithm>
#include <mutex>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include "support/fake_api_server.h"
#include "support/kube_fixtures.h"
#include "support/running_webhook.h"

namespace e2e_definition_policy {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;
using namespace std::chrono_literals;

namespace {

// The process's log lines (their messages) while it lives: the loader says why a Karta is not loaded.
class CapturedLog {
 public:
  CapturedLog() : previous_(spdlog::default_logger()), sink_(std::make_shared<Sink>()) {
    auto logger = std::make_shared<spdlog::logger>("captured", sink_);
    logger->set_level(spdlog::level::info);
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  bool has(const std::string& line) const {
    auto lines = sink_->lines();
    return std::find(lines.begin(), lines.end(), line) != lines.end();
  }

 private:
  class Sink : public spdlog::sinks::base_sink<std::mutex> {
   public:
    std::vector<std::string> lines() {
      std::lock_guard lock(mutex_);
      return lines_;
    }

   protected:
    void sink_it_(const spdlog::details::log_msg& message) override {
      lines_.emplace_back(message.payload.data(), message.payload.size());
    }
    void flush_() override {}

   private:
    std::vector<std::string> lines_;
  };
  std::shared_ptr<spdlog::logger> previous_;
  std::shared_ptr<Sink> sink_;
};

// A Karta for `kind` (Trainer's CRD is tests/data/trainer-crd.yaml) whose worker template is at .spec.worker.template and evaluator's at `evaluator_path`.
json karta_for(const std::string& name, const std::string& kind, const std::string& evaluator_path) {
  return test::yaml(R"(
apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: )" + name + R"(}
spec:
  structureDefinition:
    rootComponent:
      name: root
      kind: {group: acme.example.com, version: v1, kind: )" + kind + R"(}
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
        specDefinition: {podTemplateSpecPath: ")" + evaluator_path + R"("}
)");
}

// The evaluator's path misspelt: a path fault only.
json misspelt() { return karta_for("trainer-misspelt", "Trainer", ".spec.evaluatr.template"); }
// Reads the environment: a safety fault. Its kind, Tuner, has no CRD here.
json unsafe() { return karta_for("tuner-unsafe", "Tuner", "$ENV.HOME"); }

const std::string kMisspeltFault =
    "spec.structureDefinition.childComponents[1].specDefinition.podTemplateSpecPath: `.spec.evaluatr` is not in "
    "Trainer's schema at `.spec`; did you mean `evaluator`?";
const std::string kUnsafeFault =
    "spec.structureDefinition.childComponents[1].specDefinition.podTemplateSpecPath: $ENV.HOME: `$ENV` is not allowed: "
    "it would expose the webhook's environment";

json workload(const std::string& kind) {
  return test::yaml("{apiVersion: acme.example.com/v1, kind: " + kind + R"(, metadata: {name: t, namespace: ml},
      spec: {worker: {template: {spec: {containers: [{name: w, image: i}]}}},
             evaluator: {template: {spec: {containers: [{name: e, image: i}]}}}}})");
}

std::string policy(const std::string& mode) {
  return "podTemplates:\n  labels: {platform.example.com/managed: \"true\"}\ndefinitionPolicy: {mode: " + mode + "}\n";
}

// The response of /validate for a Karta, over HTTPS.
json validate(test::HttpsClient& client, const json& karta_object) {
  auto reply = client.request("POST", "/validate", test::admission_review(karta_object, "CREATE", "k-1").dump());
  REQUIRE(reply.status == 200);
  return json::parse(reply.body)["response"];
}

json mutate(test::HttpsClient& client, const json& object) {
  auto reply = client.request("POST", "/mutate", test::admission_review(object, "CREATE", "w-1").dump());
  REQUIRE(reply.status == 200);
  return json::parse(reply.body);
}

}  // namespace

TEST_CASE("definitionPolicy warn admits a Karta with faults, each fault a warning, and loads only the one whose faults are paths") {
  CapturedLog log;
  test::TempDir crds, cluster;
  std::filesystem::copy_file(test::source_dir() / "tests/data/trainer-crd.yaml", crds.path / "trainer.yaml");
  test::FakeApiServer server{cluster.path, {}};
  test::RunningWebhook running(
      [&](karta::WebhookConfig& config) {
        config.crd_directories = {crds.path};
        config.cluster = server.connection();
        config.watcher_options = test::kube_fixtures::test_options();
      },
      policy("warn"));
  test::HttpsClient client(running.port, running.certificates.ca);

  json admitted = validate(client, misspelt());
  CHECK(admitted == json{{"uid", "k-1"}, {"allowed", true}, {"status", {{"code", 200}}},
                         {"warnings", {"Karta trainer-misspelt admitted with 1 fault (definitionPolicy.mode: warn): the "
                                       "paths at fault yield nothing",
                                       kMisspeltFault}}});
  admitted = validate(client, unsafe());
  CHECK(admitted == json{{"uid", "k-1"}, {"allowed", true}, {"status", {{"code", 200}}},
                         {"warnings", {"Karta tuner-unsafe admitted with 1 fault (definitionPolicy.mode: warn): "
                                       "karta-webhook does not load it",
                                       kUnsafeFault,
                                       "no CustomResourceDefinition known for acme.example.com/v1 Tuner: paths not "
                                       "verified against a schema"}}});
  std::string metrics = client.request("GET", "/metrics").body;
  // Neither kind is a loaded definition's yet: both counted as `other`, so that the kinds Kartas name
  // cannot add series at will.
  CHECK(metrics.find("karta_definition_faults_admitted_total{kind=\"other\"} 2\n") != std::string::npos);
  CHECK(metrics.find("karta_definition_faults_admitted_total{kind=\"acme") == std::string::npos);
  CHECK(metrics.find("karta_admission_requests_total{endpoint=\"validate\",operation=\"CREATE\",kind=\"unregistered\","
                     "result=\"allowed\"} 2\n") != std::string::npos);

  // Both stored, as the API server stores what the webhook admitted. The misspelt one is loaded: its
  // worker's template is patched, and the misspelt evaluator path yields nothing. The unsafe one is not:
  // its kind gets no patch, and the reload counts it as an error of the cluster source.
  server.add(misspelt());
  server.add(unsafe());
  const json worker_patch = json::parse(R"([{"op":"add","path":"/spec/worker/template/metadata",
      "value":{"labels":{"platform.example.com/managed":"true"}}}])");
  REQUIRE(test::eventually([&] { return test::decoded_patch(mutate(client, workload("Trainer"))) == worker_patch; },
                           20s * test::kSlowdown));
  REQUIRE(test::eventually([&] {
    return client.request("GET", "/metrics").body.find("karta_reload_errors_total{source=\"cluster\"}") != std::string::npos;
  }, 20s * test::kSlowdown));
  json tuner = mutate(client, workload("Tuner"));
  CHECK(tuner["response"] == json{{"uid", "w-1"}, {"allowed", true}, {"status", {{"code", 200}}}});
  CHECK(log.has("Karta tuner-unsafe not loaded: " + kUnsafeFault));
  CHECK(log.has("Karta trainer-misspelt loaded with 1 path fault (definitionPolicy.mode: warn), which yield nothing: " +
                kMisspeltFault));
  // The loaded Karta is in force: a second definition of Trainer is one more fault, said as a warning.
  json second = misspelt();
  second["metadata"]["name"] = "trainer-again";
  CHECK(validate(client, second)["warnings"] ==
        json{"Karta trainer-again admitted with 2 faults (definitionPolicy.mode: warn): karta-webhook does not load it",
             kMisspeltFault,
             "spec.structureDefinition.rootComponent.kind: acme.example.com/v1 Trainer is already defined by Karta "
             "\"trainer-misspelt\" (KAI Scheduler refuses two definitions of one kind)"});
  // Trainer is now a loaded definition's kind: counted under its own name.
  metrics = client.request("GET", "/metrics").body;
  CHECK(metrics.find("karta_definition_faults_admitted_total{kind=\"acme.example.com/v1/Trainer\"} 2\n") != std::string::npos);
  CHECK(metrics.find("karta_definition_faults_admitted_total{kind=\"other\"} 2\n") != std::string::npos);
}

TEST_CASE("definitionPolicy enforce, the default, denies a Karta with a path fault and one with unsafe jq") {
  test::TempDir crds;
  std::filesystem::copy_file(test::source_dir() / "tests/data/trainer-crd.yaml", crds.path / "trainer.yaml");
  for (const std::string& written : {std::string("definitionPolicy: {mode: enforce}\n"), std::string("nothing: true\n")}) {
    CAPTURE(written);
    test::RunningWebhook running([&](karta::WebhookConfig& config) { config.crd_directories = {crds.path}; }, written);
    test::HttpsClient client(running.port, running.certificates.ca);
    CHECK(validate(client, misspelt()) ==
          json{{"uid", "k-1"}, {"allowed", false},
               {"status", {{"code", 422}, {"reason", "Invalid"},
                           {"message", "Karta trainer-misspelt is invalid: " + kMisspeltFault}}}});
    CHECK(validate(client, unsafe()) ==
          json{{"uid", "k-1"}, {"allowed", false},
               {"status", {{"code", 422}, {"reason", "Invalid"}, {"message", "Karta tuner-unsafe is invalid: " + kUnsafeFault}}},
               {"warnings", {"no CustomResourceDefinition known for acme.example.com/v1 Tuner: paths not verified "
                             "against a schema"}}});
    CHECK(client.request("GET", "/metrics").body.find("karta_definition_faults_admitted_total{") == std::string::npos);
  }
}

}  // namespace e2e_definition_policy
