// `generate` on the published CRDs of four frameworks whose pods are not all PodTemplateSpecs (issue 51):
// Volcano Job (a phase one level down, a gang size), SparkApplication (SparkPodSpec driver and executor,
// a count of `instances`, a GPU outside any ResourceRequirements), Kubeflow Trainer's TrainJob (nodes given
// by count, image and resources) and Argo Workflow (templates holding a container or a script of their own,
// labels for every pod). Each draft is compared whole with tests/data/generate/, and the places, counts,
// status and gang it finds are named field by field; the label a description names, which none of the four
// CRDs does, is tested on a CRD of our own.

#include <doctest/doctest.h>

#include <map>

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

const karta::CrdSchemaSet& corpus_crds() {
  static const karta::CrdSchemaSet crds = karta::CrdSchemaSet::load_directory(test::source_dir() / "tests/corpus/crds");
  return crds;
}

// What `validate` says of a draft against the corpus CRDs: its faults, then its warnings.
json validated(const std::string& draft) {
  const karta::DefinitionReport report = karta::validate_definition(
      test::yaml(draft), [&](const karta::GroupVersionKind& kind) { return corpus_crds().find(kind); });
  return json{report.faults, report.warnings};
}

// The warning `validate` gives a draft's placeholder instance label, on child component `index`.
std::string placeholder_warning(std::size_t index, const std::string& group) {
  return "spec.structureDefinition.childComponents[" + std::to_string(index) +
         "].podSelector.componentInstanceSelector.idPath: reads the label `" + group +
         "/instance`, the placeholder `karta-webhook generate` writes: replace it with the label the operator puts "
         "on each instance's pods";
}
// What validate says of the Argo Workflow draft, whose count of template calls reads what it builds itself.
json argo_warnings() {
  const std::string count = "spec.structureDefinition.childComponents[0].scaleDefinition.replicasPath: not checked "
                            "against the schema: ";
  const std::string calls = "[$entry, ($entry | (. as [$name, $times] | $s.templates[]...`";
  return json{placeholder_warning(0, "argoproj.io"),
              count + "`.template` reads the output of `(.steps // [])[][]?, (.dag.tasks // [])[]`",
              count + "`.withItems` reads the output of `(.steps // [])[][]?, (.dag.tasks // [])[]`",
              count + "`$reached[]` reads the output of `" + calls, count + "`.[0]` reads the output of `" + calls,
              count + "`.[1]` reads the output of `" + calls};
}

const std::string kEmptyMappings =
    "spec.structureDefinition.rootComponent.statusDefinition.statusMappings: is empty, so every workload's status is "
    "Undefined: map the phases or conditions its operator sets";

}  // namespace

TEST_CASE("the Volcano Job draft reads the phase at .status.state.phase and makes one gang of the tasks") {
  const std::string draft = karta::draft_karta(crd("volcano-job.yaml"));
  CHECK(draft == expected("volcano-job-v1alpha1.yaml"));
  CHECK(validated(draft) == json{json::array(), {placeholder_warning(0, "batch.volcano.sh")}});
  const json s = structure(draft);
  CHECK(s["rootComponent"]["statusDefinition"]["phaseDefinition"] == json{{"path", ".status.state.phase"}});
  CHECK(s["rootComponent"]["statusDefinition"]["statusMappings"] == json::parse(R"({
    "running": [{"byPhase": "Running"}, {"byPhase": "Completing"}],
    "initializing": [{"byPhase": "Pending"}],
    "completed": [{"byPhase": "Completed"}],
    "failed": [{"byPhase": "Terminated"}, {"byPhase": "Failed"}],
    "degraded": [{"byPhase": "Restarting"}],
    "suspending": [{"byPhase": "Aborting"}],
    "suspended": [{"byPhase": "Aborted"}]})"));
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
  // The gang's minimum is Volcano's own when the Job sets it, as the catalog's gangMinMemberPath says.
  CHECK(test::yaml(draft)["metadata"]["annotations"]["karta-webhook.io/extensions"] ==
        "gangMinMemberPath: .spec.minAvailable\n");
}

TEST_CASE("the SparkApplication draft spells out the driver and executor pods and counts executor instances") {
  const std::string draft = karta::draft_karta(crd("sparkapplication.yaml"));
  CHECK(draft == expected("sparkapplication-v1beta2.yaml"));
  CHECK(validated(draft) == json{json::array(), {kEmptyMappings}});
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
    CHECK(draft.find("not read: `" + at + ".gpu`") == std::string::npos);
  }
  // `{name, quantity}` GPUs, read as the catalog reads them.
  CHECK(test::yaml(test::yaml(draft)["metadata"]["annotations"]["karta-webhook.io/extensions"].get<std::string>()) ==
        json::parse(R"({"components": {
          "driver": {"tolerationsPath": ".spec.driver.tolerations", "nodeSelectorPath": ".spec.driver.nodeSelector",
                     "gpuRequestPath": ".spec.driver.gpu"},
          "executor": {"tolerationsPath": ".spec.executor.tolerations", "nodeSelectorPath": ".spec.executor.nodeSelector",
                       "gpuRequestPath": ".spec.executor.gpu"}}})"));
  CHECK_FALSE(s["childComponents"][0].contains("scaleDefinition"));  // one driver
  // While dynamic allocation is on, the larger of instances and the initial executors (before: instances
  // only, one executor where the operator starts two on the corpus's dynamic-allocation sample).
  CHECK(s["childComponents"][1]["scaleDefinition"] ==
        json{{"replicasPath", "if .spec.dynamicAllocation.enabled // false then [.spec.executor.instances // 0, "
                              ".spec.dynamicAllocation.initialExecutors // .spec.dynamicAllocation.minExecutors // 0] "
                              "| max else .spec.executor.instances // 1 end"}});
  CHECK_FALSE(test::yaml(draft)["spec"].contains("optimizationInstructions"));
}

TEST_CASE("the PodCliqueSet draft counts the set's copies of its template and the scaling groups naming each clique") {
  // Before: each clique's own replicas only (8 pods where the catalog counts 13 on podcliqueset-2.yaml).
  const std::string draft = karta::draft_karta(crd("podcliqueset.yaml"));
  CHECK(structure(draft)["childComponents"][0]["scaleDefinition"]["replicasPath"] ==
        "(.spec.replicas // 0) as $copies | .spec.template.podCliqueScalingGroups as $groups | .spec.template.cliques[] "
        "| .name as $n | (.spec.replicas // 1 | tonumber) * ($copies | tonumber) * ([$groups[]? | select(any("
        ".cliqueNames[]?; . == $n)) | .replicas // 1 | tonumber] | add // 1 | tonumber)");
  CHECK(draft.find("          # `.spec.replicas` is the copies of `.spec.template`, which holds these pods; 0 when absent\n"
                   "          # `.spec.template.podCliqueScalingGroups[].cliqueNames` names items of "
                   "`.spec.template.cliques`: each group naming one copies its pods `replicas` times; 1 when none "
                   "names it\n") != std::string::npos);
  CHECK(validated(draft) == json{json::array(), json{placeholder_warning(0, "grove.io")}});
}

TEST_CASE("the TrainJob draft finds the trainer's nodes, numNodes of them, and no pod in runtimePatches") {
  const std::string draft = karta::draft_karta(crd("trainjob.yaml"));
  CHECK(draft == expected("trainjob-v1alpha1.yaml"));
  CHECK(validated(draft) == json{json::array(), json::array()});
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
  CHECK(validated(draft) == json{json::array(), argo_warnings()});
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
  // Each template runs once a call from the entrypoint (steps and DAG tasks, three calls deep), times its
  // withItems: the catalog's count, written the same way.
  const std::string call =
      "(. as [$name, $times] | $s.templates[]? | select(.name == $name) | ((.steps // [])[][]?, (.dag.tasks // [])[]) "
      "| [.template, ($times | tonumber) * ((.withItems // [null]) | length)])";
  CHECK(templates["scaleDefinition"] ==
        json{{"replicasPath", ".spec as $s | [$s.entrypoint, 1] as $entry | [$entry, ($entry | " + call +
                                  "), ($entry | " + call + " | " + call + "), ($entry | " + call + " | " + call + " | " +
                                  call + ")] as $reached | " + pick +
                                  ".name as $n | [$reached[] | select(.[0] == $n) | .[1]] | add // 0"}});
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

TEST_CASE("the JobSet and LeaderWorkerSet drafts count parallelism and groups of size, as the catalog does") {
  const json jobset = structure(karta::draft_karta(crd("jobset.yaml")));
  CHECK(jobset["childComponents"][0]["scaleDefinition"] ==
        json{{"replicasPath",
              ".spec.replicatedJobs[]? | (.replicas // 1 | tonumber) * (.template.spec.parallelism // 1 | tonumber)"}});
  const std::string lws_draft = karta::draft_karta(crd("leaderworkerset.yaml"));
  const json lws = structure(lws_draft);
  REQUIRE(lws["childComponents"].size() == 2);
  CHECK(lws["childComponents"][0]["name"] == "leader");
  CHECK(lws["childComponents"][0]["scaleDefinition"] == json{{"replicasPath", ".spec.replicas // 1"}});
  CHECK(lws["childComponents"][1]["name"] == "worker");
  CHECK(lws["childComponents"][1]["scaleDefinition"] ==
        json{{"replicasPath", "(.spec.replicas // 1 | tonumber) * ((.spec.leaderWorkerTemplate.size // 1 | tonumber) - "
                              "(if .spec.leaderWorkerTemplate.leaderTemplate then 1 else 0 end) | tonumber)"}});
  CHECK(lws_draft.find("          # `.spec.leaderWorkerTemplate.size` is the pods of each group, the leader "
                       "(`.spec.leaderWorkerTemplate.leaderTemplate`) one of them when set\n") != std::string::npos);
  CHECK(validated(lws_draft) == json{json::array(), json::array()});
}

TEST_CASE("the InferenceService draft counts the GPUs of the predictor's model and names the predictor predictor") {
  const std::string draft = karta::draft_karta(crd("inferenceservice.yaml"));
  const json karta_object = test::yaml(draft);
  const json s = karta_object["spec"]["structureDefinition"];
  json names = json::array();
  for (const json& component : s["childComponents"]) names.push_back(component["name"]);
  // The canary's predictor is named for the canary; the place a field names outright keeps the name.
  CHECK(names == json::parse(R"(["canary-predictor", "explainer", "predictor", "transformer"])"));
  CHECK(s["childComponents"][2]["specDefinition"] ==
        json{{"podSpecPath", ".spec.predictor"}, {"metadataPath", ".spec.predictor"}});
  CHECK(s["childComponents"][2]["scaleDefinition"] ==
        json{{"replicasPath", ".spec.predictor.minReplicas // 1"}, {"minReplicasPath", ".spec.predictor.minReplicas"},
             {"maxReplicasPath", ".spec.predictor.maxReplicas"}});
  const json extensions =
      test::yaml(karta_object["metadata"]["annotations"]["karta-webhook.io/extensions"].get<std::string>());
  CHECK(extensions["components"]["predictor"]["additionalContainerPaths"] ==
        json::parse(R"([".spec.predictor.huggingface", ".spec.predictor.lightgbm", ".spec.predictor.model",
                        ".spec.predictor.onnx", ".spec.predictor.paddle", ".spec.predictor.pmml",
                        ".spec.predictor.pytorch", ".spec.predictor.sklearn", ".spec.predictor.tensorflow",
                        ".spec.predictor.triton", ".spec.predictor.xgboost"])"));
  CHECK(extensions["components"]["explainer"]["additionalContainerPaths"] == json::parse(R"([".spec.explainer.art"])"));
  CHECK(validated(draft)[0] == json::array());
}

TEST_CASE("the Notebook draft puts no labels in a template metadata the CRD does not declare, and validate refuses it") {
  const std::string draft = karta::draft_karta(crd("notebook.yaml"));
  const json pod = structure(draft)["childComponents"][0];
  CHECK(pod["specDefinition"] == json{{"podSpecPath", ".spec.template.spec"}});
  CHECK(draft.find("      # `.spec.template` is a pod template whose schema declares no `metadata.labels`: the API server\n"
                   "      # would prune labels put there, so its pod spec is described. If the operator copies the\n"
                   "      # object's own labels to its pods, add `metadataPath: .metadata`\n") != std::string::npos);
  CHECK(validated(draft) == json{json::array(), json::array()});
  // What the draft was before issue 61: a PodTemplateSpec at .spec.template, whose metadata the API server
  // prunes.
  std::string old = draft;
  const std::string spec_path = "podSpecPath: .spec.template.spec";
  if (const auto at = old.find(spec_path); at != std::string::npos)
    old.replace(at, spec_path.size(), "podTemplateSpecPath: .spec.template");
  CHECK(validated(old)[0] ==
        json{"spec.structureDefinition.childComponents[0].specDefinition.podTemplateSpecPath: `.spec.template` is a "
             "PodTemplateSpec whose schema declares no `metadata.labels`: the API server would prune the labels and "
             "annotations podTemplateSpecPath gives its pods (a structural schema keeps declared fields only); use "
             "podSpecPath `.spec.template.spec` with a metadataPath the schema declares"});
  // A metadataPath that names an object the schema declares without `labels` is refused the same way (it
  // passed validate before issue 61); one the schema does not declare at all is a missing field; the
  // object's own metadata holds labels.
  const std::string with_spec = "podSpecPath: .spec.template.spec";
  auto with_metadata = [&](const std::string& metadata_path) {
    std::string changed = draft;
    changed.replace(changed.find(with_spec), with_spec.size(), with_spec + "\n          metadataPath: " + metadata_path);
    return validated(changed)[0];
  };
  CHECK(with_metadata(".spec.template") ==
        json{"spec.structureDefinition.childComponents[0].specDefinition.metadataPath: `.spec.template` is an object "
             "whose schema declares no `labels`: the API server would prune the labels and annotations metadataPath "
             "gives its pods (a structural schema keeps declared fields only); name an object whose schema declares "
             "`labels`"});
  CHECK(with_metadata(".spec.template.metadata") ==
        json{"spec.structureDefinition.childComponents[0].specDefinition.metadataPath: `.spec.template.metadata` is "
             "not in Notebook's schema at `.spec.template`; `metadata` exists at `.metadata`"});
  CHECK(with_metadata(".metadata") == json::array());
}

TEST_CASE("a draft names the versions the CRD serves with the drafted version's schema its equivalentVersions") {
  const json notebook = crd("notebook.yaml");
  const std::string draft = karta::draft_karta(notebook);
  CHECK(draft.find("  annotations:\n"
                   "    # equivalentVersions: the CRD serves them with v1's schema: read as v1\n"
                   "    karta-webhook.io/extensions: |\n"
                   "      equivalentVersions: [v1alpha1, v1beta1]\n"
                   "spec:\n") != std::string::npos);
  CHECK(test::yaml(karta::draft_karta(notebook, "v1beta1"))["metadata"]["annotations"]["karta-webhook.io/extensions"] ==
        "equivalentVersions: [v1, v1alpha1]\n");
  CHECK(validated(draft)[0] == json::array());
  // RayCluster serves v1alpha1 with a schema of its own: no annotation.
  CHECK_FALSE(test::yaml(karta::draft_karta(crd("raycluster.yaml")))["metadata"].contains("annotations"));
}

TEST_CASE("a suspend boolean is found by what it does: a Rollout-like `.spec.paused`, or a description that says so") {
  json gizmo = test::document(test::source_dir() / "tests/data/generate/gizmo-crd.yaml");
  json& spec = gizmo["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
  spec.erase("suspend");
  spec["paused"] = {{"type", "boolean"}};
  CHECK(karta::draft_karta(gizmo).find(
            "      # `.spec.paused` is a boolean named for stopping the workload: set to suspend, cleared to resume\n"
            "      suspendDefinition:\n"
            "        suspendActions: [{path: .spec.paused, value: \"true\"}]\n"
            "        resumeActions: [{path: .spec.paused, value: \"false\"}]\n") != std::string::npos);
  spec.erase("paused");
  spec["hold"] = {{"type", "boolean"}, {"description", "Hold pauses the gizmo: its pods are deleted until cleared."}};
  CHECK(karta::draft_karta(gizmo).find("      # `.spec.hold` is a boolean whose description says it suspends or pauses "
                                       "the workload: set to suspend, cleared to resume\n") != std::string::npos);
  spec.erase("hold");
  CHECK(karta::draft_karta(gizmo).find("      # no suspendDefinition: `.spec` has no boolean named or described for "
                                       "suspending (suspend, paused, ...)\n") != std::string::npos);
}

TEST_CASE("status mappings come from the condition types a CRD lists, else the common ones, said to be assumed") {
  json gizmo = test::document(test::source_dir() / "tests/data/generate/gizmo-crd.yaml");
  json& status = gizmo["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"];
  status.erase("phase");
  std::string draft = karta::draft_karta(gizmo);
  CHECK(structure(draft)["rootComponent"]["statusDefinition"]["statusMappings"] == json::parse(R"({
    "failed": [{"byConditions": [{"type": "Failed", "status": "True"}]}],
    "completed": [{"byConditions": [{"type": "Complete", "status": "True"}]},
                  {"byConditions": [{"type": "Completed", "status": "True"}]},
                  {"byConditions": [{"type": "Succeeded", "status": "True"}]}],
    "suspended": [{"byConditions": [{"type": "Suspended", "status": "True"}]}],
    "running": [{"byConditions": [{"type": "Ready", "status": "True"}]},
                {"byConditions": [{"type": "Available", "status": "True"}]}]})"));
  CHECK(draft.find("        # assumed: the common condition types (Failed, Complete, Completed, Succeeded, Suspended, Ready, "
                   "Available)\n        # the schema lists no condition types: keep those the operator sets, drop the "
                   "others\n") != std::string::npos);
  status["conditions"]["items"]["properties"]["type"]["enum"] = {"Ready", "Failed", "Degraded"};
  draft = karta::draft_karta(gizmo);
  CHECK(structure(draft)["rootComponent"]["statusDefinition"]["statusMappings"] == json::parse(R"({
    "failed": [{"byConditions": [{"type": "Failed", "status": "True"}]}],
    "running": [{"byConditions": [{"type": "Ready", "status": "True"}]}]})"));
  CHECK(draft.find("        # the condition types the schema lists (Failed, Ready)\n") != std::string::npos);
  // Nothing to infer: said, and validate warns.
  status.erase("conditions");
  draft = karta::draft_karta(gizmo);
  CHECK(draft.find("        # fill in: the schema shows no conditions and no phase, so nothing says when the workload "
                   "runs, completes or fails; map them by hand,\n"
                   "        # e.g. running: [{byConditions: [{type: Ready, status: \"True\"}]}] or [{byPhase: Running}]\n"
                   "        statusMappings: {}\n") != std::string::npos);
  CHECK(validated(draft)[1] == json{kEmptyMappings, placeholder_warning(1, "acme.example.com"),
                                    "no CustomResourceDefinition known for acme.example.com/v1 Gizmo: paths not "
                                    "verified against a schema"});
}

TEST_CASE("a runtime or template kind runs no pods of its own: generate says so and drafts no workload") {
  json runtime = test::document(test::source_dir() / "tests/data/generate/gizmo-crd.yaml");
  runtime["metadata"]["name"] = "gizmoruntimes.acme.example.com";
  runtime["spec"]["names"] = {{"kind", "GizmoRuntime"}, {"plural", "gizmoruntimes"}, {"singular", "gizmoruntime"}};
  // A runtime reports nothing: no status.
  runtime["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"].erase("status");
  CHECK_THROWS_WITH(karta::draft_karta(runtime),
                    "CustomResourceDefinition gizmoruntimes.acme.example.com version v1: GizmoRuntime is a runtime "
                    "that other objects name (its name says so, and its schema has no status): it runs no pods "
                    "itself, so it is not drafted as a workload; draft the kind that names it");
  runtime["spec"]["names"]["kind"] = "GizmoTemplate";
  CHECK_THROWS_WITH(karta::draft_karta(runtime),
                    "CustomResourceDefinition gizmoruntimes.acme.example.com version v1: GizmoTemplate is a template "
                    "that other objects name (its name says so, and its schema has no status): it runs no pods "
                    "itself, so it is not drafted as a workload; draft the kind that names it");
}

TEST_CASE("the DynamoGraphDeployment v1alpha1 draft builds each service's pod from the service, extraPodSpec laid over, and counts multinode nodes") {
  // Before: a PodSpec at `.spec.services[]?.extraPodSpec`, Dynamo's own `resources` (with its GPUs) unread,
  // and one pod a replica: 0 GPUs where the catalog counts 2 and 16, 3 pods where it counts 5.
  const std::string draft = karta::draft_karta(crd("dynamographdeployment.yaml"), "v1alpha1");
  const json service = structure(draft)["childComponents"][0];
  CHECK(service["name"] == "service");
  CHECK(service["specDefinition"] == json::parse(R"({"fragmentedPodSpecDefinition": {
          "labelsPath": ".spec.services[]?.extraPodMetadata.labels",
          "annotationsPath": ".spec.services[]?.extraPodMetadata.annotations",
          "containerPath": ".spec.services[]?.extraPodSpec.mainContainer",
          "schedulerNamePath": ".spec.services[]?.extraPodSpec.schedulerName",
          "resourcesPath": ".spec.services[]?.resources",
          "nodeAffinityPath": ".spec.services[]?.extraPodSpec.affinity.nodeAffinity",
          "podAffinityPath": ".spec.services[]?.extraPodSpec.affinity.podAffinity",
          "priorityClassNamePath": ".spec.services[]?.extraPodSpec.priorityClassName"}})"));
  CHECK(service["scaleDefinition"] ==
        json{{"replicasPath", ".spec.services // {} | .[keys[]] | (.replicas // 1 | tonumber) * (if .multinode then "
                              ".multinode.nodeCount // 2 else 1 end | tonumber)"}});
  CHECK(draft.find("      # `.spec.services[]?` has `resources` of its own beside the PodSpec `extraPodSpec`: the operator "
                   "builds the pod\n      # from it and lays the PodSpec over, whose scheduling fields and container "
                   "are read there; unsure: check it\n") != std::string::npos);
  CHECK(draft.find("          # `.spec.services[]?.multinode.nodeCount` is the nodes of each replica, a pod each, when "
                   "`.spec.services[]?.multinode` is set; 2 when absent\n") != std::string::npos);
  const json extensions = test::yaml(test::yaml(draft)["metadata"]["annotations"]["karta-webhook.io/extensions"].get<std::string>());
  CHECK(extensions == json::parse(R"({"components": {"service": {
          "tolerationsPath": ".spec.services[]?.extraPodSpec.tolerations",
          "nodeSelectorPath": ".spec.services[]?.extraPodSpec.nodeSelector"}}})"));
  CHECK(validated(draft) == json{json::array(), json{placeholder_warning(0, "nvidia.com")}});
}

TEST_CASE("the NIMService draft counts a multi-node replica's pipeline stages, a pod each") {
  const json scale = structure(karta::draft_karta(crd("nimservice.yaml")))["childComponents"][0]["scaleDefinition"];
  CHECK(scale == json{{"replicasPath", "(.spec.replicas // 1 | tonumber) * (if .spec.multiNode then "
                                       ".spec.multiNode.parallelism.pipeline // 1 else 1 end | tonumber)"}});
}

TEST_CASE("the Milvus draft counts a component's groups instead of it when it has any") {
  // Before: the component's own replicas (4 pods where the catalog counts 12 on milvus-3.yaml).
  const json children = structure(karta::draft_karta(crd("milvus.yaml")))["childComponents"];
  std::map<std::string, json> scales;
  for (const json& child : children) scales[child["name"].get<std::string>()] = child["scaleDefinition"]["replicasPath"];
  CHECK(scales["proxy"] == "if (.spec.components.proxy.groups // [] | length) > 0 then ([.spec.components.proxy.groups[] "
                           "| .replicas // 1 | tonumber] | add) else .spec.components.proxy.replicas // 1 end");
  CHECK(scales["mixcoord"] == ".spec.components.mixCoord.replicas // 1");  // no groups of its own
  std::size_t grouped = 0;
  for (const auto& [name, path] : scales) grouped += path.get<std::string>().starts_with("if (");
  CHECK(grouped == 4);  // dataNode, proxy, queryNode, streamingNode
}

}  // namespace unit_generate_frameworks
