#include <doctest/doctest.h>

#include "admission/admission_service.h"
#include "definitions/workload.h"
#include "mutate/mutation.h"
#include "support/test_support.h"

namespace unit_scheduling_hints {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

namespace {

// The policy of the issue, word for word.
const char* kPolicy = R"(
podTemplates:
  labels:
    platform.example.com/managed: "true"
    platform.example.com/role: "{{instance}}"
  annotations: {}
  overwrite: false
scheduling:
  schedulerName: kai-scheduler
  queue:
    label: kai.scheduler/queue
    default: default-queue
gpu:
  resourceNames: [nvidia.com/gpu]
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  nodeSelector: {}
  podAnnotations: {}
  workloadTotalAnnotation: platform.example.com/gpu-total
gang:
  minMemberAnnotation: kai.scheduler/batch-min-member
labelPolicy:
  mode: enforce
  exemptNamespaces: [kube-system]
  workload:
    required: [team]
    allowed: {team: "^[a-z][a-z0-9-]{1,30}$"}
  podTemplates:
    required: []
)";

const karta::CompiledDefinition& definition_for(const json& object) {
  auto request = karta::request_for_object(object);
  const auto* definition = test::builtin_catalog().find(request.kind);
  REQUIRE(definition != nullptr);
  return *definition;
}

double total_gpus(const std::string& sample, std::size_t index) {
  auto corpus = test::corpus_dir();
  if (!corpus) return -1;
  json object = test::document(*corpus / "samples" / sample, index);
  auto document = karta::JsonDocument::from(object);
  karta::DefinitionEvaluation evaluation(definition_for(object), document.root());
  return karta::analyze_workload(evaluation, {"nvidia.com/gpu"}).total_gpus;
}

}  // namespace

TEST_CASE("the demo JobSet with a CPU-only role gets scheduler, queue, role labels, GPU tolerations and total, no gang") {
  json object = test::document(test::source_dir() / "tests/data/jobset-demo-cpu-role.yaml");
  auto policy = test::policy_from_yaml(kPolicy);
  auto outcome = karta::mutate_workload(object, definition_for(object), policy, {"research", "CREATE"});
  const std::string toleration = R"([{"effect":"NoSchedule","key":"nvidia.com/gpu","operator":"Exists"}])";
  CHECK(outcome.patch.value() == json::parse(R"([
    {"op":"add","path":"/metadata/labels/kai.scheduler~1queue","value":"default-queue"},
    {"op":"add","path":"/spec/replicatedJobs/0/template/spec/template/metadata/labels/platform.example.com~1role","value":"leader"},
    {"op":"add","path":"/spec/replicatedJobs/0/template/spec/template/metadata/labels/kai.scheduler~1queue","value":"default-queue"},
    {"op":"add","path":"/spec/replicatedJobs/0/template/spec/template/spec/schedulerName","value":"kai-scheduler"},
    {"op":"add","path":"/spec/replicatedJobs/0/template/spec/template/spec/tolerations","value":)" + toleration + R"(},
    {"op":"add","path":"/spec/replicatedJobs/1/template/spec/template/metadata","value":{"labels":{
      "kai.scheduler/queue":"default-queue","platform.example.com/managed":"true","platform.example.com/role":"worker"}}},
    {"op":"add","path":"/spec/replicatedJobs/1/template/spec/template/spec/schedulerName","value":"kai-scheduler"},
    {"op":"add","path":"/spec/replicatedJobs/1/template/spec/template/spec/tolerations","value":)" + toleration + R"(},
    {"op":"add","path":"/spec/replicatedJobs/2/template/spec/template/metadata","value":{"labels":{
      "kai.scheduler/queue":"default-queue","platform.example.com/managed":"true","platform.example.com/role":"coordinator"}}},
    {"op":"add","path":"/spec/replicatedJobs/2/template/spec/template/spec/schedulerName","value":"kai-scheduler"},
    {"op":"add","path":"/metadata/annotations","value":{"karta.run.ai/written":"label:kai.scheduler/queue",
      "platform.example.com/gpu-total":"12"}}
  ])"));
  CHECK(outcome.total_gpus == 12);  // leader 1 x 4 + worker 2 x 4; the coordinator asks for none
  CHECK(outcome.warnings.empty());

  json patched = test::kubectl_apply(object, outcome.patch.value());
  const json& jobs = patched["spec"]["replicatedJobs"];
  CHECK_FALSE(jobs[2]["template"]["spec"]["template"]["spec"].contains("tolerations"));
  CHECK(patched["metadata"]["annotations"]["platform.example.com/gpu-total"] == "12");
  // No gang size: KAI computes a JobSet's itself, and this policy asks for no kind's (gang.kinds).
  CHECK_FALSE(patched["metadata"]["annotations"].contains("kai.scheduler/batch-min-member"));
  // Never the pod-level keys KAI owns.
  CHECK(patched.dump().find("pod-group-name") == std::string::npos);
  CHECK(patched.dump().find("kai.scheduler/subgroup-name") == std::string::npos);
  CHECK(karta::mutate_workload(patched, definition_for(patched), policy, {"research", "UPDATE"}).patch.value() == json::array());
}

TEST_CASE("the workload's own queue wins over the default and reaches every pod template") {
  json object = test::document(test::source_dir() / "examples/jobset-demo.yaml");
  object["metadata"]["labels"]["kai.scheduler/queue"] = "team-vision";
  object["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["metadata"] = {
      {"labels", {{"kai.scheduler/queue", "sneaky-other-queue"}}}};
  auto policy = test::policy_from_yaml("scheduling: {queue: {label: kai.scheduler/queue, default: default-queue}}");
  auto outcome = karta::mutate_workload(object, definition_for(object), policy);
  CHECK(outcome.patch.value() == json::parse(R"([
    {"op":"add","path":"/spec/replicatedJobs/0/template/spec/template/metadata/labels/kai.scheduler~1queue","value":"team-vision"},
    {"op":"add","path":"/spec/replicatedJobs/1/template/spec/template/metadata/labels/kai.scheduler~1queue","value":"team-vision"}
  ])"));
}

TEST_CASE("a placeholder that fills to an invalid label value is skipped with a warning, never sent") {
  json object = test::document(test::source_dir() / "examples/jobset-demo.yaml");
  object["spec"]["replicatedJobs"][1]["name"] = "Worker_";
  auto policy = test::policy_from_yaml(R"(podTemplates: {labels: {platform.example.com/role: "{{instance}}"}})");
  auto outcome = karta::mutate_workload(object, definition_for(object), policy);
  CHECK(outcome.warnings == std::vector<std::string>{
      "Worker_ pod template: label platform.example.com/role skipped: value \"Worker_\" must begin and end with an "
      "alphanumeric character"});
  CHECK(outcome.patch.value() == json::parse(R"([
    {"op":"add","path":"/spec/replicatedJobs/0/template/spec/template/metadata/labels/platform.example.com~1role","value":"leader"}])"));
}

TEST_CASE("a workload's queue that is no label value is skipped once per place with a warning, the rest patched") {
  // The API server would refuse the object for its own label; the webhook sees it first and must not copy
  // the value onto the templates. (The queue is checked once per workload, the warning given per place.)
  json object = test::document(test::source_dir() / "examples/jobset-demo.yaml");
  object["metadata"]["labels"]["kai.scheduler/queue"] = "team vision";
  auto policy = test::policy_from_yaml(R"(
podTemplates: {labels: {platform.example.com/managed: "true"}}
scheduling: {queue: {label: kai.scheduler/queue, default: default-queue}}
)");
  auto outcome = karta::mutate_workload(object, definition_for(object), policy);
  const std::string error = "may contain only alphanumerics, '-', '_' and '.'";
  CHECK(outcome.warnings == std::vector<std::string>{
      "workload: label kai.scheduler/queue skipped: value \"team vision\" " + error,
      "leader pod template: label kai.scheduler/queue skipped: value \"team vision\" " + error,
      "worker pod template: label kai.scheduler/queue skipped: value \"team vision\" " + error});
  CHECK(outcome.patch.value() == json::parse(R"([
    {"op":"add","path":"/spec/replicatedJobs/1/template/spec/template/metadata",
     "value":{"labels":{"platform.example.com/managed":"true"}}}])"));
}

TEST_CASE("placeholders are filled per template") {
  json object = test::document(test::source_dir() / "examples/jobset-demo.yaml");
  auto policy = test::policy_from_yaml(R"(
podTemplates:
  annotations: {who: "{{namespace}}/{{name}} {{group}} {{kind}} {{component}} {{instance}} {{gpus}}"}
)");
  auto outcome = karta::mutate_workload(object, definition_for(object), policy, {"research", "CREATE"});
  CHECK(outcome.patch.value() == json::parse(R"([
    {"op":"add","path":"/spec/replicatedJobs/0/template/spec/template/metadata/annotations",
     "value":{"who":"research/demo jobset.x-k8s.io JobSet replicatedjob leader 4"}},
    {"op":"add","path":"/spec/replicatedJobs/1/template/spec/template/metadata",
     "value":{"annotations":{"who":"research/demo jobset.x-k8s.io JobSet replicatedjob worker 4"}}}])"));
}

TEST_CASE("a Pod's spec is left alone on UPDATE, where it is immutable") {
  json pod = test::yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ml}
spec:
  containers: [{name: c, image: i, resources: {limits: {nvidia.com/gpu: 1}}}]
)");
  auto policy = test::policy_from_yaml(R"(
podTemplates: {labels: {managed: "true"}}
scheduling: {schedulerName: kai-scheduler}
gpu: {tolerations: [{key: nvidia.com/gpu, operator: Exists}]}
)");
  auto created = karta::mutate_workload(pod, definition_for(pod), policy, {"ml", "CREATE"});
  CHECK(created.patch.value() == json::parse(R"([
    {"op":"add","path":"/metadata/labels","value":{"managed":"true"}},
    {"op":"add","path":"/spec/schedulerName","value":"kai-scheduler"},
    {"op":"add","path":"/spec/tolerations","value":[{"key":"nvidia.com/gpu","operator":"Exists"}]}])"));
  auto updated = karta::mutate_workload(pod, definition_for(pod), policy, {"ml", "UPDATE"});
  CHECK(updated.patch.value() == json::parse(R"([{"op":"add","path":"/metadata/labels","value":{"managed":"true"}}])"));
}

TEST_CASE("GPUs per pod are counted as Kubernetes counts requests") {
  std::vector<std::string> gpu{"nvidia.com/gpu"};
  SUBCASE("the larger of limit and request, summed over containers") {
    json spec = json::parse(R"({"containers":[
      {"resources":{"limits":{"nvidia.com/gpu":"2"},"requests":{"nvidia.com/gpu":"1"}}},
      {"resources":{"requests":{"nvidia.com/gpu":3}}}, {"name":"no-resources"}]})");
    CHECK(karta::pod_requests(spec, gpu).gpus == 5);
  }
  SUBCASE("init containers run one at a time: the largest, not the sum, against the containers") {
    json spec = json::parse(R"({"containers":[{"resources":{"limits":{"nvidia.com/gpu":1}}}],
      "initContainers":[{"resources":{"limits":{"nvidia.com/gpu":4}}},{"resources":{"limits":{"nvidia.com/gpu":3}}}]})");
    CHECK(karta::pod_requests(spec, gpu).gpus == 4);
  }
  SUBCASE("a sidecar (restartable init container) runs alongside and is added") {
    json spec = json::parse(R"({"containers":[{"resources":{"limits":{"nvidia.com/gpu":2}}}],
      "initContainers":[{"restartPolicy":"Always","resources":{"limits":{"nvidia.com/gpu":1}}}]})");
    CHECK(karta::pod_requests(spec, gpu).gpus == 3);
  }
  SUBCASE("counting GPUs only (the admission) gives the same GPUs and leaves CPU and memory at 0") {
    json spec = json::parse(R"({"containers":[
      {"resources":{"limits":{"nvidia.com/gpu":2,"cpu":"4","memory":"1Gi"},"requests":{"cpu":"500m"}}},
      {"resources":{"requests":{"cpu":1,"memory":"512Mi"}}}],
      "initContainers":[{"restartPolicy":"Always","resources":{"limits":{"nvidia.com/gpu":1,"cpu":"2"}}}]})");
    karta::PodRequests all = karta::pod_requests(spec, gpu);
    CHECK(all.gpus == 3);
    CHECK(all.cpu == 7);
    CHECK(all.memory_bytes == 1610612736.0);
    karta::PodRequests gpus = karta::pod_requests(spec, gpu, karta::Counted::GpusOnly);
    CHECK(gpus.gpus == 3);
    CHECK(gpus.cpu == 0);
    CHECK(gpus.memory_bytes == 0);
  }
  SUBCASE("quantities with suffixes") {
    CHECK(karta::parse_quantity("500m").value() == doctest::Approx(0.5));
    CHECK(karta::parse_quantity("16Gi").value() == 17179869184.0);
    CHECK(karta::parse_quantity("1k").value() == 1000);
    CHECK_FALSE(karta::parse_quantity("lots").has_value());
    CHECK_FALSE(karta::parse_quantity("4 GPUs").has_value());
  }
}

TEST_CASE("GPU totals of real samples, from the numbers in their manifests") {
  if (!test::corpus_dir()) return;
  // vLLM LeaderWorkerSet: replicas 2, size 2, leader and worker each limit nvidia.com/gpu "8": 4 pods x 8.
  CHECK(total_gpus("leaderworkerset-1.yaml", 0) == 32);
  // MPIJob tensorflow-benchmarks: Launcher 1 (no GPU) + Worker replicas 2 x nvidia.com/gpu 1.
  CHECK(total_gpus("mpijob-v2beta1-1.yaml", 0) == 2);
  // Dynamo sglang multinode: decode and prefill, each replicas 1 x multinode.nodeCount 2 x gpu "4".
  CHECK(total_gpus("dynamographdeployment-2.yaml", 0) == 16);
  // Dynamo vLLM disaggregated: decode and prefill workers, 1 replica x gpu "1" each; frontend none.
  CHECK(total_gpus("dynamographdeployment-1.yaml", 0) == 2);
  // NIMService multi-node: replicas 1, pipeline parallelism 2 pods, .spec.resources nvidia.com/gpu 8 each.
  CHECK(total_gpus("nimservice-2.yaml", 1) == 16);
  // NIMService llm: replicas 1 x nvidia.com/gpu 1.
  CHECK(total_gpus("nimservice-1.yaml", 1) == 1);
  // KServe huggingface: the predictor's model container limits nvidia.com/gpu 1.
  CHECK(total_gpus("inferenceservice-1.yaml", 0) == 1);
}

}  // namespace unit_scheduling_hints
