// `list` on a cluster that serves few of the catalog's kinds (issue 23): the kinds it does not serve are
// named on one line after the table, or each on its own with --show-unserved; a kind whose LIST is
// forbidden still gets its own line.

#include <doctest/doctest.h>

#include <ctime>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/live_inspect.h"
#include "support/fake_api_server.h"
#include "support/test_support.h"

namespace unit_live_list_unserved {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

namespace {

test::FakeResource jobsets() {
  return {.group = "jobset.x-k8s.io", .version = "v1alpha2", .kind = "JobSet", .plural = "jobsets", .singular = "jobset",
          .subresources = {"status"}};
}
test::FakeResource jobs() {
  return {.group = "batch", .version = "v1", .kind = "Job", .plural = "jobs", .singular = "job", .subresources = {"status"}};
}

json demo_jobset() {
  json demo = test::document(test::source_dir() / "examples/jobset-demo.yaml");
  demo["metadata"]["uid"] = "uid-demo";
  demo["metadata"]["creationTimestamp"] = "2026-12-02T01:00:00Z";
  return demo;
}

struct Run {
  int code;
  std::string out, err;
};

// An API server that serves JobSets (the demo in namespace research) and no other kind of the catalog.
struct JobSetCluster {
  test::TempDir dir;
  test::FakeApiServer server{dir.path, {}};
  std::filesystem::path kubeconfig = dir.path / "kubeconfig";

  JobSetCluster() {
    server.serve(jobsets(), {demo_jobset()});
    test::write_text(kubeconfig, server.kubeconfig("research"));
  }

  Run list(bool show_unserved = false) const {
    karta::LiveOptions options;
    options.kubeconfig = kubeconfig.string();
    options.show_unserved = show_unserved;
    std::tm tm{};
    tm.tm_year = 126, tm.tm_mon = 11, tm.tm_mday = 2, tm.tm_hour = 1, tm.tm_min = 0, tm.tm_sec = 20;
    options.now = std::chrono::system_clock::from_time_t(timegm(&tm));
    std::ostringstream out, err;
    int code = karta::list_live(options, out, err);
    return {code, out.str(), err.str()};
  }
};

const std::string kTable =
    "NAMESPACE   NAME   KIND     PHASE     COMPONENTS             GPU   AGE\n"
    "research    demo   JobSet   Running   leader(1), worker(2)   12    20s\n";

// The catalog's other kinds, in its order: a kind name two definitions share is told apart by apiVersion.
const std::string kUnservedNote =
    "note: 34 kinds with a definition are not served by the cluster, skipped (--show-unserved lists each): "
    "CronJob, DaemonSet, Deployment, DynamoGraphDeployment (nvidia.com/v1alpha1), "
    "DynamoGraphDeployment (nvidia.com/v1beta1), InferenceService, JAXJob, Job (batch/v1), "
    "Job (batch.volcano.sh/v1alpha1), LLMInferenceService (serving.kserve.io/v1alpha1), "
    "LLMInferenceService (serving.kserve.io/v1alpha2), LeaderWorkerSet, MPIJob (kubeflow.org/v1), "
    "MPIJob (kubeflow.org/v2beta1), Milvus, NIMCache, NIMService, Notebook, PaddleJob, Pod, PodCliqueSet, PyTorchJob, "
    "RayCluster, RayJob, RayService, ReplicaSet, Sandbox, Service, SparkApplication, StatefulSet, TFJob, TrainJob, "
    "Workflow, XGBoostJob\n";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

TEST_CASE("list against a cluster serving one catalog kind prints the table and one line naming the other kinds") {
  JobSetCluster cluster;
  Run run = cluster.list();
  CHECK(run.code == 0);
  CHECK(run.out == kTable);
  CHECK(run.err == kUnservedNote);
  CHECK(lines_of(run.err).size() == 1);
}

TEST_CASE("--show-unserved notes each kind the cluster does not serve on its own line, in the catalog's order") {
  JobSetCluster cluster;
  Run run = cluster.list(/*show_unserved=*/true);
  CHECK(run.code == 0);
  CHECK(run.out == kTable);
  std::string expected;
  for (const auto& definition : test::builtin_catalog().definitions()) {
    const auto& kind = definition->root_kind();
    if (kind.kind == "JobSet") continue;
    expected += "note: " + kind.kind + " (" + kind.api_version() + ") is not served by the cluster: skipped\n";
  }
  CHECK(lines_of(expected).size() == 34);
  CHECK(run.err == expected);

  SUBCASE("the flag on the command line") {
    const test::CliRun flagged =
        test::run_cli({"karta-webhook", "list", "--show-unserved", "--kubeconfig", cluster.kubeconfig.string()});
    CHECK(flagged.code == 0);
    CHECK(flagged.out.starts_with(kTable.substr(0, kTable.find('\n') + 1)));
    CHECK(flagged.err == expected);
  }
}

TEST_CASE("a served kind whose LIST is forbidden keeps its own line before the one line about the unserved") {
  JobSetCluster cluster;
  cluster.server.serve(jobs());
  cluster.server.forbid("batch", "jobs");
  Run run = cluster.list();
  CHECK(run.code == 0);
  CHECK(run.out == kTable);
  std::string unserved = kUnservedNote;
  unserved.replace(unserved.find("note: 34 kinds"), 14, "note: 33 kinds");
  // batch Job is served, but Volcano's Job keeps its apiVersion: a bare "Job" would read as batch's.
  const std::string jobs_named = " Job (batch/v1), Job (batch.volcano.sh/v1alpha1),";
  unserved.replace(unserved.find(jobs_named), jobs_named.size(), " Job (batch.volcano.sh/v1alpha1),");
  CHECK(run.err ==
        "note: not allowed to list jobs.batch in namespace research: jobs.batch is forbidden: User "
        "\"system:serviceaccount:karta-system:karta-webhook\" cannot list resource \"jobs\" in API group \"batch\" in "
        "the namespace \"research\": skipped\n" + unserved);
}

}  // namespace unit_live_list_unserved
