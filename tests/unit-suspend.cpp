// `karta-webhook suspend` and `resume`: the merge patch the definition's suspendDefinition actions make
// (values JSON text, applied in order), applied with kubectl's own merge-patch code.

#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <set>

#include "cli/inspect.h"
#include "admission/admission_review.h"
#include "definitions/catalog.h"
#include "definitions/suspend.h"
#include "support/test_support.h"

namespace unit_suspend {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

namespace {

std::filesystem::path data(const std::string& name) { return test::source_dir() / "tests/data" / name; }
std::filesystem::path sample(const std::string& name) { return test::source_dir() / "tests/corpus/samples" / name; }

// One object of each catalog kind that has a suspendDefinition.
const std::map<std::string, std::filesystem::path>& suspendable_objects() {
  static const std::map<std::string, std::filesystem::path> objects = {
      {"agents.x-k8s.io/v1beta1 Sandbox", data("status/sandbox-running.yaml")},
      {"batch/v1 CronJob", data("suspend/cronjob.yaml")},
      {"batch/v1 Job", data("suspend/job.yaml")},
      {"jobset.x-k8s.io/v1alpha2 JobSet", data("status/jobset-running.yaml")},
      {"argoproj.io/v1alpha1 Workflow", sample("workflow-1.yaml")},
      {"kubeflow.org/v1 JAXJob", sample("jaxjob-1.yaml")},
      {"kubeflow.org/v1 MPIJob", data("status/mpijob-v1-running.yaml")},
      {"kubeflow.org/v1 PaddleJob", sample("paddlejob-1.yaml")},
      {"kubeflow.org/v1 PyTorchJob", data("status/pytorchjob-running.yaml")},
      {"kubeflow.org/v1 TFJob", sample("tfjob-1.yaml")},
      {"kubeflow.org/v1 XGBoostJob", sample("xgboostjob-1.yaml")},
      {"kubeflow.org/v2beta1 MPIJob", data("status/mpijob-v2beta1-running.yaml")},
      {"ray.io/v1 RayCluster", data("status/raycluster-running.yaml")},
      {"ray.io/v1 RayJob", data("status/rayjob-running.yaml")},
      {"ray.io/v1 RayService", data("status/rayservice-running.yaml")},
      {"serving.kserve.io/v1alpha1 LLMInferenceService", data("suspend/llminferenceservice-v1alpha1.yaml")},
      {"serving.kserve.io/v1alpha2 LLMInferenceService", data("status/llminferenceservice-running.yaml")},
      {"sparkoperator.k8s.io/v1beta2 SparkApplication", sample("sparkapplication-1.yaml")},
      {"trainer.kubeflow.org/v1alpha1 TrainJob", sample("trainjob-2.yaml")},
  };
  return objects;
}

// What `kubectl patch --local --type=merge -p "$(karta-webhook <command> -f FILE)" -f FILE -o json` gives.
json kubectl_merge(const std::string& command, const std::filesystem::path& file) {
  int code = 0;
  std::string out = test::run_command("kubectl patch --local --type=merge -p \"$(" + test::binary_path().string() + " " +
                                          command + " -f " + file.string() + ")\" -f " + file.string() + " -o json",
                                      &code);
  REQUIRE_MESSAGE(code == 0, "kubectl refused the " << command << " patch of " << file << ": " << out);
  return json::parse(out);
}

std::string patch_text(const std::string& command, const std::filesystem::path& file, int* code = nullptr) {
  return test::run_command(test::binary_path().string() + " " + command + " -f " + file.string(), code);
}

const karta::CompiledDefinition& catalog_definition(const json& object) {
  const auto* definition = test::builtin_catalog().find(karta::request_for_object(object).kind);
  REQUIRE(definition != nullptr);
  return *definition;
}

// The leaves that differ between two objects, as {pointer: value in `after`}.
json changed_fields(const json& before, const json& after) {
  json flat_before = before.flatten(), flat_after = after.flatten(), changed = json::object();
  for (const auto& [pointer, value] : flat_after.items()) {
    if (!flat_before.contains(pointer) || flat_before[pointer] != value) changed[pointer] = value;
  }
  return changed;
}

// The one field a kind's suspend and resume actions set (a JSON Pointer, as json::flatten spells it), and
// the value each sets: a boolean suspend field, Sandbox's operatingMode, or KServe's stop annotation.
struct SuspendField {
  std::string pointer;
  json suspended;
  json resumed;
};

SuspendField suspend_field(const std::string& kind) {
  if (kind == "agents.x-k8s.io/v1beta1 Sandbox") return {"/spec/operatingMode", "Suspended", "Running"};
  if (kind.ends_with(" LLMInferenceService")) return {"/metadata/annotations/serving.kserve.io~1stop", "true", "false"};
  return {kind.starts_with("kubeflow.org/") ? "/spec/runPolicy/suspend" : "/spec/suspend", true, false};
}

json report_of(const json& object) { return karta::inspect_workload(object, catalog_definition(object), {}); }

// A made-up kind with the given suspendDefinition (YAML, indented for the root component).
std::shared_ptr<const karta::CompiledDefinition> gizmo(const std::string& suspend_definition) {
  return test::compile_definition(test::made_up_karta("gizmo", "Gizmo") +
                                  "      statusDefinition: {statusMappings: {running: [{byExpression: "
                                  "{expression: '.status.up', expectedResult: \"true\"}}]}}\n"
                                  "      suspendDefinition:\n" + suspend_definition);
}

}  // namespace

TEST_CASE("suspend and resume patches apply with kubectl patch --type=merge on every catalog kind that defines them") {
  std::set<std::string> with_suspend;
  for (const auto& definition : test::builtin_catalog().definitions()) {
    if (definition->suspend()) with_suspend.insert(definition->root_kind().to_string());
  }
  std::set<std::string> covered;
  for (const auto& [kind, file] : suspendable_objects()) covered.insert(kind);
  CHECK(with_suspend == covered);

  for (const auto& [kind, file] : suspendable_objects()) {
    CAPTURE(kind);
    REQUIRE_MESSAGE(std::filesystem::exists(file), "missing example " << file);
    json original = test::document(file);
    CHECK(report_of(original)["suspended"] == false);
    json suspended = kubectl_merge("suspend", file);
    CHECK(report_of(suspended)["suspended"] == true);
    // Only the suspend field changed.
    const SuspendField field = suspend_field(kind);
    CHECK(changed_fields(original, suspended) == json{{field.pointer, field.suspended}});
    // Resuming the suspended object gives the original back, with the field at its resumed value.
    {
      test::TempDir dir;
      std::ofstream(dir.path / "suspended.json") << suspended.dump();
      json resumed = kubectl_merge("resume", dir.path / "suspended.json");
      CHECK(report_of(resumed)["suspended"] == false);
      CHECK(changed_fields(original, resumed) == json{{field.pointer, field.resumed}});
    }
  }
}

TEST_CASE("the patches are the published actions as a merge patch: JobSet's, PyTorchJob's, Sandbox's and LLMInferenceService's spelled out") {
  CHECK(patch_text("suspend", data("status/jobset-running.yaml")) == "{\"spec\":{\"suspend\":true}}\n");
  CHECK(patch_text("resume", data("status/jobset-running.yaml")) == "{\"spec\":{\"suspend\":false}}\n");
  CHECK(patch_text("suspend", data("status/pytorchjob-running.yaml")) == "{\"spec\":{\"runPolicy\":{\"suspend\":true}}}\n");
  CHECK(patch_text("suspend", data("status/sandbox-running.yaml")) == "{\"spec\":{\"operatingMode\":\"Suspended\"}}\n");
  CHECK(patch_text("resume", data("status/llminferenceservice-running.yaml")) ==
        "{\"metadata\":{\"annotations\":{\"serving.kserve.io/stop\":\"false\"}}}\n");
  CHECK(patch_text("suspend", data("status/sandbox-suspended.yaml")) == "{}\n");
  CHECK(patch_text("suspend", data("status/llminferenceservice-stopped.yaml")) == "{}\n");
  // Already suspended: nothing to change.
  CHECK(patch_text("suspend", data("status/pytorchjob-suspended.yaml")) == "{}\n");
}

TEST_CASE("a suspended JobSet then shows Suspended; one with active pods shows Suspending until they are gone") {
  json starting = kubectl_merge("suspend", data("suspend/jobset-starting.yaml"));
  json report = report_of(starting);
  CHECK(report["state"] == "Suspended");
  CHECK(report["statuses"] == json::parse(R"(["Suspended"])"));
  CHECK(report["suspended"] == true);

  json running = kubectl_merge("suspend", data("status/jobset-running.yaml"));
  CHECK(report_of(running)["state"] == "Suspending");

  // Resumed: the controller still reports Suspended=True until it has restarted the Jobs.
  json resumed = kubectl_merge("resume", data("status/jobset-suspended.yaml"));
  CHECK(report_of(resumed)["state"] == "Resuming");
}

TEST_CASE("a kind without suspendDefinition gets a clear error, and so does a kind without a definition") {
  test::TempDir dir;
  std::ofstream(dir.path / "deployment.yaml") << R"(apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template: {spec: {containers: [{name: web, image: nginx}]}}
)";
  int code = 0;
  std::string out = patch_text("suspend", dir.path / "deployment.yaml", &code);
  CHECK(code == 1);
  CHECK(out == "karta-webhook: " + (dir.path / "deployment.yaml").string() +
                   "#0: apps/v1 Deployment has no suspendDefinition in definition \"deployment-v1\" (builtin:apps-deployment-v1.yaml#0): "
                   "the framework cannot be suspended through its spec\n");
  std::ofstream(dir.path / "gizmo.yaml") << "apiVersion: example.com/v1\nkind: Gizmo\nmetadata: {name: g}\n";
  out = patch_text("resume", dir.path / "gizmo.yaml", &code);
  CHECK(code == 1);
  CHECK(out == "karta-webhook: " + (dir.path / "gizmo.yaml").string() + "#0: example.com/v1 Gizmo has no definition\n");
}

TEST_CASE("actions are applied in order, their values are JSON text, and null deletes the field") {
  auto d = gizmo(R"(        suspendActions:
          - {path: .spec.mode, value: '"paused"'}
          - {path: .spec.mode, value: '"stopped"'}
          - {path: .spec.replicas, value: "0"}
          - {path: .spec.schedule, value: "null"}
          - {path: '.spec.groups[].paused', value: "true"}
        resumeActions:
          - {path: .spec.mode, value: '"running"'}
)");
  json object = test::yaml("{apiVersion: example.com/v1, kind: Gizmo, metadata: {name: g}, "
                           "spec: {replicas: 3, schedule: '* * * * *', groups: [{name: a}, {name: b, paused: false}]}}");
  CHECK(karta::suspend_merge_patch(object, *d, karta::SuspendDirection::Suspend) == json::parse(R"({"spec":{
      "mode":"stopped","replicas":0,"schedule":null,"groups":[{"name":"a","paused":true},{"name":"b","paused":true}]}})"));
  CHECK(karta::suspend_merge_patch(object, *d, karta::SuspendDirection::Resume) == json::parse(R"({"spec":{"mode":"running"}})"));
  json suspended = karta::apply_suspend_actions(object, *d, karta::SuspendDirection::Suspend);
  CHECK(suspended["spec"] == json::parse(R"({"mode":"stopped","replicas":0,"schedule":null,
      "groups":[{"name":"a","paused":true},{"name":"b","paused":true}]})"));
  // kubectl agrees: the merge patch gives the suspended object, without the null field.
  test::TempDir dir;
  std::ofstream(dir.path / "gizmo.json") << object.dump();
  int code = 0;
  std::string out = test::run_command("kubectl patch --local --type=merge -p '" +
                                          karta::suspend_merge_patch(object, *d, karta::SuspendDirection::Suspend).dump() +
                                          "' -f " + (dir.path / "gizmo.json").string() + " -o json", &code);
  REQUIRE_MESSAGE(code == 0, out);
  json expected = suspended;
  expected["spec"].erase("schedule");
  CHECK(json::parse(out) == expected);
}

TEST_CASE("an action whose place cannot be assigned names the action and the place") {
  auto d = gizmo(R"(        suspendActions: [{path: .spec.mode.paused, value: "true"}]
        resumeActions: [{path: '.spec.items[5]', value: "false"}]
)");
  json object = test::yaml("{apiVersion: example.com/v1, kind: Gizmo, metadata: {name: g}, spec: {mode: fast, items: [1]}}");
  CHECK_THROWS_WITH_AS(karta::suspend_merge_patch(object, *d, karta::SuspendDirection::Suspend),
                       "suspendActions[0] (path .spec.mode.paused): Cannot index string with string \"paused\"",
                       karta::SuspendError);
  CHECK_THROWS_WITH_AS(karta::suspend_merge_patch(object, *d, karta::SuspendDirection::Resume),
                       "resumeActions[0] (path .spec.items[5]): /spec/items/5 names element 5 of a list of 1",
                       karta::SuspendError);
}

}  // namespace unit_suspend
