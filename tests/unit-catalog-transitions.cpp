// The states where the built-in catalog differs from kli on purpose (definitions/catalog/README.md, "Where
// we differ from kli on purpose"): this file reads that table, and for every object a row names
// (tests/data/transitions/) checks that `inspect` and `list` against the local API server show the state
// the row promises, as the first status of their PHASE, and that the offline inspect agrees. Also issue
// 52's JobSet whose Job counts a ready pod before it counts it active.

#include <doctest/doctest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "admission/admission_review.h"
#include "cli/inspect.h"
#include "cli/live_inspect.h"
#include "support/fake_api_server.h"
#include "support/test_support.h"

namespace unit_catalog_transitions {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace fs = std::filesystem;
namespace test = karta::test;

namespace {

fs::path transitions_dir() { return test::source_dir() / "tests/data/transitions"; }

struct Row {
  std::string kinds, ours, kli;
  std::vector<std::string> objects;
};

std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> cells;
  std::istringstream row(line.substr(1));
  for (std::string cell; std::getline(row, cell, '|');) {
    cell.erase(0, cell.find_first_not_of(' '));
    cell.erase(cell.find_last_not_of(' ') + 1);
    cells.push_back(cell);
  }
  return cells;
}

// The rows of the README's table: | kind | ours | status | kli | why | object(s) |, the objects in backquotes.
std::vector<Row> table_rows() {
  const fs::path readme = test::source_dir() / "definitions/catalog/README.md";
  std::ifstream in(readme);
  REQUIRE_MESSAGE(in.good(), "cannot read " << readme.string());
  std::vector<Row> rows;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("### ")) inside = line == "### Where we differ from kli on purpose";
    if (!inside || !line.starts_with("| ") || line.starts_with("| kind") || line.starts_with("|---")) continue;
    const auto cells = cells_of(line);
    REQUIRE_MESSAGE(cells.size() == 6, "a row is not | kind | ours | status | kli | why | object |: " << line);
    Row row{cells[0], cells[1], cells[3], {}};
    for (std::size_t at = cells[5].find('`'); at != std::string::npos; at = cells[5].find('`', at + 1)) {
      const std::size_t end = cells[5].find('`', at + 1);
      REQUIRE(end != std::string::npos);
      row.objects.push_back(cells[5].substr(at + 1, end - at - 1));
      at = end;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

// The resource each kind of the table is served as (the CRDs' names: tests/corpus/crds).
test::FakeResource resource_of(const json& object) {
  const std::string api_version = object["apiVersion"], kind = object["kind"];
  const std::string group = api_version.substr(0, api_version.find('/'));
  const std::string version = api_version.substr(api_version.find('/') + 1);
  std::string singular;
  for (char c : kind) singular += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return {.group = group, .version = version, .kind = kind, .plural = singular + "s", .singular = singular,
          .subresources = {"status"}};
}

test::FakeResource pods() {
  return {.group = "", .version = "v1", .kind = "Pod", .plural = "pods", .singular = "pod", .short_names = {"po"},
          .subresources = {"status"}};
}

// What the offline `inspect -f` reports: the state and every matched status.
json offline(const json& object) {
  const auto* definition = test::builtin_catalog().find(karta::request_for_object(object).kind);
  REQUIRE_MESSAGE(definition != nullptr, "no built-in definition for " << object["apiVersion"] << " " << object["kind"]);
  const json report = karta::inspect_workload(object, *definition, {"nvidia.com/gpu"});
  return {{"state", report["state"]}, {"statuses", report["statuses"]}};
}

std::string joined(const json& statuses) {
  std::string out;
  for (const auto& s : statuses) out += (out.empty() ? "" : ", ") + s.get<std::string>();
  return out;
}

// The PHASE that `list --output json` and `inspect KIND/NAME --output json` show for the object, served
// alone (no pods) by the local API server.
std::pair<std::string, std::string> live_phases(json object) {
  object["metadata"]["uid"] = "uid-transition";
  object["metadata"]["creationTimestamp"] = "2026-12-02T01:00:00Z";
  test::TempDir dir;
  test::FakeApiServer server{dir.path, {}};
  const auto resource = resource_of(object);
  server.serve(pods(), {});
  server.serve(resource, {object});
  const fs::path kubeconfig = dir.path / "kubeconfig";
  test::write_text(kubeconfig, server.kubeconfig("research"));
  karta::LiveOptions options;
  options.kubeconfig = kubeconfig.string();
  options.output = "json";

  std::ostringstream list_out, list_err;
  REQUIRE(karta::list_live(options, list_out, list_err) == 0);
  const json listed = json::parse(list_out.str());
  REQUIRE(listed["count"] == 1);

  options.target = resource.singular + "/" + object["metadata"]["name"].get<std::string>();
  std::ostringstream inspect_out, inspect_err;
  REQUIRE_MESSAGE(karta::inspect_live(options, inspect_out, inspect_err) == 0, inspect_err.str());
  return {listed["items"][0]["phase"].get<std::string>(), json::parse(inspect_out.str())["phase"].get<std::string>()};
}

}  // namespace

TEST_SUITE("catalog transitions") {

TEST_CASE("a JobSet whose Job counts a ready pod before an active one (active 0, ready 1) is Running, as kli says") {
  const json jobset = test::document(transitions_dir() / "jobset-ready-not-active.yaml");
  CHECK(jobset["status"]["replicatedJobsStatus"] == json::parse(R"([{"name": "workers", "active": 0, "ready": 1,
      "succeeded": 0, "failed": 0, "suspended": 0}])"));
  CHECK(offline(jobset) == json{{"state", "Running"}, {"statuses", {"Running"}}});
  CHECK(live_phases(jobset) == std::pair<std::string, std::string>{"Running", "Running"});
}

TEST_CASE("every row of the README's table: inspect and list show the row's state on each object it names, where kli shows another") {
  const auto rows = table_rows();
  REQUIRE(rows.size() == 10);
  std::map<std::string, int> states;
  std::size_t objects = 0;
  for (const Row& row : rows) {
    CAPTURE(row.kinds);
    CAPTURE(row.ours);
    CHECK(row.kli.find(row.ours) == std::string::npos);
    REQUIRE(!row.objects.empty());
    for (const auto& file : row.objects) {
      CAPTURE(file);
      REQUIRE_MESSAGE(fs::is_regular_file(transitions_dir() / file), "missing " << (transitions_dir() / file).string());
      const json object = test::document(transitions_dir() / file);
      CHECK(row.kinds.find(object["kind"].get<std::string>()) != std::string::npos);
      const json report = offline(object);
      CHECK(report["state"] == row.ours);
      const auto [listed, inspected] = live_phases(object);
      CHECK(listed == joined(report["statuses"]));
      CHECK(inspected == joined(report["statuses"]));
      CHECK(listed.substr(0, listed.find(',')) == row.ours);
      ++objects;
    }
    ++states[row.ours];
  }
  CHECK(objects == 14);
  std::set<std::string> present, named = {"jobset-ready-not-active.yaml"};
  for (const Row& row : rows) named.insert(row.objects.begin(), row.objects.end());
  for (const auto& entry : fs::directory_iterator(transitions_dir())) present.insert(entry.path().filename().string());
  CHECK(present == named);
  CHECK(states == std::map<std::string, int>{{"Initializing", 1}, {"Resuming", 4}, {"Suspending", 5}});
}

}  // TEST_SUITE

}  // namespace unit_catalog_transitions
