// audit's coverage of a cluster: every CRD the local API server serves that holds pods and that no
// definition covers (built-in, --definitions, or the cluster's Kartas) is listed with its kind, group,
// versions, the places found and the command that drafts its Karta; a CRD with a definition, or without
// pods, is not.

#include <doctest/doctest.h>

#include <string>

#include "cli/audit.h"
#include "kube/api_client.h"
#include "support/fake_api_server.h"
#include "support/test_support.h"

namespace unit_audit_coverage {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;
namespace kube = karta::kube;

namespace {

json data(const std::string& path) { return test::document(test::source_dir() / "tests/data" / path); }

// Gizmo (pods, no definition), Trainer (pods, the cluster's Karta), Widget (no pods), JobSet (pods, the
// built-in catalog).
std::vector<json> crds() {
  return {data("generate/gizmo-crd.yaml"), data("trainer-crd.yaml"), data("generate/widget-crd.yaml"),
          test::document(*test::corpus_dir() / "crds/jobset.yaml")};
}

const json kGizmo = {{"crd", "gizmos.acme.example.com"},
                     {"group", "acme.example.com"},
                     {"kind", "Gizmo"},
                     {"versions", {"v1beta1", "v1"}},
                     {"version", "v1"},
                     {"places",
                      {{{"shape", "PodTemplateSpec"}, {"path", ".spec.launcher.template"}},
                       {{"shape", "PodTemplateSpec"}, {"path", ".spec.roles[].template"}}}},
                     {"command", "karta-webhook generate gizmos.acme.example.com"}};

const std::string kGizmoText =
    "Kinds with pods and no definition (their pods get no queue label and no policy check):\n"
    "  Gizmo (acme.example.com, versions v1beta1, v1; CRD gizmos.acme.example.com)\n"
    "    PodTemplateSpec at .spec.launcher.template\n"
    "    PodTemplateSpec at .spec.roles[].template\n"
    "    draft its Karta: karta-webhook generate gizmos.acme.example.com\n";

// The text from "Kinds with pods" to the next blank line.
std::string coverage_section(const std::string& text) {
  const auto start = text.find("Kinds with pods");
  if (start == std::string::npos) return "";
  const auto end = text.find("\n\n", start);
  return text.substr(start, end == std::string::npos ? std::string::npos : end + 1 - start);
}

std::shared_ptr<karta::AdmissionState> builtin_state() {
  auto state = std::make_shared<karta::AdmissionState>();
  state->catalog = test::builtin_catalog();
  return state;
}

}  // namespace

TEST_CASE("audit --kubeconfig lists the served CRD with pods and no definition, in text and in --output json") {
  test::TempDir dir;
  test::FakeApiServer server(dir.path, {data("trainer-karta.yaml")});
  server.serve(test::crd_resource(), crds());
  test::write_text(dir.path / "config", server.kubeconfig("default"));
  const std::string config = (dir.path / "config").string();
  const std::string command = test::binary_path().string() + " audit --kubeconfig " + config;
  int code = -1;
  const json report = json::parse(test::run_command(command + " -o json 2>/dev/null", &code));
  CHECK(code == 0);
  // The suggested command reads the CRD from the cluster that was audited.
  json gizmo = kGizmo;
  gizmo["command"] = "karta-webhook generate gizmos.acme.example.com --kubeconfig " + config;
  CHECK(report["uncovered"] == json::array({gizmo}));
  const std::string text = test::run_command(command + " 2>/dev/null", &code);
  CHECK(code == 0);
  std::string expected = kGizmoText;
  expected.insert(expected.size() - 1, " --kubeconfig " + config);
  CHECK(coverage_section(text) == expected);
}

TEST_CASE("the suggested generate command names the audited kubeconfig and context, quoted for the shell") {
  test::TempDir dir;
  test::FakeApiServer server(dir.path, {data("trainer-karta.yaml")});
  server.serve(test::crd_resource(), crds());
  const std::string config = (dir.path / "my config").string();
  test::write_text(config, server.kubeconfig("default"));
  int code = -1;
  const json report = json::parse(test::run_command(test::binary_path().string() + " audit --kubeconfig '" + config +
                                                        "' --context local -o json 2>/dev/null",
                                                    &code));
  CHECK(code == 0);
  REQUIRE(report["uncovered"].size() == 1);
  CHECK(report["uncovered"][0]["command"] ==
        "karta-webhook generate gizmos.acme.example.com --kubeconfig '" + config + "' --context local");
}

TEST_CASE("a Karta the audit does not load covers nothing: its kind is listed as uncovered") {
  json misspelt = data("trainer-karta.yaml");
  misspelt["spec"]["structureDefinition"]["childComponents"][0]["specDefinition"]["podTemplateSpecPath"] =
      ".spec.wroker.template";
  test::TempDir dir;
  test::FakeApiServer server(dir.path, {misspelt});
  server.serve(test::crd_resource(), crds());
  kube::ApiClient client(server.connection());
  auto state = builtin_state();  // definitionPolicy enforce: a Karta with a fault is not loaded
  json report = karta::audit_cluster(client, *state, {.namespace_name = "", .page_size = 50, .progress = {}}).to_json();
  const json trainer = {{"crd", "trainers.acme.example.com"},
                        {"group", "acme.example.com"},
                        {"kind", "Trainer"},
                        {"versions", {"v1"}},
                        {"version", "v1"},
                        {"places",
                         {{{"shape", "PodTemplateSpec"}, {"path", ".spec.evaluator.template"}},
                          {{"shape", "PodTemplateSpec"}, {"path", ".spec.worker.template"}}}},
                        {"command", "karta-webhook generate trainers.acme.example.com"}};
  CHECK(report["uncovered"] == json::array({kGizmo, trainer}));
}

TEST_CASE("coverage reads CRDs listed without apiVersion and kind, as the API server lists them") {
  test::TempDir dir;
  test::FakeApiServer server(dir.path, {data("trainer-karta.yaml")}, {.list_items_without_type = true});
  server.serve(test::crd_resource(), crds());
  kube::ApiClient client(server.connection());
  auto state = builtin_state();
  json report = karta::audit_cluster(client, *state, {.namespace_name = "", .page_size = 1, .progress = {}}).to_json();
  CHECK(report["uncovered"] == json::array({kGizmo}));
}

TEST_CASE("audit of files lists no coverage: the CRDs are the cluster's") {
  auto state = builtin_state();
  json report = karta::audit_files({(test::source_dir() / "examples/jobset-demo.yaml").string()}, *state).to_json();
  CHECK(report["uncovered"] == json::array());
  CHECK(coverage_section(karta::render_audit(report)) == "");
}

}  // namespace unit_audit_coverage
