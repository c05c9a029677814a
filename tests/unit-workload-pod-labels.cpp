// Workload-wide pod labels: a kind whose operator copies one label map onto every pod of the workload
// (the definition's `workloadPodLabelsPath` extension; Milvus's .spec.components.podLabels) gets the
// labels that are the same on every pod there when the object spells out no pod template, as a Milvus
// with the operator's defaults does. Per-template labels stay per template.

#include <doctest/doctest.h>

#include "definitions/karta_definition.h"
#include "mutate/mutation.h"
#include "support/test_support.h"
#include "validate/crd_schema_set.h"
#include "validate/definition_validation.h"

namespace unit_workload_pod_labels {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

namespace {

const karta::CompiledDefinition& milvus() {
  const auto* definition = test::builtin_catalog().find({"milvus.io", "v1beta1", "Milvus"});
  REQUIRE(definition != nullptr);
  return *definition;
}

json sample(const std::string& file) { return test::document(*test::corpus_dir() / "samples" / file); }

// A workload-wide label, a per-instance one and the queue.
const karta::Policy& platform_policy() {
  static const karta::Policy policy = test::policy_from_yaml(R"(
podTemplates:
  labels: {platform.example.com/managed: "true", platform.example.com/role: "{{instance}}"}
scheduling:
  queue: {label: kai.scheduler/queue, default: default-queue}
)");
  return policy;
}

json milvus_karta_with(const std::string& extensions) {
  json d = test::document(test::source_dir() / "definitions/catalog/milvus.io-milvus-v1beta1.yaml");
  d["metadata"]["annotations"]["karta-webhook.io/extensions"] = extensions;
  return d;
}

}  // namespace

TEST_CASE("a Milvus with the operator's defaults gets the queue and the managed label at /spec/components/podLabels") {
  const json object = sample("milvus-2.yaml");
  REQUIRE_FALSE(object.contains("spec"));
  auto outcome = karta::mutate_workload(object, milvus(), platform_policy(), {.namespace_name = "vectors"});
  CHECK(outcome.templates == 0);
  CHECK(outcome.notes == std::vector<std::string>{});
  CHECK(outcome.warnings == std::vector<std::string>{});
  CHECK(outcome.patch.value() == json::parse(R"([
    {"op": "add", "path": "/metadata/labels", "value": {"kai.scheduler/queue": "default-queue"}},
    {"op": "add", "path": "/spec", "value": {"components": {"podLabels": {
      "platform.example.com/managed": "true", "kai.scheduler/queue": "default-queue"}}}},
    {"op": "add", "path": "/metadata/annotations", "value": {"karta.run.ai/written": "label:kai.scheduler/queue"}}
  ])"));
  json patched = test::kubectl_apply(object, outcome.patch.value());
  CHECK(patched["spec"] == json::parse(R"({"components": {"podLabels": {
      "platform.example.com/managed": "true", "kai.scheduler/queue": "default-queue"}}})"));
  // Applied once: a second admission changes nothing.
  CHECK(karta::mutate_workload(patched, milvus(), platform_policy(), {.namespace_name = "vectors"}).patch.value() ==
        json::array());
}

TEST_CASE("workload-wide means no per-template placeholder: {{namespace}} and {{name}} go in, {{component}}, {{instance}} and {{gpus}} stay out") {
  const auto policy = test::policy_from_yaml(R"(
podTemplates:
  labels:
    team.example.com/namespace: "{{namespace}}"
    team.example.com/workload: "{{kind}}-{{name}}"
    team.example.com/component: "{{component}}"
    team.example.com/instance: "x-{{instance}}"
    team.example.com/gpus: "{{gpus}}"
)");
  json object = sample("milvus-2.yaml");
  auto outcome = karta::mutate_workload(object, milvus(), policy, {.namespace_name = "vectors"});
  CHECK(outcome.patch.value() == json::parse(R"([
    {"op": "add", "path": "/spec", "value": {"components": {"podLabels": {
      "team.example.com/namespace": "vectors", "team.example.com/workload": "Milvus-my-release"}}}}
  ])"));

  // With only per-template labels and no queue there is nothing to write.
  const auto per_template = test::policy_from_yaml("podTemplates: {labels: {team.example.com/role: \"{{instance}}\"}}");
  CHECK(karta::mutate_workload(object, milvus(), per_template).patch.value() == json::array());
}

TEST_CASE("the shared map is filled in place when present, keeping the user's labels and their own queue") {
  json object = sample("milvus-2.yaml");
  object["metadata"]["labels"] = {{"kai.scheduler/queue", "research"}};
  object["spec"] = {{"components", {{"podLabels", {{"app", "search"}, {"platform.example.com/managed", "no"}}}}}};
  auto outcome = karta::mutate_workload(object, milvus(), platform_policy());
  // The policy does not overwrite (podTemplates.overwrite is false); the queue always follows the workload.
  CHECK(outcome.patch.value() == json::parse(R"([
    {"op": "add", "path": "/spec/components/podLabels/kai.scheduler~1queue", "value": "research"}
  ])"));
}

TEST_CASE("a Milvus that spells out its components keeps its per-component labels and no shared-map write") {
  for (const char* file : {"milvus-1.yaml", "milvus-3.yaml"}) {
    CAPTURE(file);
    json object = sample(file);
    auto outcome = karta::mutate_workload(object, milvus(), platform_policy());
    CHECK(outcome.templates > 0);
    json patched = test::kubectl_apply(object, outcome.patch.value());
    CHECK_FALSE(patched["spec"]["components"].contains("podLabels"));
    CHECK(patched["spec"]["components"]["proxy"]["podLabels"] ==
          json{{"kai.scheduler/queue", "default-queue"}, {"platform.example.com/managed", "true"},
               {"platform.example.com/role", "proxy"}});
  }
}

TEST_CASE("workloadPodLabelsPath is read from the extensions annotation, strictly, and checked against the CRD") {
  const std::string where = "metadata.annotations[\"karta-webhook.io/extensions\"]";
  auto parsed = karta::parse_karta_definition(milvus_karta_with("workloadPodLabelsPath: .spec.components.podLabels\n"), "test");
  REQUIRE(parsed.definition);
  REQUIRE(parsed.definition->workload_pod_labels);
  CHECK(parsed.definition->workload_pod_labels->expression == ".spec.components.podLabels");
  CHECK(parsed.definition->workload_pod_labels->field == where + ".workloadPodLabelsPath");

  auto misspelt = karta::parse_karta_definition(milvus_karta_with("workloadPodLabelPath: .spec.components.podLabels\n"), "test");
  CHECK(misspelt.faults ==
        std::vector<karta::DefinitionFault>{
            {where + ".components", "is required"},
            {where + ".workloadPodLabelPath", "unknown field; did you mean \"workloadPodLabelsPath\"?"}});

  auto crds = karta::CrdSchemaSet::load_directory(test::source_dir() / "tests/corpus/crds");
  auto report = karta::validate_definition(milvus_karta_with("workloadPodLabelsPath: .spec.components.podLabel\n"),
                                           [&](const karta::GroupVersionKind& kind) { return crds.find(kind); });
  CHECK(report.faults == std::vector<std::string>{where + ".workloadPodLabelsPath: `.spec.components.podLabel` is not in "
                                                          "Milvus's schema at `.spec.components`; did you mean `podLabels`?"});
  // The catalog's own Milvus definition names the map and validates as it is.
  CHECK(milvus().definition().workload_pod_labels->expression == ".spec.components.podLabels");
  auto catalog = karta::validate_definition(
      test::document(test::source_dir() / "definitions/catalog/milvus.io-milvus-v1beta1.yaml"),
      [&](const karta::GroupVersionKind& kind) { return crds.find(kind); });
  CHECK(catalog.faults == std::vector<std::string>{});
}

}  // namespace unit_workload_pod_labels
