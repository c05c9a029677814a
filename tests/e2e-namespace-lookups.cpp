// End to end: how serve learns the labels of a namespace its watch has not told of (issue 58), against
// the local API server made slow on demand. A review that waits for them holds no thread: /healthz and
// reviews of known namespaces are answered meanwhile, even with one I/O thread. One GET serves every
// review of a namespace and a 404 is remembered; a review's failure changes nothing for another; a watch
// event beats a slower GET; /readyz waits for the first LIST; and namespaceLabels.whenUnknown decides what
// a review gets when the labels cannot be had within its deadline.

#include <doctest/doctest.h>

#include <future>
#include <thread>

#include "runtime/namespace_watch.h"
#include "support/fake_api_server.h"
#include "support/kube_fixtures.h"
#include "support/running_webhook.h"
#include "support/test_support.h"

namespace e2e_namespace_lookups {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test::FakeApiServer;

// Tenants chosen by label: without them, a production namespace's enforce rule would be lifted.
const std::string kPolicy = R"(
scheduling:
  queue: {label: kai.scheduler/queue, namespaceLabel: runai/queue, default: default-queue}
gang: {minMemberAnnotation: kai.scheduler/batch-min-member}
tenants:
- name: production
  namespaceSelector: {matchLabels: {tier: production}}
  scheduling: {queue: {default: production-q}}
  podTemplates: {labels: {platform.example.com/tier: production}}
  labelPolicy: {mode: enforce, workload: {required: [team]}}
)";

const test::FakeResource kNamespaces{.group = "", .version = "v1", .kind = "Namespace", .plural = "namespaces",
                                     .singular = "namespace", .short_names = {"ns"}, .namespaced = false};

json namespace_object(const std::string& name, const json& labels) {
  return {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}, {"labels", labels}}},
          {"spec", {{"finalizers", {"kubernetes"}}}}, {"status", {{"phase", "Active"}}}};
}

// The JobSet paralleljobs (tests/corpus/samples/jobset-1.yaml): its workload has no `team` label.
json jobset(const std::string& namespace_name) {
  json object = test::document(test::source_dir() / "tests/corpus/samples/jobset-1.yaml");
  object["metadata"]["namespace"] = namespace_name;
  return object;
}

// Its patch in queue `queue`, its pods with `labels` too.
json jobset_patch(const std::string& queue, json labels = json::object()) {
  labels["kai.scheduler/queue"] = queue;
  return json::array({
      {{"op", "add"}, {"path", "/metadata/labels"}, {"value", {{"kai.scheduler/queue", queue}}}},
      {{"op", "add"}, {"path", "/spec/replicatedJobs/0/template/spec/template/metadata"}, {"value", {{"labels", labels}}}},
      {{"op", "add"}, {"path", "/spec/replicatedJobs/1/template/spec/template/metadata"}, {"value", {{"labels", labels}}}},
      {{"op", "add"}, {"path", "/metadata/annotations"}, {"value", {{"karta.run.ai/written", "label:kai.scheduler/queue"}}}},
  });
}
const json kProductionPatch = jobset_patch("production-q", {{"platform.example.com/tier", "production"}});

// The response of a review refused because its namespace's labels could not be had in time.
json refused(const std::string& namespace_name, const std::string& why) {
  return {{"uid", "uid-1"},
          {"allowed", false},
          {"status",
           {{"code", 503},
            {"reason", "ServiceUnavailable"},
            {"message", "the labels of namespace \"" + namespace_name + "\" could not be read in time (" + why +
                            "); the policy decides by them (namespaceLabels.whenUnknown: deny): retry in a few seconds"}}}};
}

std::chrono::milliseconds since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
}

// The webhook watching the API server's namespaces, the listed ones known to its watch.
struct Cluster {
  test::TempDir dir;
  FakeApiServer server{dir.path, {}};
  std::unique_ptr<test::RunningWebhook> running;
  std::unique_ptr<test::HttpsClient> client;

  explicit Cluster(std::vector<json> listed, const std::string& policy = kPolicy, std::size_t threads = 2,
                   const std::function<void(FakeApiServer&)>& before_start = {}) {
    server.serve(kNamespaces, std::move(listed));
    server.serve(test::crd_resource());
    if (before_start) before_start(server);
    running = std::make_unique<test::RunningWebhook>(
        [&](karta::WebhookConfig& config) {
          config.server.threads = threads;
          config.cluster = server.connection();
          config.watcher_options = test::kube_fixtures::test_options();
        },
        policy);
    client = std::make_unique<test::HttpsClient>(running->port, running->certificates.ca);
  }
  void wait_ready() {
    REQUIRE(test::eventually([&] { return client->request("GET", "/readyz").status == 200; }, 20s));
  }
  // Namespaces the API server has and its watch never tells of: created, as far as the webhook can
  // know, a moment ago.
  void add_unseen(std::vector<json> namespaces) { server.add_objects("", "namespaces", std::move(namespaces)); }
  json response(const std::string& endpoint, const json& object, const std::string& query = "?timeout=10s") {
    return response_with(*client, endpoint, object, query);
  }
  json response_with(test::HttpsClient& with, const std::string& endpoint, const json& object,
                     const std::string& query = "?timeout=10s") {
    test::HttpReply reply = with.request("POST", endpoint + query, test::admission_review(object).dump());
    REQUIRE(reply.status == 200);
    return json::parse(reply.body)["response"];
  }
  // The response of /mutate from a connection of its own, and how long it took.
  std::future<std::pair<json, std::chrono::milliseconds>> mutate_apart(const json& object, const std::string& query = "?timeout=10s") {
    return std::async(std::launch::async, [this, object, query] {
      test::HttpsClient own(running->port, running->certificates.ca);
      const auto start = Clock::now();
      json response = response_with(own, "/mutate", object, query);
      return std::pair{response, since(start)};
    });
  }
};

json patch_of(const json& response) { return test::decoded_patch(json{{"response", response}}); }

TEST_CASE("with one I/O thread and 2.5 s GETs, /mutate of a known namespace and /healthz answer in under 100 ms while 4 unseen namespaces are looked up") {
  Cluster cluster(std::vector<json>{namespace_object("research", {{"runai/queue", "research-q"}})}, kPolicy, /*threads=*/1);
  cluster.wait_ready();
  cluster.add_unseen({namespace_object("unseen-0", {{"tier", "production"}}), namespace_object("unseen-1", {{"runai/queue", "q-1"}}),
                      namespace_object("unseen-2", {{"tier", "production"}}), namespace_object("unseen-3", {{"runai/queue", "q-3"}})});
  cluster.server.delay_gets("/api/v1/namespaces/", 2500ms);
  std::vector<std::future<std::pair<json, std::chrono::milliseconds>>> unseen;
  for (int i = 0; i < 4; ++i) unseen.push_back(cluster.mutate_apart(jobset("unseen-" + std::to_string(i))));
  CHECK(test::eventually([&] {  // all four at once
    for (int i = 0; i < 4; ++i) {
      if (cluster.server.requests_for("/api/v1/namespaces/unseen-" + std::to_string(i)) != 1) return false;
    }
    return true;
  }, 5s));

  const auto bound = 100ms * test::kSlowdown;
  auto start = Clock::now();
  json known = cluster.response("/mutate", jobset("research"));
  const auto known_took = since(start);
  CHECK(patch_of(known) == jobset_patch("research-q"));
  CHECK(known_took < bound);
  start = Clock::now();
  test::HttpReply health = cluster.client->request("GET", "/healthz");
  const auto health_took = since(start);
  CHECK(health.status == 200);
  CHECK(health.body == "ok\n");
  CHECK(health_took < bound);
  // Looked up side by side, each within its own deadline, each with the labels its GET read.
  for (int i = 0; i < 4; ++i) {
    CAPTURE(i);
    auto [response, took] = unseen[static_cast<std::size_t>(i)].get();
    CHECK(patch_of(response) == (i % 2 == 0 ? kProductionPatch : jobset_patch("q-" + std::to_string(i))));
    CHECK_FALSE(response.contains("warnings"));
    CHECK(took >= 2400ms);
    CHECK(took < 3000ms);
  }
  MESSAGE("known /mutate " << known_took.count() << " ms, /healthz " << health_took.count() << " ms");
}

TEST_CASE("200 reviews of a namespace that does not exist make one GET: one lookup for all, and its 404 remembered") {
  Cluster cluster(std::vector<json>{namespace_object("research", {{"runai/queue", "research-q"}})});
  cluster.wait_ready();
  cluster.server.delay_gets("/api/v1/namespaces/", 300ms);
  std::vector<std::future<std::vector<json>>> senders;
  for (int s = 0; s < 4; ++s) {
    senders.push_back(std::async(std::launch::async, [&] {
      test::HttpsClient own(cluster.running->port, cluster.running->certificates.ca);
      std::vector<json> responses;
      for (int i = 0; i < 50; ++i) responses.push_back(cluster.response_with(own, "/mutate", jobset("ghost")));
      return responses;
    }));
  }
  std::size_t answered = 0;
  for (auto& sender : senders) {
    for (const json& response : sender.get()) {
      CHECK(response == refused("ghost", "no such namespace"));
      ++answered;
    }
  }
  CHECK(answered == 200);
  CHECK(cluster.server.requests_for("/api/v1/namespaces/ghost") == 1);
  CHECK(cluster.client->request("GET", "/metrics").body.find("karta_namespace_labels_unknown_total{endpoint=\"mutate\"} 200\n") !=
        std::string::npos);
}

TEST_CASE("a review of namespace \"..\" or one whose GET fails changes nothing for another request") {
  Cluster cluster(std::vector<json>{namespace_object("research", {{"runai/queue", "research-q"}})});
  cluster.wait_ready();
  cluster.add_unseen({namespace_object("serving", {{"tier", "production"}}), namespace_object("serving-2", {{"tier", "production"}})});
  cluster.server.answer_raw("/api/v1/namespaces/broken", 500,
                            test::status_object(500, "InternalError", "etcdserver: leader changed").dump());

  CHECK(cluster.response("/validate", jobset("..")) == refused("..", "not a namespace name"));
  CHECK(cluster.response("/validate", jobset("broken")) == refused("broken", "GET answered 500 InternalError"));
  // Next, in namespaces the watch has not told of either: decided by their own labels.
  const json denied = {{"uid", "uid-1"},
                       {"allowed", false},
                       {"status", {{"code", 403}, {"reason", "Forbidden"}, {"message", "label policy: workload: label \"team\" missing"}}}};
  CHECK(cluster.response("/validate", jobset("serving")) == denied);
  json mutated = cluster.response("/mutate", jobset("serving-2"));
  CHECK(patch_of(mutated) == kProductionPatch);
  CHECK_FALSE(mutated.contains("warnings"));
  CHECK(cluster.response("/validate", jobset("serving")) == denied);  // now known: and still denied

  CHECK(cluster.server.requests_for("/api/v1/namespaces/broken") == 1);
  for (const std::string& target : cluster.server.targets()) CHECK(target.find("..") == std::string::npos);
}

TEST_CASE("a watch event that comes while a slower GET is on its way wins: the namespace keeps the watch's labels") {
  Cluster cluster(std::vector<json>{namespace_object("research", {{"runai/queue", "research-q"}})});
  cluster.wait_ready();
  cluster.add_unseen({namespace_object("fresh", json::object())});
  cluster.server.delay_gets("/api/v1/namespaces/fresh", 1500ms);
  auto waiting = cluster.mutate_apart(jobset("fresh"));
  REQUIRE(test::eventually([&] { return cluster.server.requests_for("/api/v1/namespaces/fresh") == 1; }, 5s));
  Clock::time_point got_at{};
  for (const auto& received : cluster.server.received()) {
    if (received.target == "/api/v1/namespaces/fresh") got_at = received.at;
  }
  // Labelled a moment after its creation: the GET read it before.
  cluster.server.change_object("", "namespaces", "MODIFIED", namespace_object("fresh", {{"tier", "production"}}));
  auto [first, took] = waiting.get();
  CHECK(patch_of(first) == kProductionPatch);
  CHECK(took < 1500ms);  // answered by the event, not by the GET

  std::this_thread::sleep_until(got_at + 1500ms + 500ms);  // the GET's older answer has come meanwhile
  CHECK(patch_of(cluster.response("/mutate", jobset("fresh"))) == kProductionPatch);
  auto namespaces = cluster.running->webhook->cluster_namespaces();
  REQUIRE(namespaces);
  CHECK(namespaces->find("fresh").labels == karta::LabelMap{{"tier", "production"}});
  CHECK(cluster.server.requests_for("/api/v1/namespaces/fresh") == 1);
}

TEST_CASE("/readyz is 503 until the first LIST of Namespaces is in, when the policy reads namespace labels") {
  Cluster cluster(std::vector<json>{namespace_object("research", {{"runai/queue", "research-q"}})}, kPolicy, 2,
                  [](FakeApiServer& server) { server.delay_gets("/api/v1/namespaces?limit=", 3000ms); });
  test::HttpReply reply;
  REQUIRE(test::eventually([&] {
    reply = cluster.client->request("GET", "/readyz");
    return reply.body != "waiting for the first LIST of Kartas and CustomResourceDefinitions\n";
  }, 2500ms));
  CHECK(reply.status == 503);
  CHECK(reply.body == "waiting for the first LIST of Namespaces\n");
  Clock::time_point listed_at{};
  for (const auto& received : cluster.server.received()) {
    if (received.target.starts_with("/api/v1/namespaces?limit=")) listed_at = received.at;
  }
  REQUIRE(listed_at != Clock::time_point{});
  REQUIRE(test::eventually([&] { return cluster.client->request("GET", "/readyz").status == 200; }, 10s));
  CHECK(Clock::now() >= listed_at + 3000ms);
  CHECK(cluster.client->request("GET", "/readyz").body == "ok\n");
  CHECK(cluster.server.requests_for("/api/v1/namespaces/research") == 0);
}

TEST_CASE("namespaceLabels.whenUnknown decides what a review gets when its namespace's labels cannot be had within its deadline") {
  // The call's timeout is 2 s: the review waits 1 s, its GET takes 3.
  const std::string query = "?timeout=2s";
  auto slow = [&](const std::string& policy) {
    auto cluster = std::make_unique<Cluster>(std::vector<json>{namespace_object("research", {})}, policy);
    cluster->wait_ready();
    cluster->add_unseen({namespace_object("slow", {{"tier", "production"}, {"runai/queue", "slow-q"}})});
    cluster->server.delay_gets("/api/v1/namespaces/slow", 3000ms);
    return cluster;
  };
  const std::string warning =
      "namespace \"slow\": labels unknown (still being read at the admission's deadline); decided without them: the global "
      "policy, no queue from namespace labels";
  SUBCASE("by default, with a rule that selects by labels: denied") {
    auto cluster = slow(kPolicy);
    auto [response, took] = cluster->mutate_apart(jobset("slow"), query).get();
    CHECK(response == refused("slow", "still being read at the admission's deadline"));
    CHECK(took >= 1000ms);
    CHECK(took < 1500ms);
  }
  SUBCASE("deny, as given") {
    auto cluster = slow(kPolicy + "namespaceLabels: {whenUnknown: deny}\n");
    CHECK(cluster->response("/validate", jobset("slow"), query) == refused("slow", "still being read at the admission's deadline"));
  }
  SUBCASE("globalPolicy: the global policy, with a warning") {
    auto cluster = slow(kPolicy + "namespaceLabels: {whenUnknown: globalPolicy}\n");
    json response = cluster->response("/mutate", jobset("slow"), query);
    CHECK(patch_of(response) == jobset_patch("default-queue"));
    CHECK(response["warnings"] == json::array({warning}));
    // and /validate, with the global policy's (no label policy): allowed
    CHECK(cluster->response("/validate", jobset("slow"), query) ==
          json{{"uid", "uid-1"}, {"allowed", true}, {"status", {{"code", 200}}}, {"warnings", {warning}}});
  }
  SUBCASE("by default, when labels only give a queue: the global policy, with a warning") {
    auto cluster = slow("scheduling:\n  queue: {label: kai.scheduler/queue, namespaceLabel: runai/queue, default: default-queue}\n"
                        "gang: {minMemberAnnotation: kai.scheduler/batch-min-member}\n");
    json response = cluster->response("/mutate", jobset("slow"), query);
    CHECK(patch_of(response) == jobset_patch("default-queue"));
    CHECK(response["warnings"] == json::array({warning}));
  }
}

// The store itself, not started (no watch): what find() and await() do for each kind of name.
struct Awaited {
  karta::NamespaceLookup lookup;
  std::chrono::milliseconds took;
};
Awaited await(const karta::ClusterNamespaces& namespaces, const std::string& name, std::chrono::milliseconds wait = 3s) {
  std::promise<karta::NamespaceLookup> done;
  const auto start = Clock::now();
  namespaces.await(name, start + wait, [&done](karta::NamespaceLookup lookup) { done.set_value(std::move(lookup)); });
  karta::NamespaceLookup lookup = done.get_future().get();
  return {std::move(lookup), since(start)};
}

TEST_CASE("the namespace store GETs only what is awaited, as metadata, keeps it, remembers a 404 for a while, and pauses nothing after a failure") {
  test::TempDir dir;
  FakeApiServer server{dir.path, {}};
  server.serve(kNamespaces, {namespace_object("research", {{"runai/queue", "research-q"}}), namespace_object("other", {})});
  karta::ClusterNamespaces namespaces(server.connection(), test::kube_fixtures::test_options(),
                                      {.remember_absent = 1000ms});
  // find() never asks.
  karta::NamespaceLookup unseen = namespaces.find("research");
  CHECK_FALSE(unseen.labels);
  CHECK(unseen.pending);
  CHECK(server.received().empty());

  CHECK(await(namespaces, "research").lookup.labels == karta::LabelMap{{"runai/queue", "research-q"}});
  REQUIRE(server.received().size() == 1);
  CHECK(server.received()[0].target == "/api/v1/namespaces/research");
  CHECK(server.received()[0].accept == "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json");
  CHECK(namespaces.find("research").labels == karta::LabelMap{{"runai/queue", "research-q"}});  // kept
  CHECK(await(namespaces, "research").lookup.labels == karta::LabelMap{{"runai/queue", "research-q"}});
  CHECK(server.received().size() == 1);

  // Not a namespace's name: unknown at once, never sent.
  for (const std::string& name : {std::string(".."), std::string("a/b"), std::string(100, 'x'), std::string("Caps"), std::string()}) {
    CAPTURE(name);
    karta::NamespaceLookup lookup = await(namespaces, name).lookup;
    CHECK_FALSE(lookup.labels);
    CHECK(lookup.why_unknown == (name.empty() ? "no namespace" : "not a namespace name"));
  }
  CHECK(server.received().size() == 1);

  // A 404: remembered for a while, then asked again.
  CHECK(await(namespaces, "gone").lookup.why_unknown == "no such namespace");
  CHECK(namespaces.find("gone").why_unknown == "no such namespace");
  CHECK_FALSE(namespaces.find("gone").pending);
  CHECK(server.requests_for("/api/v1/namespaces/gone") == 1);
  std::this_thread::sleep_for(1100ms);
  CHECK(namespaces.find("gone").pending);
  CHECK(await(namespaces, "gone").lookup.why_unknown == "no such namespace");
  CHECK(server.requests_for("/api/v1/namespaces/gone") == 2);

  // A refused GET answers its own waiter, and the next namespace is asked all the same.
  server.answer_raw("/api/v1/namespaces/refused", 403, test::status_object(403, "Forbidden", "no").dump());
  CHECK(await(namespaces, "refused").lookup.why_unknown == "GET answered 403 Forbidden");
  CHECK(await(namespaces, "other").lookup.labels == karta::LabelMap{});
  CHECK(server.requests_for("/api/v1/namespaces/other") == 1);

  // A wait shorter than the GET: unknown at its deadline; the GET goes on, and its answer is kept.
  server.delay_gets("/api/v1/namespaces/", 600ms);
  server.add_objects("", "namespaces", {namespace_object("late", {{"tier", "production"}})});
  Awaited late = await(namespaces, "late", 200ms);
  CHECK(late.lookup.why_unknown == "still being read at the admission's deadline");
  CHECK(late.took >= 200ms);
  CHECK(late.took < 500ms);
  CHECK(await(namespaces, "late").lookup.labels == karta::LabelMap{{"tier", "production"}});  // joins the same GET
  CHECK(server.requests_for("/api/v1/namespaces/late") == 1);
  // A deadline already past: unknown at once, nothing sent.
  CHECK(await(namespaces, "never", 0ms).lookup.why_unknown == "still being read at the admission's deadline");
  CHECK(server.requests_for("/api/v1/namespaces/never") == 0);

  namespaces.stop();
  CHECK(await(namespaces, "research").lookup.why_unknown == "the webhook is shutting down");
}

}  // namespace e2e_namespace_lookups
