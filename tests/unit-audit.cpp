// `karta-webhook audit` against the fake API server: a few hundred workloads of five kinds, listed in
// small pages, with seeded label-policy violations and missing hints; owned ReplicaSets that are skipped;
// kinds of the catalog the cluster does not serve; an RBAC denial; the cluster's own Kartas, merged and
// checked as `serve` does. And `audit -f` over the corpus. Longer than 500 lines because the cluster
// Karta cases share this file's seeded workloads and policy states.

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "admission/admission_service.h"
#include "cli/audit.h"
#include "json/documents.h"
#include "kube/api_client.h"
#include "support/fake_api_server.h"
#include "support/test_support.h"

namespace unit_audit {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace kube = karta::kube;
namespace test = karta::test;
namespace fs = std::filesystem;

namespace {

const char* kPolicy = R"(
podTemplates:
  labels: {platform.example.com/managed: "true"}
scheduling:
  schedulerName: kai-scheduler
  queue: {label: kai.scheduler/queue, default: default-queue}
gpu:
  resourceNames: [nvidia.com/gpu]
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
labelPolicy:
  mode: MODE
  exemptNamespaces: [kube-system]
  workload:
    required: [team]
    allowed: {team: "^[a-z][a-z0-9-]{1,30}$"}
)";

const json kToleration = {{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}};

std::shared_ptr<karta::AdmissionState> state_with(const std::string& mode) {
  auto state = std::make_shared<karta::AdmissionState>();
  state->catalog = test::builtin_catalog();
  std::string policy = kPolicy;
  policy.replace(policy.find("MODE"), 4, mode);
  state->policy = test::policy_from_yaml(policy);
  return state;
}

json deployment() {
  return test::yaml(R"(
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  replicas: 2
  selector: {matchLabels: {app: d}}
  template:
    metadata: {labels: {app: d}}
    spec:
      containers:
      - name: server
        image: vllm/vllm-openai
        resources: {limits: {nvidia.com/gpu: 1}}
)");
}

struct WorkloadKind {
  test::FakeResource resource;
  json sample;
  std::string scheduler_path;  // the first pod spec's schedulerName, removed by a seed
};

std::vector<WorkloadKind> workload_kinds() {
  fs::path samples = *test::corpus_dir() / "samples";
  return {
      {{.group = "jobset.x-k8s.io", .version = "v1alpha2", .kind = "JobSet", .plural = "jobsets", .singular = "jobset"},
       test::document(samples / "jobset-1.yaml"),
       "/spec/replicatedJobs/0/template/spec/template/spec/schedulerName"},
      {{.group = "kubeflow.org", .version = "v1", .kind = "PyTorchJob", .plural = "pytorchjobs", .singular = "pytorchjob"},
       test::document(samples / "pytorchjob-1.yaml"),
       "/spec/pytorchReplicaSpecs/Master/template/spec/schedulerName"},
      {{.group = "ray.io", .version = "v1", .kind = "RayCluster", .plural = "rayclusters", .singular = "raycluster"},
       test::document(samples / "raycluster-1.yaml"),
       "/spec/headGroupSpec/template/spec/schedulerName"},
      {{.group = "leaderworkerset.x-k8s.io", .version = "v1", .kind = "LeaderWorkerSet", .plural = "leaderworkersets",
        .singular = "leaderworkerset", .short_names = {"lws"}},
       test::document(samples / "leaderworkerset-1.yaml"),
       "/spec/leaderWorkerTemplate/workerTemplate/spec/schedulerName"},
      {{.group = "apps", .version = "v1", .kind = "Deployment", .plural = "deployments", .singular = "deployment",
        .short_names = {"deploy"}},
       deployment(),
       "/spec/template/spec/schedulerName"},
  };
}

constexpr int kPerKind = 60;

// What is seeded in workload `i` of a kind, and so what the audit must report.
struct Seed {
  std::string namespace_name;
  bool team_missing = false;
  bool team_invalid = false;
  bool queue_missing = false;
  bool scheduler_missing = false;
  bool toleration_missing = false;  // Deployments only: their template asks for a GPU
};

Seed seed(int i, bool is_deployment) {
  Seed s;
  s.namespace_name = i == 13 ? "kube-system" : i % 2 == 0 ? "ml" : "web";  // kube-system is exempt
  s.team_missing = i % 10 == 3;
  s.team_invalid = i % 10 == 7;
  s.queue_missing = i % 15 == 5;
  s.scheduler_missing = i % 20 == 9;
  s.toleration_missing = is_deployment && i % 20 == 11;
  return s;
}

std::string name_of(const WorkloadKind& kind, int i) {
  std::string number = std::to_string(i);
  std::string lower = kind.resource.singular;
  return lower + "-" + (number.size() < 2 ? "0" : "") + number;
}

// The workload as the webhook would leave it (its own patch applied), with a valid team label: the
// audit finds nothing in it.
json conforming(const WorkloadKind& kind, const karta::AdmissionState& state, const std::string& name,
                const std::string& namespace_name) {
  json object = kind.sample;
  object["metadata"] = {{"name", name}, {"namespace", namespace_name}, {"labels", {{"team", "vision"}}}};
  karta::AdmissionResult result = karta::AdmissionService::mutate(karta::request_for_object(object), state);
  object = object.patch(result.decision.patch.value());
  REQUIRE(karta::AdmissionService::mutate(karta::request_for_object(object), state).decision.patch_operations() == 0);
  return object;
}

json seeded(const WorkloadKind& kind, const karta::AdmissionState& state, int i) {
  Seed s = seed(i, kind.resource.kind == "Deployment");
  json object = conforming(kind, state, name_of(kind, i), s.namespace_name);
  json& labels = object["metadata"]["labels"];
  if (s.team_missing) labels.erase("team");
  if (s.team_invalid) labels["team"] = "Team_" + std::to_string(i);
  if (s.queue_missing) labels.erase("kai.scheduler/queue");
  if (s.scheduler_missing) {
    json::json_pointer pointer(kind.scheduler_path);
    object[pointer.parent_pointer()].erase("schedulerName");
  }
  if (s.toleration_missing) object["spec"]["template"]["spec"].erase("tolerations");
  return object;
}

// The report's workload entry for seed `i`, or null when the audit must not list it.
json expected_workload(const WorkloadKind& kind, int i) {
  Seed s = seed(i, kind.resource.kind == "Deployment");
  json violations = json::array();
  bool exempt = s.namespace_name == "kube-system";
  if (s.team_missing && !exempt) violations.push_back("workload: label \"team\" missing");
  if (s.team_invalid && !exempt) {
    violations.push_back("workload: label \"team\" value \"Team_" + std::to_string(i) +
                         "\" does not match ^[a-z][a-z0-9-]{1,30}$");
  }
  json set = json::array();
  if (s.queue_missing) set.push_back({{"op", "add"}, {"path", "/metadata/labels/kai.scheduler~1queue"}, {"value", "default-queue"}});
  if (s.scheduler_missing) set.push_back({{"op", "add"}, {"path", kind.scheduler_path}, {"value", "kai-scheduler"}});
  if (s.toleration_missing) {
    set.push_back({{"op", "add"}, {"path", "/spec/template/spec/tolerations"}, {"value", json::array({kToleration})}});
  }
  if (violations.empty() && set.empty()) return nullptr;
  return {{"apiVersion", kind.resource.api_version()}, {"kind", kind.resource.kind},
          {"namespace", s.namespace_name},             {"name", name_of(kind, i)},
          {"labelPolicy", "enforce"}, {"enforced", true}, {"admission", violations.empty() ? "allowed" : "denied"},
          {"violations", violations},                  {"patch", {{"operations", set.size()}, {"set", set}}}};
}

test::FakeResource built_in(const std::string& group, const std::string& kind, const std::string& plural) {
  std::string singular = plural.substr(0, plural.size() - 1);
  return {.group = group, .version = "v1", .kind = kind, .plural = plural, .singular = singular};
}

// The fake cluster: the five kinds with their seeded workloads, ReplicaSets owned by Deployments, and
// the built-in kinds of the catalog with nothing in them. No Kubeflow MPIJobs, Ray jobs or services,
// Knative, KServe, Milvus, NIM, Dynamo or Grove: those kinds of the catalog are not served.
struct SeededCluster {
  test::TempDir dir;
  test::FakeApiServer server{dir.path, {}};
  std::vector<WorkloadKind> kinds = workload_kinds();

  explicit SeededCluster(const karta::AdmissionState& state) {
    for (const WorkloadKind& kind : kinds) {
      std::vector<json> objects;
      for (int i = 0; i < kPerKind; ++i) objects.push_back(seeded(kind, state, i));
      server.serve(kind.resource, objects);
    }
    std::vector<json> replica_sets;
    for (int i = 0; i < 20; ++i) {
      // Made by a Deployment: no labels, no scheduler, no queue, and still not reported.
      json rs = {{"metadata",
                  {{"name", "deployment-" + std::to_string(10 + i) + "-7d9f"},
                   {"namespace", "ml"},
                   {"ownerReferences",
                    {{{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "deployment-" + std::to_string(10 + i)},
                      {"uid", "u"}, {"controller", true}}}}}},
                 {"spec", deployment()["spec"]}};
      replica_sets.push_back(rs);
    }
    server.serve(built_in("apps", "ReplicaSet", "replicasets"), replica_sets);
    server.serve(built_in("apps", "StatefulSet", "statefulsets"));
    server.serve(built_in("apps", "DaemonSet", "daemonsets"));
    server.serve(built_in("batch", "Job", "jobs"));
    server.serve(built_in("batch", "CronJob", "cronjobs"));
    server.serve(built_in("", "Pod", "pods"));
  }
};

bool before(const json& a, const json& b) {
  auto key = [](const json& w) {
    return w["apiVersion"].get<std::string>() + " " + w["kind"].get<std::string>() + " " +
           w["namespace"].get<std::string>() + " " + w["name"].get<std::string>();
  };
  return key(a) < key(b);
}

const std::set<std::string> kUnserved = {
    "apiextensions.k8s.io/v1 CustomResourceDefinition",
    "apps.nvidia.com/v1alpha1 NIMService",       "grove.io/v1alpha1 PodCliqueSet",
    "kubeflow.org/v1 MPIJob",                    "milvus.io/v1beta1 Milvus",
    "nvidia.com/v1alpha1 DynamoGraphDeployment", "ray.io/v1 RayJob",
    "ray.io/v1 RayService",                      "serving.knative.dev/v1 Service",
    "serving.kserve.io/v1beta1 InferenceService", "serving.kserve.io/v1alpha1 LLMInferenceService",
    "agents.x-k8s.io/v1beta1 Sandbox",
    // The kinds beyond Workload Map's catalog (issue 51).
    "batch.volcano.sh/v1alpha1 Job",             "sparkoperator.k8s.io/v1beta2 SparkApplication",
    "trainer.kubeflow.org/v1alpha1 TrainJob",    "argoproj.io/v1alpha1 Workflow",
    "apps.nvidia.com/v1alpha1 NIMCache",         "kubeflow.org/v1 TFJob",
    "kubeflow.org/v1 XGBoostJob",                "kubeflow.org/v1 PaddleJob",
    "kubeflow.org/v1 JAXJob",                    "kubeflow.org/v1 Notebook"};  // one row per kind: LLMInferenceService's two versions share it

}  // namespace

TEST_CASE("audit of a cluster reports every seeded violation and missing hint and nothing else, and exits 1 in enforce mode") {
  auto state = state_with("enforce");
  SeededCluster cluster(*state);
  kube::ApiClient client(cluster.server.connection());
  std::vector<std::string> progress;
  karta::AuditOptions options{.namespace_name = "", .page_size = 7,
                              .progress = [&](const std::string& line) { progress.push_back(line); }};
  karta::AuditReport report = karta::audit_cluster(client, *state, options);
  json document = report.to_json();

  json expected = json::array();
  std::map<std::string, json> rows;  // "apiVersion kind namespace" -> counts
  for (const WorkloadKind& kind : cluster.kinds) {
    for (int i = 0; i < kPerKind; ++i) {
      Seed s = seed(i, kind.resource.kind == "Deployment");
      if (s.namespace_name == "kube-system") continue;  // never sent to the webhook: not audited (notSent)
      json& row = rows[kind.resource.api_version() + " " + kind.resource.kind + " " + s.namespace_name];
      if (row.is_null()) {
        row = {{"apiVersion", kind.resource.api_version()}, {"kind", kind.resource.kind}, {"namespace", s.namespace_name},
               {"workloads", 0}, {"skipped", 0}, {"violating", 0}, {"violations", 0}, {"patched", 0}, {"operations", 0}};
      }
      row["workloads"] = row["workloads"].get<int>() + 1;
      json workload = expected_workload(kind, i);
      if (workload.is_null()) continue;
      std::size_t violations = workload["violations"].size(), operations = workload["patch"]["operations"];
      row["violating"] = row["violating"].get<int>() + (violations > 0 ? 1 : 0);
      row["violations"] = row["violations"].get<std::size_t>() + violations;
      row["patched"] = row["patched"].get<int>() + (operations > 0 ? 1 : 0);
      row["operations"] = row["operations"].get<std::size_t>() + operations;
      expected.push_back(workload);
    }
  }
  rows["apps/v1 ReplicaSet ml"] = {{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"namespace", "ml"},
                                   {"workloads", 0}, {"skipped", 20}, {"violating", 0}, {"violations", 0},
                                   {"patched", 0}, {"operations", 0}};

  json workloads = document["workloads"];
  std::sort(workloads.begin(), workloads.end(), before);
  std::sort(expected.begin(), expected.end(), before);
  REQUIRE(workloads.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) CHECK(workloads[i] == expected[i]);
  // Per kind: 12 with the team missing or invalid (one of them exempt), 4 missing the queue label, 3 the
  // scheduler, and for Deployments 3 the GPU toleration.
  CHECK(expected.size() == 5 * (11 + 4 + 3) + 3);
  CHECK(document["notSent"] == json::parse(R"([{"namespace": "kube-system", "workloads": 5,
    "why": "the webhooks' namespaceSelector excludes namespace kube-system"}])"));

  json summary = json::array();
  for (const auto& [key, row] : rows) summary.push_back(row);
  CHECK(document["summary"] == summary);
  CHECK(document["totals"] == json{{"workloads", 295}, {"skipped", 20}, {"violating", 55}, {"violations", 55},
                                   {"patched", 38}, {"operations", 38}});
  CHECK(document["labelPolicy"] == "enforce");
  CHECK(document["enforced"] == true);
  CHECK(document["complete"] == true);
  CHECK(report.exit_code() == 1);

  std::set<std::string> unserved;
  std::map<std::string, std::string> listed;
  for (const json& kind : document["kinds"]) {
    std::string name = kind["apiVersion"].get<std::string>() + " " + kind["kind"].get<std::string>();
    if (kind.contains("note")) {
      unserved.insert(name);
    } else {
      listed[name] = std::to_string(kind["listed"].get<int>()) + " in " + std::to_string(kind["pages"].get<int>());
    }
  }
  CHECK(unserved == kUnserved);
  CHECK(listed == std::map<std::string, std::string>{{"apps/v1 Deployment", "60 in 9"},
                                                      {"apps/v1 ReplicaSet", "20 in 3"},
                                                      {"apps/v1 StatefulSet", "0 in 1"},
                                                      {"apps/v1 DaemonSet", "0 in 1"},
                                                      {"batch/v1 Job", "0 in 1"},
                                                      {"batch/v1 CronJob", "0 in 1"},
                                                      {"v1 Pod", "0 in 1"},
                                                      {"jobset.x-k8s.io/v1alpha2 JobSet", "60 in 9"},
                                                      {"kubeflow.org/v1 PyTorchJob", "60 in 9"},
                                                      {"leaderworkerset.x-k8s.io/v1 LeaderWorkerSet", "60 in 9"},
                                                      {"ray.io/v1 RayCluster", "60 in 9"},
                                                      {"run.ai/v1alpha1 Karta", "0 in 1"}});
  // Two versions of MPIJob and of Dynamo are defined; the note names both.
  for (const json& kind : document["kinds"]) {
    if (kind["kind"] == "MPIJob") CHECK(kind["note"] == "not served by the cluster (kubeflow.org/v1, kubeflow.org/v2beta1): skipped");
  }
  // A line per page; JobSets come in 9 pages of at most 7.
  CHECK(std::count(progress.begin(), progress.end(), "JobSet (jobset.x-k8s.io/v1alpha2): 7 listed, page 1") == 1);
  CHECK(std::count(progress.begin(), progress.end(), "JobSet (jobset.x-k8s.io/v1alpha2): 60 listed, page 9") == 1);
  CHECK(progress.size() == 5 * 9 + 3 + 5);

  // In audit mode the same violations are reported, and the exit status is 0.
  {
    auto audit_state = state_with("audit");
    karta::AuditReport audited = karta::audit_cluster(client, *audit_state, options);
    json again = audited.to_json();
    CHECK(again["workloads"].size() == expected.size());
    CHECK(again["totals"] == document["totals"]);
    CHECK(again["enforced"] == false);
    CHECK(audited.exit_code() == 0);
  }
  // One namespace: 29 workloads of each kind in "web" (the 13th is in kube-system).
  {
    options.namespace_name = "web";
    json web = karta::audit_cluster(client, *state, options).to_json();
    for (const json& workload : web["workloads"]) CHECK(workload["namespace"] == "web");
    CHECK(web["totals"]["workloads"] == 5 * 29);
  }
}

TEST_CASE("a kind the audit may not list is noted with the API server's message and the audit is incomplete") {
  auto state = state_with("audit");
  SeededCluster cluster(*state);
  cluster.server.forbid("ray.io", "rayclusters");
  kube::ApiClient client(cluster.server.connection());
  karta::AuditReport report = karta::audit_cluster(client, *state, {.namespace_name = "", .page_size = 50, .progress = {}});
  json document = report.to_json();
  json ray;
  for (const json& kind : document["kinds"]) {
    if (kind["kind"] == "RayCluster") ray = kind;
  }
  REQUIRE(ray.contains("error"));
  CHECK(ray["error"].get<std::string>().ends_with(
      "answered 403: rayclusters.ray.io is forbidden: User \"system:serviceaccount:karta-system:karta-webhook\" "
      "cannot list resource \"rayclusters\" in API group \"ray.io\" at the cluster scope"));
  CHECK(document["complete"] == false);
  CHECK(document["totals"]["workloads"] == 4 * (kPerKind - 1));  // each kind's 13th is in kube-system: not sent
  CHECK(report.exit_code() == 2);
}

TEST_CASE("the text report lists each workload's violations and operations, then the table per kind and namespace") {
  auto state = state_with("enforce");
  test::TempDir dir;
  test::FakeApiServer server(dir.path, {});
  WorkloadKind jobsets = workload_kinds()[0];
  json bad = seeded(jobsets, *state, 3);  // team missing
  json hinted = seeded(jobsets, *state, 9);  // scheduler missing
  json clean = seeded(jobsets, *state, 0);
  bad["metadata"]["labels"].erase("kai.scheduler/queue");
  server.serve(jobsets.resource, {bad, hinted, clean});
  kube::ApiClient client(server.connection());
  json document = karta::audit_cluster(client, *state, {.namespace_name = "", .page_size = 2, .progress = {}}).to_json();
  std::string text = karta::render_audit(document);
  std::string url = server.connection().server_url();
  CHECK(text.rfind("audit of cluster " + url + " (label policy: enforce)\n", 0) == 0);
  CHECK(text.find("\n  JobSet (jobset.x-k8s.io/v1alpha2): 3 listed in 2 pages\n") != std::string::npos);
  CHECK(text.find("  PyTorchJob (kubeflow.org/v1): not served by the cluster (kubeflow.org/v1): skipped\n") !=
        std::string::npos);
  std::string tail = text.substr(text.find("\nJobSet "));
  CHECK(tail == R"(
JobSet web/jobset-03 (jobset.x-k8s.io/v1alpha2)
  violation: workload: label "team" missing
  admission: denied (label policy enforce)
  patch: 1 operations
    add /metadata/labels/kai.scheduler~1queue "default-queue"

JobSet web/jobset-09 (jobset.x-k8s.io/v1alpha2)
  patch: 1 operations
    add /spec/replicatedJobs/0/template/spec/template/spec/schedulerName "kai-scheduler"

KIND    APIVERSION                NAMESPACE  WORKLOADS  SKIPPED  VIOLATING  VIOLATIONS  PATCHED  OPERATIONS
JobSet  jobset.x-k8s.io/v1alpha2  ml         1          0        0          0           0        0
JobSet  jobset.x-k8s.io/v1alpha2  web        2          0        1          1           2        2
total                                        3          0        1          1           2        2
3 workloads audited, 1 violate the label policy (enforce: the webhook would deny them), 2 would be patched
)");
}

TEST_CASE("audit -f over the corpus samples runs clean and lists for each object what mutate would add") {
  auto corpus = test::corpus_dir();
  test::TempDir dir;
  std::string policy = kPolicy;
  policy = policy.substr(0, policy.find("labelPolicy:"));  // no label policy: nothing to violate
  std::ofstream(dir.path / "policy.yaml") << policy;
  int code = -1;
  std::string output = test::run_command(test::binary_path().string() + " audit -f " + (*corpus / "samples").string() +
                                             " --policy " + (dir.path / "policy.yaml").string() + " --output json 2>&1",
                                         &code);
  CHECK(code == 0);
  json report = json::parse(output);
  CHECK(report["labelPolicy"] == "off");
  CHECK(report["complete"] == true);
  CHECK(report["totals"]["violations"] == 0);
  // Each object the webhook would patch, in order, with its operation count: "apiVersion Kind ns/name: N".
  std::vector<std::string> audited;
  std::set<std::string> files;
  for (const json& workload : report["workloads"]) {
    CHECK(workload["violations"].empty());
    CHECK(workload["patch"]["operations"] == workload["patch"]["set"].size());
    std::string name = workload["name"].get<std::string>();
    // generateName: both show the prefix with "*" (mutate's header did not, issue 61).
    if (!workload["namespace"].get<std::string>().empty()) name = workload["namespace"].get<std::string>() + "/" + name;
    audited.push_back(workload["apiVersion"].get<std::string>() + " " + workload["kind"].get<std::string>() + " " +
                      name + ": " + std::to_string(workload["patch"]["operations"].get<std::size_t>()));
    std::string source = workload["source"].get<std::string>();
    files.insert(source.substr(0, source.rfind('#')));
  }
  // The same from the mutate path of the binary, over all the samples in one file (in the same order).
  std::string all;
  for (const auto& file : karta::expand_manifest_paths({(*corpus / "samples").string()})) {
    all += test::read_text(file) + "\n---\n";
  }
  test::write_text(dir.path / "all.yaml", all);
  std::string text = test::run_command(test::binary_path().string() + " mutate -f " + (dir.path / "all.yaml").string() +
                                           " --policy " + (dir.path / "policy.yaml").string(),
                                       &code);
  REQUIRE(code == 0);
  std::vector<std::string> mutated;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    // "# FILE#N: apiVersion Kind ns/name: 7 patch operations"
    const std::string suffix = " patch operations";
    if (!line.starts_with("# ") || !line.ends_with(suffix)) continue;
    std::string rest = line.substr(line.find(": ") + 2, line.size() - suffix.size() - line.find(": ") - 2);
    if (!rest.ends_with(": 0")) mutated.push_back(rest);
  }
  CHECK(audited == mutated);
  // Every sample file holds a workload the webhook would patch.
  CHECK(files.size() == karta::expand_manifest_paths({(*corpus / "samples").string()}).size());
  CHECK(report["totals"]["patched"] == audited.size());
}

TEST_CASE("karta-webhook audit --kubeconfig exits 1 on an enforce-mode violation, and writes no progress when stderr is no terminal") {
  auto state = state_with("enforce");
  test::TempDir dir;
  test::FakeApiServer server(dir.path, {});
  WorkloadKind jobsets = workload_kinds()[0];
  server.serve(jobsets.resource, {seeded(jobsets, *state, 0), seeded(jobsets, *state, 7)});  // 7: team "Team_7"
  test::write_text(dir.path / "config",
                   "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: https://127.0.0.1:" +
                       std::to_string(server.port()) + "\n    certificate-authority-data: " +
                       test::base64(test::read_text(server.certificates().ca)) +
                       "\nusers:\n- {name: u, user: {token: sesame}}\ncontexts:\n- {name: c, context: {cluster: fake, user: u}}\n"
                       "current-context: c\n");
  std::string policy = kPolicy;
  policy.replace(policy.find("MODE"), 4, "enforce");
  test::write_text(dir.path / "policy.yaml", policy);
  std::string command = test::binary_path().string() + " audit --kubeconfig " + (dir.path / "config").string() +
                        " --policy " + (dir.path / "policy.yaml").string() + " --page-size 1";
  int code = -1;
  std::string stderr_text = test::run_command(command + " -o json 2>&1 >/dev/null", &code);
  CHECK(code == 1);
  CHECK(stderr_text == "");
  json report = json::parse(test::run_command(command + " -o json 2>/dev/null", &code));
  REQUIRE(report["workloads"].size() == 1);
  CHECK(report["workloads"][0]["name"] == "jobset-07");
  CHECK(report["workloads"][0]["violations"] ==
        json{"workload: label \"team\" value \"Team_7\" does not match ^[a-z][a-z0-9-]{1,30}$"});
  for (const json& kind : report["kinds"]) {
    if (kind["kind"] == "JobSet") CHECK(kind["pages"] == 2);
  }
  std::string text = test::run_command(command + " 2>/dev/null", &code);
  CHECK(code == 1);
  CHECK(text.find("\nJobSet web/jobset-07 (jobset.x-k8s.io/v1alpha2)\n  violation: workload: label \"team\" value \"Team_7\"") !=
        std::string::npos);
  // No report at all is status 2, not 1: an unreachable cluster, a manifest that does not parse.
  test::write_text(dir.path / "unreachable", "clusters:\n- {name: x, cluster: {server: \"https://127.0.0.1:1\"}}\n"
                                             "users:\n- {name: u, user: {token: t}}\n"
                                             "contexts:\n- {name: c, context: {cluster: x, user: u}}\ncurrent-context: c\n");
  std::string unreachable = test::run_command(
      test::binary_path().string() + " audit --kubeconfig " + (dir.path / "unreachable").string() + " 2>&1", &code);
  CHECK(code == 2);
  CHECK(unreachable.rfind("karta-webhook audit: GET https://127.0.0.1:1/api", 0) == 0);
  test::write_text(dir.path / "bad.yaml", "kind: [unclosed\n");
  std::string bad = test::run_command(test::binary_path().string() + " audit -f " + (dir.path / "bad.yaml").string() + " 2>&1", &code);
  CHECK(code == 2);
  CHECK(bad.find("bad.yaml") != std::string::npos);
}

// ---------------------------------------------------------------------------------------------------
// The cluster's Kartas, read as `serve` reads them

namespace {

json trainer_crd() { return test::document(test::source_dir() / "tests/data/trainer-crd.yaml"); }

const test::FakeResource kTrainers{.group = "acme.example.com", .version = "v1", .kind = "Trainer",
                                   .plural = "trainers", .singular = "trainer"};

json trainer_karta() { return test::document(test::source_dir() / "tests/data/trainer-karta.yaml"); }

// The Trainer Karta with its template path misspelt: a fault of its path against the CRD.
json misspelt_trainer_karta() {
  json karta_object = trainer_karta();
  karta_object["metadata"]["name"] = "trainer-misspelt";
  karta_object["spec"]["structureDefinition"]["childComponents"][0]["specDefinition"]["podTemplateSpecPath"] =
      ".spec.wroker.template";
  return karta_object;
}

json trainer(const std::string& name) {
  return test::yaml("{apiVersion: acme.example.com/v1, kind: Trainer, metadata: {name: " + name +
                    ", namespace: ml, labels: {team: vision}}, spec: {worker: {template: {spec: {containers: "
                    "[{name: w, image: i}]}}}}}");
}

}  // namespace

TEST_CASE("audit reads the cluster's Kartas as serve does: a kind only a cluster Karta defines is audited with it") {
  auto state = state_with("enforce");
  test::TempDir dir;
  test::FakeApiServer server(dir.path, {trainer_karta()});
  server.serve(test::crd_resource(), {trainer_crd()});
  server.serve(kTrainers, {trainer("t1")});
  kube::ApiClient client(server.connection());
  karta::AuditReport report = karta::audit_cluster(client, *state, {.namespace_name = "", .page_size = 50, .progress = {}});
  json document = report.to_json();

  // What the webhook does to the Trainer with the cluster's definition in its catalog.
  karta::AdmissionState with_trainer = *state;
  with_trainer.catalog.add(test::compile_definition(test::read_text(test::source_dir() / "tests/data/trainer-karta.yaml")));
  json expected = karta::AdmissionService::mutate(karta::request_for_object(trainer("t1")), with_trainer).decision.patch.value();
  REQUIRE(expected.size() == 4);  // the queue label, two template hints, and the queue label's provenance
  CHECK(document["workloads"] == json::array({{{"apiVersion", "acme.example.com/v1"}, {"kind", "Trainer"},
                                               {"namespace", "ml"}, {"name", "t1"}, {"labelPolicy", "enforce"},
                                               {"enforced", true}, {"admission", "allowed"}, {"violations", json::array()},
                                               {"patch", {{"operations", 4}, {"set", expected}}}}}));
  std::map<std::string, json> kinds;
  for (const json& kind : document["kinds"]) kinds[kind["kind"].get<std::string>()] = kind;
  CHECK(kinds["Karta"] == json{{"apiVersion", "run.ai/v1alpha1"}, {"kind", "Karta"}, {"resource", "kartas"},
                               {"listed", 1}, {"pages", 1}});
  CHECK(kinds["CustomResourceDefinition"] == json{{"apiVersion", "apiextensions.k8s.io/v1"},
                                                  {"kind", "CustomResourceDefinition"},
                                                  {"resource", "customresourcedefinitions"}, {"listed", 1}, {"pages", 1}});
  CHECK(kinds["Trainer"] == json{{"apiVersion", "acme.example.com/v1"}, {"kind", "Trainer"}, {"resource", "trainers"},
                                 {"listed", 1}, {"pages", 1}});
  CHECK(document["definitions"] == json::array());
  CHECK(document["complete"] == true);
  CHECK(report.exit_code() == 0);
}

TEST_CASE("audit reports each cluster Karta's faults, checked against the cluster's CRDs, and exits 1 under definitionPolicy enforce") {
  auto state = state_with("audit");
  json unsafe = trainer_karta();
  unsafe["metadata"]["name"] = "gizmo-unsafe";
  unsafe["spec"]["structureDefinition"]["rootComponent"]["kind"]["kind"] = "Gizmo";
  unsafe["spec"]["structureDefinition"]["childComponents"][0]["instanceIdPath"] = "env.HOME";
  unsafe["spec"]["structureDefinition"]["childComponents"][0]["podSelector"] = {
      {"componentInstanceSelector", {{"idPath", ".metadata.name"}}}};
  test::TempDir dir;
  test::FakeApiServer server(dir.path, {misspelt_trainer_karta(), unsafe});
  server.serve(test::crd_resource(), {trainer_crd()});
  server.serve(kTrainers, {trainer("t1")});
  kube::ApiClient client(server.connection());
  karta::AuditReport report = karta::audit_cluster(client, *state, {.namespace_name = "", .page_size = 50, .progress = {}});
  json document = report.to_json();
  const std::string misspelt_fault =
      "spec.structureDefinition.childComponents[0].specDefinition.podTemplateSpecPath: `.spec.wroker` is not in "
      "Trainer's schema at `.spec`; did you mean `worker`?";
  CHECK(document["definitions"] ==
        json::array({{{"name", "gizmo-unsafe"},
                      {"faults", {"spec.structureDefinition.childComponents[0].instanceIdPath: env.HOME: `env` is not "
                                  "allowed: it would expose the webhook's environment"}},
                      {"loaded", false}},
                     {{"name", "trainer-misspelt"}, {"faults", {misspelt_fault}}, {"loaded", false}}}));
  // Neither is loaded under enforce: the Trainer is not audited (no definition), and the webhook would deny
  // both Kartas on their next change.
  CHECK(document["workloads"] == json::array());
  CHECK(report.exit_code() == 1);
  std::string text = karta::render_audit(document);
  CHECK(text.find("\nKarta trainer-misspelt (not loaded)\n  fault: " + misspelt_fault + "\n") != std::string::npos);

  // Under definitionPolicy warn, the Karta whose only fault is its path is loaded, as serve loads it: the
  // Trainer is audited (its misspelt template path yields nothing, so only the workload is patched).
  state->policy.definition_policy.mode = karta::DefinitionPolicyMode::Warn;
  karta::AuditReport warned = karta::audit_cluster(client, *state, {.namespace_name = "", .page_size = 50, .progress = {}});
  json again = warned.to_json();
  CHECK(again["definitions"][1] == json{{"name", "trainer-misspelt"}, {"faults", {misspelt_fault}}, {"loaded", true}});
  CHECK(again["definitions"][0]["loaded"] == false);
  REQUIRE(again["workloads"].size() == 1);
  CHECK(again["workloads"][0]["patch"] ==
        json{{"operations", 2},
             {"set", {{{"op", "add"}, {"path", "/metadata/labels/kai.scheduler~1queue"}, {"value", "default-queue"}},
                      {{"op", "add"}, {"path", "/metadata/annotations"},
                       {"value", {{"karta.run.ai/written", "label:kai.scheduler/queue"}}}}}}});
  CHECK(warned.exit_code() == 0);
  CHECK(karta::render_audit(again).find("\nKarta trainer-misspelt (loaded: the paths at fault yield nothing)\n") !=
        std::string::npos);
}

TEST_CASE("an audit that may not read the cluster's Kartas says so, uses the other definitions, and is incomplete") {
  auto state = state_with("audit");
  test::TempDir dir;
  test::FakeApiServer server(dir.path, {trainer_karta()});
  server.serve(kTrainers, {trainer("t1")});
  WorkloadKind jobsets = workload_kinds()[0];
  server.serve(jobsets.resource, {seeded(jobsets, *state, 9)});  // its scheduler name missing
  server.forbid("run.ai", "kartas");
  kube::ApiClient client(server.connection());
  karta::AuditReport report = karta::audit_cluster(client, *state, {.namespace_name = "", .page_size = 50, .progress = {}});
  json document = report.to_json();
  json kartas;
  for (const json& kind : document["kinds"]) {
    if (kind["kind"] == "Karta") kartas = kind;
    CHECK(kind["kind"] != "Trainer");  // only the Karta in the cluster defines it
  }
  REQUIRE(kartas.contains("error"));
  const std::string error = kartas["error"];
  CHECK(error.starts_with("the cluster's Kartas were not read, so only the built-in catalog and --definitions were "
                          "used: GET "));
  CHECK(error.ends_with("answered 403: kartas.run.ai is forbidden: User \"system:serviceaccount:karta-system:karta-webhook\" "
                        "cannot list resource \"kartas\" in API group \"run.ai\" at the cluster scope"));
  CHECK(document["complete"] == false);
  CHECK(report.exit_code() == 2);
  // The built-in catalog's kinds are audited all the same.
  REQUIRE(document["workloads"].size() == 1);
  CHECK(document["workloads"][0]["name"] == "jobset-09");
  std::string text = karta::render_audit(document);
  CHECK(text.find("\n  Karta (run.ai/v1alpha1): NOT LISTED: " + error + "\n") != std::string::npos);
  CHECK(text.ends_with("the audit is incomplete: a kind could not be listed\n"));
}

}  // namespace unit_audit
