// The mistakes people make in a policy file, each refused at load (and so on live reload) with a message
// that says what is wrong and where (issue 60).

#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "json/documents.h"
#include "policy/policy.h"
#include "support/https_client.h"
#include "support/running_webhook.h"
#include "support/test_support.h"

namespace unit_policy_mistakes {

using karta::json;
namespace test = karta::test;
using namespace std::chrono_literals;

namespace {

// The message load_policy gives for a file holding `text`, its path shown as policy.yaml.
std::string load_error(const std::string& text) {
  test::TempDir dir;
  std::ofstream(dir.path / "policy.yaml") << text;
  try {
    karta::load_policy(dir.path / "policy.yaml");
  } catch (const karta::InputError& e) {
    std::string message = e.what();
    const std::string prefix = (dir.path / "").string();
    for (std::size_t at; (at = message.find(prefix)) != std::string::npos;) message.erase(at, prefix.size());
    return message;
  }
  return "(no error)";
}

// The message parse_policy gives for `text` read without marks, its "policy.yaml: " cut.
std::string error_message(const std::string& text) {
  try {
    karta::parse_policy(test::yaml(text), "policy.yaml");
  } catch (const karta::InputError& e) {
    return std::string(e.what()).substr(std::string("policy.yaml: ").size());
  }
  return "(no error)";
}

karta::Policy load(const std::string& text) {
  test::TempDir dir;
  std::ofstream(dir.path / "policy.yaml") << text;
  return karta::load_policy(dir.path / "policy.yaml");
}

const std::string kSetsNothing =
    "policy.yaml: the policy sets nothing (the file is empty, only comments, or only empty sections); "
    "to load no policy on purpose, write `nothing: true`";

json job() {
  return json::parse(R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"ml"},
      "spec":{"template":{"spec":{"containers":[{"name":"w","image":"i"}],"restartPolicy":"Never"}}}})");
}

}  // namespace

TEST_CASE("a policy file that sets nothing is refused, unless it says nothing: true") {
  CHECK(load_error("") == kSetsNothing);
  CHECK(load_error("# the platform policy\n# (to be written)\n") == kSetsNothing);
  CHECK(load_error("{}\n") == kSetsNothing);
  CHECK(load_error("tenants: []\n") == kSetsNothing);
  CHECK(load_error("podTemplates: {}\ntenants: []\n") == kSetsNothing);
  CHECK(load_error("---\n# emptied\n") == kSetsNothing);
  CHECK(load_error("nothing: false\n") == kSetsNothing);

  const karta::Policy none = load("# no policy on purpose\nnothing: true\n");
  const karta::Policy absent;  // what no --policy gives
  CHECK(none.says_nothing);
  CHECK(none.document == absent.document);
  CHECK(none.tenants.empty());
  CHECK(none.pod_templates.labels.empty());
  CHECK(none.scheduling.queue_label == absent.scheduling.queue_label);
  CHECK(none.label_policy.enabled == absent.label_policy.enabled);

  CHECK(load_error("nothing: true\npodTemplates: {labels: {a: b}}\n") ==
        "policy.yaml line 1 column 1: nothing: true says the policy sets nothing, yet it sets podTemplates");
  CHECK(load_error("nothing: yes\n") == "policy.yaml line 1 column 1: nothing: must be true or false");
}

TEST_CASE("a policy file emptied by mistake is refused on live reload: the last good policy keeps serving") {
  test::RunningWebhook running;
  test::HttpsClient client(running.port, running.certificates.ca);
  auto patched = [&] {
    const json review = json::parse(client.request("POST", "/mutate", test::admission_review(job()).dump()).body);
    return review["response"].contains("patch");
  };
  REQUIRE(patched());
  std::ofstream(running.dir.path / "policy.yaml") << "# emptied by mistake\n";
  CHECK(test::eventually(
      [&] {
        return client.request("GET", "/metrics").body.find("karta_reload_errors_total{source=\"policy\"} 1") !=
               std::string::npos;
      },
      10s));
  CHECK(client.request("GET", "/metrics").body.find("karta_last_reload_successful 0") != std::string::npos);
  CHECK(patched());  // still the last good policy
}

TEST_CASE("a key given twice in a policy is refused, naming the key, the file and both places") {
  CHECK(load_error("priority:\n  className: prod-critical\n  allowed: [build]\n  className: train\n") ==
        "policy.yaml#0 line 4 column 3: duplicate key \"className\" (first at line 2 column 3); "
        "YAML would keep only the last");
  CHECK(load_error("podTemplates: {labels: {team: a}}\n---\n") ==
        "(no error)");  // an empty second document is no second policy
  CHECK(load_error("# a comment\n\nscheduling: {schedulerName: kai}\nscheduling: {schedulerName: other}\n") ==
        "policy.yaml#0 line 4 column 1: duplicate key \"scheduling\" (first at line 3 column 1); "
        "YAML would keep only the last");
  // In a flow map, and in a Karta file too: any YAML read here.
  CHECK_THROWS_WITH_AS(karta::parse_documents("a: 1\n---\nb: {c: 1, c: 2}\n", "kartas.yaml"),
                       "kartas.yaml#1 line 3 column 11: duplicate key \"c\" (first at line 3 column 5); "
                       "YAML would keep only the last",
                       karta::InputError);
  // The key is the file's text: quoted and escaped.
  CHECK_THROWS_WITH_AS(karta::parse_documents("\"k\\u0007\": 1\n\"k\\u0007\": 2\n", "x.yaml"),
                       "x.yaml#0 line 2 column 1: duplicate key \"k\\u0007\" (first at line 1 column 1); "
                       "YAML would keep only the last",
                       karta::InputError);
}

TEST_CASE("a policy error names the line and column of the field, and the known field nearest a typo") {
  CHECK(load_error("podTemplates:\n  labels: {team: a}\n  overwirte: true\n") ==
        "policy.yaml line 3 column 3: podTemplates.overwirte: unknown field (did you mean \"overwrite\"?)");
  CHECK(load_error("schedulng: {schedulerName: kai}\n") ==
        "policy.yaml line 1 column 1: schedulng: unknown field (did you mean \"scheduling\"?)");
  CHECK(load_error("labelPolicy: {mode: enforce}\nzzz: 1\n") == "policy.yaml line 2 column 1: zzz: unknown field");
  const std::string enforcement = "scheduling:\n  queue:\n    label: kai.scheduler/queue\n    enforcement: sometimes\n";
  CHECK(error_message(enforcement) != "(no error)");
  CHECK(load_error(enforcement) == "policy.yaml line 4 column 5: " + error_message(enforcement));
  const std::string tenants =
      "priority: {className: train}\n"
      "tenants:\n"
      "- name: research\n"
      "  namespaces: [research-*]\n"
      "  priority: {clasName: gold}\n"
      "- name: prod\n"
      "  namespaces: [Prod]\n";
  CHECK(load_error(tenants) ==
        "policy.yaml line 5 column 14: tenants[0] (research), merged with the global policy: priority.clasName: "
        "unknown field (did you mean \"className\"?)");
  CHECK(load_error("podTemplates: {labels: {team: a}}\ntenants:\n- name: a\n  namespaces: [Prod]\n") ==
        "policy.yaml line 4 column 16: tenants[0].namespaces[0]: \"Prod\" is not a namespace name glob: 'P' is none "
        "of lowercase letters, digits, '-' and '*' (the only wildcard)");
  // Read from a document without marks (a test, the fuzzer), the message is as before: no position.
  CHECK(error_message("schedulng: {}\n") == "schedulng: unknown field (did you mean \"scheduling\"?)");
}

TEST_CASE("a tenant rule whose selector is equivalent to or narrower than an earlier one's is refused naming both") {
  const std::string research =
      "podTemplates: {labels: {managed: \"true\"}}\n"
      "tenants:\n"
      "- name: research\n"
      "  namespaceSelector: {matchLabels: {team: research}}\n";
  CHECK(error_message(research +
                      "- name: research-again\n"
                      "  namespaceSelector:\n"
                      "    matchExpressions: [{key: team, operator: In, values: [research]}]\n") ==
        "tenants[1] (research-again) is unreachable: its namespaceSelector {team In [research]} is equivalent to "
        "{team In [research]} of tenants[0] (research) before it, on any name (first match wins)");
  CHECK(error_message(research +
                      "- name: research-gpu\n"
                      "  namespaceSelector: {matchLabels: {team: research, gpu: \"true\"}}\n") ==
        "tenants[1] (research-gpu) is unreachable: its namespaceSelector {gpu In [true], team In [research]} is "
        "narrower than {team In [research]} of tenants[0] (research) before it, on any name (first match wins)");
  // Exists is implied by In; NotIn by an In of other values; the earlier rule's names cover the later's.
  CHECK(error_message("podTemplates: {labels: {managed: \"true\"}}\n"
                      "tenants:\n"
                      "- name: labelled\n"
                      "  namespaces: [ml-*]\n"
                      "  namespaceSelector:\n"
                      "    matchExpressions: [{key: team, operator: Exists}, {key: tier, operator: NotIn, values: [prod]}]\n"
                      "- name: research\n"
                      "  namespaces: [ml-research-*, ml-lab]\n"
                      "  namespaceSelector:\n"
                      "    matchExpressions: [{key: team, operator: In, values: [a, b]}, {key: tier, operator: In, values: [dev]}]\n") ==
        "tenants[1] (research) is unreachable: its namespaceSelector {team In [a, b], tier In [dev]} is narrower than "
        "{team Exists, tier NotIn [prod]} of tenants[0] (labelled) before it, on wider names (first match wins)");
  // Reachable: a wider selector after a narrower one, a value the earlier rule does not take, other names.
  for (const std::string& later : {std::string("  namespaceSelector: {matchLabels: {gpu: \"true\"}}\n"),
                                   std::string("  namespaceSelector:\n    matchExpressions: [{key: team, operator: In, values: [research, vision]}]\n"),
                                   std::string("  namespaceSelector:\n    matchExpressions: [{key: team, operator: Exists}]\n"),
                                   std::string("  namespaceSelector:\n    matchExpressions: [{key: team, operator: NotIn, values: [prod]}]\n")}) {
    CAPTURE(later);
    CHECK(error_message(research + "- name: other\n" + later) == "(no error)");
  }
  CHECK(error_message("podTemplates: {labels: {managed: \"true\"}}\n"
                      "tenants:\n"
                      "- name: research\n"
                      "  namespaces: [research-*]\n"
                      "  namespaceSelector: {matchLabels: {team: research}}\n"
                      "- name: research-anywhere\n"
                      "  namespaceSelector: {matchLabels: {team: research, gpu: \"true\"}}\n") == "(no error)");
}

namespace {

const std::string kTenantsPolicy =
    "scheduling:\n"
    "  queue: {label: kai.scheduler/queue, namespaceLabel: runai/queue, default: default-queue}\n"
    "tenants:\n"
    "- name: production\n"
    "  namespaces: [prod-*]\n"
    "  scheduling: {queue: {default: prod-q}}\n"
    "- name: research\n"
    "  namespaceSelector: {matchLabels: {team: research}}\n"
    "  scheduling: {queue: {default: null}}\n"
    "- name: sandbox\n"
    "  namespaces: [sandbox-*]\n"
    "  exempt: true\n"
    "- name: vision\n"
    "  namespaceSelector: {matchLabels: {team: vison}}\n";

// What kTenantsPolicy's rules may both match (names and selectors that do not rule it out): loaded, and said.
const std::string kTenantsWarnings =
    "warning: tenants[1] (research) may match namespaces that tenants[0] (production) before it matches: there "
    "tenants[0] (production) applies (first match wins)\n"
    "warning: tenants[2] (sandbox) may match namespaces that tenants[1] (research) before it matches: there "
    "tenants[1] (research) applies, not the exemption (first match wins)\n"
    "warning: tenants[3] (vision) may match namespaces that tenants[0] (production) before it matches: there "
    "tenants[0] (production) applies (first match wins)\n"
    "warning: tenants[3] (vision) may match namespaces that tenants[2] (sandbox) before it matches: there "
    "tenants[2] (sandbox) applies (first match wins)\n";

std::string namespace_object(const std::string& name, const std::string& labels) {
  return "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + name + ", labels: {" + labels + "}}\n---\n";
}

// Runs `validate` in a directory holding policy.yaml (`policy`) and namespaces.yaml (`namespaces`), the
// directory cut from the outputs.
test::CliRun validate(const std::string& policy, const std::string& namespaces, std::vector<std::string> args) {
  test::TempDir dir;
  std::ofstream(dir.path / "policy.yaml") << policy;
  std::ofstream(dir.path / "namespaces.yaml") << namespaces;
  for (std::string& arg : args) {
    if (arg == "policy.yaml" || arg == "namespaces.yaml") arg = (dir.path / arg).string();
  }
  args.insert(args.begin(), {"karta-webhook", "validate"});
  test::CliRun run = test::run_cli(args);
  const std::string prefix = (dir.path / "").string();
  for (std::string* text : {&run.out, &run.err}) {
    for (std::size_t at; (at = text->find(prefix)) != std::string::npos;) text->erase(at, prefix.size());
  }
  return run;
}

}  // namespace

TEST_CASE("validate --policy checks a policy offline: exit 0 when it loads, 1 with the loader's message") {
  test::CliRun valid = validate(kTenantsPolicy, "", {"--policy", "policy.yaml"});
  CHECK(valid.code == 0);
  CHECK(valid.out == "policy.yaml: valid, 4 tenant rules\n" + kTenantsWarnings);
  CHECK(valid.err == "");

  test::CliRun nothing = validate("nothing: true\n", "", {"--policy", "policy.yaml"});
  CHECK(nothing.code == 0);
  CHECK(nothing.out == "policy.yaml: valid, nothing: true (nothing injected, nothing enforced)\n");

  test::CliRun empty = validate("# emptied\n", "", {"--policy", "policy.yaml"});
  CHECK(empty.code == 1);
  CHECK(empty.out == "");
  CHECK(empty.err == "karta-webhook: " + kSetsNothing + "\n");

  test::CliRun typo = validate("gpu: {resourceName: [nvidia.com/gpu]}\n", "", {"--policy", "policy.yaml"});
  CHECK(typo.code == 1);
  CHECK(typo.err == "karta-webhook: policy.yaml line 1 column 7: gpu.resourceName: unknown field "
                    "(did you mean \"resourceNames\"?)\n");
}

TEST_CASE("validate --policy --namespaces prints each namespace's tenant, rules matching none, missing queue labels") {
  const std::string namespaces = namespace_object("prod-a", "runai/queue: gold") + namespace_object("prod-b", "") +
                                 namespace_object("research-1", "team: research") +
                                 namespace_object("sandbox-1", "") + namespace_object("other", "");
  test::CliRun run = validate(kTenantsPolicy, namespaces, {"--policy", "policy.yaml", "--namespaces", "namespaces.yaml"});
  CHECK(run.code == 0);
  CHECK(run.err == "");
  CHECK(run.out ==
        "policy.yaml: valid, 4 tenant rules\n" + kTenantsWarnings +
        "namespace other: the global policy\n"
        "  note: no label runai/queue, which the global policy reads for the queue: a workload that names none gets "
        "the default queue default-queue\n"
        "namespace prod-a: tenant production (tenants[0])\n"
        "namespace prod-b: tenant production (tenants[0])\n"
        "  note: no label runai/queue, which tenant production reads for the queue: a workload that names none gets "
        "the default queue prod-q\n"
        "namespace research-1: tenant research (tenants[1])\n"
        "  note: no label runai/queue, which tenant research reads for the queue: a workload that names none gets "
        "no queue\n"
        "namespace sandbox-1: tenant sandbox (tenants[2]), exempt\n"
        "note: tenants[3] (vision) matches no namespace of namespaces.yaml\n");

  test::CliRun alone = validate(kTenantsPolicy, namespaces, {"--namespaces", "namespaces.yaml"});
  CHECK(alone.code != 0);
  CHECK(alone.err.find("--namespaces requires --policy") != std::string::npos);
}

TEST_CASE("validate --policy --namespaces notes an exempt rule that an earlier selector rule shadows") {
  const std::string policy =
      "podTemplates: {labels: {managed: \"true\"}}\n"
      "tenants:\n"
      "- name: research\n"
      "  namespaceSelector: {matchLabels: {team: research}}\n"
      "- name: sandbox\n"
      "  namespaces: [sandbox-*]\n"
      "  exempt: true\n";
  // Said when the policy loads, whatever the namespaces: the two rules may both match one.
  const std::string kShadowWarning =
      "warning: tenants[1] (sandbox) may match namespaces that tenants[0] (research) before it matches: there "
      "tenants[0] (research) applies, not the exemption (first match wins)\n";
  const std::string shadow_note =
      "  note: tenants[1] (sandbox), exempt, matches it too, but never applies here: tenants[0] comes first "
      "(first match wins)\n";
  test::CliRun some = validate(policy,
                               namespace_object("research-1", "team: research") +
                                   namespace_object("sandbox-1", "team: research") + namespace_object("sandbox-2", ""),
                               {"--policy", "policy.yaml", "--namespaces", "namespaces.yaml"});
  CHECK(some.code == 0);
  CHECK(some.out ==
        "policy.yaml: valid, 2 tenant rules\n" + kShadowWarning +
        "namespace research-1: tenant research (tenants[0])\n"
        "namespace sandbox-1: tenant research (tenants[0])\n" +
            shadow_note +
            "namespace sandbox-2: tenant sandbox (tenants[1]), exempt\n");
  test::CliRun all = validate(policy, namespace_object("sandbox-1", "team: research"),
                              {"--policy", "policy.yaml", "--namespaces", "namespaces.yaml"});
  CHECK(all.code == 0);
  CHECK(all.out ==
        "policy.yaml: valid, 2 tenant rules\n" + kShadowWarning +
        "namespace sandbox-1: tenant research (tenants[0])\n" +
            shadow_note +
            "note: tenants[1] (sandbox) applies to no namespace of namespaces.yaml: an earlier rule takes each it "
            "matches\n");
}

TEST_CASE("tenant rules that may both match a namespace load with a warning naming both; disjoint ones without") {
  const std::string head = "podTemplates: {labels: {managed: \"true\"}}\ntenants:\n";
  auto warnings = [&](const std::string& rules) { return test::policy_from_yaml(head + rules).warnings; };
  CHECK(warnings("- {name: a, namespaces: [team-a-*]}\n"
                 "- {name: gpu, namespaceSelector: {matchLabels: {gpu: \"true\"}}}\n") ==
        std::vector<std::string>{"tenants[1] (gpu) may match namespaces that tenants[0] (a) before it matches: there "
                                 "tenants[0] (a) applies (first match wins)"});
  // Ruled out by names (literal beginnings or endings differ, a name the glob does not match), or by a
  // label requirement neither can meet with the other.
  for (const std::string& rules : {
           std::string("- {name: a, namespaces: [prod-*]}\n- {name: b, namespaces: [dev-*, lab]}\n"),
           std::string("- {name: a, namespaces: ['*-prod']}\n- {name: b, namespaces: ['*-dev']}\n"),
           std::string("- {name: a, namespaceSelector: {matchLabels: {team: a}}}\n"
                       "- {name: b, namespaceSelector: {matchLabels: {team: b}}}\n"),
           std::string("- {name: a, namespaceSelector: {matchExpressions: [{key: team, operator: Exists}]}}\n"
                       "- {name: b, namespaceSelector: {matchExpressions: [{key: team, operator: DoesNotExist}]}}\n"),
           std::string("- {name: a, namespaceSelector: {matchExpressions: [{key: team, operator: NotIn, values: [a, b]}]}}\n"
                       "- {name: b, namespaceSelector: {matchLabels: {team: a}}}\n"),
           // The catch-all last overlaps on purpose.
           std::string("- {name: a, namespaces: [prod-*]}\n- {name: rest}\n")}) {
    CAPTURE(rules);
    CHECK(warnings(rules) == std::vector<std::string>{});
  }
}

}  // namespace unit_policy_mistakes
