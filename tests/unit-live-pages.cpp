// `inspect KIND/NAME` and `list` against the local API server hold a page of the cluster, not a
// collection: each LIST page is handled (its pods' owner chains climbed, its rows made) before the next
// page is asked for. With pages of one object, the requests of inspect interleave: a page, the owner it
// needs, the next page; and a LIST of list that breaks after its first page keeps that page's rows. The
// seed's demo JobSet (support/demo_cluster): three pods, each owned by a Job of the JobSet.

#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli/live_inspect.h"
#include "support/demo_cluster.h"
#include "support/fake_api_server.h"
#include "support/test_support.h"

namespace unit_live_pages {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

namespace {

struct Cluster {
  test::TempDir dir;
  test::FakeApiServer server;
  std::filesystem::path kubeconfig = dir.path / "kubeconfig";

  explicit Cluster(test::FakeApiServerOptions server_options = {}, std::vector<json> jobsets = test::demo_cluster::demo_jobsets())
      : server(dir.path, {}, std::move(server_options)) {
    server.serve(test::demo_cluster::pods(), test::demo_cluster::demo_pods());
    server.serve(test::demo_cluster::jobs(), test::demo_cluster::demo_jobs());
    server.serve(test::demo_cluster::jobsets(), std::move(jobsets));
    test::write_text(kubeconfig, server.kubeconfig("research"));
  }

  karta::LiveOptions options(const std::string& target = "") const {
    karta::LiveOptions o;
    o.target = target;
    o.kubeconfig = kubeconfig.string();
    o.page_size = 1;
    return o;
  }

  // The requests after discovery's documents, each continue token written as TOKEN.
  std::vector<std::string> asked() const {
    std::vector<std::string> asked;
    for (std::string target : server.targets()) {
      if (target.find('?') == std::string::npos && target.find("/namespaces/") == std::string::npos) continue;
      if (auto at = target.find("continue="); at != std::string::npos) {
        auto end = target.find('&', at);
        target.replace(at, (end == std::string::npos ? target.size() : end) - at, "continue=TOKEN");
      }
      asked.push_back(target);
    }
    return asked;
  }
};

}  // namespace

TEST_CASE("inspect KIND/NAME climbs each page's pods to their owners before it asks for the next page") {
  Cluster cluster;
  std::ostringstream out, err;
  CHECK(karta::inspect_live(cluster.options("jobset/demo"), out, err) == 0);
  CHECK(err.str() == "");
  CHECK(cluster.asked() == std::vector<std::string>{"/apis/run.ai/v1alpha1/kartas?limit=100",
                                                    "/apis/jobset.x-k8s.io/v1alpha2/namespaces/research/jobsets/demo",
                                                    "/api/v1/namespaces/research/pods?limit=1",
                                                    "/apis/batch/v1/namespaces/research/jobs/demo-leader-0",
                                                    "/api/v1/namespaces/research/pods?limit=1&continue=TOKEN",
                                                    "/apis/batch/v1/namespaces/research/jobs/demo-worker-0",
                                                    "/api/v1/namespaces/research/pods?limit=1&continue=TOKEN",
                                                    "/apis/batch/v1/namespaces/research/jobs/demo-worker-1"});
  // The workload's three pods, each found on its own page.
  CHECK(out.str().find("3/3 ready   gpu: 12") != std::string::npos);
}

TEST_CASE("list keeps the rows of the pages it had when a LIST breaks off, and says how many were listed") {
  // A server that gives page 2 the continue token it was asked with: the client ends the LIST there
  // (it would go round for ever), after one page of one object.
  json second = test::demo_cluster::demo_jobset();
  second["metadata"]["name"] = "second";
  second["metadata"]["uid"] = "second-uid";
  Cluster cluster({.repeat_continue_token = true}, {test::demo_cluster::demo_jobset(), second});
  karta::LiveOptions options = cluster.options();
  options.all_namespaces = true;
  options.output = "json";
  std::ostringstream out, err;
  CHECK(karta::list_live(options, out, err) == 0);
  json listed = json::parse(out.str());
  CHECK(listed["count"] == 1);
  CHECK(listed["items"][0]["name"] == "demo");
  CHECK(cluster.asked() == std::vector<std::string>{"/apis/run.ai/v1alpha1/kartas?limit=100",
                                                    "/api/v1/pods?limit=1",
                                                    "/api/v1/pods?limit=1&continue=TOKEN",
                                                    "/apis/batch/v1/jobs?limit=1",
                                                    "/apis/batch/v1/jobs?limit=1&continue=TOKEN",
                                                    "/apis/jobset.x-k8s.io/v1alpha2/jobsets?limit=1",
                                                    "/apis/jobset.x-k8s.io/v1alpha2/jobsets?limit=1&continue=TOKEN"});
  const std::string note = "note: cannot list jobsets.jobset.x-k8s.io in any namespace: LIST https://127.0.0.1:" +
                           std::to_string(cluster.server.port()) +
                           "/apis/jobset.x-k8s.io/v1alpha2/jobsets: page 2 came with a continue token the server had "
                           "already sent: the LIST would never end: the rest skipped, after 1 listed\n";
  CHECK(err.str().find(note) != std::string::npos);
}

}  // namespace unit_live_pages
