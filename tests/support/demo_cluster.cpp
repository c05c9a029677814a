#include "support/demo_cluster.h"

#include <ctime>
#include <sstream>

#include "support/test_support.h"

namespace karta::test::demo_cluster {

std::chrono::system_clock::time_point twenty_seconds_later() {
  std::tm tm{};
  tm.tm_year = 126, tm.tm_mon = 11, tm.tm_mday = 2, tm.tm_hour = 1, tm.tm_min = 0, tm.tm_sec = 20;
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

CliRun inspect(const LiveOptions& options) {
  std::ostringstream out, err;
  int code = inspect_live(options, out, err);
  return {code, out.str(), err.str()};
}

CliRun list(const LiveOptions& options) {
  std::ostringstream out, err;
  int code = list_live(options, out, err);
  return {code, out.str(), err.str()};
}

FakeResource pods() {
  return {.group = "", .version = "v1", .kind = "Pod", .plural = "pods", .singular = "pod", .short_names = {"po"},
          .subresources = {"status", "log"}};
}
FakeResource jobs() {
  return {.group = "batch", .version = "v1", .kind = "Job", .plural = "jobs", .singular = "job", .subresources = {"status"}};
}
FakeResource jobsets() {
  return {.group = "jobset.x-k8s.io", .version = "v1alpha2", .kind = "JobSet", .plural = "jobsets", .singular = "jobset",
          .subresources = {"status"}};
}

json controller(const std::string& api_version, const std::string& kind, const std::string& name, const std::string& uid) {
  return {{"apiVersion", api_version}, {"kind", kind}, {"name", name}, {"uid", uid}, {"controller", true},
          {"blockOwnerDeletion", true}};
}

// A Job of a JobSet, as the JobSet controller creates it.
json job(const std::string& jobset, const std::string& jobset_uid, const std::string& replicated_job, int index) {
  std::string name = jobset + "-" + replicated_job + "-" + std::to_string(index);
  return {{"apiVersion", "batch/v1"}, {"kind", "Job"},
          {"metadata", {{"name", name}, {"namespace", "research"}, {"uid", "uid-job-" + name},
                        {"labels", {{"jobset.sigs.k8s.io/jobset-name", jobset},
                                    {"jobset.sigs.k8s.io/replicatedjob-name", replicated_job},
                                    {"jobset.sigs.k8s.io/job-index", std::to_string(index)}}},
                        {"ownerReferences", {controller("jobset.x-k8s.io/v1alpha2", "JobSet", jobset, jobset_uid)}}}},
          {"spec", {{"parallelism", 1}, {"completions", 1}, {"completionMode", "Indexed"}}}};
}

// A pod of that Job, labelled as the JobSet and Job controllers label it (jobset_types.go's keys; the
// Job controller's batch.kubernetes.io/* labels and completion index), running and ready on `node`
// when `node` is given, else pending and unschedulable.
json jobset_pod(const std::string& name, const std::string& jobset, const std::string& replicated_job, int index,
                const std::string& node) {
  std::string job_name = jobset + "-" + replicated_job + "-" + std::to_string(index);
  json pod = {
      {"apiVersion", "v1"}, {"kind", "Pod"},
      {"metadata",
       {{"name", name}, {"namespace", "research"}, {"uid", "uid-pod-" + name}, {"creationTimestamp", kCreated},
        {"labels", {{"jobset.sigs.k8s.io/jobset-name", jobset}, {"jobset.sigs.k8s.io/replicatedjob-name", replicated_job},
                    {"jobset.sigs.k8s.io/replicatedjob-replicas", replicated_job == "leader" ? "1" : "2"},
                    {"jobset.sigs.k8s.io/job-index", std::to_string(index)},
                    {"jobset.sigs.k8s.io/job-key", "0123456789abcdef"},
                    {"batch.kubernetes.io/job-completion-index", "0"}, {"batch.kubernetes.io/job-name", job_name},
                    {"batch.kubernetes.io/controller-uid", "uid-job-" + job_name}, {"job-name", job_name},
                    {"controller-uid", "uid-job-" + job_name}}},
        {"annotations", {{"batch.kubernetes.io/job-completion-index", "0"}}},
        {"ownerReferences", {controller("batch/v1", "Job", job_name, "uid-job-" + job_name)}}}},
      {"spec", {{"restartPolicy", "Never"},
                {"containers", {{{"name", "trainer"}, {"image", "nvcr.io/nvidia/pytorch:24.05-py3"},
                                 {"resources", {{"limits", {{"nvidia.com/gpu", "4"}}}, {"requests", {{"nvidia.com/gpu", "4"}}}}}}}}}}};
  if (!node.empty()) {
    pod["spec"]["nodeName"] = node;
    pod["status"] = {{"phase", "Running"},
                     {"conditions", {{{"type", "PodScheduled"}, {"status", "True"}}, {{"type", "Initialized"}, {"status", "True"}},
                                     {{"type", "ContainersReady"}, {"status", "True"}}, {{"type", "Ready"}, {"status", "True"}}}}};
  } else {
    pod["status"] = {{"phase", "Pending"},
                     {"conditions", {{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"},
                                      {"message", "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}}}}};
  }
  return pod;
}

json demo_jobset() {
  json demo = document(source_dir() / "examples/jobset-demo.yaml");
  demo["metadata"]["uid"] = "uid-demo";
  demo["metadata"]["creationTimestamp"] = kCreated;
  return demo;
}

std::vector<json> demo_jobs() { return {job("demo", "uid-demo", "leader", 0), job("demo", "uid-demo", "worker", 0), job("demo", "uid-demo", "worker", 1)}; }

// The seed's pods: `kli describe` shows all three on runai-cluster-worker-0-0.
std::vector<json> demo_pods() {
  return {jobset_pod("demo-leader-0-0-ck6kg", "demo", "leader", 0, "runai-cluster-worker-0-0"),
          jobset_pod("demo-worker-0-0-j9pdc", "demo", "worker", 0, "runai-cluster-worker-0-0"),
          jobset_pod("demo-worker-1-0-rrsxz", "demo", "worker", 1, "runai-cluster-worker-0-0")};
}

std::vector<json> demo_jobsets() { return {demo_jobset()}; }

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
