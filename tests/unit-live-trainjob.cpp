// `inspect trainjob/NAME` and `list` count the nodes of the runtime a TrainJob names, read from the local
// API server, as `inspect -f` counts them when the file holds the runtime (issue 61): the upstream
// example's TrainJob (tests/corpus/samples/trainjob-2.yaml) without .spec.trainer.numNodes and its
// TrainingRuntime (tests/corpus/runtimes/trainingruntime-1.yaml, numNodes raised from 1 to 4 so that it
// differs from the one node counted without it). A TrainJob that gives numNodes is counted as it is and
// its runtime not asked for; a runtime that cannot be read (404, 403, a body that is not JSON) leaves the
// TrainJob counted as it is, with a note saying which runtime and why; each runtime is read once.

#include <doctest/doctest.h>

#include <chrono>
#include <ctime>
#include <sstream>
#include <string>
#include <vector>

#include "cli/live_inspect.h"
#include "support/demo_cluster.h"
#include "support/fake_api_server.h"
#include "k8s/name_syntax.h"
#include "support/test_support.h"

namespace unit_live_trainjob {  // this file's names, apart from other tests' in a unity build

using karta::test::demo_cluster::inspect;
using karta::test::demo_cluster::list;
using karta::test::demo_cluster::twenty_seconds_later;

using karta::json;
namespace test = karta::test;

namespace {

constexpr const char* kNamespacedRuntime =
    "/apis/trainer.kubeflow.org/v1alpha1/namespaces/research/trainingruntimes/torch-with-dataset-init";
constexpr const char* kClusterRuntime = "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes/torch-with-dataset-init";

test::FakeResource trainjobs() {
  return {.group = "trainer.kubeflow.org", .version = "v1alpha1", .kind = "TrainJob", .plural = "trainjobs",
          .singular = "trainjob", .subresources = {"status"}};
}
test::FakeResource trainingruntimes() {
  return {.group = "trainer.kubeflow.org", .version = "v1alpha1", .kind = "TrainingRuntime",
          .plural = "trainingruntimes", .singular = "trainingruntime"};
}
test::FakeResource clustertrainingruntimes() {
  return {.group = "trainer.kubeflow.org", .version = "v1alpha1", .kind = "ClusterTrainingRuntime",
          .plural = "clustertrainingruntimes", .singular = "clustertrainingruntime", .namespaced = false};
}

// The upstream TrainJob in namespace research, without numNodes: its runtime decides.
json trainjob(const std::string& name = "multi-step-example") {
  json job = test::document(test::source_dir() / "tests/corpus/samples/trainjob-2.yaml");
  job["spec"]["trainer"].erase("numNodes");
  job["metadata"]["name"] = name;
  job["metadata"]["namespace"] = "research";
  job["metadata"]["creationTimestamp"] = test::demo_cluster::kCreated;
  return job;
}

// The upstream TrainingRuntime in namespace research, with 4 nodes.
json runtime() {
  json object = test::document(test::source_dir() / "tests/corpus/runtimes/trainingruntime-1.yaml");
  object["spec"]["mlPolicy"]["numNodes"] = 4;
  object["metadata"]["namespace"] = "research";
  return object;
}

// The same runtime as a ClusterTrainingRuntime with 3 nodes.
json cluster_runtime() {
  json object = runtime();
  object["kind"] = "ClusterTrainingRuntime";
  object["metadata"].erase("namespace");
  object["spec"]["mlPolicy"]["numNodes"] = 3;
  return object;
}

// An API server serving pods (none), TrainJobs and both kinds of runtime, and a kubeconfig for it.
struct Cluster {
  test::TempDir dir;
  test::FakeApiServer server{dir.path, {}};
  std::filesystem::path kubeconfig = dir.path / "kubeconfig";

  Cluster(std::vector<json> jobs, std::vector<json> runtimes, std::vector<json> cluster_runtimes) {
    server.serve(test::demo_cluster::pods(), {});
    server.serve(trainjobs(), std::move(jobs));
    server.serve(trainingruntimes(), std::move(runtimes));
    server.serve(clustertrainingruntimes(), std::move(cluster_runtimes));
    test::write_text(kubeconfig, server.kubeconfig("research"));
  }

  karta::LiveOptions options(const std::string& target = "", const std::string& output = "text") const {
    karta::LiveOptions o;
    o.target = target;
    o.kubeconfig = kubeconfig.string();
    o.output = output;
    o.now = twenty_seconds_later();
    return o;
  }
};

// `inspect trainjob/multi-step-example` (no pods yet) with `table` (its resources table, lines of five
// columns) and its notes.
std::string described(const std::string& replicas, const std::string& table, const std::string& notes) {
  return "TrainJob/multi-step-example   namespace: research   definition: trainjob-v1alpha1 (catalog)   age: 20s\n"
         "\n"
         "`-- node   0/" + replicas + " ready\n"
         "\n"
         "Phase: Undefined\n"
         "\n"
         "Resources:\n"
         "COMPONENT   REPLICAS   GPU   CPU   MEMORY\n" + table + notes;
}

// Each node asks for 4 CPUs and 8Gi (the larger of request and limit, as k8s/resources counts).
const std::string kFourNodes = "node        4          0     16    32Gi\nTOTAL       4          0     16    32Gi\n";
const std::string kThreeNodes = "node        3          0     12    24Gi\nTOTAL       3          0     12    24Gi\n";
const std::string kTwoNodes = "node        2          0     8     16Gi\nTOTAL       2          0     8     16Gi\n";
const std::string kOneNode = "node        1          0     4     8Gi\nTOTAL       1          0     4     8Gi\n";

const std::string kFromTrainingRuntime =
    "numNodes 4 from TrainingRuntime torch-with-dataset-init (.spec.mlPolicy.numNodes): the TrainJob gives none";

// The note for a TrainingRuntime of research that could not be read, and why.
std::string unread(const std::string& why) {
  return "TrainingRuntime \"torch-with-dataset-init\" in namespace research, which the TrainJob leaves its numNodes "
         "to, could not be read (" + why + "): the TrainJob is counted as it is";
}

}  // namespace

TEST_CASE("inspect of a TrainJob that gives no numNodes counts the nodes of the TrainingRuntime of its namespace") {
  Cluster cluster({trainjob()}, {runtime()}, {cluster_runtime()});
  const test::CliRun run = inspect(cluster.options("trainjob/multi-step-example"));
  CHECK(run.code == 0);
  CHECK(run.err == "");
  CHECK(run.out == described("4", kFourNodes, "note: " + kFromTrainingRuntime + "\n"));
  CHECK(cluster.server.requests_for(kNamespacedRuntime) == 1);
  CHECK(cluster.server.requests_for(kClusterRuntime) == 0);

  const test::CliRun as_json = inspect(cluster.options("trainjob/multi-step-example", "json"));
  CHECK(as_json.code == 0);
  CHECK(as_json.err == "");
  const json resources = {{"gpus", 0}, {"cpu", 16}, {"memoryBytes", 32.0 * 1024 * 1024 * 1024}};
  const json replicas = {{"desired", 4}, {"current", 0}, {"ready", 0}};
  CHECK(json::parse(as_json.out) ==
        json{{"apiVersion", "trainer.kubeflow.org/v1alpha1"}, {"kind", "TrainJob"}, {"namespace", "research"},
             {"name", "multi-step-example"}, {"createdAt", test::demo_cluster::kCreated},
             {"definition", "trainjob-v1alpha1"}, {"origin", "catalog"}, {"phase", "Undefined"},
             {"components", {{{"name", "node"}, {"kind", "jobset.x-k8s.io/v1alpha2 JobSet"}, {"replicas", replicas},
                              {"resources", resources}, {"nodes", json::array()}, {"pods", json::array()}}}},
             {"unplaced", json::array()}, {"notes", {kFromTrainingRuntime}},
             {"totals", {{"replicas", replicas}, {"resources", resources}}}});
}

TEST_CASE("a TrainJob that names a ClusterTrainingRuntime, or no kind (the trainer's default), counts the cluster-scoped runtime's nodes") {
  json job = trainjob();
  SUBCASE("kind ClusterTrainingRuntime") { job["spec"]["runtimeRef"]["kind"] = "ClusterTrainingRuntime"; }
  SUBCASE("no kind") { job["spec"]["runtimeRef"].erase("kind"); }
  Cluster cluster({job}, {runtime()}, {cluster_runtime()});
  const test::CliRun run = inspect(cluster.options("trainjob/multi-step-example"));
  CHECK(run.code == 0);
  CHECK(run.err == "");
  CHECK(run.out == described("3", kThreeNodes,
                             "note: numNodes 3 from ClusterTrainingRuntime torch-with-dataset-init "
                             "(.spec.mlPolicy.numNodes): the TrainJob gives none\n"));
  CHECK(cluster.server.requests_for(kClusterRuntime) == 1);
  CHECK(cluster.server.requests_for(kNamespacedRuntime) == 0);
}

TEST_CASE("a TrainJob that gives numNodes is counted by its own, and its runtime is not asked for") {
  json job = trainjob();
  job["spec"]["trainer"]["numNodes"] = 2;
  Cluster cluster({job}, {runtime()}, {cluster_runtime()});
  const test::CliRun run = inspect(cluster.options("trainjob/multi-step-example"));
  CHECK(run.code == 0);
  CHECK(run.err == "");
  CHECK(run.out == described("2", kTwoNodes, ""));
  CHECK(cluster.server.requests_for(kNamespacedRuntime) == 0);
  CHECK(cluster.server.requests_for(kClusterRuntime) == 0);
}

TEST_CASE("a runtime that cannot be read leaves the TrainJob counted as it is, with a note naming the runtime and why") {
  Cluster cluster({trainjob()}, {}, {});
  auto inspected = [&] {
    const test::CliRun run = inspect(cluster.options("trainjob/multi-step-example"));
    CHECK(run.code == 0);
    CHECK(run.err == "");
    CHECK(cluster.server.requests_for(kNamespacedRuntime) == 1);
    return run.out;
  };
  SUBCASE("not found") {
    CHECK(inspected() ==
          described("1", kOneNode,
                    "note: " + unread("HTTP 404 NotFound: trainingruntimes.trainer.kubeflow.org \"torch-with-dataset-init\" "
                                      "not found") + "\n"));
  }
  SUBCASE("forbidden") {
    cluster.server.forbid("trainer.kubeflow.org", "trainingruntimes", "research");
    CHECK(inspected() ==
          described("1", kOneNode,
                    "note: " + unread("HTTP 403 Forbidden: trainingruntimes.trainer.kubeflow.org \"torch-with-dataset-init\" "
                                      "is forbidden: User \"system:serviceaccount:karta-system:karta-webhook\" cannot get "
                                      "resource \"trainingruntimes\" in API group \"trainer.kubeflow.org\" in the namespace "
                                      "\"research\"") + "\n"));
  }
  SUBCASE("an answer that is not JSON") {
    cluster.server.answer_raw(kNamespacedRuntime, 200, "<html>runtime</html>");
    CHECK(inspected() == described("1", kOneNode, "note: " + unread("HTTP 200: the body is not JSON") + "\n"));
  }
  SUBCASE("a Status whose message holds terminal controls and runs long: escaped and cut") {
    const std::string message = "\x1b]0;owned\x07" + std::string(1000, 'x');
    cluster.server.answer_raw(kNamespacedRuntime, 500, test::status_object(500, "InternalError", message).dump());
    CHECK(inspected() == described("1", kOneNode,
                                   "note: " + unread("HTTP 500 InternalError: ^[]0;owned\\a" + std::string(246, 'x') +
                                                     "... (1010 bytes)") + "\n"));
  }
}

TEST_CASE("a runtime name the API server would refuse is not asked for: a path in it names no other object") {
  json job = trainjob();
  job["spec"]["runtimeRef"]["name"] = "../../../../api/v1/namespaces/research/secrets/token";
  Cluster cluster({job}, {runtime()}, {});
  const test::CliRun run = inspect(cluster.options("trainjob/multi-step-example"));
  CHECK(run.code == 0);
  CHECK(run.err == "");
  CHECK(run.out == described("1", kOneNode,
                             "note: TrainingRuntime \"../../../../api/v1/namespaces/research/secrets/token\" in "
                             "namespace research, which the TrainJob leaves its numNodes to, could not be read (its name "
                             "is not an object name: " + karta::dns_subdomain_error(job["spec"]["runtimeRef"]["name"]) +
                             "): the TrainJob is counted as it is\n"));
  for (const std::string& target : cluster.server.targets()) CHECK(target.find("secrets") == std::string::npos);
  job["spec"]["runtimeRef"]["name"] = "";  // before: a GET of the whole collection, counted as one node
  Cluster empty({job}, {runtime()}, {});
  const test::CliRun unnamed = inspect(empty.options("trainjob/multi-step-example"));
  CHECK(unnamed.out.find("TrainingRuntime \"\" in namespace research, which the TrainJob leaves its numNodes to, could "
                         "not be read (its name is not an object name: ") != std::string::npos);
  for (const std::string& target : empty.server.targets()) CHECK(target.find("trainingruntimes") == std::string::npos);
}

TEST_CASE("list counts each TrainJob with its runtime's nodes, reading each runtime once") {
  json own = trainjob("own-count");
  own["spec"]["trainer"]["numNodes"] = 2;
  json elsewhere = trainjob("missing-runtime");
  elsewhere["spec"]["runtimeRef"]["name"] = "gone";
  Cluster cluster({trainjob("first"), trainjob("second"), own, elsewhere}, {runtime()}, {});
  const test::CliRun run = list(cluster.options());
  CHECK(run.code == 0);
  CHECK(run.out == "NAMESPACE   NAME              KIND       PHASE       COMPONENTS   GPU   AGE\n"
                   "research    first             TrainJob   Undefined   node(4)      0     20s\n"
                   "research    missing-runtime   TrainJob   Undefined   node(1)      0     20s\n"
                   "research    own-count         TrainJob   Undefined   node(2)      0     20s\n"
                   "research    second            TrainJob   Undefined   node(4)      0     20s\n");
  const std::string notes =
      "note: TrainJob research/first: " + kFromTrainingRuntime + "\n" +
      "note: TrainJob research/missing-runtime: TrainingRuntime \"gone\" in namespace research, which the TrainJob "
      "leaves its numNodes to, could not be read (HTTP 404 NotFound: trainingruntimes.trainer.kubeflow.org \"gone\" "
      "not found): the TrainJob is counted as it is\n" +
      "note: TrainJob research/second: " + kFromTrainingRuntime + "\n";
  // Then the one note naming the catalog's kinds that this cluster (pods and TrainJobs) does not serve.
  REQUIRE(run.err.starts_with(notes));
  const std::string unserved = run.err.substr(notes.size());
  CHECK(unserved.starts_with("note: 33 kinds with a definition are not served by the cluster, skipped (--show-unserved "
                             "lists each): CronJob, DaemonSet, Deployment, "));
  CHECK(unserved.find('\n') == unserved.size() - 1);
  CHECK(cluster.server.requests_for(kNamespacedRuntime) == 1);
  CHECK(cluster.server.requests_for("/apis/trainer.kubeflow.org/v1alpha1/namespaces/research/trainingruntimes/gone") == 1);
}

}  // namespace unit_live_trainjob
