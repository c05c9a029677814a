// The catalog's kinds beyond Workload Map (issue 51): Volcano Job, SparkApplication, TrainJob, Argo
// Workflow, NIMCache, TFJob, XGBoostJob, PaddleJob, JAXJob and Notebook. On a published example of each
// that was held out when its definition was written (tests/corpus/SOURCES.md), `mutate` patches the queue
// label in and `inspect --output json` counts the pods a user of the framework expects; the queue also
// reaches the field the kind's own scheduler reads (queuePath), and Volcano's gang size is its own
// minAvailable (gangMinMemberPath). Every sample of every new kind keeps its patch through the API
// server's structural pruning against the kind's CRD.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "admission/admission_review.h"
#include "definitions/catalog.h"
#include "k8s/openapi_schema.h"
#include "mutate/mutation.h"
#include "support/test_support.h"
#include "validate/crd_schema_set.h"

namespace unit_catalog_new_kinds {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace fs = std::filesystem;
namespace test = karta::test;

namespace {

fs::path samples() { return test::source_dir() / "tests/corpus/samples"; }

const karta::CrdSchemaSet& crds() {
  static const karta::CrdSchemaSet set = karta::CrdSchemaSet::load_directory(test::source_dir() / "tests/corpus/crds");
  return set;
}

// The policy of the examples: a queue label with a default, a scheduler, GPU tolerations and the gang
// annotation, as examples/policy.yaml has them.
const char* kPolicy = R"(podTemplates:
  labels: {platform.example.com/managed: "true"}
scheduling:
  schedulerName: kai-scheduler
  queue: {label: kai.scheduler/queue, default: research}
gpu:
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
gang:
  minMemberAnnotation: kai.scheduler/batch-min-member
)";

// `karta-webhook COMMAND -f FILE --policy POLICY`, run in this process, on one object written to a file.
test::CliRun cli(std::vector<std::string> command, const json& object) {
  test::TempDir dir;
  test::write_text(dir.path / "policy.yaml", kPolicy);
  test::write_text(dir.path / "object.json", object.dump());
  command.insert(command.begin(), "karta-webhook");
  command.insert(command.end(), {"-f", (dir.path / "object.json").string(), "--policy", (dir.path / "policy.yaml").string()});
  return test::run_cli(command);
}

// The patch `mutate` prints after its header line.
json mutate_patch(const json& object) {
  const test::CliRun run = cli({"mutate"}, object);
  REQUIRE_MESSAGE(run.code == 0, run.err);
  const auto newline = run.out.find('\n');
  REQUIRE(run.out.starts_with("# "));
  return json::parse(run.out.substr(newline + 1));
}

// The pods `inspect --output json` counts: every instance's replicas.
long long inspected_pods(const json& object, double* gpus = nullptr) {
  const test::CliRun run = cli({"inspect", "-o", "json"}, object);
  REQUIRE_MESSAGE(run.code == 0, run.err);
  const json report = json::parse(run.out).at(0);
  CHECK(report["notes"] == json::array());
  long long pods = 0;
  for (const auto& component : report["components"]) {
    for (const auto& instance : component["instances"]) pods += instance["replicas"].get<long long>();
  }
  if (gpus) *gpus = report["totals"]["gpus"].get<double>();
  return pods;
}

// The queue label's operation on the workload: added to its labels, or with its labels when it has none.
bool adds_queue_label(const json& patch) {
  for (const auto& op : patch) {
    if (op["op"] != "add") continue;
    if (op["path"] == "/metadata/labels/kai.scheduler~1queue" && op["value"] == "research") return true;
    if (op["path"] == "/metadata/labels" && op["value"].value("kai.scheduler/queue", "") == "research") return true;
  }
  return false;
}

struct HeldOut {
  const char* file;
  const char* what;  // what a user expects, in the framework's words
  long long pods;
  double gpus;
};

// One held-out published example of each new kind (tests/corpus/SOURCES.md says which were held out).
const std::vector<HeldOut> kHeldOut = {
    {"volcano-job-3.yaml", "a Volcano Job with tasks ps (1 replica) and worker (3 replicas, 1 GPU each): 4 pods", 4, 3},
    {"sparkapplication-3.yaml", "a SparkApplication with 2 executor instances: the driver and 2 executors", 3, 0},
    {"trainjob-2.yaml", "a TrainJob with trainer.numNodes 2: 2 training nodes", 2, 0},
    {"workflow-3.yaml", "Argo's dag-diamond: tasks A, B, C and D, each a pod of template echo", 4, 0},
    {"nimcache-2.yaml", "a NIMCache: the one pod of its caching Job", 1, 0},
    {"tfjob-2.yaml", "a TFJob with 2 Worker replicas", 2, 0},
    {"xgboostjob-2.yaml", "an XGBoostJob with 1 Master and 2 Workers", 3, 0},
    {"paddlejob-2.yaml", "a PaddleJob with 2 Workers of 2 GPUs each", 2, 4},
    {"jaxjob-2.yaml", "a JAXJob with 2 Workers", 2, 0},
    {"notebook-2.yaml", "a Notebook: its one server pod", 1, 0},
};

}  // namespace

TEST_SUITE("catalog new kinds") {

TEST_CASE("a held-out published example of each new kind: mutate adds the queue label, inspect counts the pods a user expects") {
  std::set<std::string> kinds;
  for (const HeldOut& example : kHeldOut) {
    CAPTURE(example.file);
    CAPTURE(example.what);
    const fs::path file = samples() / example.file;
    REQUIRE_MESSAGE(fs::is_regular_file(file), "missing " << file.string());
    const json object = test::document(file);
    kinds.insert(object["apiVersion"].get<std::string>() + " " + object["kind"].get<std::string>());
    const json patch = mutate_patch(object);
    CHECK(adds_queue_label(patch));
    CHECK_NOTHROW(test::kubectl_apply(object, patch));
    double gpus = -1;
    CHECK(inspected_pods(object, &gpus) == example.pods);
    CHECK(gpus == example.gpus);
  }
  CHECK(kinds == std::set<std::string>{"batch.volcano.sh/v1alpha1 Job", "sparkoperator.k8s.io/v1beta2 SparkApplication",
                                       "trainer.kubeflow.org/v1alpha1 TrainJob", "argoproj.io/v1alpha1 Workflow",
                                       "apps.nvidia.com/v1alpha1 NIMCache", "kubeflow.org/v1 TFJob",
                                       "kubeflow.org/v1 XGBoostJob", "kubeflow.org/v1 PaddleJob", "kubeflow.org/v1 JAXJob",
                                       "kubeflow.org/v1 Notebook"});
}

TEST_CASE("a Volcano Job whose tasks have 2 and 4 replicas is 6 pods; its queue goes into spec.queue and its gang size is minAvailable") {
  json job = test::document(samples() / "volcano-job-3.yaml");
  job["spec"]["tasks"][0]["replicas"] = 2;
  job["spec"]["tasks"][1]["replicas"] = 4;
  CHECK(inspected_pods(job) == 6);

  // The held-out example as published: no queue, minAvailable 4 (its 4 pods). The whole patch.
  const json published = test::document(samples() / "volcano-job-3.yaml");
  const json toleration = {{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}};
  CHECK(mutate_patch(published) == json::parse(R"([
    {"op": "add", "path": "/metadata/labels", "value": {"kai.scheduler/queue": "research"}},
    {"op": "add", "path": "/spec/tasks/0/template/metadata",
     "value": {"labels": {"kai.scheduler/queue": "research", "platform.example.com/managed": "true"}}},
    {"op": "add", "path": "/spec/tasks/0/template/spec/schedulerName", "value": "kai-scheduler"},
    {"op": "add", "path": "/spec/tasks/1/template/metadata",
     "value": {"labels": {"kai.scheduler/queue": "research", "platform.example.com/managed": "true"}}},
    {"op": "add", "path": "/spec/tasks/1/template/spec/schedulerName", "value": "kai-scheduler"},
    {"op": "add", "path": "/spec/tasks/1/template/spec/tolerations", "value": [)" + toleration.dump() + R"(]},
    {"op": "add", "path": "/spec/queue", "value": "research"},
    {"op": "add", "path": "/metadata/annotations", "value": {"karta.run.ai/written": "label:kai.scheduler/queue"}}
  ])"));
  // No gang annotation: KAI Scheduler reads it on a batch Job and a JobSet only (gang.kinds' default).

  // A policy that names the Volcano Job in gang.kinds gets its gang size: minAvailable (4, its 4 pods).
  auto policy = test::policy_from_yaml(std::string(kPolicy) + "  kinds: [batch.volcano.sh/Job]\n");
  const auto* volcano = test::builtin_catalog().find(karta::request_for_object(published).kind);
  REQUIRE(volcano != nullptr);
  CHECK(karta::mutate_workload(published, *volcano, policy).patch.value().back() ==
        json::parse(R"({"op": "add", "path": "/metadata/annotations",
                          "value": {"kai.scheduler/batch-min-member": "4", "karta.run.ai/written": "label:kai.scheduler/queue"}})"));

  // A queue the object names is the user's: kept (Volcano's own webhook refuses a Job whose queue does not
  // exist, and an UPDATE that changes it), with a warning that it differs; a smaller minAvailable is the
  // gang size.
  json named = published;
  named["spec"]["queue"] = "default";
  named["spec"]["minAvailable"] = 1;
  named["metadata"]["labels"] = {{"kai.scheduler/queue", "team-a"}};
  const karta::MutationOutcome outcome = karta::mutate_workload(named, *volcano, policy);
  CHECK(outcome.warnings == std::vector<std::string>{
                                "metadata.annotations[\"karta-webhook.io/extensions\"].queuePath (/spec/queue): "
                                "\"default\" kept, though the workload's queue is \"team-a\" (kai.scheduler/queue)"});
  const json patched = test::kubectl_apply(named, outcome.patch.value());
  CHECK(patched["spec"]["queue"] == "default");
  CHECK(patched["metadata"]["labels"]["kai.scheduler/queue"] == "team-a");
  CHECK(patched["metadata"]["annotations"]["kai.scheduler/batch-min-member"] == "1");
}

TEST_CASE("a SparkApplication with 3 executor instances is 4 pods; its queue goes into batchSchedulerOptions.queue and its GPUs are counted from gpu") {
  json app = test::document(samples() / "sparkapplication-3.yaml");
  app["spec"]["executor"]["instances"] = 3;
  CHECK(inspected_pods(app) == 4);

  // The held-out example names YuniKorn's queue root.default: the user's, kept. The whole patch.
  const json published = test::document(samples() / "sparkapplication-3.yaml");
  CHECK(mutate_patch(published) == json::parse(R"([
    {"op": "add", "path": "/metadata/labels", "value": {"kai.scheduler/queue": "research"}},
    {"op": "add", "path": "/spec/driver/labels", "value": {"kai.scheduler/queue": "research", "platform.example.com/managed": "true"}},
    {"op": "add", "path": "/spec/driver/schedulerName", "value": "kai-scheduler"},
    {"op": "add", "path": "/spec/executor/labels", "value": {"kai.scheduler/queue": "research", "platform.example.com/managed": "true"}},
    {"op": "add", "path": "/spec/executor/schedulerName", "value": "kai-scheduler"},
    {"op": "add", "path": "/metadata/annotations", "value": {"karta.run.ai/written": "label:kai.scheduler/queue"}}
  ])"));

  // gpu {name, quantity} per pod: 1 GPU for the driver and 2 for each of 3 executors; another resource
  // name is not a GPU.
  app["spec"]["driver"]["gpu"] = {{"name", "nvidia.com/gpu"}, {"quantity", 1}};
  app["spec"]["executor"]["gpu"] = {{"name", "nvidia.com/gpu"}, {"quantity", 2}};
  double gpus = -1;
  CHECK(inspected_pods(app, &gpus) == 4);
  CHECK(gpus == 7);
  const json patched = test::kubectl_apply(app, mutate_patch(app));
  CHECK(patched["spec"]["executor"]["tolerations"] == json::parse(R"([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])"));
  app["spec"]["executor"]["gpu"]["name"] = "amd.com/gpu";
  CHECK(inspected_pods(app, &gpus) == 4);
  CHECK(gpus == 1);

  // Without batchSchedulerOptions, the map is created for the queue.
  json bare = published;
  bare["spec"].erase("batchSchedulerOptions");
  CHECK(test::kubectl_apply(bare, mutate_patch(bare))["spec"]["batchSchedulerOptions"] == json{{"queue", "research"}});
}

TEST_CASE("every sample of every new kind keeps its patch through structural pruning against the kind's CRD") {
  const karta::Policy policy = test::policy_from_yaml(kPolicy);
  std::set<std::string> kinds;
  std::size_t objects = 0;
  for (const auto& entry : fs::directory_iterator(samples())) {
    for (const auto& doc : test::documents(entry.path())) {
      const json& object = doc.value;
      const auto request = karta::request_for_object(object);
      const std::set<std::string> new_kinds = {"Job", "SparkApplication", "TrainJob", "Workflow", "NIMCache", "TFJob",
                                               "XGBoostJob", "PaddleJob", "JAXJob", "Notebook"};
      if (!new_kinds.count(request.kind.kind) || request.kind.group == "batch") continue;
      CAPTURE(doc.source);
      const auto* definition = test::builtin_catalog().find(request.kind);
      REQUIRE(definition != nullptr);
      const auto* crd = crds().find(request.kind);
      REQUIRE(crd != nullptr);
      const auto outcome = karta::mutate_workload(object, *definition, policy);
      CHECK(outcome.notes == std::vector<std::string>{});
      REQUIRE(!outcome.patch.empty());
      const json patched = test::kubectl_apply(object, outcome.patch.value());
      CHECK(patched != object);
      // What the API server prunes from the patched object is what it prunes from the object as written:
      // nothing the patch added goes.
      json pruned_original = object, pruned_patched = patched;
      const auto before = karta::prune_unknown_fields(crd->schema, pruned_original);
      const auto after = karta::prune_unknown_fields(crd->schema, pruned_patched);
      CHECK(after == before);
      CHECK(json::diff(pruned_original, pruned_patched) == json::diff(object, patched));
      kinds.insert(request.kind.to_string());
      ++objects;
    }
  }
  CHECK(kinds.size() == 10);
  // Volcano 3, Spark 3, TrainJob 2, Workflow 3, NIMCache 5 (three inside the NIMService samples), TFJob,
  // XGBoostJob, PaddleJob, JAXJob and Notebook 2 each.
  CHECK(objects == 26);
}

}  // TEST_SUITE

}  // namespace unit_catalog_new_kinds
