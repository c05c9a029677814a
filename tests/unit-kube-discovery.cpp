// Discovery and paged LISTs against the fake API server: every way kubectl names a resource, the
// preferred version, a kind the cluster does not serve, pages with continue tokens, label selectors,
// the API server's 403, 404, 400 and 410 answers, a group version answering 503, and LISTs that would
// never end (a repeated continue token, too many pages).

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "kube/api_client.h"
#include "kube/discovery.h"
#include "kube/list_pages.h"
#include "support/fake_api_server.h"
#include "support/test_support.h"

namespace unit_kube_discovery {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace kube = karta::kube;
namespace test = karta::test;

namespace {

test::FakeResource pods() {
  return {.group = "", .version = "v1", .kind = "Pod", .plural = "pods", .singular = "pod",
          .short_names = {"po"}, .subresources = {"status", "log"}};
}
test::FakeResource jobsets(const std::string& version) {
  return {.group = "jobset.x-k8s.io", .version = version, .kind = "JobSet", .plural = "jobsets",
          .singular = "jobset", .subresources = {"status"}};
}
test::FakeResource deployments() {
  return {.group = "apps", .version = "v1", .kind = "Deployment", .plural = "deployments",
          .singular = "deployment", .short_names = {"deploy"}, .subresources = {"scale", "status"}};
}
test::FakeResource knative_services() {
  return {.group = "serving.knative.dev", .version = "v1", .kind = "Service", .plural = "services",
          .singular = "service", .short_names = {"kservice", "ksvc"}};
}
test::FakeResource core_services() {
  return {.group = "", .version = "v1", .kind = "Service", .plural = "services", .singular = "service",
          .short_names = {"svc"}};
}

json pod(const std::string& namespace_name, const std::string& name, json labels = json::object()) {
  return {{"metadata", {{"name", name}, {"namespace", namespace_name}, {"labels", labels}}}, {"spec", json::object()}};
}

// A cluster with pods and services in the core group, Deployments, JobSets in v1alpha2 and v1alpha1,
// and Knative Services.
struct Cluster {
  test::TempDir dir;
  test::FakeApiServer server{dir.path, {}};
  kube::ApiClient client{server.connection()};
  kube::Discovery discovery{client};

  Cluster() {
    server.serve(pods());
    server.serve(core_services());
    server.serve(deployments());
    server.serve(jobsets("v1alpha1"));
    server.serve(jobsets("v1alpha2"));
    server.serve(knative_services());
  }
};

std::string where(const std::optional<kube::ApiResource>& resource) {
  if (!resource) return "(not served)";
  return resource->api_version() + " " + resource->kind + " " + resource->plural + (resource->namespaced ? " namespaced" : " cluster");
}

std::vector<std::string> names(const std::vector<json>& objects) {
  std::vector<std::string> result;
  for (const json& object : objects) {
    result.push_back(object["metadata"].value("namespace", "") + "/" + object["metadata"]["name"].get<std::string>());
  }
  return result;
}

template <class F>
kube::ApiError api_error_of(F&& f) {
  try {
    f();
  } catch (const kube::ApiError& e) {
    return e;
  }
  FAIL("no ApiError");
  return kube::ApiError("", 0, "", "");
}

}  // namespace

TEST_CASE("the fake API server's discovery documents have the API server's shapes") {
  Cluster cluster;
  json api = cluster.client.get("/api");
  CHECK(api["kind"] == "APIVersions");
  CHECK(api["versions"] == json{"v1"});
  json core = cluster.client.get("/api/v1");
  CHECK(core == json::parse(R"({"kind":"APIResourceList","groupVersion":"v1","resources":[
    {"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod",
     "verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["po"]},
    {"name":"pods/status","singularName":"","namespaced":true,"kind":"Pod","verbs":["get","patch","update"]},
    {"name":"pods/log","singularName":"","namespaced":true,"kind":"Pod","verbs":["get","patch","update"]},
    {"name":"services","singularName":"service","namespaced":true,"kind":"Service",
     "verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["svc"]}]})"));
  json groups = cluster.client.get("/apis");
  CHECK(groups["kind"] == "APIGroupList");
  CHECK(groups["apiVersion"] == "v1");
  REQUIRE(groups["groups"].size() == 4);  // run.ai (the kartas), apps, jobset.x-k8s.io, serving.knative.dev
  CHECK(groups["groups"][2] == json::parse(R"({"name":"jobset.x-k8s.io",
    "versions":[{"groupVersion":"jobset.x-k8s.io/v1alpha2","version":"v1alpha2"},
                {"groupVersion":"jobset.x-k8s.io/v1alpha1","version":"v1alpha1"}],
    "preferredVersion":{"groupVersion":"jobset.x-k8s.io/v1alpha2","version":"v1alpha2"}})"));
  json apps = cluster.client.get("/apis/apps/v1");
  CHECK(apps["kind"] == "APIResourceList");
  CHECK(apps["apiVersion"] == "v1");
  CHECK(apps["groupVersion"] == "apps/v1");
  CHECK(apps["resources"][0]["shortNames"] == json{"deploy"});
  CHECK(cluster.client.get("/apis/apps")["preferredVersion"]["version"] == "v1");
  CHECK(api_error_of([&] { cluster.client.get("/apis/batch/v1"); }).status() == 404);
}

TEST_CASE("a resource is found by kind in any case, plural, singular, short name, NAME.GROUP and NAME.VERSION.GROUP") {
  Cluster cluster;
  for (const char* name : {"Pod", "pod", "POD", "pods", "po"}) {
    CAPTURE(name);
    CHECK(where(cluster.discovery.resolve(name)) == "v1 Pod pods namespaced");
  }
  for (const char* name : {"deploy", "Deployment", "deployments.apps", "deployment.apps", "Deployment.apps",
                           "deployments.v1.apps", "deploy.apps"}) {
    CAPTURE(name);
    CHECK(where(cluster.discovery.resolve(name)) == "apps/v1 Deployment deployments namespaced");
  }
  SUBCASE("a group's preferred version is chosen, and an older version is found when named") {
    CHECK(where(cluster.discovery.resolve("jobsets")) == "jobset.x-k8s.io/v1alpha2 JobSet jobsets namespaced");
    CHECK(where(cluster.discovery.resolve("JobSet.jobset.x-k8s.io")) ==
          "jobset.x-k8s.io/v1alpha2 JobSet jobsets namespaced");
    CHECK(where(cluster.discovery.resolve("jobsets.v1alpha1.jobset.x-k8s.io")) ==
          "jobset.x-k8s.io/v1alpha1 JobSet jobsets namespaced");
    CHECK(cluster.discovery.versions("jobset.x-k8s.io") == std::vector<std::string>{"v1alpha2", "v1alpha1"});
  }
  SUBCASE("the core group wins an unqualified name; the group's name picks the other") {
    CHECK(where(cluster.discovery.resolve("service")) == "v1 Service services namespaced");
    CHECK(where(cluster.discovery.resolve("services.serving.knative.dev")) ==
          "serving.knative.dev/v1 Service services namespaced");
    CHECK(where(cluster.discovery.resolve("ksvc")) == "serving.knative.dev/v1 Service services namespaced");
  }
  SUBCASE("the kartas are cluster-scoped") {
    CHECK(where(cluster.discovery.resolve("karta")) == "run.ai/v1alpha1 Karta kartas cluster");
    CHECK(cluster.discovery.resolve("kartas")->collection_path("ns") == "/apis/run.ai/v1alpha1/kartas");
  }
  SUBCASE("subresources are not resources") {
    CHECK_FALSE(cluster.discovery.resolve("pods/status").has_value());
    CHECK_FALSE(cluster.discovery.resolve("status").has_value());
  }
}

TEST_CASE("a group, version and kind resolve to exactly that resource, or to nothing when it is not served") {
  Cluster cluster;
  CHECK(where(cluster.discovery.resolve("jobset.x-k8s.io", "v1alpha1", "JobSet")) ==
        "jobset.x-k8s.io/v1alpha1 JobSet jobsets namespaced");
  CHECK(where(cluster.discovery.resolve("", "v1", "Pod")) == "v1 Pod pods namespaced");
  CHECK(cluster.discovery.resolve("", "v1", "Pod")->collection_path("ml") == "/api/v1/namespaces/ml/pods");
  CHECK(cluster.discovery.resolve("apps", "v1", "Deployment")->collection_path() == "/apis/apps/v1/deployments");
  CHECK_FALSE(cluster.discovery.resolve("kubeflow.org", "v1", "PyTorchJob").has_value());  // no such group
  CHECK_FALSE(cluster.discovery.resolve("jobset.x-k8s.io", "v1", "JobSet").has_value());   // no such version
  CHECK_FALSE(cluster.discovery.resolve("apps", "v1", "StatefulSet").has_value());         // no such kind
  CHECK_FALSE(cluster.discovery.resolve("apps", "v1", "deployment").has_value());          // kinds are exact here
  CHECK_FALSE(cluster.discovery.resolve("pytorchjobs").has_value());
  CHECK_FALSE(cluster.discovery.resolve("deployments.batch").has_value());
}

TEST_CASE("discovery documents are fetched once, and a failing one is an ApiError, not a kind not served") {
  Cluster cluster;
  cluster.discovery.resolve("pods");
  cluster.discovery.resolve("deploy");
  cluster.discovery.resolve("apps", "v1", "Deployment");
  std::vector<std::string> targets = cluster.server.targets();
  CHECK(std::count(targets.begin(), targets.end(), "/apis") == 1);
  CHECK(std::count(targets.begin(), targets.end(), "/apis/apps/v1") == 1);

  kube::Discovery fresh(cluster.client);
  cluster.server.fail_next(1, 503);
  kube::ApiError error = api_error_of([&] { fresh.resolve("pods"); });
  CHECK(error.status() == 503);
  CHECK(error.reason() == "InternalError");

  test::TempDir dir;
  test::FakeApiServer server(dir.path, {});
  kube::ApiClient stranger(server.connection("wrong token"));
  kube::Discovery denied(stranger);
  CHECK(api_error_of([&] { denied.resolve("pods"); }).status() == 401);
}

TEST_CASE("list_all follows continue tokens page by page and reports each page") {
  Cluster cluster;
  std::vector<json> objects;
  for (int i = 0; i < 7; ++i) objects.push_back(pod(i < 4 ? "ml" : "web", "p" + std::to_string(i)));
  cluster.server.add_objects("", "pods", objects);
  std::vector<std::string> seen;
  std::vector<std::string> progress;
  kube::ListSummary summary = kube::list_all(cluster.client, "/api/v1/pods", {.page_size = 3}, [&](kube::ListPage& page) {
    for (const json& item : page.items) {
      seen.push_back(item["metadata"]["namespace"].get<std::string>() + "/" + item["metadata"]["name"].get<std::string>());
      // Built-in lists may send items without apiVersion and kind: they are filled in from the list.
      CHECK(item["apiVersion"] == "v1");
      CHECK(item["kind"] == "Pod");
    }
    progress.push_back(std::to_string(page.number) + ":" + std::to_string(page.items_so_far) + "+" +
                       (page.remaining ? std::to_string(*page.remaining) : "?"));
  });
  CHECK(seen == std::vector<std::string>{"ml/p0", "ml/p1", "ml/p2", "ml/p3", "web/p4", "web/p5", "web/p6"});
  CHECK(progress == std::vector<std::string>{"1:3+4", "2:6+1", "3:7+?"});
  CHECK(summary.pages == 3);
  CHECK(summary.items == 7);
  std::vector<std::string> targets = cluster.server.targets();
  REQUIRE(targets.size() == 3);
  CHECK(targets[0] == "/api/v1/pods?limit=3");
  CHECK(targets[1].rfind("/api/v1/pods?limit=3&continue=", 0) == 0);

  SUBCASE("one namespace") {
    std::vector<std::string> in_web;
    kube::list_all(cluster.client, "/api/v1/namespaces/web/pods", {.page_size = 2},
                   [&](kube::ListPage& page) { for (auto& n : names(page.items)) in_web.push_back(n); });
    CHECK(in_web == std::vector<std::string>{"web/p4", "web/p5", "web/p6"});
  }
  SUBCASE("an empty collection is one empty page") {
    std::size_t pages = 0;
    kube::ListSummary empty = kube::list_all(cluster.client, "/apis/apps/v1/deployments", {},
                                             [&](kube::ListPage& page) { pages += page.items.empty(); });
    CHECK(pages == 1);
    CHECK(empty.items == 0);
  }
  SUBCASE("items of a list without apiVersion and kind get them from the list") {
    test::TempDir dir;
    test::FakeApiServer bare(dir.path, {}, {.list_items_without_type = true});
    bare.serve(pods(), {pod("ml", "a")});
    kube::ApiClient client(bare.connection());
    std::vector<json> items;
    kube::list_all(client, "/api/v1/pods", {}, [&](kube::ListPage& page) { items = page.items; });
    REQUIRE(items.size() == 1);
    CHECK(items[0]["kind"] == "Pod");
    CHECK(items[0]["apiVersion"] == "v1");
  }
}

TEST_CASE("label selectors select as the API server's, percent-encoded on the way, pages filled with matches") {
  Cluster cluster;
  cluster.server.add_objects(
      "", "pods",
      {pod("ml", "a", {{"team", "vision"}, {"tier", "gpu"}}), pod("ml", "b", {{"team", "nlp"}}),
       pod("ml", "c", {{"team", "vision"}, {"env", "prod"}}), pod("ml", "d", json::object()),
       pod("web", "e", {{"team", "web"}, {"tier", "cpu"}})});
  auto select = [&](const std::string& selector) {
    std::vector<std::string> selected;
    kube::list_all(cluster.client, "/api/v1/pods", {.label_selector = selector, .page_size = 2},
                   [&](kube::ListPage& page) {
                     CHECK_FALSE(page.remaining.has_value());  // no remainingItemCount with a selector
                     for (const json& item : page.items) selected.push_back(item["metadata"]["name"].get<std::string>());
                   });
    return selected;
  };
  using names_t = std::vector<std::string>;
  CHECK(select("team=vision") == names_t{"a", "c"});
  CHECK(select("team==vision") == names_t{"a", "c"});
  CHECK(select("team!=vision") == names_t{"b", "d", "e"});
  CHECK(select("team in (nlp, web)") == names_t{"b", "e"});
  CHECK(select("team notin (nlp,web)") == names_t{"a", "c", "d"});
  CHECK(select("tier") == names_t{"a", "e"});
  CHECK(select("!tier") == names_t{"b", "c", "d"});
  CHECK(select("team=vision,!env") == names_t{"a"});
  CHECK(select("team in (vision),tier=gpu") == names_t{"a"});
  CHECK(select("team=") == names_t{});
  std::vector<std::string> targets = cluster.server.targets();
  CHECK(std::find(targets.begin(), targets.end(), "/api/v1/pods?limit=2&labelSelector=team%20in%20%28nlp%2C%20web%29") !=
        targets.end());

  SUBCASE("a selector that does not parse gets 400 BadRequest with the parser's message") {
    kube::ApiError error = api_error_of([&] { select("team in nlp"); });
    CHECK(error.status() == 400);
    CHECK(error.reason() == "BadRequest");
    CHECK(error.message() == "unable to parse requirement: found 'nlp' expected: '('");
    CHECK(api_error_of([&] { select("team=a,"); }).message() == "found '', expected: identifier after ','");
    CHECK(api_error_of([&] { select("team=a b"); }).message() == "found 'b', expected: ',' or 'end of string'");
    CHECK(api_error_of([&] { select("team ~ a"); }).message() ==
          "unable to parse requirement: found '~', expected: '=', '!=', '==', 'in', notin'");
  }
}

TEST_CASE("one object is got by name, and a missing one is the API server's 404 NotFound") {
  Cluster cluster;
  cluster.server.add_objects("jobset.x-k8s.io", "jobsets", {pod("ml", "train")});
  json got = cluster.client.get("/apis/jobset.x-k8s.io/v1alpha2/namespaces/ml/jobsets/train");
  CHECK(got["metadata"]["name"] == "train");
  CHECK(got["kind"] == "JobSet");
  CHECK(got["apiVersion"] == "jobset.x-k8s.io/v1alpha2");
  // One object, served in every version of its resource.
  CHECK(cluster.client.get("/apis/jobset.x-k8s.io/v1alpha1/namespaces/ml/jobsets/train")["apiVersion"] ==
        "jobset.x-k8s.io/v1alpha1");

  test::TempDir dir;
  kube::ApiError missing = api_error_of([&] { cluster.client.get("/apis/jobset.x-k8s.io/v1alpha2/namespaces/ml/jobsets/gone"); });
  CHECK(missing.status() == 404);
  CHECK(missing.reason() == "NotFound");
  CHECK(missing.message() == "jobsets.jobset.x-k8s.io \"gone\" not found");
  CHECK(api_error_of([&] { cluster.client.get("/api/v1/namespaces/ml/pods/gone"); }).message() == "pods \"gone\" not found");
  // An unknown path is the API server's generic 404.
  kube::ApiError unknown = api_error_of([&] { cluster.client.get("/apis/jobset.x-k8s.io/v1alpha2/trainjobs"); });
  CHECK(unknown.status() == 404);
  CHECK(unknown.message() == "the server could not find the requested resource");
  CHECK(api_error_of([&] { kube::list_all(cluster.client, "/apis/kubeflow.org/v1/pytorchjobs", {}, {}); }).status() == 404);
}

TEST_CASE("RBAC's 403 names the user, verb, resource, group and namespace, and list_all passes it on") {
  Cluster cluster;
  cluster.server.add_objects("apps", "deployments", {pod("ml", "a"), pod("secret", "b")});
  cluster.server.forbid("apps", "deployments", "secret");
  const std::string user = "\"system:serviceaccount:karta-system:karta-webhook\"";
  kube::ApiError in_namespace =
      api_error_of([&] { kube::list_all(cluster.client, "/apis/apps/v1/namespaces/secret/deployments", {}, {}); });
  CHECK(in_namespace.status() == 403);
  CHECK(in_namespace.reason() == "Forbidden");
  CHECK(in_namespace.message() == "deployments.apps is forbidden: User " + user +
                                      " cannot list resource \"deployments\" in API group \"apps\" in the namespace \"secret\"");
  CHECK(std::string(in_namespace.what()).find("/apis/apps/v1/namespaces/secret/deployments?limit=100 answered 403") !=
        std::string::npos);
  kube::ApiError cluster_wide = api_error_of([&] { kube::list_all(cluster.client, "/apis/apps/v1/deployments", {}, {}); });
  CHECK(cluster_wide.message() == "deployments.apps is forbidden: User " + user +
                                      " cannot list resource \"deployments\" in API group \"apps\" at the cluster scope");
  CHECK(api_error_of([&] { cluster.client.get("/apis/apps/v1/namespaces/secret/deployments/b"); }).message() ==
        "deployments.apps \"b\" is forbidden: User " + user +
            " cannot get resource \"deployments\" in API group \"apps\" in the namespace \"secret\"");
  std::size_t listed = 0;
  kube::list_all(cluster.client, "/apis/apps/v1/namespaces/ml/deployments", {},
                 [&](kube::ListPage& page) { listed += page.items.size(); });
  CHECK(listed == 1);
  cluster.server.forbid("", "pods");
  CHECK(api_error_of([&] { cluster.client.get("/api/v1/namespaces/ml/pods"); }).message() ==
        "pods is forbidden: User " + user + " cannot list resource \"pods\" in API group \"\" in the namespace \"ml\"");
}

TEST_CASE("a 410 on a later page says the continue token expired and the LIST must start again") {
  Cluster cluster;
  cluster.server.add_objects("", "pods", {pod("ml", "a"), pod("ml", "b"), pod("ml", "c")});
  kube::ApiError expired = api_error_of([&] {
    kube::list_all(cluster.client, "/api/v1/pods", {.page_size = 1}, [&](kube::ListPage& page) {
      if (page.number == 1) cluster.server.compact(1000);  // etcd compacted past the first page's snapshot
    });
  });
  CHECK(expired.status() == 410);
  CHECK(expired.reason() == "Expired");
  CHECK(expired.message().starts_with("The provided continue parameter is too old to display a consistent list result."));
  CHECK(std::string(expired.what()).find(": the continue token expired after 1 pages (1 objects; 410 Expired: ") !=
        std::string::npos);
  CHECK(std::string(expired.what()).ends_with("the LIST must start again"));
}

TEST_CASE("a group version that answers 503 is passed over with its failure kept; a name found nowhere else names it") {
  test::TempDir dir;
  test::FakeApiServer server(dir.path, {});
  server.serve(pods());
  // Listed in /apis before apps, as an aggregated API can be: resolve meets it first.
  server.serve({.group = "metrics.k8s.io", .version = "v1beta1", .kind = "PodMetrics", .plural = "pods",
                .singular = "", .verbs = {"get", "list"}});
  server.serve(deployments());
  server.make_unavailable("metrics.k8s.io", "v1beta1");
  kube::ApiClient client(server.connection());
  kube::Discovery discovery(client);
  const std::string answered = "GET https://127.0.0.1:" + std::to_string(server.port()) +
                               "/apis/metrics.k8s.io/v1beta1 answered 503: service unavailable";

  CHECK(where(discovery.resolve("deploy")) == "apps/v1 Deployment deployments namespaced");
  REQUIRE(discovery.failures().size() == 1);
  CHECK(discovery.failures()[0].group_version == "metrics.k8s.io/v1beta1");
  CHECK(discovery.failures()[0].error == answered);

  kube::ApiError missing = api_error_of([&] { discovery.resolve("podmetrics"); });
  CHECK(std::string(missing.what()) == "no resource \"podmetrics\" in the group versions discovered, but it may be in one "
                                       "that could not be read: metrics.k8s.io/v1beta1 (" + answered + ")");
  // The failing group version was asked for once; the kinds of the others still resolve.
  CHECK(where(discovery.resolve("Deployment")) == "apps/v1 Deployment deployments namespaced");
  CHECK(discovery.failures().size() == 1);
  std::vector<std::string> targets = server.targets();
  CHECK(std::count(targets.begin(), targets.end(), "/apis/metrics.k8s.io/v1beta1") == 1);
  // Without a failure, a name served nowhere is nullopt, as before.
  kube::Discovery healthy(client);
  CHECK_FALSE(healthy.resolve("apps", "v1", "ReplicaSet"));
}

TEST_CASE("a LIST whose server repeats a continue token stops at the second page with an error naming the collection") {
  test::TempDir dir;
  test::FakeApiServer server(dir.path, {}, {.repeat_continue_token = true});
  server.serve(pods(), {pod("ml", "a"), pod("ml", "b"), pod("ml", "c"), pod("ml", "d")});
  kube::ApiClient client(server.connection());
  std::vector<std::string> delivered;
  kube::ApiError error = api_error_of([&] {
    kube::list_all(client, "/api/v1/namespaces/ml/pods", {.page_size = 1},
                   [&](kube::ListPage& page) { for (auto& n : names(page.items)) delivered.push_back(n); });
  });
  CHECK(std::string(error.what()) == "LIST https://127.0.0.1:" + std::to_string(server.port()) +
                                         "/api/v1/namespaces/ml/pods: page 2 came with a continue token the server "
                                         "had already sent: the LIST would never end");
  CHECK(error.status() == 0);
  CHECK(delivered == std::vector<std::string>{"ml/a"});  // the second page is not delivered
  std::vector<std::string> targets = server.targets();
  REQUIRE(targets.size() == 2);
  CHECK(targets[0] == "/api/v1/namespaces/ml/pods?limit=1");
  CHECK(targets[1].starts_with("/api/v1/namespaces/ml/pods?limit=1&continue="));
}

TEST_CASE("a LIST stops past its page limit, 10,000 pages unless told otherwise") {
  CHECK(kube::ListOptions{}.max_pages == 10'000);
  Cluster cluster;
  cluster.server.add_objects("", "pods", {pod("ml", "a"), pod("ml", "b"), pod("ml", "c"), pod("ml", "d")});
  std::size_t pages = 0;
  kube::ApiError error = api_error_of([&] {
    kube::list_all(cluster.client, "/api/v1/pods", {.page_size = 1, .max_pages = 3}, [&](kube::ListPage&) { ++pages; });
  });
  CHECK(std::string(error.what()) == "LIST https://127.0.0.1:" + std::to_string(cluster.server.port()) +
                                         "/api/v1/pods: the server still sends continue tokens after 3 pages, the most a "
                                         "LIST may take");
  CHECK(pages == 3);
  CHECK(cluster.server.targets().size() == 3);
  // Exactly at the limit is no error.
  kube::ListSummary summary = kube::list_all(cluster.client, "/api/v1/pods", {.page_size = 1, .max_pages = 4}, {});
  CHECK(summary.pages == 4);
}

}  // namespace unit_kube_discovery
