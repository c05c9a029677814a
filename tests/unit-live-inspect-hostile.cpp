// `inspect` and `list` against a cluster holding hostile data: a pod whose controller ownerReference
// names a request line (CR/LF and all) sends no extra request, only the escaped GET, which gets a note;
// the other workloads still print. An aggregated API group answering 503 is warned about and passed
// over. Every request the local API server parsed is compared, as its request line.

#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "cli/live_inspect.h"
#include "support/fake_api_server.h"
#include "support/test_support.h"

namespace unit_live_inspect_hostile {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

namespace {

constexpr const char* kCreated = "2026-12-02T01:00:00Z";
// A name the API server accepts for an ownerReference (it only must not be empty): with the owner's GET
// pasted in unescaped, it would end that request and send a DELETE with the user's token.
const std::string kSmuggling = "x HTTP/1.1\r\nHost: a\r\n\r\nDELETE /api/v1/namespaces/kube-system/configmaps/victim";

json controller(const std::string& api_version, const std::string& kind, const std::string& name, const std::string& uid) {
  return {{"apiVersion", api_version}, {"kind", kind}, {"name", name}, {"uid", uid}, {"controller", true}};
}

const json kContainers = {{{"name", "c"}, {"image", "x"}, {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}};

json running_pod(const std::string& name, const json& owner) {
  return {{"metadata", {{"name", name}, {"namespace", "research"}, {"uid", "uid-pod-" + name},
                        {"creationTimestamp", kCreated}, {"ownerReferences", {owner}}}},
          {"spec", {{"nodeName", "node-a"}, {"containers", kContainers}}},
          {"status", {{"phase", "Running"}, {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
}

// The Job train (one pod, running) and a pod "mallory" whose controller is a ConfigMap named
// `owner_name`, in namespace research; a ConfigMap "victim" in kube-system; the seed's JobSet demo.
// metrics.k8s.io is listed in /apis before the JobSets' group.
struct Cluster {
  test::TempDir dir;
  test::FakeApiServer server{dir.path, {}};
  std::filesystem::path kubeconfig = dir.path / "kubeconfig";

  explicit Cluster(const std::string& owner_name) {
    server.serve({.group = "", .version = "v1", .kind = "Pod", .plural = "pods", .singular = "pod"},
                 {running_pod("train-0", controller("batch/v1", "Job", "train", "uid-train")),
                  running_pod("mallory", controller("v1", "ConfigMap", owner_name, "uid-cm"))});
    server.serve({.group = "", .version = "v1", .kind = "ConfigMap", .plural = "configmaps", .singular = "configmap"},
                 {{{"metadata", {{"name", "victim"}, {"namespace", "kube-system"}}}}});
    server.serve({.group = "batch", .version = "v1", .kind = "Job", .plural = "jobs", .singular = "job"},
                 {{{"metadata", {{"name", "train"}, {"namespace", "research"}, {"uid", "uid-train"},
                                 {"creationTimestamp", kCreated}}},
                   {"spec", {{"parallelism", 1}, {"template", {{"spec", {{"containers", kContainers}}}}}}},
                   {"status", {{"active", 1}}}}});
    server.serve({.group = "metrics.k8s.io", .version = "v1beta1", .kind = "PodMetrics", .plural = "pods",
                  .singular = "", .verbs = {"get", "list"}});
    json demo = test::document(test::source_dir() / "examples/jobset-demo.yaml");
    demo["metadata"]["uid"] = "uid-demo";
    demo["metadata"]["creationTimestamp"] = kCreated;
    server.serve({.group = "jobset.x-k8s.io", .version = "v1alpha2", .kind = "JobSet", .plural = "jobsets",
                  .singular = "jobset"},
                 {demo});
    test::write_text(kubeconfig, server.kubeconfig("research"));
  }

  karta::LiveOptions options(const std::string& target = "") const {
    karta::LiveOptions o;
    o.target = target;
    o.kubeconfig = kubeconfig.string();
    std::tm tm{};
    tm.tm_year = 126, tm.tm_mon = 11, tm.tm_mday = 2, tm.tm_hour = 1, tm.tm_min = 0, tm.tm_sec = 20;
    o.now = std::chrono::system_clock::from_time_t(timegm(&tm));  // 20 s after kCreated
    return o;
  }
};

struct Run {
  int code;
  std::string out, err;
};

Run run(bool list, const karta::LiveOptions& options) {
  std::ostringstream out, err;
  int code = list ? karta::list_live(options, out, err) : karta::inspect_live(options, out, err);
  return {code, out.str(), err.str()};
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The notes of `list` but those of kinds the cluster does not serve.
std::vector<std::string> notes_but_unserved(const std::string& err) {
  std::vector<std::string> notes;
  for (const auto& line : lines_of(err)) {
    if (line.find(" not served by the cluster, skipped (--show-unserved lists each): ") == std::string::npos) {
      notes.push_back(line);
    }
  }
  return notes;
}

const std::string kEscaped =
    "x%20HTTP%2F1.1%0D%0AHost:%20a%0D%0A%0D%0ADELETE%20%2Fapi%2Fv1%2Fnamespaces%2Fkube-system%2Fconfigmaps%2Fvictim";
const std::string kOwnerNote =
    "note: the owner chain of Pod \"mallory\" in namespace research ends at ConfigMap \"x HTTP/1.1\\r\\nHost: "
    "a\\r\\n\\r\\nDELETE /api/v1/namespaces/kube-system/configmaps/victim\", which could not be read: not found";
const std::string kRows =
    "NAMESPACE   NAME      KIND     PHASE     COMPONENTS             GPU   AGE\n"
    "research    demo      JobSet   Running   leader(1), worker(2)   12    20s\n"
    "research    mallory   Pod      Running   pod(1)                 1     20s\n"
    "research    train     Job      Running   job(1)                 1     20s\n";

}  // namespace

TEST_CASE("list -A with an owner name holding a request line sends only the escaped GET, notes the pod, lists the rest") {
  Cluster cluster(kSmuggling);
  karta::LiveOptions options = cluster.options();
  options.all_namespaces = true;
  Run listed = run(true, options);
  CHECK(listed.code == 0);
  CHECK(listed.out == kRows);
  CHECK(notes_but_unserved(listed.err) == std::vector<std::string>{kOwnerNote});
  // Every request the server parsed: discovery, the LISTs, and the owner's GET with its name escaped. No
  // DELETE, no request for "victim".
  CHECK(cluster.server.request_lines() ==
        std::vector<std::string>{"GET /api HTTP/1.1", "GET /apis HTTP/1.1", "GET /apis/run.ai/v1alpha1 HTTP/1.1",
                                 "GET /apis/run.ai/v1alpha1/kartas?limit=100 HTTP/1.1", "GET /api/v1 HTTP/1.1",
                                 "GET /api/v1/pods?limit=100 HTTP/1.1",
                                 "GET /api/v1/namespaces/research/configmaps/" + kEscaped + " HTTP/1.1",
                                 "GET /apis/batch/v1 HTTP/1.1", "GET /apis/batch/v1/jobs?limit=100 HTTP/1.1",
                                 "GET /apis/jobset.x-k8s.io/v1alpha2 HTTP/1.1",
                                 "GET /apis/jobset.x-k8s.io/v1alpha2/jobsets?limit=100 HTTP/1.1"});
}

TEST_CASE("inspect with that pod in the namespace sends only the escaped GET and shows the workload's own pod") {
  Cluster cluster(kSmuggling);
  karta::LiveOptions options = cluster.options("job/train");
  options.output = "json";
  Run inspected = run(false, options);
  CHECK(inspected.code == 0);
  CHECK(inspected.err == kOwnerNote + "\n");
  json view = json::parse(inspected.out);
  CHECK(view["name"] == "train");
  CHECK(view["totals"]["replicas"] == json{{"desired", 1}, {"current", 1}, {"ready", 1}});
  CHECK(inspected.out.find("\"train-0\"") != std::string::npos);
  CHECK(inspected.out.find("mallory") == std::string::npos);  // not the Job's: its chain never reaches it
  CHECK(view["unplaced"] == json::array());
  CHECK(cluster.server.request_lines() ==
        std::vector<std::string>{"GET /api HTTP/1.1", "GET /apis HTTP/1.1", "GET /apis/run.ai/v1alpha1 HTTP/1.1",
                                 "GET /apis/run.ai/v1alpha1/kartas?limit=100 HTTP/1.1", "GET /api/v1 HTTP/1.1",
                                 "GET /apis/batch/v1 HTTP/1.1", "GET /apis/batch/v1/namespaces/research/jobs/train HTTP/1.1",
                                 "GET /api/v1/namespaces/research/pods?limit=100 HTTP/1.1",
                                 "GET /api/v1/namespaces/research/configmaps/" + kEscaped + " HTTP/1.1"});
}

TEST_CASE("an owner named \"a b\" is asked for as a%20b: a 404 is a note and exit 0; when it exists, no note") {
  Cluster cluster("a b");
  karta::LiveOptions options = cluster.options();
  options.all_namespaces = true;
  Run listed = run(true, options);
  CHECK(listed.code == 0);
  CHECK(listed.out == kRows);
  CHECK(notes_but_unserved(listed.err) ==
        std::vector<std::string>{"note: the owner chain of Pod \"mallory\" in namespace research ends at ConfigMap "
                                 "\"a b\", which could not be read: not found"});
  std::vector<std::string> lines = cluster.server.request_lines();
  CHECK(std::count(lines.begin(), lines.end(), "GET /api/v1/namespaces/research/configmaps/a%20b HTTP/1.1") == 1);

  cluster.server.add_objects("", "configmaps", {{{"metadata", {{"name", "a b"}, {"namespace", "research"}}}}});
  Run found = run(true, options);
  CHECK(found.code == 0);
  CHECK(found.out == kRows);  // a ConfigMap has no definition: mallory is still a workload of its own
  CHECK(notes_but_unserved(found.err).empty());
}

TEST_CASE("metrics.k8s.io answering 503: inspect jobset/demo warns and works; a kind only there names the group") {
  Cluster cluster("a b");
  cluster.server.add_objects("", "configmaps", {{{"metadata", {{"name", "a b"}, {"namespace", "research"}}}}});
  cluster.server.make_unavailable("metrics.k8s.io", "v1beta1");
  const std::string answered = "GET https://127.0.0.1:" + std::to_string(cluster.server.port()) +
                               "/apis/metrics.k8s.io/v1beta1 answered 503: service unavailable";
  Run inspected = run(false, cluster.options("jobset/demo"));
  CHECK(inspected.code == 0);
  CHECK(inspected.err == "warning: couldn't get resource list for metrics.k8s.io/v1beta1: " + answered + "\n");
  CHECK(inspected.out.starts_with(
      "JobSet/demo   namespace: research   definition: jobset-v1alpha2 (catalog)   age: 20s\n"));
  CHECK(inspected.out.ends_with("\nPhase: Running\n\nResources:\nCOMPONENT   REPLICAS   GPU   CPU   MEMORY\n"
                                "leader      1          4     0     0\nworker      2          8     0     0\n"
                                "TOTAL       3          12    0     0\n"));

  Run only_there = run(false, cluster.options("podmetrics/mallory"));
  CHECK(only_there.code == 1);
  CHECK(only_there.out == "");
  CHECK(only_there.err == "karta-webhook: no resource \"podmetrics\" in the group versions discovered, but it may be in "
                          "one that could not be read: metrics.k8s.io/v1beta1 (" + answered + ")\n");
}

}  // namespace unit_live_inspect_hostile
