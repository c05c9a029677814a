// Status as the published Go implementation computes it (Workload Map's Accessor.ExtractStatus): every
// matched status, in the published order, the state reported (the first of them), and Undefined when
// nothing matches. Each matcher feature on a made-up kind; then every framework of the catalog on
// objects whose status blocks are written from the framework's CRD (tests/data/status/).

#include <doctest/doctest.h>

#include <filesystem>
#include <set>

#include "cli/inspect.h"
#include "admission/admission_review.h"
#include "definitions/catalog.h"
#include "definitions/status.h"
#include "support/test_support.h"

namespace unit_status {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

namespace {

// A made-up kind `example.com/v1 Gizmo` whose statusDefinition is `status_definition` (YAML).
std::shared_ptr<const karta::CompiledDefinition> gizmo(const std::string& status_definition) {
  return test::compile_definition(test::made_up_karta("gizmo", "Gizmo") + "      statusDefinition:\n" + status_definition);
}

json gizmo_object(const std::string& status_yaml) {
  json object = {{"apiVersion", "example.com/v1"}, {"kind", "Gizmo"}, {"metadata", {{"name", "g"}}}};
  if (!status_yaml.empty()) object["status"] = test::yaml(status_yaml);
  return object;
}

// {"state": ..., "statuses": [...]} of the object: what inspect reports.
json state_of(const karta::CompiledDefinition& definition, const json& object) {
  json report = karta::inspect_workload(object, definition, {"nvidia.com/gpu"});
  return {{"state", report["state"]}, {"statuses", report["statuses"]}};
}

json expect(const std::string& state, std::vector<std::string> statuses) {
  return {{"state", state}, {"statuses", statuses}};
}

const char* kConditionsAndPhase = R"(        conditionsDefinition: {path: .status.conditions}
        phaseDefinition: {path: .status.phase}
)";

}  // namespace

TEST_CASE("a status's matchers are OR'd: the second one holding is enough") {
  auto d = gizmo(std::string(kConditionsAndPhase) + R"(        statusMappings:
          running: [{byPhase: Active}, {byPhase: Serving}]
)");
  CHECK(state_of(*d, gizmo_object("{phase: Serving}")) == expect("Running", {"Running"}));
  CHECK(state_of(*d, gizmo_object("{phase: Active}")) == expect("Running", {"Running"}));
  CHECK(state_of(*d, gizmo_object("{phase: Stopped}")) == expect("Undefined", {"Undefined"}));
}

TEST_CASE("inside a matcher byPhase, every byConditions entry and byExpression must all hold") {
  auto d = gizmo(std::string(kConditionsAndPhase) + R"(        statusMappings:
          degraded:
            - byPhase: Running
              byConditions: [{type: Ready, status: "False"}, {type: Scheduled, status: "True"}]
              byExpression: {expression: '.status.restarts > 2', expectedResult: "true"}
)");
  const std::string all = "{phase: Running, restarts: 3, conditions: [{type: Ready, status: 'False'}, {type: Scheduled, status: 'True'}]}";
  CHECK(state_of(*d, gizmo_object(all)) == expect("Degraded", {"Degraded"}));
  const std::string wrong_phase = "{phase: Pending, restarts: 3, conditions: [{type: Ready, status: 'False'}, {type: Scheduled, status: 'True'}]}";
  CHECK(state_of(*d, gizmo_object(wrong_phase)) == expect("Undefined", {"Undefined"}));
  const std::string one_condition = "{phase: Running, restarts: 3, conditions: [{type: Ready, status: 'False'}]}";
  CHECK(state_of(*d, gizmo_object(one_condition)) == expect("Undefined", {"Undefined"}));
  const std::string few_restarts = "{phase: Running, restarts: 1, conditions: [{type: Ready, status: 'False'}, {type: Scheduled, status: 'True'}]}";
  CHECK(state_of(*d, gizmo_object(few_restarts)) == expect("Undefined", {"Undefined"}));
}

TEST_CASE("a byConditions entry checks status and reason only when they are given") {
  auto d = gizmo(std::string(kConditionsAndPhase) + R"(        statusMappings:
          running: [{byConditions: [{type: Ready}]}]
          failed: [{byConditions: [{type: Ready, status: "False", reason: CrashLoop}]}]
          completed: [{byConditions: [{type: Done, status: ""}]}]
)");
  // type only: any status; the failed entry needs its reason too.
  CHECK(state_of(*d, gizmo_object("{conditions: [{type: Ready, status: 'False', reason: Starting}]}")) ==
        expect("Running", {"Running"}));
  CHECK(state_of(*d, gizmo_object("{conditions: [{type: Ready, status: 'False', reason: CrashLoop}]}")) ==
        expect("Running", {"Running", "Failed"}));
  // status "" is not given (Go dereferences it to "" and skips the comparison).
  CHECK(state_of(*d, gizmo_object("{conditions: [{type: Done, status: 'Unknown'}]}")) == expect("Completed", {"Completed"}));
  // A condition whose status is not a string has none: it fails a status comparison.
  CHECK(state_of(*d, gizmo_object("{conditions: [{type: Ready, status: false, reason: CrashLoop}]}")) ==
        expect("Running", {"Running"}));
}

TEST_CASE("conditions are read with the conditionsDefinition's field names, and of two of one type the later counts") {
  auto d = gizmo(R"(        conditionsDefinition: {path: .status.checks, typeFieldName: kind, statusFieldName: ok, reasonFieldName: why, messageFieldName: text}
        statusMappings:
          failed: [{byConditions: [{type: Healthy, status: "no", reason: Disk}]}]
          running: [{byConditions: [{type: Healthy, status: "yes"}]}]
)");
  json object = gizmo_object("{checks: [{kind: Healthy, ok: 'yes'}, {kind: Healthy, ok: 'no', why: Disk, text: disk full}]}");
  CHECK(state_of(*d, object) == expect("Failed", {"Failed"}));
  json report = karta::inspect_workload(object, *d, {});
  CHECK(report["conditions"] == json::parse(R"([{"type":"Healthy","status":"yes","reason":null,"message":null},
      {"type":"Healthy","status":"no","reason":"Disk","message":"disk full"}])"));
}

TEST_CASE("byExpression compares as text: (<expression>) | tostring == expectedResult") {
  auto d = gizmo(R"(        statusMappings:
          running: [{byExpression: {expression: '.status.readyReplicas', expectedResult: "3"}}]
          completed: [{byExpression: {expression: '.status.done', expectedResult: "true"}}]
          failed: [{byExpression: {expression: '.status.reason', expectedResult: "OOMKilled"}}]
          degraded: [{byExpression: {expression: '.status.lost', expectedResult: "null"}}]
)");
  // `.status.lost` is absent, and null | tostring is "null": Degraded holds in each case below.
  CHECK(state_of(*d, gizmo_object("{readyReplicas: 3}")) == expect("Running", {"Running", "Degraded"}));
  CHECK(state_of(*d, gizmo_object("{readyReplicas: 3.0}")) == expect("Running", {"Running", "Degraded"}));
  CHECK(state_of(*d, gizmo_object("{readyReplicas: '3', done: true, lost: 1}")) == expect("Running", {"Running", "Completed"}));
  CHECK(state_of(*d, gizmo_object("{done: 'true', lost: 1}")) == expect("Completed", {"Completed"}));
  CHECK(state_of(*d, gizmo_object("{reason: OOMKilled, lost: 0}")) == expect("Failed", {"Failed"}));
  CHECK(state_of(*d, gizmo_object("{readyReplicas: 2, lost: 0}")) == expect("Undefined", {"Undefined"}));
}

TEST_CASE("several statuses matching are all reported in the published order, and the first is the state") {
  auto d = gizmo(std::string(kConditionsAndPhase) + R"(        statusMappings:
          initializing: [{byPhase: Running}]
          degraded: [{byPhase: Running}]
          running: [{byPhase: Running}]
          failed: [{byPhase: Running}]
          suspended: [{byPhase: Running}]
)");
  // kli lists Resuming, Suspending, Suspended, Running, Failed, Completed, Initializing, Degraded.
  CHECK(state_of(*d, gizmo_object("{phase: Running}")) ==
        expect("Suspended", {"Suspended", "Running", "Failed", "Initializing", "Degraded"}));
  auto two = gizmo(std::string(kConditionsAndPhase) + R"(        statusMappings:
          initializing: [{byPhase: Running}]
          running: [{byPhase: Running}]
)");
  CHECK(state_of(*two, gizmo_object("{phase: Running}")) == expect("Running", {"Running", "Initializing"}));
}

TEST_CASE("all eight statuses can be reported, each from its own mapping") {
  auto d = gizmo(R"(        phaseDefinition: {path: .status.phase}
        statusMappings:
          initializing: [{byPhase: Initializing}]
          running: [{byPhase: Running}]
          completed: [{byPhase: Completed}]
          failed: [{byPhase: Failed}]
          degraded: [{byPhase: Degraded}]
          suspended: [{byPhase: Suspended}]
          suspending: [{byPhase: Suspending}]
          resuming: [{byPhase: Resuming}]
)");
  for (const char* status : {"Initializing", "Running", "Completed", "Failed", "Degraded", "Suspended", "Suspending", "Resuming"}) {
    CAPTURE(status);
    CHECK(state_of(*d, gizmo_object(std::string("{phase: ") + status + "}")) == expect(status, {status}));
  }
  CHECK(state_of(*d, gizmo_object("{phase: Paused}")) == expect("Undefined", {"Undefined"}));
}

TEST_CASE("nothing matching gives Undefined, and so does an object without status, unless a mapping says otherwise") {
  auto d = gizmo(std::string(kConditionsAndPhase) + R"(        statusMappings:
          running: [{byPhase: Running}]
)");
  CHECK(state_of(*d, gizmo_object("")) == expect("Undefined", {"Undefined"}));
  // A mapping that holds on an absent status (here: no conditions at all means initializing).
  auto pending = gizmo(std::string(kConditionsAndPhase) + R"(        statusMappings:
          initializing: [{byExpression: {expression: '.status.conditions // [] | length == 0', expectedResult: "true"}}]
)");
  CHECK(state_of(*pending, gizmo_object("")) == expect("Initializing", {"Initializing"}));
  // Every catalog kind, on a sample without status: Undefined (none of the catalog's mappings holds there).
  json jobset = test::document(test::source_dir() / "examples/jobset-demo.yaml");
  jobset.erase("status");
  const auto* definition = test::builtin_catalog().find({"jobset.x-k8s.io", "v1alpha2", "JobSet"});
  REQUIRE(definition != nullptr);
  CHECK(state_of(*definition, jobset) == expect("Undefined", {"Undefined"}));
}

TEST_CASE("a matcher that names nothing holds, as in the published implementation") {
  auto d = gizmo(R"(        statusMappings:
          initializing: [{}]
)");
  CHECK(state_of(*d, gizmo_object("")) == expect("Initializing", {"Initializing"}));
}

TEST_CASE("an expression that fails matches nothing and says which field failed") {
  auto d = gizmo(R"(        statusMappings:
          running: [{byExpression: {expression: '.status.ready | tonumber', expectedResult: "1"}}]
)");
  json report = karta::inspect_workload(gizmo_object("{ready: many}"), *d, {});
  CHECK(report["state"] == "Undefined");
  REQUIRE(report["notes"].size() == 1);
  CHECK(report["notes"][0].get<std::string>().starts_with(
      "spec.structureDefinition.rootComponent.statusDefinition.statusMappings.running[0].byExpression.expression: "));
}

namespace {

struct StatusExample {
  const char* file;
  const char* state;
  std::vector<std::string> statuses;
};

// Every example of tests/data/status/, with what the published tools show for it.
const std::vector<StatusExample>& examples() {
  static const std::vector<StatusExample> list = {
      {"jobset-running.yaml", "Running", {"Running"}},
      {"jobset-completed.yaml", "Completed", {"Completed"}},
      {"jobset-failed.yaml", "Failed", {"Failed"}},
      {"jobset-suspended.yaml", "Suspended", {"Suspended"}},
      {"jobset-resuming.yaml", "Resuming", {"Resuming"}},
      {"leaderworkerset-running.yaml", "Running", {"Running"}},
      {"leaderworkerset-progressing.yaml", "Initializing", {"Initializing"}},
      {"pytorchjob-running.yaml", "Running", {"Running", "Initializing"}},
      {"pytorchjob-succeeded.yaml", "Completed", {"Completed", "Initializing"}},
      {"pytorchjob-failed.yaml", "Failed", {"Failed", "Initializing"}},
      {"pytorchjob-suspended.yaml", "Suspended", {"Suspended", "Initializing"}},
      {"mpijob-v1-running.yaml", "Running", {"Running", "Initializing"}},
      {"mpijob-v1-failed.yaml", "Failed", {"Failed", "Initializing"}},
      {"mpijob-v1-suspended.yaml", "Suspended", {"Suspended", "Initializing"}},
      {"mpijob-v2beta1-running.yaml", "Running", {"Running", "Initializing"}},
      {"mpijob-v2beta1-succeeded.yaml", "Completed", {"Completed", "Initializing"}},
      {"mpijob-v2beta1-suspended.yaml", "Suspended", {"Suspended", "Initializing"}},
      {"raycluster-running.yaml", "Running", {"Running"}},
      {"raycluster-degraded.yaml", "Degraded", {"Degraded"}},
      {"raycluster-suspended.yaml", "Suspended", {"Suspended"}},
      {"rayjob-running.yaml", "Running", {"Running"}},
      {"rayjob-complete.yaml", "Completed", {"Completed"}},
      {"rayjob-failed.yaml", "Failed", {"Failed"}},
      {"rayjob-suspended.yaml", "Suspended", {"Suspended"}},
      {"rayservice-running.yaml", "Running", {"Running"}},
      {"rayservice-failed.yaml", "Failed", {"Failed"}},
      {"rayservice-degraded.yaml", "Degraded", {"Degraded"}},
      {"inferenceservice-running.yaml", "Running", {"Running"}},
      {"inferenceservice-failed.yaml", "Failed", {"Failed", "Degraded"}},
      {"knativeservice-running.yaml", "Running", {"Running"}},
      {"knativeservice-failed.yaml", "Failed", {"Failed"}},
      {"nimservice-running.yaml", "Running", {"Running"}},
      {"nimservice-failed.yaml", "Failed", {"Failed"}},
      {"milvus-running.yaml", "Running", {"Running"}},
      {"milvus-unhealthy.yaml", "Degraded", {"Degraded"}},
      {"podcliqueset-running.yaml", "Running", {"Running"}},
      {"podcliqueset-failed.yaml", "Failed", {"Failed", "Degraded"}},
      {"podcliqueset-succeeded.yaml", "Completed", {"Completed"}},
      {"dynamographdeployment-v1alpha1-running.yaml", "Running", {"Running"}},
      {"dynamographdeployment-v1alpha1-failed.yaml", "Failed", {"Failed"}},
      {"dynamographdeployment-v1beta1-running.yaml", "Running", {"Running"}},
      {"dynamographdeployment-v1beta1-pending.yaml", "Initializing", {"Initializing"}},
      {"llminferenceservice-running.yaml", "Running", {"Running"}},
      {"llminferenceservice-starting.yaml", "Initializing", {"Initializing"}},
      {"llminferenceservice-missing-config.yaml", "Failed", {"Failed", "Initializing"}},
      {"llminferenceservice-stopped.yaml", "Suspended", {"Suspended"}},
      {"sandbox-running.yaml", "Running", {"Running"}},
      {"sandbox-suspended.yaml", "Suspended", {"Suspended"}},
      {"sandbox-pod-failed.yaml", "Failed", {"Failed"}},
      {"sandbox-expired.yaml", "Completed", {"Completed"}},
  };
  return list;
}

std::filesystem::path status_dir() { return test::source_dir() / "tests/data/status"; }

}  // namespace

TEST_CASE("every framework of the catalog: inspect's state and matched statuses on objects written from its CRD") {
  for (const auto& example : examples()) {
    CAPTURE(example.file);
    const auto path = status_dir() / example.file;
    REQUIRE_MESSAGE(std::filesystem::exists(path), "missing example " << path);
    json object = test::document(path);
    const auto* definition = test::builtin_catalog().find(karta::request_for_object(object).kind);
    REQUIRE(definition != nullptr);
    json report = karta::inspect_workload(object, *definition, {"nvidia.com/gpu"});
    CHECK(report["state"] == example.state);
    CHECK(report["statuses"] == json(example.statuses));
    CHECK(report["notes"] == json::array());
  }
}

TEST_CASE("the examples cover the catalog's 15 frameworks, each running and finished or failed, and every file is checked") {
  std::set<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(status_dir())) files.insert(entry.path().filename().string());
  std::set<std::string> listed;
  std::set<std::string> kinds_running, kinds_over;
  for (const auto& example : examples()) {
    listed.insert(example.file);
    json object = test::document(status_dir() / example.file);
    std::string kind = object["apiVersion"].get<std::string>() + " " + object["kind"].get<std::string>();
    std::string state = example.state;
    if (state == "Running") kinds_running.insert(kind);
    if (state == "Completed" || state == "Failed" || state == "Degraded" || state == "Initializing") kinds_over.insert(kind);
  }
  CHECK(files == listed);
  CHECK(kinds_running.size() == 17);  // the 15 frameworks: MPIJob and Dynamo in two versions, Ray in three kinds
  CHECK(kinds_over == kinds_running);
}

TEST_CASE("inspect prints the state, every matched status, the conditions and whether the spec suspends the workload") {
  std::string binary = test::binary_path().string();
  int code = 0;
  std::string out = test::run_command(binary + " inspect -f " + (status_dir() / "pytorchjob-suspended.yaml").string(), &code);
  CHECK(code == 0);
  CHECK(out == R"(PyTorchJob research/mnist (kubeflow.org/v1)  state: Suspended
statuses: Suspended,Initializing  suspended: yes
  condition Created=True  PyTorchJobCreated: PyTorchJob mnist is created.
  condition Running=False  PyTorchJobSuspended: PyTorchJob mnist is suspended.
  condition Suspended=True  PyTorchJobSuspended: PyTorchJob mnist is suspended.
└── replica (v1 Pod)
    ├── Master 1 replica 0 GPU
    └── Worker 3 replicas 0 GPU

ROLE    COMPONENT  REPLICAS  GPU/POD  GPU  CPU  MEMORY
Master  replica    1         0        0    0    0
Worker  replica    3         0        0    0    0
total              4                  0    0    0

)");
  out = test::run_command(binary + " inspect -o json -f " + (status_dir() / "knativeservice-failed.yaml").string(), &code);
  CHECK(code == 0);
  json report = json::parse(out).at(0);
  CHECK(report["state"] == "Failed");
  CHECK(report["statuses"] == json::parse(R"(["Failed"])"));
  CHECK(report["phase"] == nullptr);
  CHECK(report["suspended"] == nullptr);  // Knative has no suspendDefinition
  CHECK(report["conditions"][1] == json::parse(R"({"type":"Ready","status":"False","reason":"RevisionFailed",
      "message":"Revision hello-00001 failed with message: Unable to fetch image ghcr.io/knative/helloworld-go:does-not-exist: manifest unknown."})"));
  CHECK(report["conditions"].size() == 3);
}

}  // namespace unit_status
