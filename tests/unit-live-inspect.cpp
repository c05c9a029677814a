// `inspect KIND/NAME` and `list` against the local API server: the seed's demo JobSet (a leader Job of 1
// pod x 4 GPUs, a worker Job of 2 pods x 4 GPUs, three running ready pods) printed as `kli describe`
// prints it, in text and JSON; its `list` row; pods no selector places; another JobSet's pods left out;
// kinds resolved by kind, singular, plural, group-qualified name and short name; kinds the cluster does not
// serve; the API server's 403 and 404 answers; terminal control sequences in the cluster's text, escaped
// in `inspect`, `list` and `audit`; and two cluster Kartas of different kinds.
// Longer than 500 lines because its cases compare whole outputs, pasted as golden text. The seed's JobSet,
// Jobs and pods, written as their controllers write them, are support/demo_cluster's.

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "admission/admission_service.h"
#include "cli/audit.h"
#include "cli/commands.h"
#include "cli/live_inspect.h"
#include "kube/api_client.h"
#include "support/demo_cluster.h"
#include "support/fake_api_server.h"
#include "support/kube_fixtures.h"
#include "support/terminal_controls.h"
#include "support/test_support.h"

namespace unit_live_inspect {  // this file's names, apart from other tests' in a unity build

using karta::test::demo_cluster::inspect;
using karta::test::demo_cluster::list;
using karta::test::demo_cluster::twenty_seconds_later;

using karta::json;
namespace test = karta::test;

namespace {

using test::demo_cluster::controller;
using test::demo_cluster::demo_jobs;
using test::demo_cluster::demo_jobset;
using test::demo_cluster::demo_pods;
using test::demo_cluster::job;
using test::demo_cluster::jobs;
using test::demo_cluster::jobset_pod;
using test::demo_cluster::jobsets;
using test::demo_cluster::kCreated;
using test::demo_cluster::pods;

// An API server with pods, Jobs and JobSets, and a kubeconfig for it.
struct Cluster {
  test::TempDir dir;
  test::FakeApiServer server{dir.path, {}};
  std::filesystem::path kubeconfig = dir.path / "kubeconfig";

  explicit Cluster(std::vector<json> jobset_objects, std::vector<json> job_objects, std::vector<json> pod_objects) {
    server.serve(pods(), std::move(pod_objects));
    server.serve(jobs(), std::move(job_objects));
    server.serve(jobsets(), std::move(jobset_objects));
    test::write_text(kubeconfig, server.kubeconfig("research"));
  }

  karta::LiveOptions options(const std::string& target = "") const {
    karta::LiveOptions o;
    o.target = target;
    o.kubeconfig = kubeconfig.string();
    o.now = twenty_seconds_later();
    return o;
  }
};

using Run = karta::test::CliRun;

// The end of the seed's `kli describe` output: the demo's phase and requests, whatever its pods do.
const std::string kDemoPhaseAndResources = R"(
Phase: Running

Resources:
COMPONENT   REPLICAS   GPU   CPU   MEMORY
leader      1          4     0     0
worker      2          8     0     0
TOTAL       3          12    0     0
)";

// What `list` notes on the fixture cluster: every kind of the built-in catalog but JobSet, Job and Pod
// is not served, and one line names them (tests/unit-live-list-unserved.cpp checks that line's form).
std::string unserved_kind_notes() {
  return "note: 32 kinds with a definition are not served by the cluster, skipped (--show-unserved lists each): "
         "CronJob, DaemonSet, Deployment, DynamoGraphDeployment (nvidia.com/v1alpha1), "
         "DynamoGraphDeployment (nvidia.com/v1beta1), InferenceService, JAXJob, Job (batch.volcano.sh/v1alpha1), "
         "LLMInferenceService (serving.kserve.io/v1alpha1), LLMInferenceService (serving.kserve.io/v1alpha2), "
         "LeaderWorkerSet, MPIJob (kubeflow.org/v1), MPIJob (kubeflow.org/v2beta1), Milvus, NIMCache, NIMService, "
         "Notebook, PaddleJob, PodCliqueSet, PyTorchJob, RayCluster, RayJob, RayService, ReplicaSet, Sandbox, Service, "
         "SparkApplication, StatefulSet, TFJob, TrainJob, Workflow, XGBoostJob\n";
}

const std::string kDemoDescribe = R"(JobSet/demo   namespace: research   definition: jobset-v1alpha2 (catalog)   age: 20s

`-- replicatedjob                   3/3 ready   gpu: 12   runai-cluster-worker-0-0
    |-- leader                      1/1 ready   gpu: 4    runai-cluster-worker-0-0
    |   `-- demo-leader-0-0-ck6kg   Running     gpu: 4    runai-cluster-worker-0-0
    `-- worker                      2/2 ready   gpu: 8    runai-cluster-worker-0-0
        |-- demo-worker-0-0-j9pdc   Running     gpu: 4    runai-cluster-worker-0-0
        `-- demo-worker-1-0-rrsxz   Running     gpu: 4    runai-cluster-worker-0-0
)" + kDemoPhaseAndResources;

}  // namespace

TEST_CASE("inspect jobset/demo prints the seed's tree: 3/3 ready, 12 GPUs, each pod Running on its node") {
  Cluster cluster({demo_jobset()}, demo_jobs(), demo_pods());
  Run run = inspect(cluster.options("jobset/demo"));
  CHECK(run.code == 0);
  CHECK(run.err == "");
  CHECK(run.out == kDemoDescribe);

  // Discovery, the JobSet, the Kartas, one LIST of the namespace's pods (no podSelector of JobSet's has
  // matchLabels), and each Job of the owner chains once.
  std::vector<std::string> asked;  // all but discovery's documents
  for (const auto& target : cluster.server.targets()) {
    if (target.find('?') != std::string::npos || target.find("/namespaces/") != std::string::npos) asked.push_back(target);
  }
  CHECK(asked == std::vector<std::string>{"/apis/run.ai/v1alpha1/kartas?limit=100",
                                          "/apis/jobset.x-k8s.io/v1alpha2/namespaces/research/jobsets/demo",
                                          "/api/v1/namespaces/research/pods?limit=100",
                                          "/apis/batch/v1/namespaces/research/jobs/demo-leader-0",
                                          "/apis/batch/v1/namespaces/research/jobs/demo-worker-0",
                                          "/apis/batch/v1/namespaces/research/jobs/demo-worker-1"});
}

TEST_CASE("inspect --output json gives the same view, every figure in it") {
  Cluster cluster({demo_jobset()}, demo_jobs(), demo_pods());
  karta::LiveOptions options = cluster.options("jobset/demo");
  options.output = "json";
  Run run = inspect(options);
  CHECK(run.code == 0);
  auto pod = [](const std::string& name) {
    return json{{"name", name}, {"phase", "Running"}, {"ready", true}, {"node", "runai-cluster-worker-0-0"},
                {"resources", {{"gpus", 4}, {"cpu", 0}, {"memoryBytes", 0}}}};
  };
  auto replicas = [](int n) { return json{{"desired", n}, {"current", n}, {"ready", n}}; };
  auto gpus = [](int n) { return json{{"gpus", n}, {"cpu", 0}, {"memoryBytes", 0}}; };
  json nodes = {"runai-cluster-worker-0-0"};
  json expected = {
      {"apiVersion", "jobset.x-k8s.io/v1alpha2"}, {"kind", "JobSet"}, {"namespace", "research"}, {"name", "demo"},
      {"createdAt", kCreated}, {"definition", "jobset-v1alpha2"}, {"origin", "catalog"}, {"phase", "Running"},
      {"components",
       {{{"name", "replicatedjob"}, {"kind", "batch/v1 Job"}, {"replicas", replicas(3)}, {"resources", gpus(12)},
         {"nodes", nodes}, {"pods", json::array()},
         {"instances",
          {{{"name", "leader"}, {"replicas", replicas(1)}, {"resources", gpus(4)}, {"nodes", nodes},
            {"pods", {pod("demo-leader-0-0-ck6kg")}}},
           {{"name", "worker"}, {"replicas", replicas(2)}, {"resources", gpus(8)}, {"nodes", nodes},
            {"pods", {pod("demo-worker-0-0-j9pdc"), pod("demo-worker-1-0-rrsxz")}}}}}}}},
      {"unplaced", json::array()}, {"notes", json::array()},
      {"totals", {{"replicas", replicas(3)}, {"resources", gpus(12)}}}};
  CHECK(json::parse(run.out) == expected);
}

TEST_CASE("pods the selectors do not place are listed as unplaced; another JobSet's pods are left out") {
  json other = demo_jobset();
  other["metadata"]["name"] = "other";
  other["metadata"]["uid"] = "uid-other";
  std::vector<json> job_objects = demo_jobs();
  job_objects.push_back(job("demo", "uid-demo", "ps", 0));  // a replicated job the JobSet's spec does not have
  job_objects.push_back(job("other", "uid-other", "leader", 0));
  std::vector<json> pod_objects = {jobset_pod("demo-leader-0-0-ck6kg", "demo", "leader", 0, "node-b"),
                                   jobset_pod("demo-worker-0-0-j9pdc", "demo", "worker", 0, "node-a"),
                                   jobset_pod("demo-worker-1-0-rrsxz", "demo", "worker", 1, ""),
                                   jobset_pod("demo-ps-0-0-aaaaa", "demo", "ps", 0, "node-c"),
                                   jobset_pod("other-leader-0-0-zzzzz", "other", "leader", 0, "node-a")};
  Cluster cluster({demo_jobset(), other}, job_objects, pod_objects);
  karta::LiveOptions options = cluster.options("jobset/demo");
  options.page_size = 2;  // the pods come in three pages
  Run run = inspect(options);
  CHECK(run.code == 0);
  CHECK(run.err == "");
  CHECK(run.out == R"(JobSet/demo   namespace: research   definition: jobset-v1alpha2 (catalog)   age: 20s

`-- replicatedjob                   2/3 ready                 gpu: 12   node-a,node-b
    |-- leader                      1/1 ready                 gpu: 4    node-b
    |   `-- demo-leader-0-0-ck6kg   Running                   gpu: 4    node-b
    `-- worker                      1/2 ready                 gpu: 8    node-a
        |-- demo-worker-0-0-j9pdc   Running                   gpu: 4    node-a
        `-- demo-worker-1-0-rrsxz   Pending (Unschedulable)   gpu: 4    <none>

Pods of this workload no podSelector places:
`-- demo-ps-0-0-aaaaa   Running   gpu: 4   node-c   component replicatedjob: instance id "ps" is not one of the workload's (leader, worker)
)" + kDemoPhaseAndResources);
  std::size_t pages = 0;
  for (const auto& target : cluster.server.targets()) {
    if (target.starts_with("/api/v1/namespaces/research/pods?limit=2")) ++pages;
  }
  CHECK(pages == 3);
}

TEST_CASE("list prints one row per workload; Jobs and pods of the JobSet are not rows; unserved kinds are noted") {
  Cluster cluster({demo_jobset()}, demo_jobs(), demo_pods());
  Run run = list(cluster.options());
  CHECK(run.code == 0);
  CHECK(run.out == "NAMESPACE   NAME   KIND     PHASE     COMPONENTS             GPU   AGE\n"
                   "research    demo   JobSet   Running   leader(1), worker(2)   12    20s\n");
  const std::string notes = unserved_kind_notes();
  CHECK(run.err == notes);

  SUBCASE("as JSON") {
    karta::LiveOptions options = cluster.options();
    options.output = "json";
    Run json_run = list(options);
    CHECK(json::parse(json_run.out) ==
          json{{"count", 1},
               {"items", {{{"namespace", "research"}, {"name", "demo"}, {"kind", "JobSet"},
                           {"apiVersion", "jobset.x-k8s.io/v1alpha2"}, {"phase", "Running"},
                           {"components", {{{"name", "leader"}, {"replicas", 1}}, {{"name", "worker"}, {"replicas", 2}}}},
                           {"gpus", 12}, {"createdAt", kCreated}, {"definition", "jobset-v1alpha2"},
                           {"origin", "catalog"}}}}});
  }
  SUBCASE("a namespace with no workloads says so") {
    karta::LiveOptions options = cluster.options();
    options.namespace_name = "empty";
    Run empty = list(options);
    CHECK(empty.code == 0);
    CHECK(empty.out == "");
    CHECK(empty.err == "No workloads found in namespace empty.\n" + notes);
  }
}

TEST_CASE("the kind is resolved through discovery by kind, singular, plural or group-qualified name") {
  Cluster cluster({demo_jobset()}, demo_jobs(), demo_pods());
  for (const char* target : {"JobSet/demo", "jobset/demo", "jobsets/demo", "jobsets.jobset.x-k8s.io/demo"}) {
    CAPTURE(target);
    Run run = inspect(cluster.options(target));
    CHECK(run.code == 0);
    CHECK(run.out == kDemoDescribe);
  }
}

TEST_CASE("a short name resolves too: lws/vllm, whose worker pods are owned through their leader pod") {
  Cluster cluster({}, {}, {});
  cluster.server.serve({.group = "leaderworkerset.x-k8s.io", .version = "v1", .kind = "LeaderWorkerSet",
                        .plural = "leaderworkersets", .singular = "leaderworkerset", .short_names = {"lws"}},
                       {test::yaml(R"(
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: vllm, namespace: research, uid: uid-vllm, creationTimestamp: "2026-12-02T00:55:00Z"}
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: 2
    leaderTemplate: {spec: {containers: [{name: leader, image: vllm, resources: {limits: {nvidia.com/gpu: 1, cpu: 500m, memory: 2Gi}}}]}}
    workerTemplate: {spec: {containers: [{name: worker, image: vllm, resources: {limits: {nvidia.com/gpu: 1, cpu: "2", memory: 2Gi}}}]}}
status:
  conditions: [{type: Available, status: "True"}]
)")});
  cluster.server.serve({.group = "apps", .version = "v1", .kind = "StatefulSet", .plural = "statefulsets",
                        .singular = "statefulset", .short_names = {"sts"}},
                       {{{"metadata", {{"name", "vllm"}, {"namespace", "research"}, {"uid", "uid-sts-vllm"},
                                       {"ownerReferences", {controller("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "vllm", "uid-vllm")}}}}},
                        {{"metadata", {{"name", "vllm-0"}, {"namespace", "research"}, {"uid", "uid-sts-vllm-0"},
                                       {"ownerReferences", {controller("v1", "Pod", "vllm-0", "uid-pod-vllm-0")}}}}}});
  auto lws_pod = [](const std::string& name, const std::string& index, const std::string& owner, const std::string& owner_uid,
                    const std::string& node) {
    json annotations = index == "0" ? json::object() : json{{"leaderworkerset.sigs.k8s.io/leader-name", "vllm-0"}};
    return json{{"metadata", {{"name", name}, {"namespace", "research"}, {"uid", "uid-pod-" + name},
                              {"labels", {{"leaderworkerset.sigs.k8s.io/name", "vllm"}, {"leaderworkerset.sigs.k8s.io/group-index", "0"},
                                          {"leaderworkerset.sigs.k8s.io/worker-index", index}}},
                              {"annotations", annotations},
                              {"ownerReferences", {controller("apps/v1", "StatefulSet", owner, owner_uid)}}}},
                {"spec", {{"nodeName", node},
                          {"containers", {{{"name", "c"}, {"resources", {{"limits", {{"nvidia.com/gpu", "1"}, {"cpu", index == "0" ? "500m" : "2"}, {"memory", "2Gi"}}}}}}}}}},
                {"status", {{"phase", "Running"}, {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
  };
  cluster.server.add_objects("", "pods", {lws_pod("vllm-0", "0", "vllm", "uid-sts-vllm", "node-a"),
                                          lws_pod("vllm-0-1", "1", "vllm-0", "uid-sts-vllm-0", "node-b")});
  Run run = inspect(cluster.options("lws/vllm"));
  CHECK(run.code == 0);
  CHECK(run.err == "");
  CHECK(run.out == R"(LeaderWorkerSet/vllm   namespace: research   definition: leaderworkerset-v1 (catalog)   age: 5m20s

|-- leader             1/1 ready   gpu: 1   node-a
|   `-- leader         1/1 ready   gpu: 1   node-a
|       `-- vllm-0     Running     gpu: 1   node-a
`-- worker             1/1 ready   gpu: 1   node-b
    `-- worker         1/1 ready   gpu: 1   node-b
        `-- vllm-0-1   Running     gpu: 1   node-b

Phase: Running

Resources:
COMPONENT   REPLICAS   GPU   CPU     MEMORY
leader      1          1     500m    2Gi
worker      1          1     2       2Gi
TOTAL       2          2     2500m   4Gi
)");
}

TEST_CASE("a kind the cluster does not serve, or that no definition describes, is named in the error") {
  Cluster cluster({demo_jobset()}, demo_jobs(), demo_pods());
  Run unserved = inspect(cluster.options("rayclusters/r"));
  CHECK(unserved.code == 1);
  CHECK(unserved.out == "");
  CHECK(unserved.err == "karta-webhook: the server doesn't have a resource type \"rayclusters\"\n");

  cluster.server.serve({.group = "", .version = "v1", .kind = "ConfigMap", .plural = "configmaps", .singular = "configmap",
                        .short_names = {"cm"}});
  Run undefined = inspect(cluster.options("cm/settings"));
  CHECK(undefined.code == 1);
  CHECK(undefined.err == "karta-webhook: no Karta definition for ConfigMap (v1): neither the built-in catalog, "
                         "--definitions nor the cluster's Kartas describe it\n");

  Run malformed = inspect(cluster.options("demo"));
  CHECK(malformed.code == 1);
  CHECK(malformed.err == "karta-webhook: inspect wants KIND/NAME (jobset/demo), not \"demo\"\n");
}

TEST_CASE("404 and 403 answers give a message naming the resource and namespace, and exit 1") {
  Cluster cluster({demo_jobset()}, demo_jobs(), demo_pods());
  SUBCASE("no such JobSet") {
    Run run = inspect(cluster.options("jobset/missing"));
    CHECK(run.code == 1);
    CHECK(run.out == "");
    CHECK(run.err == "karta-webhook: jobsets.jobset.x-k8s.io \"missing\" not found in namespace research\n");
  }
  // inspect jobset/demo with a resource forbidden in the namespace: exit 1, nothing on out, the message.
  auto denied = [&](const std::string& group, const std::string& plural) {
    cluster.server.forbid(group, plural, "research");
    Run run = inspect(cluster.options("jobset/demo"));
    CHECK(run.code == 1);
    CHECK(run.out == "");
    return run.err;
  };
  SUBCASE("not allowed to get the JobSet") {
    CHECK(denied("jobset.x-k8s.io", "jobsets") ==
          "karta-webhook: not allowed to get jobsets.jobset.x-k8s.io \"demo\" in namespace research: "
          "jobsets.jobset.x-k8s.io \"demo\" is forbidden: User \"system:serviceaccount:karta-system:karta-webhook\" "
          "cannot get resource \"jobsets\" in API group \"jobset.x-k8s.io\" in the namespace \"research\"\n");
  }
  SUBCASE("not allowed to list the namespace's pods") {
    CHECK(denied("", "pods") == "karta-webhook: not allowed to list pods in namespace research: pods is forbidden: User "
                                "\"system:serviceaccount:karta-system:karta-webhook\" cannot list resource \"pods\" in API "
                                "group \"\" in the namespace \"research\"\n");
  }
  SUBCASE("list: a kind that may not be listed is skipped with the server's reason") {
    cluster.server.forbid("jobset.x-k8s.io", "jobsets", "research");
    Run run = list(cluster.options());
    CHECK(run.code == 0);
    CHECK(run.out == "");
    CHECK(run.err.starts_with("No workloads found in namespace research.\n"));
    CHECK(run.err.find("note: not allowed to list jobsets.jobset.x-k8s.io in namespace research: jobsets.jobset.x-k8s.io "
                       "is forbidden: User \"system:serviceaccount:karta-system:karta-webhook\" cannot list resource "
                       "\"jobsets\" in API group \"jobset.x-k8s.io\" in the namespace \"research\": skipped\n") !=
          std::string::npos);
  }
}

TEST_CASE("the command line: inspect KIND/NAME with --kubeconfig and -n, and list") {
  Cluster cluster({demo_jobset()}, demo_jobs(), demo_pods());
  std::string config = cluster.kubeconfig.string();
  auto run = karta::test::run_cli;
  Run described = run({"karta-webhook", "inspect", "jobset/demo", "-n", "research", "--kubeconfig", config});
  CHECK(described.code == 0);
  // The age is now's: everything after the header is the seed's.
  CHECK(described.out.substr(described.out.find('\n')) == kDemoDescribe.substr(kDemoDescribe.find('\n')));
  Run listed = run({"karta-webhook", "list", "-A", "--kubeconfig", config});
  CHECK(listed.code == 0);
  CHECK(listed.out.starts_with("NAMESPACE   NAME   KIND     PHASE     COMPONENTS             GPU   AGE\n"
                               "research    demo   JobSet   Running   leader(1), worker(2)   12    "));
  Run neither = run({"karta-webhook", "inspect", "--kubeconfig", config});
  CHECK(neither.code == 1);
  CHECK(neither.err == "karta-webhook: inspect wants either -f MANIFEST or KIND/NAME of a live workload\n");
}

TEST_CASE("inspect and list read every file of $KUBECONFIG, merged as kubectl merges them") {
  Cluster cluster({demo_jobset()}, demo_jobs(), demo_pods());
  std::string kubeconfig = test::kube_fixtures::split_kubeconfig(cluster.dir.path / "kube", cluster.server.connection());
  setenv("KUBECONFIG", kubeconfig.c_str(), 1);
  karta::LiveOptions options = cluster.options("jobset/demo");
  options.kubeconfig = "";
  Run described = inspect(options);
  options.target = "";
  Run listed = list(options);
  unsetenv("KUBECONFIG");
  CHECK(described.code == 0);
  CHECK(described.out == kDemoDescribe);
  CHECK(listed.code == 0);
  CHECK(listed.out == "NAMESPACE   NAME   KIND     PHASE     COMPONENTS             GPU   AGE\n"
                      "research    demo   JobSet   Running   leader(1), worker(2)   12    20s\n");
  // In the merged context's namespace, research.
  auto targets = cluster.server.targets();
  CHECK(std::find(targets.begin(), targets.end(), "/apis/jobset.x-k8s.io/v1alpha2/namespaces/research/jobsets?limit=100") !=
        targets.end());
  for (const auto& request : cluster.server.received()) CHECK(request.authorization == "Bearer sesame");
}

TEST_CASE("human_duration prints ages as kubectl does") {
  using std::chrono::seconds;
  CHECK(karta::human_duration(seconds(20)) == "20s");
  CHECK(karta::human_duration(seconds(119)) == "119s");
  CHECK(karta::human_duration(seconds(226)) == "3m46s");
  CHECK(karta::human_duration(seconds(600)) == "10m");
  CHECK(karta::human_duration(seconds(3 * 3600 + 120)) == "3h2m");
  CHECK(karta::human_duration(seconds(30 * 3600)) == "30h");
  CHECK(karta::human_duration(seconds(3 * 86400 + 4 * 3600)) == "3d4h");
  CHECK(karta::human_duration(seconds(400 * 86400)) == "400d");
}

TEST_CASE("a cluster's Karta object defines a kind; matchLabels become the pods' label selectors") {
  Cluster cluster({}, {}, {});
  cluster.server.add(test::document(test::source_dir() / "tests/data/pod-attribution/labelled-trainer-karta.yaml"));
  cluster.server.serve({.group = "example.com", .version = "v1", .kind = "Trainer", .plural = "trainers", .singular = "trainer"},
                       {test::yaml(R"(
apiVersion: example.com/v1
kind: Trainer
metadata: {name: t, namespace: research, uid: uid-t, creationTimestamp: "2026-12-02T01:00:00Z"}
spec:
  executors: 2
  driver: {spec: {containers: [{name: d, image: x, resources: {requests: {cpu: 250m, memory: 512Mi}}}]}}
  executor: {spec: {containers: [{name: e, image: x, resources: {limits: {nvidia.com/gpu: 2, cpu: "4", memory: 16Gi}}}]}}
status: {phase: Running}
)")});
  auto trainer_pod = [](const std::string& name, const std::string& role, const std::string& app, const std::string& node) {
    json gpu = role == "executor" ? json{{"limits", {{"nvidia.com/gpu", "2"}}}} : json::object();
    return json{{"metadata", {{"name", name}, {"namespace", "research"}, {"labels", {{"example.com/role", role}, {"app", app}}},
                              {"ownerReferences", {controller("example.com/v1", "Trainer", "t", "uid-t")}}}},
                {"spec", {{"nodeName", node}, {"containers", {{{"name", "c"}, {"resources", gpu}}}}}},
                {"status", {{"phase", "Running"}, {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
  };
  cluster.server.add_objects("", "pods", {trainer_pod("t-driver", "driver", "trainer", "node-a"),
                                          trainer_pod("t-exec-0", "executor", "trainer", "node-b"),
                                          trainer_pod("t-exec-1", "executor", "trainer", "node-c"),
                                          trainer_pod("t-sidecar", "executor", "other", "node-c")});
  Run run = inspect(cluster.options("trainers/t"));
  CHECK(run.code == 0);
  CHECK(run.err == "");
  CHECK(run.out == R"(Trainer/t   namespace: research   definition: trainer-v1 (cluster)   age: 20s

|-- driver         1/1 ready            node-a
|   `-- t-driver   Running              node-a
`-- executor       2/2 ready   gpu: 4   node-b,node-c
    |-- t-exec-0   Running     gpu: 2   node-b
    `-- t-exec-1   Running     gpu: 2   node-c

Phase: Running

Resources:
COMPONENT   REPLICAS   GPU   CPU     MEMORY
driver      1          0     250m    512Mi
executor    2          4     8       32Gi
TOTAL       3          4     8250m   33280Mi
)");
  std::vector<std::string> selectors;
  for (const auto& target : cluster.server.targets()) {
    if (target.starts_with("/api/v1/namespaces/research/pods?")) selectors.push_back(test::percent_decode(target));
  }
  CHECK(selectors == std::vector<std::string>{
                         "/api/v1/namespaces/research/pods?limit=100&labelSelector=app=trainer,example.com/role=driver",
                         "/api/v1/namespaces/research/pods?limit=100&labelSelector=app=trainer"});
}

TEST_CASE("a pod that is not ready says why: the scheduler's reason, the pod's, or its Ready condition's") {
  const auto* definition = test::builtin_catalog().find({"jobset.x-k8s.io", "v1alpha2", "JobSet"});
  REQUIRE(definition != nullptr);
  std::vector<json> pod_objects = demo_pods();
  pod_objects[1]["status"] = {{"phase", "Failed"}, {"reason", "Evicted"},
                              {"message", "The node was low on resource: memory."},
                              {"conditions", {{{"type", "Ready"}, {"status", "False"}, {"reason", "PodFailed"}}}}};
  pod_objects[2]["status"] = {{"phase", "Succeeded"},
                              {"conditions", {{{"type", "Ready"}, {"status", "False"}, {"reason", "PodCompleted"}}}}};
  json view = karta::describe_live_workload(demo_jobset(), *definition, "catalog", pod_objects, {"nvidia.com/gpu"});
  const json& worker = view["components"][0]["instances"][1];
  CHECK(worker["replicas"] == json{{"desired", 2}, {"current", 2}, {"ready", 0}});
  CHECK(worker["pods"] ==
        json{{{"name", "demo-worker-0-0-j9pdc"}, {"phase", "Failed"}, {"ready", false}, {"node", "runai-cluster-worker-0-0"},
              {"reason", "Evicted"}, {"resources", {{"gpus", 4}, {"cpu", 0}, {"memoryBytes", 0}}}},
             {{"name", "demo-worker-1-0-rrsxz"}, {"phase", "Succeeded"}, {"ready", false}, {"node", "runai-cluster-worker-0-0"},
              {"reason", "PodCompleted"}, {"resources", {{"gpus", 4}, {"cpu", 0}, {"memoryBytes", 0}}}}});
  CHECK(karta::render_live_workload(view, twenty_seconds_later()) ==
        R"(JobSet/demo   namespace: research   definition: jobset-v1alpha2 (catalog)   age: 20s

`-- replicatedjob                   1/3 ready                  gpu: 12   runai-cluster-worker-0-0
    |-- leader                      1/1 ready                  gpu: 4    runai-cluster-worker-0-0
    |   `-- demo-leader-0-0-ck6kg   Running                    gpu: 4    runai-cluster-worker-0-0
    `-- worker                      0/2 ready                  gpu: 8    runai-cluster-worker-0-0
        |-- demo-worker-0-0-j9pdc   Failed (Evicted)           gpu: 4    runai-cluster-worker-0-0
        `-- demo-worker-1-0-rrsxz   Succeeded (PodCompleted)   gpu: 4    runai-cluster-worker-0-0
)" + kDemoPhaseAndResources);
}

TEST_CASE("ESC, BEL and CSI sequences in names, instance ids, nodes and pod reasons reach inspect, list and audit escaped") {
  const std::string title = "\x1b]0;pwned\x07";  // OSC 0: sets the window title, ended by BEL
  const std::string clear = "\x1b[2J";           // CSI 2 J: clears the screen
  const std::string csi8 = "\xc2\x9b";           // U+009B, the 8-bit CSI
  json demo = demo_jobset();
  demo["spec"]["replicatedJobs"][0]["name"] = "leader" + title;
  demo["spec"]["replicatedJobs"][1]["name"] = "worker" + clear;
  json evil = demo;
  evil["metadata"]["name"] = "evil" + title;
  evil["metadata"]["uid"] = "uid-evil";
  // The seed's pods, on a node whose name holds the 8-bit CSI, told to the instances by their label. Their
  // Jobs keep plain names: the owner lookups GET them by name.
  auto of_instance = [](json pod, const std::string& instance) {
    pod["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] = instance;
    return pod;
  };
  std::vector<json> pod_objects = {
      of_instance(jobset_pod("demo-leader-0-0-" + clear, "demo", "leader", 0, "node-" + csi8), "leader" + title),
      of_instance(jobset_pod("demo-worker-0-0-j9pdc", "demo", "worker", 0, "node-" + csi8), "worker" + clear),
      of_instance(jobset_pod("demo-worker-1-0-rrsxz", "demo", "worker", 1, ""), "worker" + clear),
      of_instance(jobset_pod("demo-ps-0-0-" + title, "demo", "ps", 0, "node-" + csi8), "ps" + clear)};
  pod_objects[2]["status"]["conditions"][0]["reason"] = title + "Unschedulable";
  pod_objects[2]["status"]["conditions"][0]["message"] = "0/3 nodes are available: " + clear + csi8 + "31m";
  std::vector<json> job_objects = demo_jobs();
  job_objects.push_back(job("demo", "uid-demo", "ps", 0));
  Cluster cluster({demo, evil}, job_objects, pod_objects);

  Run inspected = inspect(cluster.options("jobset/demo"));
  CHECK(inspected.code == 0);
  CHECK(inspected.err == "");
  CHECK(inspected.out == R"(JobSet/demo   namespace: research   definition: jobset-v1alpha2 (catalog)   age: 20s

`-- replicatedjob                   2/3 ready                             gpu: 12   node-\u009b
    |-- leader^[]0;pwned\a          1/1 ready                             gpu: 4    node-\u009b
    |   `-- demo-leader-0-0-^[[2J   Running                               gpu: 4    node-\u009b
    `-- worker^[[2J                 1/2 ready                             gpu: 8    node-\u009b
        |-- demo-worker-0-0-j9pdc   Running                               gpu: 4    node-\u009b
        `-- demo-worker-1-0-rrsxz   Pending (^[]0;pwned\aUnschedulable)   gpu: 4    <none>

Pods of this workload no podSelector places:
`-- demo-ps-0-0-^[]0;pwned\a   Running   gpu: 4   node-\u009b   component replicatedjob: instance id "ps^[[2J" is not one of the workload's (leader^[]0;pwned\a, worker^[[2J)

Phase: Running

Resources:
COMPONENT            REPLICAS   GPU   CPU   MEMORY
leader^[]0;pwned\a   1          4     0     0
worker^[[2J          2          8     0     0
TOTAL                3          12    0     0
)");
  CHECK(test::terminal_controls(inspected.out) == "");

  karta::LiveOptions json_options = cluster.options("jobset/demo");
  json_options.output = "json";
  json view = json::parse(inspect(json_options).out);
  const json& instances = view["components"][0]["instances"];
  CHECK(instances[0]["name"] == "leader" + title);
  CHECK(instances[0]["pods"][0]["name"] == "demo-leader-0-0-" + clear);
  CHECK(instances[0]["nodes"] == json{"node-" + csi8});
  CHECK(instances[1]["name"] == "worker" + clear);
  CHECK(instances[1]["pods"][1]["reason"] == title + "Unschedulable");
  CHECK(view["unplaced"][0]["name"] == "demo-ps-0-0-" + title);

  Run listed = list(cluster.options());
  CHECK(listed.code == 0);
  CHECK(listed.err == unserved_kind_notes());
  CHECK(listed.out == R"(NAMESPACE   NAME               KIND     PHASE     COMPONENTS                              GPU   AGE
research    demo               JobSet   Running   leader^[]0;pwned\a(1), worker^[[2J(2)   12    20s
research    evil^[]0;pwned\a   JobSet   Running   leader^[]0;pwned\a(1), worker^[[2J(2)   12    20s
)");
  CHECK(test::terminal_controls(listed.out) == "");
  json_options = cluster.options();
  json_options.output = "json";
  json items = json::parse(list(json_options).out)["items"];
  CHECK(items[1]["name"] == "evil" + title);
  CHECK(items[1]["components"] == json{{{"name", "leader" + title}, {"replicas", 1}}, {{"name", "worker" + clear}, {"replicas", 2}}});

  karta::AdmissionState state;
  state.catalog = test::builtin_catalog();
  state.policy = test::policy_from_yaml("scheduling:\n  queue: {label: kai.scheduler/queue, default: default-queue}\n");
  karta::kube::ApiClient client(cluster.server.connection());
  json report = karta::audit_cluster(client, state, {.namespace_name = "research", .page_size = 500, .progress = {}}).to_json();
  std::string audited = karta::render_audit(report);
  CHECK(test::terminal_controls(audited) == "");
  CHECK(audited.substr(audited.find("\nJobSet ")) == R"(
JobSet research/demo (jobset.x-k8s.io/v1alpha2)
  patch: 4 operations
    add /metadata/labels/kai.scheduler~1queue "default-queue"
    add /spec/replicatedJobs/0/template/spec/template/metadata/labels/kai.scheduler~1queue "default-queue"
    add /spec/replicatedJobs/1/template/spec/template/metadata {"labels":{"kai.scheduler/queue":"default-queue"}}
    add /metadata/annotations {"karta.run.ai/written":"label:kai.scheduler/queue"}

JobSet research/evil^[]0;pwned\a (jobset.x-k8s.io/v1alpha2)
  patch: 4 operations
    add /metadata/labels/kai.scheduler~1queue "default-queue"
    add /spec/replicatedJobs/0/template/spec/template/metadata/labels/kai.scheduler~1queue "default-queue"
    add /spec/replicatedJobs/1/template/spec/template/metadata {"labels":{"kai.scheduler/queue":"default-queue"}}
    add /metadata/annotations {"karta.run.ai/written":"label:kai.scheduler/queue"}

KIND    APIVERSION                NAMESPACE  WORKLOADS  SKIPPED  VIOLATING  VIOLATIONS  PATCHED  OPERATIONS
Job     batch/v1                  research   0          4        0          0           0        0
JobSet  jobset.x-k8s.io/v1alpha2  research   2          0        0          0           2        8
Pod     v1                        research   0          4        0          0           0        0
total                                        2          8        0          0           2        8
2 workloads audited, 0 violate the label policy, 2 would be patched
)");
  CHECK(report["workloads"][1]["name"] == "evil" + title);
}

TEST_CASE("two cluster Kartas of different kinds both define their kind: list shows both, inspect resolves both") {
  // Regression: the Kartas were keyed by `kartas[name(item)] = std::move(item)`, which reads the name of
  // a moved-from item; every Karta landed under "", and only the last one listed (Beta) was used.
  auto karta_of = [](const std::string& name, const std::string& kind, const std::string& component) {
    return test::yaml(test::made_up_karta(name, kind) + R"(      statusDefinition:
        phaseDefinition: {path: .status.phase}
        statusMappings:
          running: [{byPhase: Running}]
    childComponents:
      - name: )" + component + R"(
        kind: {group: "", version: v1, kind: Pod}
        ownerRef: )" + name + R"(
        specDefinition: {podTemplateSpecPath: .spec.template}
        scaleDefinition: {replicasPath: .spec.replicas}
)");
  };
  auto gpu_limits = [](int gpus) { return json{{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}; };
  auto workload = [&](const std::string& kind, const std::string& name, int replicas, int gpus) {
    return json{{"apiVersion", "example.com/v1"}, {"kind", kind},
                {"metadata", {{"name", name}, {"namespace", "research"}, {"uid", "uid-" + name}, {"creationTimestamp", kCreated}}},
                {"spec", {{"replicas", replicas},
                          {"template", {{"spec", {{"containers", {{{"name", "c"}, {"image", "x"}, {"resources", gpu_limits(gpus)}}}}}}}}}},
                {"status", {{"phase", "Running"}}}};
  };
  auto pod_of = [&](const std::string& kind, const std::string& owner, int gpus, const std::string& node) {
    return json{{"metadata", {{"name", owner + "-0"}, {"namespace", "research"},
                              {"ownerReferences", {controller("example.com/v1", kind, owner, "uid-" + owner)}}}},
                {"spec", {{"nodeName", node}, {"containers", {{{"name", "c"}, {"resources", gpu_limits(gpus)}}}}}},
                {"status", {{"phase", "Running"}, {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
  };
  Cluster cluster({}, {}, {pod_of("Alpha", "a1", 1, "node-a"), pod_of("Beta", "b1", 2, "node-b")});
  cluster.server.add(karta_of("alpha", "Alpha", "worker"));
  cluster.server.add(karta_of("beta", "Beta", "server"));
  cluster.server.serve({.group = "example.com", .version = "v1", .kind = "Alpha", .plural = "alphas", .singular = "alpha"},
                       {workload("Alpha", "a1", 2, 1)});
  cluster.server.serve({.group = "example.com", .version = "v1", .kind = "Beta", .plural = "betas", .singular = "beta"},
                       {workload("Beta", "b1", 1, 2)});

  Run listed = list(cluster.options());
  CHECK(listed.code == 0);
  CHECK(listed.err == unserved_kind_notes());
  CHECK(listed.out == R"(NAMESPACE   NAME   KIND    PHASE     COMPONENTS   GPU   AGE
research    a1     Alpha   Running   worker(2)    2     20s
research    b1     Beta    Running   server(1)    2     20s
)");

  Run alpha = inspect(cluster.options("alpha/a1"));
  CHECK(alpha.code == 0);
  CHECK(alpha.err == "");
  CHECK(alpha.out == R"(Alpha/a1   namespace: research   definition: alpha (cluster)   age: 20s

`-- worker     1/2 ready   gpu: 2   node-a
    `-- a1-0   Running     gpu: 1   node-a

Phase: Running

Resources:
COMPONENT   REPLICAS   GPU   CPU   MEMORY
worker      2          2     0     0
TOTAL       2          2     0     0
)");
  Run beta = inspect(cluster.options("beta/b1"));
  CHECK(beta.code == 0);
  CHECK(beta.err == "");
  CHECK(beta.out == R"(Beta/b1   namespace: research   definition: beta (cluster)   age: 20s

`-- server     1/1 ready   gpu: 2   node-b
    `-- b1-0   Running     gpu: 2   node-b

Phase: Running

Resources:
COMPONENT   REPLICAS   GPU   CPU   MEMORY
server      1          2     0     0
TOTAL       1          2     0     0
)");
}

}  // namespace unit_live_inspect
