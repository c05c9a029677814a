// `generate` on the published CRDs of four frameworks whose pods are not all PodTemplateSpecs (issue 51):
// Volcano Job (a phase one level down, a gang size), SparkApplication (SparkPodSpec driver and executor,
// a count of `instances`, a GPU outside any ResourceRequirements), Kubeflow Trainer's TrainJob (nodes given
// by count, image and resources) and Argo Workflow (templates holding a container or a script of their own,
// labels for every pod). Each draft is compared whole with tests/data/generate/, and the places, counts,
// status and gang it finds are named field by field; the label a description names, which none of the four
// CRDs does, is tested on a CRD of our own.

#include <doctest/doctest.h>

#include <string>

#include "generate/karta_draft.h"
#include "support/fake_api_server.h"
#include "support/test_support.h"
#include "validate/crd_schema_set.h"
#include "validate/definition_validation.h"

namespace unit_generate_frameworks {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

namespace {

json crd(const std::string& file) { return test::document(test::source_dir() / "tests/corpus/crds" / file); }
std::string expected(const std::string& name) {
  return test::read_text(test::source_dir() / "tests/data/generate" / name);
}

json structure(const std::string& draft) { return test::yaml(draft)["spec"]["structureDefinition"]; }

// The draft passes `validate` against the corpus CRDs, with neither fault nor warning.
void check_valid(const std::string& draft) {
  static const karta::CrdSchemaSet crds =
      karta::CrdSchemaSet::load_directory(test::source_dir() / "tests/corpus/crds");
  const karta::DefinitionReport report =
      karta::validate_definition(test::yaml(draft), [&](const karta::GroupVersionKind& kind) { return crds.find(kind); });
  CHECK(json(report.faults) == json::array());
  CHECK(json(report.warnings) == json::array());
}

}  // namespace

TEST_CASE("the Volcano Job draft reads the phase at .status.state.phase and makes one gang of the tasks") {
  const std::string draft = karta::draft_karta(crd("volcano-job.yaml"));
  CHECK(draft == expected("volcano-job-v1alpha1.yaml"));
  check_valid(draft);
  const json s = structure(draft);
  CHECK(s["rootComponent"]["statusDefinition"]["phaseDefinition"] == json{{"path", ".status.state.phase"}});
  CHECK(s["rootComponent"]["statusDefinition"]["statusMappings"] == json::parse(R"({
    "running": [{"byPhase": "Running"}, {"byPhase": "Completing"}],
    "initializing": [{"byPhase": "Pending"}],
    "completed": [{"byPhase": "Completed"}],
    "failed": [{"byPhase": "Failed"}],
    "degraded": [{"byPhase": "Restarting"}]})"));
  // Volcano's conditions have no `type`: not Kubernetes' shape, so not read.
  CHECK_FALSE(s["rootComponent"]["statusDefinition"].contains("conditionsDefinition"));
  REQUIRE(s["childComponents"].size() == 1);
  const json& task = s["childComponents"][0];
  CHECK(task["name"] == "task");
  CHECK(task["specDefinition"] == json{{"podTemplateSpecPath", ".spec.tasks[]?.template"}});
  CHECK(task["instanceIdPath"] == ".spec.tasks[]?.name");
  CHECK(task["scaleDefinition"] == json{{"replicasPath", ".spec.tasks[]? | .replicas // 1"}});
  CHECK(test::yaml(draft)["spec"]["optimizationInstructions"] == json::parse(R"({
    "gangScheduling": {"podGroup": {"name": "job", "subGroups": [{"componentName": "task"}]}}})"));
  CHECK(draft.find("      # `.spec.minAvailable` is an integer gang size") != std::string::npos);
}

TEST_CASE("the SparkApplication draft spells out the driver and executor pods and counts executor instances") {
  const std::string draft = karta::draft_karta(crd("sparkapplication.yaml"));
  CHECK(draft == expected("sparkapplication-v1beta2.yaml"));
  check_valid(draft);
  const json s = structure(draft);
  CHECK(s["rootComponent"]["statusDefinition"]["phaseDefinition"] == json{{"path", ".status.applicationState.state"}});
  CHECK(s["rootComponent"]["statusDefinition"]["statusMappings"] == json::object());  // the CRD lists no states
  CHECK(s["rootComponent"]["suspendDefinition"]["suspendActions"] ==
        json::parse(R"([{"path": ".spec.suspend", "value": "true"}])"));
  REQUIRE(s["childComponents"].size() == 2);
  for (const std::string role : {"driver", "executor"}) {
    CAPTURE(role);
    const json& component = s["childComponents"][role == "driver" ? 0 : 1];
    CHECK(component["name"] == role);
    const std::string at = ".spec." + role;
    CHECK(component["specDefinition"]["fragmentedPodSpecDefinition"] ==
          json{{"labelsPath", at + ".labels"},
               {"annotationsPath", at + ".annotations"},
               {"schedulerNamePath", at + ".schedulerName"},
               {"nodeAffinityPath", at + ".affinity.nodeAffinity"},
               {"podAffinityPath", at + ".affinity.podAffinity"},
               {"priorityClassNamePath", at + ".priorityClassName"},
               {"imagePath", at + ".image"}});
    CHECK(draft.find("# not read: `" + at + ".gpu` asks for `quantity` of the resource `name` per pod") !=
          std::string::npos);
  }
  CHECK_FALSE(s["childComponents"][0].contains("scaleDefinition"));  // one driver
  CHECK(s["childComponents"][1]["scaleDefinition"] == json{{"replicasPath", ".spec.executor.instances // 1"}});
  CHECK_FALSE(test::yaml(draft)["spec"].contains("optimizationInstructions"));
}

TEST_CASE("the TrainJob draft finds the trainer's nodes, numNodes of them, and no pod in runtimePatches") {
  const std::string draft = karta::draft_karta(crd("trainjob.yaml"));
  CHECK(draft == expected("trainjob-v1alpha1.yaml"));
  check_valid(draft);
  const json s = structure(draft);
  REQUIRE(s["childComponents"].size() == 1);
  const json& trainer = s["childComponents"][0];
  CHECK(trainer["name"] == "trainer");
  CHECK(trainer["specDefinition"] ==
        json{{"fragmentedPodSpecDefinition",
              {{"resourcesPath", ".spec.trainer.resourcesPerNode"}, {"imagePath", ".spec.trainer.image"}}}});
  CHECK(trainer["scaleDefinition"] == json{{"replicasPath", ".spec.trainer.numNodes // 1"}});
  CHECK(draft.find("# Not a pod: `.spec.runtimePatches` patches pods that another object describes.\n") !=
        std::string::npos);
  CHECK(s["rootComponent"]["statusDefinition"]["conditionsDefinition"] == json{{"path", ".status.conditions"}});
  CHECK(s["rootComponent"]["suspendDefinition"]["resumeActions"] ==
        json::parse(R"([{"path": ".spec.suspend", "value": "false"}])"));
}

TEST_CASE("the Argo Workflow draft makes a pod of each template with a container or a script, labels from podMetadata") {
  const std::string draft = karta::draft_karta(crd("argo-workflow.yaml"));
  CHECK(draft == expected("workflow-v1alpha1.yaml"));
  check_valid(draft);
  const json karta_object = test::yaml(draft);
  const json s = karta_object["spec"]["structureDefinition"];
  const std::string pick = ".spec.templates[]? | select(.container or .script) | ";
  REQUIRE(s["childComponents"].size() == 1);
  const json& templates = s["childComponents"][0];
  CHECK(templates["specDefinition"]["fragmentedPodSpecDefinition"] ==
        json{{"labelsPath", pick + ".metadata.labels"},
             {"annotationsPath", pick + ".metadata.annotations"},
             {"containerPath", pick + "(.container // .script)"},
             {"schedulerNamePath", pick + ".schedulerName"},
             {"nodeAffinityPath", pick + ".affinity.nodeAffinity"},
             {"podAffinityPath", pick + ".affinity.podAffinity"},
             {"priorityClassNamePath", pick + ".priorityClassName"}});
  CHECK(templates["instanceIdPath"] == pick + ".name");
  CHECK_FALSE(templates.contains("scaleDefinition"));  // one pod per template: the calls are not counted
  CHECK(test::yaml(karta_object["metadata"]["annotations"]["karta-webhook.io/extensions"].get<std::string>()) ==
        json::parse(R"({"workloadPodLabelsPath": ".spec.podMetadata.labels",
                        "components": {"template": {
                          "tolerationsPath": ".spec.templates[]? | select(.container or .script) | .tolerations",
                          "nodeSelectorPath": ".spec.templates[]? | select(.container or .script) | .nodeSelector"}}})"));
  CHECK(s["rootComponent"]["statusDefinition"]["phaseDefinition"] == json{{"path", ".status.phase"}});
  CHECK(s["rootComponent"]["statusDefinition"]["conditionsDefinition"] == json{{"path", ".status.conditions"}});
  // `.spec.podDisruptionBudget.minAvailable` is an integer or a percentage: no gang size.
  CHECK_FALSE(karta_object["spec"].contains("optimizationInstructions"));
  CHECK(draft.find("# Not a pod: `.spec.templateDefaults` holds defaults for the pods of others.\n") !=
        std::string::npos);
}

TEST_CASE("a pod label that a CRD's description names becomes the instance selector, in place of the placeholder") {
  json gizmo = test::document(test::source_dir() / "tests/data/generate/gizmo-crd.yaml");
  json& roles = gizmo["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["roles"];
  const std::string placeholder = "idPath: \".metadata.labels[\\\"acme.example.com/instance\\\"]\"";
  CHECK(karta::draft_karta(gizmo).find(placeholder) != std::string::npos);
  roles["description"] = "The roles. The operator labels each pod of a role with `acme.example.com/role-name`.";
  const std::string draft = karta::draft_karta(gizmo);
  CHECK(draft.find(placeholder) == std::string::npos);
  CHECK(draft.find("            # the description of `.spec.roles` says the pods carry the label "
                   "`acme.example.com/role-name`\n"
                   "            idPath: \".metadata.labels[\\\"acme.example.com/role-name\\\"]\"\n") != std::string::npos);
  CHECK(structure(draft)["childComponents"][1]["podSelector"] ==
        json::parse(R"({"componentInstanceSelector": {"idPath": ".metadata.labels[\"acme.example.com/role-name\"]"}})"));
  // Two keys named, or none about pods: the placeholder stays.
  roles["description"] = "Pods are labelled `acme.example.com/a` and `acme.example.com/b`.";
  CHECK(karta::draft_karta(gizmo).find(placeholder) != std::string::npos);
  roles["description"] = "See `acme.example.com/role-name` for the label of the role's Service.";
  CHECK(karta::draft_karta(gizmo).find(placeholder) != std::string::npos);
}

}  // namespace unit_generate_frameworks
