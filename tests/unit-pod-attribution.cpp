// Pods placed on the components and instances of a workload with the definition's podSelector, as the
// published Workload Map CLI places them: componentInstanceSelector (JobSet), componentTypeSelector by
// keyPath and value or existence (LeaderWorkerSet) and by matchLabels, replicaSelector; each with pods
// that match, pods that do not, and a pod of another workload, which the owner chain keeps out.

#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "definitions/catalog.h"
#include "definitions/pod_attribution.h"
#include "definitions/workload.h"
#include "json/json_document.h"
#include "support/fake_api_server.h"
#include "support/test_support.h"

namespace unit_pod_attribution {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

namespace {

json owner(const std::string& api_version, const std::string& kind, const std::string& name, const std::string& uid) {
  return {{"apiVersion", api_version}, {"kind", kind}, {"name", name}, {"uid", uid}, {"controller", true},
          {"blockOwnerDeletion", true}};
}

json pod(const std::string& name, json labels, json annotations = json::object(), json owners = json::array()) {
  return {{"apiVersion", "v1"}, {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "research"}, {"labels", labels}, {"annotations", annotations},
                        {"ownerReferences", owners}}},
          {"spec", {{"containers", json::array()}}}};
}

karta::WorkloadLayout layout_of(const karta::CompiledDefinition& definition, const json& object) {
  karta::JsonDocument document = karta::JsonDocument::from(object);
  karta::DefinitionEvaluation evaluation(definition, document.root());
  return karta::analyze_workload(evaluation, {"nvidia.com/gpu"}).layout;
}

// "pod -> component/instance [replica r]", or "pod: unplaced: why", one line per pod.
std::vector<std::string> placements(const karta::CompiledDefinition& definition, const json& object,
                                    const std::vector<json>& pods) {
  std::vector<std::string> lines;
  auto result = karta::attribute_pods(definition, layout_of(definition, object), pods);
  REQUIRE(result.size() == pods.size());
  for (std::size_t i = 0; i < pods.size(); ++i) {
    std::string name = pods[i]["metadata"]["name"];
    const auto& p = result[i];
    if (p.component == nullptr) {
      lines.push_back(name + ": unplaced: " + p.unplaced_reason);
      continue;
    }
    std::string line = name + " -> " + p.component->component->name + "/" + p.instance;
    if (p.replica_key) line += " [replica " + *p.replica_key + "]";
    for (const auto& note : p.notes) line += " (" + note + ")";
    lines.push_back(line);
  }
  return lines;
}

const karta::CompiledDefinition& builtin(const std::string& group, const std::string& version, const std::string& kind) {
  const auto* definition = test::builtin_catalog().find({group, version, kind});
  REQUIRE(definition != nullptr);
  return *definition;
}

std::shared_ptr<const karta::CompiledDefinition> compile(const std::string& yaml) {
  auto definitions = karta::parse_definitions(yaml, "test");
  REQUIRE(definitions.size() == 1);
  return karta::CompiledDefinition::compile(std::move(definitions.front()), 1);
}

// The objects the API server would return for an owner, by "Kind/name".
karta::OwnerWalk walk_over(std::map<std::string, json> objects, std::vector<std::string>* fetched = nullptr) {
  return karta::OwnerWalk([objects = std::move(objects), fetched](const karta::OwnerReference& ref,
                                                                  const std::string& namespace_name) -> std::optional<json> {
    if (fetched) fetched->push_back(ref.kind.to_string() + " " + namespace_name + "/" + ref.name);
    auto it = objects.find(ref.kind.kind + "/" + ref.name);
    if (it == objects.end()) return std::nullopt;
    return it->second;
  });
}

json job(const std::string& name, const std::string& jobset, const std::string& jobset_uid) {
  return {{"apiVersion", "batch/v1"}, {"kind", "Job"},
          {"metadata", {{"name", name}, {"namespace", "research"}, {"uid", "uid-job-" + name},
                        {"ownerReferences", {owner("jobset.x-k8s.io/v1alpha2", "JobSet", jobset, jobset_uid)}}}}};
}

// A JobSet pod labelled as the JobSet and Job controllers label it.
json jobset_pod(const std::string& name, const std::string& jobset, const std::string& replicated_job, int job_index) {
  std::string job_name = jobset + "-" + replicated_job + "-" + std::to_string(job_index);
  return pod(name,
             {{"jobset.sigs.k8s.io/jobset-name", jobset}, {"jobset.sigs.k8s.io/replicatedjob-name", replicated_job},
              {"jobset.sigs.k8s.io/job-index", std::to_string(job_index)}, {"batch.kubernetes.io/job-name", job_name},
              {"job-name", job_name}, {"batch.kubernetes.io/job-completion-index", "0"}},
             {{"batch.kubernetes.io/job-completion-index", "0"}},
             {owner("batch/v1", "Job", job_name, "uid-job-" + job_name)});
}

}  // namespace

TEST_CASE("componentInstanceSelector: JobSet pods go to the replicated job their label names") {
  const auto& definition = builtin("jobset.x-k8s.io", "v1alpha2", "JobSet");
  json demo = test::document(test::source_dir() / "examples/jobset-demo.yaml");

  SUBCASE("pods whose replicatedjob-name is an instance of the JobSet are placed on it") {
    CHECK(placements(definition, demo,
                     {jobset_pod("demo-leader-0-0-ck6kg", "demo", "leader", 0),
                      jobset_pod("demo-worker-0-0-j9pdc", "demo", "worker", 0),
                      jobset_pod("demo-worker-1-0-rrsxz", "demo", "worker", 1)}) ==
          std::vector<std::string>{"demo-leader-0-0-ck6kg -> replicatedjob/leader",
                                   "demo-worker-0-0-j9pdc -> replicatedjob/worker",
                                   "demo-worker-1-0-rrsxz -> replicatedjob/worker"});
  }
  SUBCASE("a pod naming a replicated job the JobSet does not have, or none, is unplaced and says why") {
    CHECK(placements(definition, demo,
                     {jobset_pod("demo-ps-0-0-aaaaa", "demo", "ps", 0), pod("stray", {{"app", "x"}}),
                      pod("empty-label", {{"jobset.sigs.k8s.io/replicatedjob-name", ""}})}) ==
          std::vector<std::string>{
              "demo-ps-0-0-aaaaa: unplaced: component replicatedjob: instance id \"ps\" is not one of the "
              "workload's (leader, worker)",
              "stray: unplaced: component replicatedjob: componentInstanceSelector.idPath "
              ".metadata.labels[\"jobset.sigs.k8s.io/replicatedjob-name\"] gave no value",
              "empty-label: unplaced: component replicatedjob: componentInstanceSelector.idPath "
              ".metadata.labels[\"jobset.sigs.k8s.io/replicatedjob-name\"] gave no value"});
  }
  SUBCASE("a pod of another JobSet matches the selector, but its owner chain does not reach this one") {
    std::vector<std::string> fetched;
    auto walk = walk_over({{"Job/demo-leader-0", job("demo-leader-0", "demo", "uid-demo")},
                           {"Job/other-leader-0", job("other-leader-0", "other", "uid-other")}},
                          &fetched);
    json ours = jobset_pod("demo-leader-0-0-ck6kg", "demo", "leader", 0);
    json theirs = jobset_pod("other-leader-0-0-zzzzz", "other", "leader", 0);
    CHECK(placements(definition, demo, {theirs}) ==
          std::vector<std::string>{"other-leader-0-0-zzzzz -> replicatedjob/leader"});
    CHECK(walk.owned_by(ours, "uid-demo"));
    CHECK_FALSE(walk.owned_by(theirs, "uid-demo"));
    CHECK_FALSE(walk.owned_by(pod("bare", json::object()), "uid-demo"));
    // Each owner is fetched once, however often it is asked for; the walk of theirs goes on to the other
    // JobSet (gone here, which ends the chain).
    CHECK(walk.owned_by(jobset_pod("demo-leader-0-0-again", "demo", "leader", 0), "uid-demo"));
    CHECK_FALSE(walk.owned_by(theirs, "uid-demo"));
    CHECK(fetched == std::vector<std::string>{"batch/v1 Job research/demo-leader-0", "batch/v1 Job research/other-leader-0",
                                              "jobset.x-k8s.io/v1alpha2 JobSet research/other"});
  }
}

TEST_CASE("componentInstanceSelector: Kubeflow pods, labelled with the replica type in lower case, go to its instance") {
  // The training operator labels pods training.kubeflow.org/replica-type: master|worker|launcher
  // (strings.ToLower of the replica type); the instances are the map keys, Master, Worker, Launcher.
  const std::string label = "training.kubeflow.org/replica-type";
  const std::string id_path = ".metadata.labels[\"training.kubeflow.org/replica-type\"] // empty | (.[0:1] | "
                              "ascii_upcase) + .[1:]";
  json pytorch = test::document(test::source_dir() / "tests/corpus/samples/pytorchjob-1.yaml");
  CHECK(placements(builtin("kubeflow.org", "v1", "PyTorchJob"), pytorch,
                   {pod("mnist-master-0", {{label, "master"}}), pod("mnist-worker-0", {{label, "worker"}}),
                    pod("mnist-ps-0", {{label, "ps"}}), pod("stray", {{"app", "x"}})}) ==
        std::vector<std::string>{
            "mnist-master-0 -> replica/Master", "mnist-worker-0 -> replica/Worker",
            "mnist-ps-0: unplaced: component replica: instance id \"Ps\" is not one of the workload's (Master, Worker)",
            "stray: unplaced: component replica: componentInstanceSelector.idPath " + id_path + " gave 0 values, not one"});
  json mpi = test::document(test::source_dir() / "tests/corpus/samples/mpijob-1.yaml");
  CHECK(placements(builtin("kubeflow.org", "v1", "MPIJob"), mpi,
                   {pod("mnist-launcher", {{label, "launcher"}}), pod("mnist-worker-1", {{label, "worker"}})}) ==
        std::vector<std::string>{"mnist-launcher -> replica/Launcher", "mnist-worker-1 -> replica/Worker"});
}

TEST_CASE("componentTypeSelector with keyPath: LeaderWorkerSet leaders by worker-index \"0\", workers by an annotation") {
  const auto& definition = builtin("leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet");
  json lws = test::yaml(R"(
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: vllm, namespace: research, uid: uid-vllm}
spec:
  replicas: 2
  leaderWorkerTemplate:
    size: 2
    leaderTemplate: {spec: {containers: [{name: leader, image: vllm}]}}
    workerTemplate: {spec: {containers: [{name: worker, image: vllm}]}}
)");
  auto lws_pod = [](const std::string& name, const std::string& group, const std::string& index, bool worker) {
    json annotations = worker ? json{{"leaderworkerset.sigs.k8s.io/leader-name", "vllm-" + group}} : json::object();
    return pod(name, {{"leaderworkerset.sigs.k8s.io/name", "vllm"}, {"leaderworkerset.sigs.k8s.io/group-index", group},
                      {"leaderworkerset.sigs.k8s.io/worker-index", index}},
               annotations, {owner("apps/v1", "StatefulSet", worker ? "vllm-" + group : "vllm", "uid-sts")});
  };

  SUBCASE("the leader and worker pods of each group are placed, with their group as the replica key") {
    CHECK(placements(definition, lws,
                     {lws_pod("vllm-0", "0", "0", false), lws_pod("vllm-0-1", "0", "1", true),
                      lws_pod("vllm-1", "1", "0", false), lws_pod("vllm-1-1", "1", "1", true)}) ==
          std::vector<std::string>{"vllm-0 -> leader/leader [replica 0]", "vllm-0-1 -> worker/worker [replica 0]",
                                   "vllm-1 -> leader/leader [replica 1]", "vllm-1-1 -> worker/worker [replica 1]"});
  }
  SUBCASE("a pod with another worker-index and no leader-name annotation is claimed by neither") {
    CHECK(placements(definition, lws, {lws_pod("vllm-0-2", "0", "2", false), pod("sidecar", {{"app", "proxy"}})}) ==
          std::vector<std::string>{"vllm-0-2: unplaced: no component's podSelector claims it",
                                   "sidecar: unplaced: no component's podSelector claims it"});
  }
  SUBCASE("the value is compared as a string: worker-index 0 as a number is not \"0\"") {
    json numeric = lws_pod("vllm-odd", "0", "0", false);
    numeric["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/worker-index"] = 0;
    CHECK(placements(definition, lws, {numeric}) ==
          std::vector<std::string>{"vllm-odd: unplaced: no component's podSelector claims it"});
  }
  SUBCASE("a leader pod of another LeaderWorkerSet is kept out by its owner chain") {
    json statefulset = {{"apiVersion", "apps/v1"}, {"kind", "StatefulSet"},
                        {"metadata", {{"name", "other"}, {"uid", "uid-sts-other"},
                                      {"ownerReferences", {owner("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "other", "uid-other")}}}}};
    json ours_sts = {{"apiVersion", "apps/v1"}, {"kind", "StatefulSet"},
                     {"metadata", {{"name", "vllm"}, {"uid", "uid-sts"},
                                   {"ownerReferences", {owner("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "vllm", "uid-vllm")}}}}};
    auto walk = walk_over({{"StatefulSet/other", statefulset}, {"StatefulSet/vllm", ours_sts}});
    json theirs = lws_pod("other-0", "0", "0", false);
    theirs["metadata"]["ownerReferences"] = {owner("apps/v1", "StatefulSet", "other", "uid-sts-other")};
    CHECK_FALSE(walk.owned_by(theirs, "uid-vllm"));
    CHECK(walk.owned_by(lws_pod("vllm-0", "0", "0", false), "uid-vllm"));
  }
}

TEST_CASE("componentTypeSelector with matchLabels: every label must be equal, with keyPath when both are given") {
  auto definition = compile(test::read_text(test::source_dir() / "tests/data/pod-attribution/labelled-trainer-karta.yaml"));
  json trainer = test::yaml(R"(
apiVersion: example.com/v1
kind: Trainer
metadata: {name: t, namespace: research, uid: uid-t}
spec:
  driver: {spec: {containers: [{name: d, image: x}]}}
  executor: {spec: {containers: [{name: e, image: x}]}}
)");
  SUBCASE("pods carrying every label are placed on the component they name") {
    CHECK(placements(*definition, trainer,
                     {pod("t-driver", {{"example.com/role", "driver"}, {"app", "trainer"}}),
                      pod("t-exec-1", {{"example.com/role", "executor"}, {"app", "trainer"}, {"extra", "x"}})}) ==
          std::vector<std::string>{"t-driver -> driver/driver", "t-exec-1 -> executor/executor"});
  }
  SUBCASE("a pod missing one label, or with another value, is unplaced") {
    CHECK(placements(*definition, trainer,
                     {pod("half-driver", {{"example.com/role", "driver"}}),
                      pod("exec-other-app", {{"example.com/role", "executor"}, {"app", "other"}}),
                      pod("exec-no-app", {{"example.com/role", "executor"}})}) ==
          std::vector<std::string>{"half-driver: unplaced: no component's podSelector claims it",
                                   "exec-other-app: unplaced: no component's podSelector claims it",
                                   "exec-no-app: unplaced: no component's podSelector claims it"});
  }
  SUBCASE("a pod of another Trainer carries the same labels; only the owner chain tells it apart") {
    json theirs = pod("u-driver", {{"example.com/role", "driver"}, {"app", "trainer"}}, json::object(),
                      {owner("example.com/v1", "Trainer", "u", "uid-u")});
    json ours = pod("t-driver", {{"example.com/role", "driver"}, {"app", "trainer"}}, json::object(),
                    {owner("example.com/v1", "Trainer", "t", "uid-t")});
    std::vector<std::string> fetched;
    auto walk = walk_over({}, &fetched);
    CHECK_FALSE(walk.owned_by(theirs, "uid-t"));
    CHECK(walk.owned_by(ours, "uid-t"));
    // The Trainer that owns theirs was looked for (and is gone); ours needed no fetch.
    CHECK(fetched == std::vector<std::string>{"example.com/v1 Trainer research/u"});
  }
}

TEST_CASE("replicaSelector: the replica key is read from the pod, one non-empty value or a note") {
  const auto& definition = builtin("leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet");
  const karta::ComponentPlan* leader = nullptr;
  for (const auto& plan : definition.components()) {
    if (plan.component->name == "leader") leader = &plan;
  }
  REQUIRE(leader != nullptr);
  auto select = [&](const json& object) {
    karta::JsonDocument document = karta::JsonDocument::from(object);
    karta::DefinitionEvaluation evaluation(definition, document.root());
    return karta::select_pod(*leader, object, evaluation, false);
  };
  SUBCASE("a leader of group 3") {
    auto s = select(pod("vllm-3", {{"leaderworkerset.sigs.k8s.io/worker-index", "0"},
                                   {"leaderworkerset.sigs.k8s.io/group-index", "3"}}));
    CHECK(s.claimed);
    CHECK(s.instance_id == std::optional<std::string>("leader"));
    CHECK(s.replica_key == std::optional<std::string>("3"));
    CHECK(s.problems.empty());
  }
  SUBCASE("a leader without a group-index: claimed, with no replica key and a note naming the field") {
    auto s = select(pod("vllm-x", {{"leaderworkerset.sigs.k8s.io/worker-index", "0"}}));
    CHECK(s.claimed);
    CHECK(s.replica_key == std::nullopt);
    CHECK(s.problems == std::vector<std::string>{
                            "replicaSelector.keyPath .metadata.labels[\"leaderworkerset.sigs.k8s.io/group-index\"] gave no value"});
  }
  SUBCASE("a worker pod is not the leader's: nothing more is read from it") {
    auto s = select(pod("vllm-3-1", {{"leaderworkerset.sigs.k8s.io/worker-index", "1"},
                                     {"leaderworkerset.sigs.k8s.io/group-index", "3"}}));
    CHECK_FALSE(s.claimed);
    CHECK(s.instance_id == std::nullopt);
    CHECK(s.replica_key == std::nullopt);
  }
  SUBCASE("a leader pod of another LeaderWorkerSet has a replica key of its own; attribution is by owner") {
    json theirs = pod("other-0", {{"leaderworkerset.sigs.k8s.io/worker-index", "0"},
                                  {"leaderworkerset.sigs.k8s.io/group-index", "0"}},
                      json::object(), {owner("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "other", "uid-other")});
    CHECK(select(theirs).replica_key == std::optional<std::string>("0"));
    auto walk = walk_over({});
    CHECK_FALSE(walk.owned_by(theirs, "uid-vllm"));
  }
}

TEST_CASE("pod-side selector programs are compiled with the definition, not per pod") {
  // The LeaderWorkerSet's idPath is an if/then/else: jq, bundled in the definition's pod program.
  const auto& definition = builtin("leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet");
  CHECK(definition.bundle(karta::ExpressionGroup::Pod) != nullptr);
  // JobSet's idPath is a plain path, evaluated natively: no jq program at all.
  CHECK(builtin("jobset.x-k8s.io", "v1alpha2", "JobSet").bundle(karta::ExpressionGroup::Pod) == nullptr);
}

TEST_CASE("nested: an object whose controller is of a kind with a definition is part of a bigger workload") {
  auto covered = [](const karta::GroupVersionKind& kind) { return kind.kind == "JobSet"; };
  auto walk = walk_over({{"Job/demo-leader-0", job("demo-leader-0", "demo", "uid-demo")}});
  CHECK(walk.nested(job("demo-leader-0", "demo", "uid-demo"), covered));
  CHECK(walk.nested(jobset_pod("demo-leader-0-0-ck6kg", "demo", "leader", 0), covered));
  CHECK_FALSE(walk.nested(pod("bare", json::object()), covered));
}

}  // namespace unit_pod_attribution
