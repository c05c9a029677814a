#include "support/demo_cluster.h"

#include "support/test_support.h"

namespace karta::test::demo_cluster {
namespace {

constexpr const char* kCreated = "2026-12-02T01:00:00Z";

json controller(const std::string& api_version, const std::string& kind, const std::string& name,
                const std::string& uid) {
  return {{"apiVersion", api_version}, {"kind", kind}, {"name", name}, {"uid", uid}, {"controller", true},
          {"blockOwnerDeletion", true}};
}

json job(const std::string& replicated_job, int index) {
  std::string name = "demo-" + replicated_job + "-" + std::to_string(index);
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata",
           {{"name", name},
            {"namespace", "research"},
            {"uid", "uid-job-" + name},
            {"labels",
             {{"jobset.sigs.k8s.io/jobset-name", "demo"},
              {"jobset.sigs.k8s.io/replicatedjob-name", replicated_job},
              {"jobset.sigs.k8s.io/job-index", std::to_string(index)}}},
            {"ownerReferences", {controller("jobset.x-k8s.io/v1alpha2", "JobSet", "demo", "uid-demo")}}}},
          {"spec", {{"parallelism", 1}, {"completions", 1}, {"completionMode", "Indexed"}}}};
}

json pod(const std::string& name, const std::string& replicated_job, int index) {
  std::string job_name = "demo-" + replicated_job + "-" + std::to_string(index);
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", "research"},
            {"uid", "uid-pod-" + name},
            {"creationTimestamp", kCreated},
            {"labels",
             {{"jobset.sigs.k8s.io/jobset-name", "demo"},
              {"jobset.sigs.k8s.io/replicatedjob-name", replicated_job},
              {"jobset.sigs.k8s.io/replicatedjob-replicas", replicated_job == "leader" ? "1" : "2"},
              {"jobset.sigs.k8s.io/job-index", std::to_string(index)},
              {"batch.kubernetes.io/job-completion-index", "0"},
              {"batch.kubernetes.io/job-name", job_name},
              {"batch.kubernetes.io/controller-uid", "uid-job-" + job_name},
              {"job-name", job_name},
              {"controller-uid", "uid-job-" + job_name}}},
            {"ownerReferences", {controller("batch/v1", "Job", job_name, "uid-job-" + job_name)}}}},
          {"spec",
           {{"restartPolicy", "Never"},
            {"nodeName", "runai-cluster-worker-0-0"},
            {"containers",
             {{{"name", "trainer"},
               {"image", "nvcr.io/nvidia/pytorch:24.05-py3"},
               {"resources", {{"limits", {{"nvidia.com/gpu", "4"}}}, {"requests", {{"nvidia.com/gpu", "4"}}}}}}}}}},
          {"status",
           {{"phase", "Running"},
            {"conditions",
             {{{"type", "PodScheduled"}, {"status", "True"}},
              {{"type", "Initialized"}, {"status", "True"}},
              {{"type", "ContainersReady"}, {"status", "True"}},
              {{"type", "Ready"}, {"status", "True"}}}}}}};
}

}  // namespace

FakeResource pods() {
  return {.group = "",
          .version = "v1",
          .kind = "Pod",
          .plural = "pods",
          .singular = "pod",
          .short_names = {"po"},
          .subresources = {"status", "log"}};
}
FakeResource jobs() {
  return {.group = "batch",
          .version = "v1",
          .kind = "Job",
          .plural = "jobs",
          .singular = "job",
          .subresources = {"status"}};
}
FakeResource jobsets() {
  return {.group = "jobset.x-k8s.io",
          .version = "v1alpha2",
          .kind = "JobSet",
          .plural = "jobsets",
          .singular = "jobset",
          .subresources = {"status"}};
}

std::vector<json> demo_jobsets() {
  json demo = document(source_dir() / "examples/jobset-demo.yaml");
  demo["metadata"]["uid"] = "uid-demo";
  demo["metadata"]["creationTimestamp"] = kCreated;
  return {demo};
}

std::vector<json> demo_jobs() { return {job("leader", 0), job("worker", 0), job("worker", 1)}; }

std::vector<json> demo_pods() {
  return {pod("demo-leader-0-0-ck6kg", "leader", 0), pod("demo-worker-0-0-j9pdc", "worker", 0),
          pod("demo-worker-1-0-rrsxz", "worker", 1)};
}

void serve_demo(FakeApiServer& server) {
  server.serve(pods(), demo_pods());
  server.serve(jobs(), demo_jobs());
  server.serve(jobsets(), demo_jobsets());
}

const char* const kDescribeAfterHeader = R"(

`-- replicatedjob                   3/3 ready   gpu: 12   runai-cluster-worker-0-0
    |-- leader                      1/1 ready   gpu: 4    runai-cluster-worker-0-0
    |   `-- demo-leader-0-0-ck6kg   Running     gpu: 4    runai-cluster-worker-0-0
    `-- worker                      2/2 ready   gpu: 8    runai-cluster-worker-0-0
        |-- demo-worker-0-0-j9pdc   Running     gpu: 4    runai-cluster-worker-0-0
        `-- demo-worker-1-0-rrsxz   Running     gpu: 4    runai-cluster-worker-0-0

Phase: Running

Resources:
COMPONENT   REPLICAS   GPU   CPU   MEMORY
leader      1          4     0     0
worker      2          8     0     0
TOTAL       3          12    0     0
)";

}  // namespace karta::test::demo_cluster
