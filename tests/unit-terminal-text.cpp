// Untrusted text printed for terminals (k8s/terminal_text.h): what each control character, C1 control
// and byte that is not UTF-8 becomes; the width a table gives it; and a manifest whose names, instance
// ids and condition reasons and messages hold ESC, BEL and CSI sequences, through `inspect -f` and
// `audit -f`: no raw control character in their text, the exact values in their JSON. (The same through
// `inspect KIND/NAME`, `list` and the audit of a cluster: tests/unit-live-inspect.cpp.)

#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/inspect.h"
#include "k8s/terminal_text.h"
#include "support/fake_api_server.h"
#include "support/terminal_controls.h"
#include "support/test_support.h"

namespace unit_terminal_text {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

namespace {

const std::string kTitle = "\x1b]0;pwned\x07";  // OSC 0: sets the window title, ended by BEL
const std::string kClear = "\x1b[2J";           // CSI 2 J: clears the screen
const std::string kCsi8 = "\xc2\x9b";           // U+009B, the 8-bit CSI, as UTF-8

karta::test::CliRun karta_webhook(std::vector<std::string> args) {
  args.insert(args.begin(), "karta-webhook");
  return karta::test::run_cli(std::move(args));
}

}  // namespace

TEST_CASE("terminal_text escapes ESC and CR as kubectl does, the other controls as Go's strconv.Quote does") {
  struct Case {
    std::string text, shown;
  };
  const std::vector<Case> cases = {
      {"", ""},
      {"demo-leader-0-0-ck6kg", "demo-leader-0-0-ck6kg"},
      // kubectl's two: ESC as caret notation, CR as a backslash escape.
      {kTitle, "^[]0;pwned\\a"},
      {kClear, "^[[2J"},
      {"a\rb", "a\\rb"},
      // The other C0 controls; newline and tab too, so that a value keeps to its line and its cell.
      {std::string("\0", 1), "\\x00"},
      {"\x01\x06", "\\x01\\x06"},
      {"\a\b\t\n\v\f", "\\a\\b\\t\\n\\v\\f"},
      {"\x0e\x1a\x1c\x1f", "\\x0e\\x1a\\x1c\\x1f"},
      {"\x7f", "\\x7f"},
      // C1 controls, U+0080..U+009F: the 8-bit CSI, OSC and ST act like ESC [, ESC ] and ESC \.
      {"\xc2\x80", "\\u0080"},
      {kCsi8 + "31m", "\\u009b31m"},
      {"\xc2\x9d" "0;x\xc2\x9c", "\\u009d0;x\\u009c"},
      {"\xc2\x9f", "\\u009f"},
      // Characters beyond ASCII that are not controls are kept.
      {"\xc2\xa0", "\xc2\xa0"},  // U+00A0, no-break space
      {"caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x9a\x80", "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x9a\x80"},
      // Bytes that are not UTF-8, each on its own: a lone 8-bit CSI, a bad lead byte, a sequence cut short,
      // an overlong slash, a surrogate, a lead byte at the end.
      {"\x9b" "2J", "\\x9b2J"},
      {"\xff", "\\xff"},
      {"\xe6\x97" "x", "\\xe6\\x97x"},
      {"\xc0\xaf", "\\xc0\\xaf"},
      {"\xed\xa0\x80", "\\xed\\xa0\\x80"},
      {"ok\xc2", "ok\\xc2"},
      // Not reversible, as kubectl's: a caret or backslash already there stays as it is.
      {"^[ and \\n", "^[ and \\n"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    CHECK(karta::terminal_text(c.text) == c.shown);
    CHECK(test::terminal_controls(c.shown) == "");
    CHECK(karta::terminal_text(c.shown) == c.shown);  // what it writes needs no second pass
  }
}

TEST_CASE("terminal_width counts characters, and a table aligns the escaped text by it") {
  CHECK(karta::terminal_width("") == 0);
  CHECK(karta::terminal_width("^[[2J") == 5);
  CHECK(karta::terminal_width("caf\xc3\xa9") == 4);
  CHECK(karta::terminal_width("\\u009b") == 6);
  CHECK(karta::render_columns({{"NAME", "PHASE"},
                               {karta::terminal_text("a" + kClear), "Running"},
                               {"caf\xc3\xa9", karta::terminal_text(kTitle)},
                               {"total", ""}}) ==
        "NAME    PHASE\n"
        "a^[[2J  Running\n"
        "caf\xc3\xa9    ^[]0;pwned\\a\n"
        "total\n");
}

TEST_CASE("terminal_strings escapes every string of a report, object keys too, and leaves the rest") {
  json report = {{"name", "demo" + kCsi8},
                 {"count", 3},
                 {"ready", true},
                 {"node", nullptr},
                 {"pods", {{{"reason", kTitle}, {"gpus", 4.5}}}},
                 {"labels", {{"team" + kClear, "vision\r"}}}};
  CHECK(karta::terminal_strings(report) == json{{"name", "demo\\u009b"},
                                                {"count", 3},
                                                {"ready", true},
                                                {"node", nullptr},
                                                {"pods", {{{"reason", "^[]0;pwned\\a"}, {"gpus", 4.5}}}},
                                                {"labels", {{"team^[[2J", "vision\\r"}}}});
}

TEST_CASE("inspect -f and audit -f print a manifest's ESC, BEL and CSI sequences escaped, and --output json exact") {
  // The seed's demo JobSet, with control sequences in its name, its replicated jobs' names (the
  // instance ids), a label value, and a condition's reason and message.
  json demo = test::document(test::source_dir() / "examples/jobset-demo.yaml");
  demo["metadata"]["name"] = "demo" + kCsi8;
  demo["metadata"]["labels"]["team"] = "vision" + kClear;
  demo["spec"]["replicatedJobs"][0]["name"] = "leader" + kTitle;
  demo["spec"]["replicatedJobs"][1]["name"] = "worker" + kClear;
  demo["status"]["conditions"] = {{{"type", "Suspended"}, {"status", "False"}, {"reason", kClear + "Resumed"},
                                   {"message", "resumed by " + kCsi8 + "31m" + kTitle}}};
  test::TempDir dir;
  const std::string manifest = (dir.path / "demo.json").string();
  test::write_text(manifest, demo.dump());
  test::write_text(dir.path / "policy.yaml", R"(
scheduling:
  queue: {label: kai.scheduler/queue, default: default-queue}
labelPolicy:
  mode: enforce
  workload:
    required: [team]
    allowed: {team: "^(vision|speech)$"}
)");
  const std::string policy = (dir.path / "policy.yaml").string();

  auto inspected = karta_webhook({"inspect", "-f", manifest});
  CHECK(inspected.code == 0);
  CHECK(inspected.err == "");
  CHECK(inspected.out == R"(JobSet research/demo\u009b (jobset.x-k8s.io/v1alpha2)  state: Running
statuses: Running  suspended: no
  condition Suspended=False  ^[[2JResumed: resumed by \u009b31m^[]0;pwned\a
└── replicatedjob (batch/v1 Job)
    ├── leader^[]0;pwned\a 1 replica 4 GPU
    └── worker^[[2J 2 replicas 8 GPU

ROLE                COMPONENT      REPLICAS  GPU/POD  GPU  CPU  MEMORY
leader^[]0;pwned\a  replicatedjob  1         4        4    0    0
worker^[[2J         replicatedjob  2         4        8    0    0
total                              3                  12   0    0

)");
  CHECK(test::terminal_controls(inspected.out) == "");

  auto inspected_json = karta_webhook({"inspect", "-f", manifest, "--output", "json"});
  CHECK(inspected_json.code == 0);
  json report = json::parse(inspected_json.out).at(0);
  CHECK(report["name"] == "demo" + kCsi8);
  CHECK(report["components"][0]["instances"][0]["instance"] == "leader" + kTitle);
  CHECK(report["components"][0]["instances"][1]["instance"] == "worker" + kClear);
  CHECK(report["conditions"] == json{{{"type", "Suspended"}, {"status", "False"}, {"reason", kClear + "Resumed"},
                                      {"message", "resumed by " + kCsi8 + "31m" + kTitle}}});

  auto audited = karta_webhook({"audit", "-f", manifest, "--policy", policy});
  CHECK(audited.code == 1);  // enforce, and the team label violates it
  CHECK(audited.err == "");
  CHECK(audited.out == "audit of files " + manifest + " (label policy: enforce)\n" + R"(
JobSet research/demo\u009b (jobset.x-k8s.io/v1alpha2)  )" + manifest + R"(#0
  violation: workload: label "team" value "vision^[[2J" may contain only alphanumerics, '-', '_' and '.'
  admission: denied (label policy enforce)
  patch: 4 operations
    add /metadata/labels/kai.scheduler~1queue "default-queue"
    add /spec/replicatedJobs/0/template/spec/template/metadata/labels/kai.scheduler~1queue "default-queue"
    add /spec/replicatedJobs/1/template/spec/template/metadata {"labels":{"kai.scheduler/queue":"default-queue"}}
    add /metadata/annotations {"karta.run.ai/written":"label:kai.scheduler/queue"}

KIND    APIVERSION                NAMESPACE  WORKLOADS  SKIPPED  VIOLATING  VIOLATIONS  PATCHED  OPERATIONS
JobSet  jobset.x-k8s.io/v1alpha2  research   1          0        1          1           1        4
total                                        1          0        1          1           1        4
1 workloads audited, 1 violate the label policy (enforce: the webhook would deny them), 1 would be patched
)");
  CHECK(test::terminal_controls(audited.out) == "");

  auto audited_json = karta_webhook({"audit", "-f", manifest, "--policy", policy, "--output", "json"});
  CHECK(audited_json.code == 1);
  json workload = json::parse(audited_json.out)["workloads"].at(0);
  CHECK(workload["name"] == "demo" + kCsi8);
  CHECK(workload["violations"] ==
        json{"workload: label \"team\" value \"vision" + kClear + "\" may contain only alphanumerics, '-', '_' and '.'"});
}


TEST_CASE("mutate's header names an object that asks for a generated name by its prefix (issue 61: it showed none)") {
  test::TempDir dir;
  json job = test::document(test::source_dir() / "tests/data/suspend/job.yaml");
  job["metadata"].erase("name");
  job["metadata"]["generateName"] = "pi-";
  test::write_text(dir.path / "job.yaml", job.dump());
  const auto run = karta::test::run_cli({"karta-webhook", "mutate", "-f", (dir.path / "job.yaml").string()});
  CHECK(run.code == 0);
  CHECK(run.out.substr(0, run.out.find('\n')) ==
        "# " + (dir.path / "job.yaml").string() + "#0: batch/v1 Job research/pi-*: 0 patch operations");
}

}  // namespace unit_terminal_text
