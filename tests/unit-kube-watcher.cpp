// The ResourceWatcher against the local API server: paged LISTs, WATCH events, bookmarks, 410s, backoff, stop().

#include <doctest/doctest.h>

#include <chrono>
#include <mutex>

#include "kube/watcher.h"
#include "support/fake_api_server.h"
#include "support/kube_fixtures.h"
#include "support/test_support.h"

namespace unit_kube_watcher {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace kube = karta::kube;
namespace test = karta::test;
using namespace std::chrono_literals;

using test::FakeApiServer;
using test::raw_url_base64;
using namespace test::kube_fixtures;

namespace {

using Clock = std::chrono::steady_clock;

// What a watcher's callbacks were given, for the test thread to look at.
struct Recorder {
  mutable std::mutex mutex;
  std::vector<std::vector<json>> snapshots;
  std::vector<std::pair<kube::EventType, json>> events;

  kube::WatcherCallbacks callbacks() {
    return {[this](std::vector<json> objects) {
              std::lock_guard lock(mutex);
              snapshots.push_back(std::move(objects));
            },
            [this](kube::EventType type, const json& object) {
              std::lock_guard lock(mutex);
              events.emplace_back(type, object);
            }};
  }
  std::size_t snapshot_count() const {
    std::lock_guard lock(mutex);
    return snapshots.size();
  }
  std::size_t event_count() const {
    std::lock_guard lock(mutex);
    return events.size();
  }
  std::vector<json> snapshot(std::size_t index) const {
    std::lock_guard lock(mutex);
    return snapshots.at(index);
  }
  std::pair<kube::EventType, json> event(std::size_t index) const {
    std::lock_guard lock(mutex);
    return events.at(index);
  }
};

std::string watch_query(const std::string& version) {
  return std::string(kKartas) + "?watch=1&resourceVersion=" + version + "&allowWatchBookmarks=true&timeoutSeconds=300";
}

// A server holding kartas a, b and c, and a started watcher of it that has listed and is watching.
struct WatchedServer {
  test::TempDir dir;
  FakeApiServer server{dir.path, {karta_object("a"), karta_object("b"), karta_object("c")}};
  Recorder recorder;
  kube::ResourceWatcher watcher;

  explicit WatchedServer(kube::WatcherOptions options = test_options())
      : watcher(server.connection(), kKartas, recorder.callbacks(), options) {
    watcher.start();
    REQUIRE(watcher.wait_until_synced(5s));
    REQUIRE(eventually([&] { return watcher.watches() == 1 && server.open_watches() == 1; }));
  }
};

}  // namespace

// ---------------------------------------------------------------------------------------------------
// ResourceWatcher

TEST_CASE(
    "the watcher lists in pages, watches from the list's resourceVersion, and delivers an ADDED while the stream is "
    "open") {
  WatchedServer w;
  // Three kartas in pages of two: the second page is asked for with the first's continue token.
  auto targets = w.server.targets();
  REQUIRE(targets.size() == 3);
  CHECK(targets[0] == std::string(kKartas) + "?limit=2");
  std::string continue_token =
      raw_url_base64(json{{"v", "meta.k8s.io/v1"}, {"rv", 100}, {"start", std::string("b") + '\0'}}.dump());
  CHECK(targets[1] == std::string(kKartas) + "?limit=2&continue=" + continue_token);
  CHECK(targets[2] == watch_query("100"));
  REQUIRE(w.recorder.snapshot_count() == 1);
  CHECK(names(w.recorder.snapshot(0)) == std::vector<std::string>{"a", "b", "c"});
  CHECK(w.recorder.snapshot(0)[0]["metadata"]["resourceVersion"] == "40");
  CHECK(w.watcher.synced());
  CHECK(w.watcher.lists() == 1);
  CHECK(w.watcher.watches() == 1);
  CHECK(w.watcher.resource_version() == "100");

  w.server.add(karta_object("d", "PyTorchJob"));
  REQUIRE(eventually([&] { return w.recorder.event_count() == 1; }));
  // The stream has not ended: the server ends it only at timeoutSeconds (300) or when told.
  CHECK(w.server.open_watches() == 1);
  auto [type, object] = w.recorder.event(0);
  CHECK(type == kube::EventType::Added);
  CHECK(object["metadata"]["name"] == "d");
  CHECK(object["metadata"]["resourceVersion"] == "101");
  CHECK(object["spec"]["structureDefinition"]["rootComponent"]["kind"]["kind"] == "PyTorchJob");
  CHECK(w.watcher.resource_version() == "101");
  // The watcher keeps each object's resourceVersion, not the object: the callbacks have that.
  CHECK(w.watcher.versions() ==
        std::map<std::string, std::string>{{"a", "40"}, {"b", "41"}, {"c", "42"}, {"d", "101"}});
  CHECK(w.watcher.watches() == 1);
  CHECK(w.watcher.errors() == 0);
}

TEST_CASE("MODIFIED replaces the object and DELETED removes it") {
  WatchedServer w;
  json modified = karta_object("b", "RayCluster");
  w.server.modify(modified);
  w.server.remove("a");
  REQUIRE(eventually([&] { return w.recorder.event_count() == 2; }));
  CHECK(w.recorder.event(0).first == kube::EventType::Modified);
  CHECK(w.recorder.event(1).first == kube::EventType::Deleted);
  CHECK(w.recorder.event(1).second["metadata"]["name"] == "a");
  CHECK(w.recorder.event(1).second["metadata"]["resourceVersion"] == "102");
  CHECK(w.recorder.event(0).second["spec"]["structureDefinition"]["rootComponent"]["kind"]["kind"] == "RayCluster");
  CHECK(w.watcher.versions() == std::map<std::string, std::string>{{"b", "101"}, {"c", "42"}});
  CHECK(w.watcher.resource_version() == "102");
  CHECK(kube::to_string(w.recorder.event(1).first) == std::string("DELETED"));
}

TEST_CASE("a BOOKMARK moves the resourceVersion, and the next watch starts from it") {
  WatchedServer w;
  w.server.bookmark(150);
  REQUIRE(eventually([&] { return w.watcher.resource_version() == "150"; }));
  CHECK(w.recorder.event_count() == 0);  // bookmarks are not events of objects
  w.server.end_watches();
  REQUIRE(eventually([&] { return w.watcher.watches() == 2 && w.server.open_watches() == 1; }));
  auto targets = w.server.targets();
  REQUIRE(targets.size() == 4);
  CHECK(targets[3] == watch_query("150"));
  CHECK(w.watcher.lists() == 1);
  CHECK(w.recorder.snapshot_count() == 1);
}

TEST_CASE("when the server ends the stream, the watcher watches again from the last resourceVersion it saw") {
  WatchedServer w;
  w.server.add(karta_object("d"));
  w.server.add(karta_object("e"));
  REQUIRE(eventually([&] { return w.recorder.event_count() == 2; }));
  w.server.end_watches();
  REQUIRE(eventually([&] { return w.watcher.watches() == 2 && w.server.open_watches() == 1; }));
  auto targets = w.server.targets();
  REQUIRE(targets.size() == 4);
  CHECK(targets[3] == watch_query("102"));
  // Writes made while no stream was open are replayed by the server from that resourceVersion.
  w.server.end_watches();
  REQUIRE(eventually([&] { return w.watcher.watches() == 3; }));
  w.server.add(karta_object("f"));
  REQUIRE(eventually([&] { return w.recorder.event_count() == 3; }));
  CHECK(w.recorder.event(2).second["metadata"]["name"] == "f");
  CHECK(w.watcher.lists() == 1);
  CHECK(w.watcher.errors() == 0);
  CHECK(w.watcher.versions().size() == 6);
}

TEST_CASE("an ERROR event with a 410 Expired Status makes the watcher list again, and a LIST that changes nothing is not delivered") {
  WatchedServer w;
  w.server.add(karta_object("d"));
  REQUIRE(eventually([&] { return w.recorder.event_count() == 1; }));
  // etcd compacted past the watcher's resourceVersion (101) while its stream was being re-opened.
  w.server.remove("a");
  REQUIRE(eventually([&] { return w.recorder.event_count() == 2; }));
  w.server.compact(200);
  // The watch from 102 is answered 200 with the ERROR event, and so counts as opened.
  REQUIRE(eventually([&] { return w.watcher.watches() == 3 && w.server.open_watches() == 1; }));
  auto targets = w.server.targets();
  REQUIRE(targets.size() == 7);
  CHECK(targets[3] == watch_query("102"));  // answered with the ERROR event
  CHECK(targets[4] == std::string(kKartas) + "?limit=2");
  CHECK(targets[6] == watch_query("200"));
  // The LIST found b, c and d, as the events had left them: no new snapshot, so no reload.
  CHECK(w.recorder.snapshot_count() == 1);
  CHECK(w.watcher.versions().size() == 3);
  CHECK(w.watcher.relists_after_gone() == 1);
  CHECK(w.watcher.lists() == 2);
  CHECK(w.watcher.errors() == 0);
  CHECK(w.watcher.resource_version() == "200");
}

TEST_CASE("an HTTP 410 answer to a watch also makes the watcher list again") {
  test::TempDir dir;
  FakeApiServer server(dir.path, {karta_object("a")}, {.gone_as_http_status = true});
  Recorder recorder;
  kube::ResourceWatcher watcher(server.connection(), kKartas, recorder.callbacks(), test_options());
  watcher.start();
  REQUIRE(eventually([&] { return watcher.watches() == 1 && server.open_watches() == 1; }));
  server.compact(300);
  REQUIRE(eventually([&] { return watcher.watches() == 2 && server.open_watches() == 1; }));
  CHECK(server.targets() == std::vector<std::string>{std::string(kKartas) + "?limit=2", watch_query("100"),
                                                     watch_query("100"), std::string(kKartas) + "?limit=2",
                                                     watch_query("300")});
  CHECK(watcher.relists_after_gone() == 1);
  CHECK(watcher.watches() == 2);  // the 410 opened no stream
  CHECK(watcher.errors() == 0);
}

TEST_CASE("500 answers are retried after a backoff that doubles, and then the watcher syncs") {
  test::TempDir dir;
  FakeApiServer server(dir.path, {karta_object("a")});
  server.fail_next(3, 500);
  Recorder recorder;
  kube::WatcherOptions options = test_options();
  options.backoff.initial = 100ms;
  options.backoff.cap = 10s;
  kube::ResourceWatcher watcher(server.connection(), kKartas, recorder.callbacks(), options);
  watcher.start();
  REQUIRE(watcher.wait_until_synced(5s));
  CHECK(watcher.errors() == 3);
  CHECK(watcher.lists() == 1);
  CHECK(watcher.last_error() == "GET https://127.0.0.1:" + std::to_string(server.port()) + kKartas +
                                    "?limit=2 answered 500: Internal error occurred: etcdserver: leader changed");
  auto received = server.received();
  REQUIRE(received.size() >= 4);
  // Each wait is 100, 200, then 400 ms, stretched by up to as much again.
  CHECK(received[1].at - received[0].at >= 100ms);
  CHECK(received[2].at - received[1].at >= 200ms);
  CHECK(received[3].at - received[2].at >= 400ms);
  for (int i = 0; i < 4; ++i) CHECK(received[i].target == std::string(kKartas) + "?limit=2");
}

TEST_CASE("a wrong token leaves the watcher unsynced, with the 401 counted and its message kept") {
  test::TempDir dir;
  FakeApiServer server(dir.path, {karta_object("a")});
  Recorder recorder;
  kube::WatcherOptions options = test_options();
  options.page_size = 500;
  kube::ResourceWatcher watcher(server.connection("wrong"), kKartas, recorder.callbacks(), options);
  watcher.start();
  REQUIRE(eventually([&] { return watcher.errors() >= 2; }));
  CHECK_FALSE(watcher.synced());
  CHECK(watcher.lists() == 0);
  CHECK(recorder.snapshot_count() == 0);
  CHECK(watcher.last_error() ==
        "GET https://127.0.0.1:" + std::to_string(server.port()) + kKartas + "?limit=500 answered 401: Unauthorized");
  CHECK(server.received()[0].target == std::string(kKartas) + "?limit=500");
}

TEST_CASE("stop() returns within a second during an open watch, and the server sees the stream closed") {
  WatchedServer w;
  auto started = Clock::now();
  w.watcher.stop();
  CHECK(Clock::now() - started < 1s);
  CHECK(eventually([&] { return w.server.open_watches() == 0; }));
  w.watcher.stop();  // again: nothing to do
}

TEST_CASE("stop() returns within a second during a backoff wait") {
  test::TempDir dir;
  FakeApiServer server(dir.path, {karta_object("a")});
  server.fail_next(1, 503);
  Recorder recorder;
  kube::WatcherOptions options = test_options();
  options.backoff.initial = 20s;
  kube::ResourceWatcher watcher(server.connection(), kKartas, recorder.callbacks(), options);
  watcher.start();
  REQUIRE(eventually([&] { return watcher.errors() == 1; }));
  auto started = Clock::now();
  watcher.stop();
  CHECK(Clock::now() - started < 1s);
  CHECK(server.received().size() == 1);
}

TEST_CASE("LIST items without apiVersion and kind get them from the list, as watch events carry them") {
  test::TempDir dir;
  FakeApiServer server(dir.path, {karta_object("a")}, {.list_items_without_type = true});
  Recorder recorder;
  kube::ResourceWatcher watcher(server.connection(), kKartas, recorder.callbacks(), test_options());
  watcher.start();
  REQUIRE(watcher.wait_until_synced(5s));
  json expected = karta_object("a");
  expected["metadata"]["resourceVersion"] = "40";
  REQUIRE(recorder.snapshot_count() == 1);
  CHECK(recorder.snapshot(0) == std::vector<json>{expected});
  CHECK(watcher.versions() == std::map<std::string, std::string>{{"a", "40"}});
}

TEST_CASE("objects are keyed by name when cluster-scoped and by namespace/name when namespaced") {
  CHECK(kube::ResourceWatcher::object_key(karta_object("jobset-v1alpha2")) == "jobset-v1alpha2");
  CHECK(kube::ResourceWatcher::object_key(json::parse(R"({"metadata":{"name":"cm","namespace":"karta-system"}})")) ==
        "karta-system/cm");
}

TEST_CASE("a server that repeats its continue token leaves the watcher unsynced, retrying after backoffs, two pages a try") {
  test::TempDir dir;
  FakeApiServer server(dir.path, {karta_object("a"), karta_object("b"), karta_object("c")}, {.repeat_continue_token = true});
  Recorder recorder;
  kube::WatcherOptions options = test_options();  // pages of 2
  options.backoff.initial = 100ms;
  kube::ResourceWatcher watcher(server.connection(), kKartas, recorder.callbacks(), options);
  watcher.start();
  REQUIRE(eventually([&] { return watcher.errors() >= 3; }));
  watcher.stop();
  CHECK_FALSE(watcher.synced());
  CHECK(watcher.lists() == 0);
  CHECK(recorder.snapshot_count() == 0);  // no page of a LIST that failed is delivered
  CHECK(watcher.last_error() == "LIST https://127.0.0.1:" + std::to_string(server.port()) + kKartas +
                                    ": page 2 came with a continue token the server had already sent: the LIST would never end");
  // Each try asks for the first page and one more, then backs off; stop() may cut a try short.
  auto received = server.received();
  std::size_t errors = watcher.errors();
  CHECK(received.size() >= 2 * errors);
  CHECK(received.size() <= 2 * errors + 1);
  for (std::size_t i = 0; i < received.size(); ++i) {
    CAPTURE(i);
    if (i % 2 == 0) CHECK(received[i].target == std::string(kKartas) + "?limit=2");
    if (i % 2 == 1) CHECK(received[i].target.starts_with(std::string(kKartas) + "?limit=2&continue="));
  }
  // The second try waited at least the first backoff (jitter only adds to it).
  REQUIRE(received.size() >= 3);
  CHECK(received[2].at - received[1].at >= 50ms);
}

TEST_CASE("a 410 on every watch makes LISTs that wait longer each time, up to the cap, and delivers only changes") {
  // Issue 26: the backoff was reset by every LIST, so a server whose watches all answer 410 got a LIST
  // every 0.15-0.25 s. Here with client-go's shape at a smaller scale: 50 ms doubling to a 200 ms cap.
  test::TempDir dir;
  FakeApiServer server(dir.path, {karta_object("a")}, {.every_watch_expires = true});
  Recorder recorder;
  kube::WatcherOptions options = test_options();
  options.backoff = {.initial = 50ms, .cap = 200ms, .seed = 7};
  kube::ResourceWatcher watcher(server.connection(), kKartas, recorder.callbacks(), options);
  const std::string list_target = std::string(kKartas) + "?limit=2";
  auto lists = [&] {
    std::vector<Clock::time_point> at;
    for (const auto& request : server.received()) {
      if (request.target == list_target) at.push_back(request.at);
    }
    return at;
  };
  watcher.start();
  REQUIRE(eventually([&] { return lists().size() >= 7; }, 10s));
  watcher.stop();
  auto at = lists();
  // The waits the watcher drew: the same seed gives the same ones here.
  kube::RetryBackoff expected(options.backoff);
  for (std::size_t i = 1; i < 7; ++i) {
    CAPTURE(i);
    auto wait = expected.next(Clock::now());
    auto gap = std::chrono::duration_cast<std::chrono::milliseconds>(at[i] - at[i - 1]);
    CHECK(gap >= wait);
    CHECK(gap < wait + 150ms * test::kSlowdown);
  }
  // The first three waits grow (50-100, 100-200, 200-400 ms); from then on they stay capped at 200-400 ms.
  CHECK(at[6] - at[5] < 550ms * test::kSlowdown);
  CHECK(watcher.errors() == 0);
  CHECK(watcher.relists_after_gone() >= 6);
  // Every LIST found the same object: only the first was delivered.
  CHECK(recorder.snapshot_count() == 1);
  CHECK(recorder.event_count() == 0);
}

TEST_CASE("a LIST after a 410 that finds the objects changed delivers them") {
  test::TempDir dir;
  FakeApiServer server(dir.path, {karta_object("a")}, {.every_watch_expires = true});
  Recorder recorder;
  kube::ResourceWatcher watcher(server.connection(), kKartas, recorder.callbacks(), test_options());
  watcher.start();
  REQUIRE(watcher.wait_until_synced(5s));
  // No watch stream ever opens: the added Karta is seen only by a later LIST.
  server.add(karta_object("b"));
  REQUIRE(eventually([&] { return recorder.snapshot_count() == 2; }));
  CHECK(names(recorder.snapshot(1)) == std::vector<std::string>{"a", "b"});
  CHECK(watcher.versions().count("b") == 1);
  CHECK(recorder.event_count() == 0);
}

}  // namespace unit_kube_watcher
