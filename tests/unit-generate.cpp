// `karta-webhook generate`: the whole Karta drafted from a CRD (a file, or a CRD read from the local API
// server by name), compared with the expected files of tests/data/generate/, the skeleton of a CRD with no pod,
// and what it says when it cannot draft.

#include <doctest/doctest.h>

#include <set>
#include <string>

#include "generate/karta_draft.h"
#include "json/documents.h"
#include "support/fake_api_server.h"
#include "support/test_support.h"

namespace unit_generate {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

namespace {

std::string expected(const std::string& name) {
  return test::read_text(test::source_dir() / "tests/data/generate" / name);
}
json crd_file(const std::string& path) { return test::document(test::source_dir() / path); }

}  // namespace

TEST_CASE("generate drafts the whole Karta of a CRD: map of replica specs, lists keyed by name, inline pod fields") {
  CHECK(karta::draft_karta(crd_file("tests/corpus/crds/pytorchjob.yaml")) == expected("pytorchjob-v1.yaml"));
  CHECK(karta::draft_karta(crd_file("tests/corpus/crds/raycluster.yaml")) == expected("raycluster-v1.yaml"));
  CHECK(karta::draft_karta(crd_file("tests/corpus/crds/nimservice.yaml")) == expected("nimservice-v1alpha1.yaml"));
  CHECK(karta::draft_karta(crd_file("tests/corpus/crds/milvus.yaml")) == expected("milvus-v1beta1.yaml"));
  CHECK(karta::draft_karta(crd_file("tests/data/generate/gizmo-crd.yaml")) == expected("gizmo-v1.yaml"));
}

TEST_CASE("karta-webhook generate -f prints the draft of the storage version, or of --version") {
  int code = -1;
  const std::string binary = test::binary_path().string();
  CHECK(test::run_command(
            binary + " generate -f " + (test::source_dir() / "tests/data/generate/gizmo-crd.yaml").string(), &code) ==
        expected("gizmo-v1.yaml"));
  CHECK(code == 0);
  const std::string v1beta1 =
      test::run_command(binary + " generate -f " +
                            (test::source_dir() / "tests/data/generate/gizmo-crd.yaml").string() + " --version v1beta1",
                        &code);
  CHECK(code == 0);
  CHECK(v1beta1 == karta::draft_karta(crd_file("tests/data/generate/gizmo-crd.yaml"), "v1beta1"));
  const json karta_object = test::yaml(v1beta1);
  CHECK(karta_object["metadata"]["name"] == "gizmo-v1beta1");
  CHECK(karta_object["spec"]["structureDefinition"]["childComponents"][0]["specDefinition"] ==
        json{{"podTemplateSpecPath", ".spec.template"}});
  CHECK(
      v1beta1.rfind("# Drafted by `karta-webhook generate` from the CustomResourceDefinition gizmos.acme.example.com, "
                    "version v1beta1.\n",
                    0) == 0);
}

// The end of the draft of a CRD whose schema holds no pod place.
const std::string kUnknownPods =
    "    # fill in: the pods are unknown. The schema holds no pod template, pod spec or pod spelt out with\n"
    "    # its labels (a pod spec without a schema, or spelt as a container, is not one), so no child\n"
    "    # component is drafted: add one for each kind of pod the operator creates, with its specDefinition.\n";

TEST_CASE("generate drafts a skeleton where it finds no pod, and says why it cannot draft, exiting 1") {
  int code = -1;
  const std::string binary = test::binary_path().string();
  const std::string widget = (test::source_dir() / "tests/data/generate/widget-crd.yaml").string();
  const std::string skeleton = test::run_command(binary + " generate -f " + widget + " 2>&1", &code);
  CHECK(code == 0);
  CHECK(skeleton.ends_with("      # no suspendDefinition: `.spec` has no boolean named or described for suspending "
                           "(suspend, paused, ...)\n" + kUnknownPods));
  CHECK(skeleton == karta::draft_karta(crd_file("tests/data/generate/widget-crd.yaml")));
  const std::string gizmo = (test::source_dir() / "tests/data/generate/gizmo-crd.yaml").string();
  CHECK(test::run_command(binary + " generate -f " + gizmo + " --version v2 2>&1", &code) ==
        "karta-webhook generate: " + gizmo +
            "#0: CustomResourceDefinition gizmos.acme.example.com: no served version v2 "
            "with a schema\n");
  CHECK(code == 1);
  const std::string sample = (test::source_dir() / "tests/corpus/samples/jobset-1.yaml").string();
  CHECK(test::run_command(binary + " generate -f " + sample + " 2>&1", &code) ==
        "karta-webhook generate: " + sample + ": holds 0 CustomResourceDefinitions; generate drafts one\n");
  CHECK(code == 1);
  CHECK(test::run_command(binary + " generate 2>&1", &code) ==
        "karta-webhook generate: give either -f CRD.yaml or the name of a CRD in the cluster\n");
  CHECK(code == 1);
}

TEST_CASE("a field name with a line break is quoted in the paths and escaped in the comments of the draft") {
  json crd = crd_file("tests/data/generate/gizmo-crd.yaml");
  json& properties = crd["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
  properties["odd\nname"] = properties["launcher"];
  const std::string draft = karta::draft_karta(crd);
  const json karta_object = test::yaml(draft);
  CHECK(karta_object["spec"]["structureDefinition"]["childComponents"][1]["specDefinition"]["podTemplateSpecPath"] ==
        ".spec.\"odd\\nname\".template");
  CHECK(draft.find("      # `.spec.\"odd\\nname\".template` is a PodTemplateSpec") != std::string::npos);
  for (std::size_t at = draft.find('\n'); at != std::string::npos; at = draft.find('\n', at + 1)) {
    const std::string next = draft.substr(at + 1, draft.find('\n', at + 1) - at - 1);
    CHECK_MESSAGE(next.find("name") != 0, next);  // no line starts inside a field name
  }
}

// Issue 47, F9: the JSON writer that quotes the draft's scalars left the C1 controls raw, so a CRD's property
// named with U+009B (the 8-bit CSI) or U+0085 (a line break to YAML) reached the terminal and broke the YAML.
TEST_CASE("a field name with a C1 control or DEL is escaped in the draft's quoted scalars and reads back the same") {
  json crd = crd_file("tests/data/generate/gizmo-crd.yaml");
  json& properties = crd["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
  const std::string csi = "\xC2\x9B" "31mcsi", nel = "nel\xC2\x85" "x", del = "del\x7F";
  for (const auto& name : {csi, nel, del}) properties[name] = properties["launcher"];
  const std::string draft = karta::draft_karta(crd);
  for (std::size_t at = 0; at + 1 < draft.size(); ++at) {
    const auto c = static_cast<unsigned char>(draft[at]), next = static_cast<unsigned char>(draft[at + 1]);
    CHECK_MESSAGE(!(c == 0xC2 && next >= 0x80 && next <= 0x9F), "a raw C1 control at byte " << at);
    CHECK_MESSAGE(c != 0x7F, "a raw DEL at byte " << at);
  }
  CHECK(draft.find("podTemplateSpecPath: \".spec.\\\"\\u009b31mcsi\\\".template\"\n") != std::string::npos);
  std::set<std::string> paths;
  const json karta_object = test::yaml(draft);
  for (const json& child : karta_object["spec"]["structureDefinition"]["childComponents"])
    paths.insert(child["specDefinition"]["podTemplateSpecPath"].get<std::string>());
  for (const std::string& path : {".spec.\"" + csi + "\".template", ".spec.\"" + nel + "\".template",
                                  ".spec.\"" + del + "\".template", std::string(".spec.launcher.template"),
                                  std::string(".spec.roles[].template")})
    CHECK_MESSAGE(paths.count(path) == 1, path);
  CHECK(paths.size() == 5);
}

TEST_CASE(
    "karta-webhook generate NAME --kubeconfig drafts the CRD the local API server serves, and names one it does not") {
  test::TempDir dir;
  test::FakeApiServer server(dir.path, {});
  server.serve(test::crd_resource(),
               {crd_file("tests/data/generate/gizmo-crd.yaml"), crd_file("tests/data/generate/widget-crd.yaml")});
  test::write_text(dir.path / "config", server.kubeconfig("default"));
  const std::string command =
      test::binary_path().string() + " generate --kubeconfig " + (dir.path / "config").string() + " ";
  int code = -1;
  CHECK(test::run_command(command + "gizmos.acme.example.com", &code) == expected("gizmo-v1.yaml"));
  CHECK(code == 0);
  CHECK(test::run_command(command + "gizmos.acme.example.com --version v1beta1", &code) ==
        karta::draft_karta(crd_file("tests/data/generate/gizmo-crd.yaml"), "v1beta1"));
  CHECK(code == 0);
  const std::string missing = test::run_command(command + "sprockets.acme.example.com 2>&1", &code);
  CHECK(code == 1);
  CHECK(missing.rfind("karta-webhook generate: ", 0) == 0);
  CHECK(missing.find("sprockets.acme.example.com") != std::string::npos);
  CHECK(missing.find("404") != std::string::npos);
  CHECK(test::run_command(command + "widgets.acme.example.com 2>&1", &code) ==
        karta::draft_karta(crd_file("tests/data/generate/widget-crd.yaml")));
  CHECK(code == 0);
}

}  // namespace unit_generate
