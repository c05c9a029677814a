// The built-in catalog on workloads recorded in real clusters (tests/corpus/live/, SOURCES.md there): every
// STATE event of every flow, run through the catalog's definition of its kind, gives the state and the
// set of matched statuses the published Workload Map definition gave on the same object, except the few
// events where our answer is the better one (kPinned below; definitions/catalog/README.md argues each).

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "admission/admission_review.h"
#include "cli/inspect.h"
#include "definitions/karta_definition.h"
#include "support/test_support.h"

namespace unit_live_corpus {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace fs = std::filesystem;
namespace test = karta::test;

namespace {

fs::path live_dir() { return test::source_dir() / "tests/corpus/live"; }

// What the published tools recorded for one object, or what we report for it.
struct Observed {
  std::string state;
  std::set<std::string> statuses;  // kli's list ("Undefined" alone when nothing matched), as a set
  bool operator==(const Observed&) const = default;
};

std::ostream& operator<<(std::ostream& out, const Observed& o) {
  out << o.state << " [";
  for (const auto& s : o.statuses) out << ' ' << s;
  return out << " ]";
}

struct RecordedEvent {
  json object;
  Observed recorded;
};

// The STATE events of a flow file. Throws, naming the file, when it is missing, has no events, or an event
// lacks what the format promises (SOURCES.md: kind STATE, object, phases, state).
std::vector<RecordedEvent> read_flow(const fs::path& file) {
  if (!fs::is_regular_file(file)) throw std::runtime_error(file.string() + ": the flow file is missing");
  const json flow = test::document(file);
  const json* events = flow.contains("events") ? &flow["events"] : nullptr;
  if (events == nullptr || !events->is_array() || events->empty()) {
    throw std::runtime_error(file.string() + ": the flow has no events");
  }
  std::vector<RecordedEvent> out;
  for (std::size_t i = 0; i < events->size(); ++i) {
    const json& e = (*events)[i];
    const std::string where = file.string() + " event " + std::to_string(i);
    if (e.value("kind", "") != "STATE") throw std::runtime_error(where + ": not a STATE event");
    if (!e.contains("object") || !e["object"].is_object() || !e.contains("state") || !e["state"].is_string() ||
        !e.contains("phases") || !e["phases"].is_array() || e["phases"].empty()) {
      throw std::runtime_error(where + ": needs an object, a state and a non-empty list of phases");
    }
    out.push_back({e["object"], {e["state"].get<std::string>(), e["phases"].get<std::set<std::string>>()}});
  }
  return out;
}

Observed reported(const json& object) {
  const auto* definition = test::builtin_catalog().find(karta::request_for_object(object).kind);
  REQUIRE_MESSAGE(definition != nullptr, "no built-in definition for " << object["apiVersion"] << " " << object["kind"]);
  const json report = karta::inspect_workload(object, *definition, {"nvidia.com/gpu"});
  CHECK(report["notes"] == json::array());
  return {report["state"].get<std::string>(), report["statuses"].get<std::set<std::string>>()};
}

// The statuses of `statuses` in the published order; the state must be the first of them (or Undefined).
std::string first_in_published_order(const std::set<std::string>& statuses) {
  for (karta::ResourceStatus s : karta::kPublishedStatusOrder) {
    if (statuses.count(karta::status_name(s))) return karta::status_name(s);
  }
  return "Undefined";
}

// The events where our catalog's answer differs from the published tools' on purpose, each argued in
// definitions/catalog/README.md ("Where we differ from the recorded flows"). Keyed by flow file and event
// index; the recorded answer is checked too, so a re-recorded flow shows up here.
struct PinnedDifference {
  std::string flow;
  std::size_t event;
  Observed recorded, ours;
};

const std::vector<PinnedDifference> kPinned = {
    // KubeRay reports jobDeploymentStatus Suspending while it deletes the RayCluster of a suspended RayJob.
    {"kuberay/1.7.0/ray-io-rayjob-v1/suspended.yaml", 2, {"Undefined", {"Undefined"}}, {"Suspending", {"Suspending"}}},
};

// The flows of live/SOURCES.md's table, with the character count it gives for each.
std::map<std::string, std::size_t> listed_flows() {
  std::ifstream in(live_dir() / "SOURCES.md");
  REQUIRE_MESSAGE(in.good(), "cannot read " << (live_dir() / "SOURCES.md").string());
  std::map<std::string, std::size_t> flows;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("| ") || line.starts_with("| file") || line.starts_with("|---")) continue;
    std::vector<std::string> cells;
    std::istringstream row(line.substr(1));
    for (std::string cell; std::getline(row, cell, '|');) {
      cell.erase(0, cell.find_first_not_of(' '));
      cell.erase(cell.find_last_not_of(' ') + 1);
      cells.push_back(cell);
    }
    REQUIRE_MESSAGE(cells.size() == 4, "a row of live/SOURCES.md is not | file | upstream path | commit | chars |: " << line);
    CHECK(cells[2] == "56ebb18def492dad776d63e7f4b84bd4f077c38f");
    flows[cells[0]] = std::stoul(cells[3]);
  }
  return flows;
}

// Characters (UTF-8 code points) of a file, as the table counts them.
std::size_t characters(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::size_t count = 0;
  for (char c; in.get(c);) count += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return count;
}

}  // namespace

TEST_SUITE("live corpus") {

TEST_CASE("live/SOURCES.md lists every flow of tests/corpus/live with its exact size, and nothing else is there") {
  const auto listed = listed_flows();
  CHECK(listed.size() == 26);
  std::set<std::string> present, named;
  for (const auto& entry : fs::recursive_directory_iterator(live_dir())) {
    if (!entry.is_regular_file() || entry.path().filename() == "SOURCES.md") continue;
    present.insert(fs::relative(entry.path(), live_dir()).generic_string());
  }
  for (const auto& [file, chars] : listed) {
    named.insert(file);
    if (fs::is_regular_file(live_dir() / file)) CHECK_MESSAGE(characters(live_dir() / file) == chars, file);
  }
  CHECK(present == named);
}

TEST_CASE("a missing flow file, or one without events, fails rather than passing with nothing checked") {
  test::TempDir dir;
  CHECK_THROWS_WITH(read_flow(dir.path / "absent.yaml"), ((dir.path / "absent.yaml").string() + ": the flow file is missing").c_str());
  std::ofstream(dir.path / "empty.yaml") << "events: []\nflow: running\n";
  CHECK_THROWS_WITH(read_flow(dir.path / "empty.yaml"), ((dir.path / "empty.yaml").string() + ": the flow has no events").c_str());
  std::ofstream(dir.path / "none.yaml") << "flow: running\nwant: Running\n";
  CHECK_THROWS_WITH(read_flow(dir.path / "none.yaml"), ((dir.path / "none.yaml").string() + ": the flow has no events").c_str());
  std::ofstream(dir.path / "bare.yaml") << "events:\n- kind: STATE\n  state: Running\n";
  CHECK_THROWS_WITH(read_flow(dir.path / "bare.yaml"),
                    ((dir.path / "bare.yaml").string() + " event 0: needs an object, a state and a non-empty list of phases").c_str());
}

TEST_CASE("every recorded event: the built-in catalog reports the recorded state and set of statuses, except the pinned differences") {
  std::size_t events = 0, agreed = 0;
  std::set<std::string> kinds;
  std::set<std::pair<std::string, std::size_t>> pins_seen;
  for (const auto& [file, chars] : listed_flows()) {
    std::vector<RecordedEvent> flow;
    REQUIRE_NOTHROW(flow = read_flow(live_dir() / file));
    for (std::size_t i = 0; i < flow.size(); ++i) {
      CAPTURE(file);
      CAPTURE(i);
      const RecordedEvent& event = flow[i];
      kinds.insert(event.object["apiVersion"].get<std::string>() + " " + event.object["kind"].get<std::string>());
      // The recorded answers keep the published rule: the state is the first matched status in the order
      // Resuming, Suspending, Suspended, Running, Failed, Completed, Initializing, Degraded.
      CHECK(event.recorded.state == first_in_published_order(event.recorded.statuses));
      const Observed ours = reported(event.object);
      CHECK(ours.state == first_in_published_order(ours.statuses));

      Observed expected = event.recorded;
      auto pin = std::find_if(kPinned.begin(), kPinned.end(), [&](const auto& p) { return p.flow == file && p.event == i; });
      if (pin != kPinned.end()) {
        CHECK(event.recorded == pin->recorded);
        expected = pin->ours;
        pins_seen.insert({file, i});
      }
      CHECK(ours == expected);
      ++events;
      agreed += ours == event.recorded;
    }
  }
  CHECK(kinds.size() == 12);
  CHECK(events == 104);
  CHECK(agreed == events - kPinned.size());
  CHECK(pins_seen.size() == kPinned.size());
  MESSAGE("live corpus: " << agreed << " of " << events << " events as recorded, " << kPinned.size() << " pinned");
}

}  // TEST_SUITE

}  // namespace unit_live_corpus
