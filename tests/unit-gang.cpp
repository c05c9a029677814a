// The gang size written at admission (kai.scheduler/batch-min-member), when no pod exists yet: the
// replicas of the templates whose component the pod group names, or descends from one it names.

#include <doctest/doctest.h>

#include "admission/admission_review.h"
#include "definitions/catalog.h"
#include "definitions/workload.h"
#include "mutate/mutation.h"
#include "support/test_support.h"

namespace unit_gang {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

namespace {

const karta::Policy& gang_policy() {
  // The figure of every kind with gangScheduling that this file checks: each is named in gang.kinds (none
  // is by default; unit-tenants.cpp and unit-kai-hints.cpp check which kinds get it).
  static const karta::Policy policy = test::policy_from_yaml(R"(
gang:
  minMemberAnnotation: kai.scheduler/batch-min-member
  kinds: [example.com/Trainer, jobset.x-k8s.io/JobSet, leaderworkerset.x-k8s.io/LeaderWorkerSet, kubeflow.org/PyTorchJob,
          kubeflow.org/MPIJob, ray.io/RayCluster, ray.io/RayJob, grove.io/PodCliqueSet, nvidia.com/DynamoGraphDeployment]
)");
  return policy;
}

// A made-up kind: a root `trainer` with a virtual `roles` group holding `leader` and `worker`, and a
// `monitor` beside it; `gang` is the optimizationInstructions.gangScheduling block (YAML).
std::shared_ptr<const karta::CompiledDefinition> trainer(const std::string& gang) {
  return test::compile_definition(test::made_up_karta("trainer", "Trainer") + R"(      statusDefinition: {statusMappings: {running: [{}]}}
    childComponents:
      - {name: roles, ownerRef: trainer}
      - name: leader
        kind: {group: "", version: v1, kind: Pod}
        ownerRef: roles
        specDefinition: {podTemplateSpecPath: .spec.leader.template}
        scaleDefinition: {replicasPath: .spec.leader.replicas}
      - name: worker
        kind: {group: "", version: v1, kind: Pod}
        ownerRef: roles
        specDefinition: {podTemplateSpecPath: .spec.worker.template}
        scaleDefinition: {replicasPath: .spec.worker.replicas}
      - name: monitor
        kind: {group: "", version: v1, kind: Pod}
        ownerRef: trainer
        specDefinition: {podTemplateSpecPath: .spec.monitor.template}
  optimizationInstructions:
    gangScheduling:
)" + gang);
}

json trainer_object(const json& leader_replicas, const json& worker_replicas) {
  json t = {{"spec", {{"containers", {{{"name", "c"}, {"image", "i"}}}}}}};
  return {{"apiVersion", "example.com/v1"}, {"kind", "Trainer"}, {"metadata", {{"name", "t"}}},
          {"spec", {{"leader", {{"replicas", leader_replicas}, {"template", t}}},
                    {"worker", {{"replicas", worker_replicas}, {"template", t}}},
                    {"monitor", {{"template", t}}}}}};
}

// The annotation written, or "" when none; and the notes.
std::pair<std::string, std::vector<std::string>> min_member(const karta::CompiledDefinition& definition, const json& object) {
  auto outcome = karta::mutate_workload(object, definition, gang_policy());
  std::string value;
  for (const auto& op : outcome.patch.value()) {
    if (op["path"] == "/metadata/annotations") value = op["value"]["kai.scheduler/batch-min-member"].get<std::string>();
    if (op["path"] == "/metadata/annotations/kai.scheduler~1batch-min-member") value = op["value"].get<std::string>();
  }
  return {value, outcome.notes};
}

}  // namespace

TEST_CASE("podGroup.subGroups: the replicas of the named components, and of every component below them") {
  json object = trainer_object(1, 4);
  auto named = trainer("      podGroup: {name: g, subGroups: [{componentName: leader}, {componentName: worker}]}\n");
  CHECK(min_member(*named, object) == std::pair<std::string, std::vector<std::string>>{"5", {}});
  // `roles` is virtual: its leader and worker count, the monitor beside it does not.
  auto ancestor = trainer("      podGroup: {name: g, subGroups: [{componentName: roles}]}\n");
  CHECK(min_member(*ancestor, object).first == "5");
  auto root = trainer("      podGroup: {name: g, subGroups: [{componentName: trainer}]}\n");
  CHECK(min_member(*root, object).first == "6");
  auto workers = trainer("      podGroup: {name: g, subGroups: [{componentName: worker}]}\n");
  CHECK(min_member(*workers, object).first == "4");
  // No subGroups: every template.
  auto all = trainer("      podGroup: {name: g}\n");
  CHECK(min_member(*all, object).first == "6");
}

TEST_CASE("deprecated podGroups[].members without filters or groupByKeyPaths count as subGroups do") {
  auto d = trainer("      podGroups: [{name: g, members: [{componentName: roles}]}]\n");
  CHECK(min_member(*d, trainer_object(2, 3)) == std::pair<std::string, std::vector<std::string>>{"5", {}});
}

TEST_CASE("members that select pods by filters or groupByKeyPaths, or several pod groups, write no figure and say why") {
  json object = trainer_object(1, 4);
  auto grouped = trainer(R"(      podGroups:
        - name: per-replica
          members: [{componentName: worker, groupByKeyPaths: ['.metadata.labels["example.com/replica"]']}]
)");
  CHECK(min_member(*grouped, object) == std::pair<std::string, std::vector<std::string>>{
      "", {"kai.scheduler/batch-min-member not written: pod group \"per-replica\" member \"worker\" selects pods by "
           "groupByKeyPaths, which are known only once the pods exist"}});
  auto filtered = trainer(R"(      podGroups:
        - name: gpu-only
          members: [{componentName: worker, filters: ['.spec.containers[0].resources.limits["nvidia.com/gpu"] != null']}]
)");
  CHECK(min_member(*filtered, object).second == std::vector<std::string>{
      "kai.scheduler/batch-min-member not written: pod group \"gpu-only\" member \"worker\" selects pods by filters, "
      "which are known only once the pods exist"});
  auto several = trainer(R"(      podGroups:
        - {name: leaders, members: [{componentName: leader}]}
        - {name: workers, members: [{componentName: worker}]}
)");
  CHECK(min_member(*several, object) == std::pair<std::string, std::vector<std::string>>{
      "", {"kai.scheduler/batch-min-member not written: 2 pod groups: one minimum for the workload cannot describe them"}});
}

TEST_CASE("regression: huge replica counts neither overflow the sum nor the conversion") {
  auto d = trainer("      podGroup: {name: g, subGroups: [{componentName: leader}, {componentName: worker}]}\n");
  // Counts no Kubernetes replicas field (an int32) can hold are refused before any conversion or sum:
  // each is a note and 1 is assumed, so two of 9e18 cannot wrap the sum to a negative gang size.
  json object = trainer_object(json(std::int64_t{9'000'000'000'000'000'000}), json(std::int64_t{9'000'000'000'000'000'000}));
  CHECK(min_member(*d, object) == std::pair<std::string, std::vector<std::string>>{
      "2", {"leader leader: replicas 9000000000000000000 is not a replica count (an integer from 0 to 2147483647); 1 assumed",
            "worker worker: replicas 9000000000000000000 is not a replica count (an integer from 0 to 2147483647); 1 assumed"}});
  auto result = min_member(*d, trainer_object(1e30, 0));
  CHECK(result == std::pair<std::string, std::vector<std::string>>{
      "1", {"leader leader: replicas 1e+30 is not a replica count (an integer from 0 to 2147483647); 1 assumed"}});
  // The sum itself is checked all the same.
  CHECK(karta::checked_add(INT64_MAX, 1) == std::nullopt);
  CHECK(karta::checked_add(INT64_MAX - 1, 1) == INT64_MAX);
}

namespace {

struct GangExample {
  const char* file;  // tests/data/status/ or a corpus sample
  const char* value;  // "" when no gang is defined
};

}  // namespace

TEST_CASE("every catalog framework's figure, from the replicas its definition reads") {
  const std::vector<GangExample> examples = {
      // A JobSet's root figure is KAI v0.16+'s minSubGroup, its count of replicatedJobs (unit-kai-hints.cpp):
      // 1 here, whatever its 2 Jobs x parallelism 2 pods.
      {"status/jobset-running.yaml", "1"},
      {"status/leaderworkerset-running.yaml", "8"},             // 2 groups of size 4 (no leaderTemplate)
      {"status/pytorchjob-running.yaml", "4"},                  // Master 1 + Worker 3
      {"status/mpijob-v1-running.yaml", "3"},                   // Launcher 1 + Worker 2
      {"status/mpijob-v2beta1-running.yaml", "3"},
      {"status/raycluster-running.yaml", "3"},                  // head + 2 workers
      {"status/rayjob-running.yaml", "2"},                      // head + 1 worker; no submitter template
      {"status/rayservice-running.yaml", ""},                   // serving: no gang
      {"status/inferenceservice-running.yaml", ""},
      {"status/knativeservice-running.yaml", ""},
      {"status/nimservice-running.yaml", ""},
      {"status/milvus-running.yaml", ""},
      {"status/podcliqueset-running.yaml", "2"},                // 1 replica x clique of 2
      {"status/dynamographdeployment-v1alpha1-running.yaml", "3"},  // Frontend 1 + VllmWorker 2
      {"status/dynamographdeployment-v1beta1-running.yaml", "1"},
  };
  for (const auto& example : examples) {
    CAPTURE(example.file);
    const auto path = test::source_dir() / "tests/data" / example.file;
    REQUIRE_MESSAGE(std::filesystem::exists(path), "missing example " << path);
    json object = test::document(path);
    const auto* definition = test::builtin_catalog().find(karta::request_for_object(object).kind);
    REQUIRE(definition != nullptr);
    CHECK(definition->gang().has_value() == (std::string(example.value) != ""));
    CHECK(min_member(*definition, object) == std::pair<std::string, std::vector<std::string>>{example.value, {}});
  }
}

}  // namespace unit_gang
