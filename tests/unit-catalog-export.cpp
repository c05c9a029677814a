// `karta-webhook catalog export` (issue 59): the built-in definitions of exactly the kinds KAI Scheduler
// v0.17 has no grouper of its own for, as Karta objects labelled as its generic Karta fallback finds them
// (run.ai/karta-group, -version, -kind); each one passes our validator against the kind's published CRD
// and the published Karta CRD's schema; a kind a Karta in the cluster already defines is left out (the
// local API server's LIST of kartas); and manifests/components/kai-catalog holds the same export.

#include <doctest/doctest.h>

#include <set>

#include "cli/catalog_export.h"
#include "definitions/api/published_api.h"
#include "json/documents.h"
#include "k8s/openapi_schema.h"
#include "support/fake_api_server.h"
#include "support/kube_fixtures.h"
#include "support/schema_violations.h"
#include "support/test_support.h"
#include "validate/crd_schema_set.h"
#include "validate/definition_validation.h"

namespace unit_catalog_export {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

std::vector<json> exported(const std::string& text) {
  std::vector<json> kartas;
  for (const auto& document : karta::parse_documents(text, "export.yaml")) kartas.push_back(document.value);
  return kartas;
}

std::string kind_of(const json& karta) {
  const json& kind = karta["spec"]["structureDefinition"]["rootComponent"]["kind"];
  return kind.value("group", "") + "/" + kind["version"].get<std::string>() + "/" + kind["kind"].get<std::string>();
}

// The catalog's kinds that hub.go's table (NewDefaultPluginsHub) does not list.
const std::set<std::string> kWithoutNativeGrouper = {
    "agents.x-k8s.io/v1beta1/Sandbox",
    "apps/v1/DaemonSet",
    "apps.nvidia.com/v1alpha1/NIMCache",
    "apps.nvidia.com/v1alpha1/NIMService",
    "batch.volcano.sh/v1alpha1/Job",
    "kubeflow.org/v1/Notebook",
    "kubeflow.org/v1/PaddleJob",
    "milvus.io/v1beta1/Milvus",
    "serving.kserve.io/v1alpha1/LLMInferenceService",
    "serving.kserve.io/v1alpha2/LLMInferenceService",
    "serving.kserve.io/v1beta1/InferenceService",
    "sparkoperator.k8s.io/v1beta2/SparkApplication",
};

TEST_CASE("the export holds exactly the catalog's kinds KAI v0.17 has no grouper for, labelled as KAI finds them, each valid") {
  const test::CliRun run = test::run_cli({"karta-webhook", "catalog", "export"});
  CHECK(run.code == 0);
  CHECK(run.err == "");
  const std::vector<json> kartas = exported(run.out);
  std::set<std::string> kinds;
  auto crds = karta::CrdSchemaSet::load_directory(test::source_dir() / "tests/corpus/crds");
  const auto schema = karta::karta_schema();
  for (const json& karta : kartas) {
    const std::string kind = kind_of(karta);
    INFO(kind);
    CHECK(kinds.insert(kind).second);
    const json& root = karta["spec"]["structureDefinition"]["rootComponent"]["kind"];
    CHECK(karta["metadata"]["labels"] == json{{"run.ai/karta-group", root.value("group", "")},
                                              {"run.ai/karta-version", root["version"]},
                                              {"run.ai/karta-kind", root["kind"]}});
    CHECK(karta::validate_against_schema(*schema, karta) == std::vector<karta::SchemaViolation>{});
    const karta::DefinitionReport report =
        karta::validate_definition(karta, [&](const karta::GroupVersionKind& k) { return crds.find(k); });
    CHECK(report.faults == std::vector<std::string>{});
  }
  CHECK(kinds == kWithoutNativeGrouper);
  // Every kind of the catalog is either natively grouped or exported.
  CHECK(karta::kai_groups_natively({"jobset.x-k8s.io", "v1alpha2", "JobSet"}));
  CHECK(karta::kai_groups_natively({"nvidia.com", "v1beta1", "DynamoGraphDeployment"}));
  CHECK_FALSE(karta::kai_groups_natively({"kubeflow.org", "v1", "Notebook"}));  // KAI groups v1beta1 only
}

TEST_CASE("with a cluster, a kind one of its Kartas defines is left out of the export") {
  test::TempDir dir;
  json theirs = test::kube_fixtures::karta_object("nimservices-by-workload-map");
  theirs["spec"]["structureDefinition"]["rootComponent"]["kind"] = {
      {"group", "apps.nvidia.com"}, {"version", "v1alpha1"}, {"kind", "NIMService"}};
  test::FakeApiServer server(dir.path, {theirs});
  test::write_text(dir.path / "config", server.kubeconfig("default"));
  const test::CliRun run = test::run_cli({"karta-webhook", "catalog", "export", "--kubeconfig", (dir.path / "config").string()});
  CHECK(run.code == 0);
  std::set<std::string> kinds;
  for (const json& karta : exported(run.out)) kinds.insert(kind_of(karta));
  std::set<std::string> expected = kWithoutNativeGrouper;
  expected.erase("apps.nvidia.com/v1alpha1/NIMService");
  CHECK(kinds == expected);
  CHECK(server.targets() == std::vector<std::string>{"/apis/run.ai/v1alpha1/kartas?limit=100"});
}

TEST_CASE("manifests/components/kai-catalog installs what `catalog export` prints") {
  const test::CliRun run = test::run_cli({"karta-webhook", "catalog", "export"});
  CHECK(karta::read_text_file(test::source_dir() / "manifests/components/kai-catalog/kartas.yaml") == run.out);
}

}  // namespace unit_catalog_export
