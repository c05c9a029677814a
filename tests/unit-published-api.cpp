// The published Karta API (run.ai/v1alpha1 Karta and its older form, ResourceInterface) read as it is:
// every definition the project ships is stored unchanged by the published CRD, the catalog in both forms
// validates against the real CRDs and drives the same mutation, the old dialect and the mistakes found in
// published definitions are refused with the field named, and the extensions annotation is read strictly.
#include <doctest/doctest.h>

#include <fstream>
#include <regex>

#include "admission/admission_service.h"
#include "definitions/api/published_api.h"
#include "k8s/openapi_schema.h"
#include "runtime/admission_state_loader.h"
#include "support/running_webhook.h"
#include "support/test_support.h"
#include "validate/definition_validation.h"

namespace unit_published_api {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;
namespace fs = std::filesystem;

namespace {

using Faults = std::vector<std::string>;

const karta::CrdSchemaSet& crds() {
  static const karta::CrdSchemaSet set = karta::CrdSchemaSet::load_directory(test::source_dir() / "tests/corpus/crds");
  return set;
}

karta::DefinitionReport check(const json& definition) {
  return karta::validate_definition(definition, [](const karta::GroupVersionKind& kind) { return crds().find(kind); });
}

json catalog_definition(const std::string& file) { return test::document(test::source_dir() / "definitions/catalog" / file); }

// The catalog files of the frameworks (the Kubernetes built-ins have no CRD to check against).
const std::vector<std::string> kFrameworks = {
    "jobset.x-k8s.io-jobset-v1alpha2.yaml",          "leaderworkerset.x-k8s.io-leaderworkerset-v1.yaml",
    "kubeflow.org-pytorchjob-v1.yaml",               "kubeflow.org-mpijob-v1.yaml",
    "kubeflow.org-mpijob-v2beta1.yaml",              "ray.io-raycluster-v1.yaml",
    "ray.io-rayjob-v1.yaml",                         "ray.io-rayservice-v1.yaml",
    "serving.kserve.io-inferenceservice-v1beta1.yaml", "serving.knative.dev-service-v1.yaml",
    "apps.nvidia.com-nimservice-v1alpha1.yaml",      "milvus.io-milvus-v1beta1.yaml",
    "grove.io-podcliqueset-v1alpha1.yaml",           "nvidia.com-dynamographdeployment-v1alpha1.yaml",
    "nvidia.com-dynamographdeployment-v1beta1.yaml", "serving.kserve.io-llminferenceservice-v1alpha1.yaml",
    "serving.kserve.io-llminferenceservice-v1alpha2.yaml", "agents.x-k8s.io-sandbox-v1beta1.yaml",
    // The kinds beyond Workload Map's catalog (issue 51).
    "batch.volcano.sh-job-v1alpha1.yaml",            "sparkoperator.k8s.io-sparkapplication-v1beta2.yaml",
    "trainer.kubeflow.org-trainjob-v1alpha1.yaml",   "argoproj.io-workflow-v1alpha1.yaml",
    "apps.nvidia.com-nimcache-v1alpha1.yaml",        "kubeflow.org-tfjob-v1.yaml",
    "kubeflow.org-xgboostjob-v1.yaml",               "kubeflow.org-paddlejob-v1.yaml",
    "kubeflow.org-jaxjob-v1.yaml",                   "kubeflow.org-notebook-v1.yaml"};

// The same definition in the older ResourceInterface form, which lacks suspendDefinition,
// gangScheduling.podGroup, componentTypeSelector.matchLabels and three statuses: the pod group becomes
// the deprecated podGroups[] with the same members, a matchLabels selector on one label becomes keyPath
// and value, and suspend is dropped (the older form cannot say it).
json as_resource_interface(json d) {
  d["apiVersion"] = "optimization.nvidia.com/v1alpha1";
  d["kind"] = "ResourceInterface";
  auto convert = [](json& component) {
    component.erase("suspendDefinition");
    if (component.contains("statusDefinition")) {
      for (const char* status : {"suspended", "suspending", "resuming"}) {
        component["statusDefinition"]["statusMappings"].erase(status);
      }
    }
    if (component.contains("podSelector") && component["podSelector"].contains("componentTypeSelector")) {
      json& selector = component["podSelector"]["componentTypeSelector"];
      if (selector.contains("matchLabels")) {
        REQUIRE_MESSAGE(!selector.contains("keyPath"), "cannot convert " << selector.dump());
        REQUIRE_MESSAGE(selector["matchLabels"].size() == 1, "cannot convert " << selector.dump());
        auto label = selector["matchLabels"].begin();
        selector = {{"keyPath", ".metadata.labels[\"" + label.key() + "\"]"}, {"value", label.value()}};
      }
    }
  };
  auto& structure = d["spec"]["structureDefinition"];
  convert(structure["rootComponent"]);
  if (structure.contains("childComponents")) {
    for (auto& child : structure["childComponents"]) convert(child);
  }
  if (d["spec"].contains("optimizationInstructions")) {
    json& gang = d["spec"]["optimizationInstructions"]["gangScheduling"];
    json group = gang["podGroup"];
    json members = json::array();
    for (const auto& sub : group.value("subGroups", json::array())) members.push_back({{"componentName", sub["componentName"]}});
    gang = {{"podGroups", json::array({{{"name", group["name"]}, {"members", members}}})}};
  }
  return d;
}

// Every Karta or ResourceInterface document the project ships, with where it is: the catalog, tests/data,
// examples/, and the YAML blocks of README.md and docs/ that are whole definitions.
std::vector<std::pair<std::string, json>> shipped_definitions() {
  std::vector<std::pair<std::string, json>> found;
  auto add_file = [&](const fs::path& file) {
    for (auto& d : test::documents(file)) {
      if (karta::is_definition_object(d.value)) found.emplace_back(d.source, std::move(d.value));
    }
  };
  for (const char* dir : {"definitions/catalog", "tests/data", "examples"}) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(test::source_dir() / dir)) {
      if (entry.path().extension() == ".yaml") files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) add_file(file);
  }
  for (const fs::path& doc : {test::source_dir() / "README.md", test::source_dir() / "docs/definitions.md",
                              test::source_dir() / "definitions/catalog/README.md"}) {
    std::ifstream in(doc);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    static const std::regex block("```yaml\n([\\s\\S]*?)```");
    int n = 0;
    for (std::sregex_iterator it(text.begin(), text.end(), block), end; it != end; ++it, ++n) {
      std::string body = (*it)[1];
      if (body.find("apiVersion: run.ai/v1alpha1") == std::string::npos &&
          body.find("apiVersion: optimization.nvidia.com/v1alpha1") == std::string::npos) continue;
      auto docs = karta::parse_documents(body, doc.filename().string() + " block " + std::to_string(n));
      for (auto& d : docs) found.emplace_back(d.source, std::move(d.value));
    }
  }
  return found;
}

json demo_jobset() { return test::document(test::source_dir() / "examples/jobset-demo.yaml"); }

json patch_of(const karta::AdmissionState& state, const json& object) {
  auto result = karta::AdmissionService::mutate(karta::request_for_object(object), state);
  return result.decision.patch.value();
}

}  // namespace

TEST_CASE("every definition the project ships is one the published CRD stores unchanged") {
  auto definitions = shipped_definitions();
  const auto karta_crd = karta::karta_schema();
  const auto resource_interface_crd = karta::resource_interface_schema();
  std::size_t karta = 0, docs = 0;
  for (auto& [source, d] : definitions) {
    CAPTURE(source);
    const json& schema = d["kind"] == "Karta" ? *karta_crd : *resource_interface_crd;
    CHECK(karta::validate_against_schema(schema, d) == std::vector<karta::SchemaViolation>{});
    json pruned = d;
    CHECK(karta::prune_unknown_fields(schema, pruned) == std::vector<std::string>{});
    CHECK(pruned == d);
    CHECK(karta::parse_karta_definition(d, source).faults == std::vector<karta::DefinitionFault>{});
    karta += d["kind"] == "Karta";
    docs += source.find(".md") != std::string::npos;
  }
  CHECK(karta == definitions.size());
  CHECK(definitions.size() == 35 + 1 + docs);  // the catalog, tests/data/trainer-karta.yaml, the docs
  CHECK(docs >= 1);
}

TEST_CASE("the frameworks' definitions validate against their real CRDs, in both published forms") {
  for (const auto& file : kFrameworks) {
    CAPTURE(file);
    json d = catalog_definition(file);
    auto report = check(d);
    CHECK(report.faults == Faults{});
    json ri = as_resource_interface(d);
    CHECK(karta::validate_against_schema(*karta::resource_interface_schema(), ri) == std::vector<karta::SchemaViolation>{});
    CHECK(check(ri).faults == Faults{});
  }
}

TEST_CASE("`karta-webhook validate` passes the catalog in both forms against tests/corpus/crds") {
  test::TempDir dir;
  for (const auto& file : kFrameworks) {
    std::ofstream(dir.path / ("ri-" + file + ".json")) << as_resource_interface(catalog_definition(file)).dump();
  }
  int code = -1;
  std::string out = test::run_command(test::binary_path().string() + " validate -f " +
                                          (test::source_dir() / "definitions/catalog/*.yaml").string() + " -f " +
                                          (dir.path / "*.json").string() + " --crds " +
                                          (test::source_dir() / "tests/corpus/crds").string(), &code);
  CHECK(code == 0);
  CHECK(out.find("with faults") != std::string::npos);
  CHECK(out.substr(out.rfind('\n', out.size() - 2) + 1) == "63 definitions, 0 with faults\n");
}

TEST_CASE("definitions loaded from a directory, in either form, drive the same patch as the built-in catalog") {
  test::TempDir dir;
  fs::create_directories(dir.path / "karta");
  fs::create_directories(dir.path / "ri");
  for (const auto& file : kFrameworks) {
    // Renamed, so that the built-in definition of the same text is not the one reused.
    json copy = catalog_definition(file);
    copy["metadata"]["name"] = "copy-" + copy["metadata"]["name"].get<std::string>();
    std::ofstream(dir.path / "karta" / (file + ".json")) << copy.dump();
    std::ofstream(dir.path / "ri" / (file + ".json")) << as_resource_interface(catalog_definition(file)).dump();
  }
  fs::copy_file(test::source_dir() / "examples/policy.yaml", dir.path / "example-policy.yaml");
  auto builtin = karta::AdmissionStateLoader({}, dir.path / "example-policy.yaml", 1).load();
  json expected = patch_of(*builtin, demo_jobset());
  CHECK(expected.size() == 9);
  for (const char* form : {"karta", "ri"}) {
    CAPTURE(form);
    auto state = karta::AdmissionStateLoader({dir.path / form}, dir.path / "example-policy.yaml", 1).load();
    const auto* jobset = state->catalog.find({"jobset.x-k8s.io", "v1alpha2", "JobSet"});
    REQUIRE(jobset != nullptr);
    CHECK(jobset->definition().source.rfind((dir.path / form).string(), 0) == 0);  // the directory's, not the built-in
    CHECK(jobset->definition().form == (std::string(form) == "ri" ? karta::DefinitionForm::ResourceInterface
                                                                    : karta::DefinitionForm::Karta));
    CHECK(patch_of(*state, demo_jobset()) == expected);
  }
  // The server starts on them and answers the same.
  test::RunningWebhook running([&](karta::WebhookConfig& config) {
    config.definition_directories = {dir.path / "ri"};
    config.policy_file = dir.path / "example-policy.yaml";
  });
  test::HttpsClient client(running.port, running.certificates.ca);
  CHECK(client.request("GET", "/readyz").status == 200);
  auto reply = client.request("POST", "/mutate", test::admission_review(demo_jobset()).dump());
  REQUIRE(reply.status == 200);
  CHECK(test::decoded_patch(json::parse(reply.body)) == expected);
}

TEST_CASE("a child component without a kind (a virtual component) is admitted and located") {
  json d = catalog_definition("jobset.x-k8s.io-jobset-v1alpha2.yaml");
  d["spec"]["structureDefinition"]["childComponents"][0].erase("kind");
  CHECK(check(d).faults == Faults{});
  auto parsed = karta::parse_karta_definition(d, "virtual");
  REQUIRE(parsed.definition);
  CHECK_FALSE(parsed.definition->children[0].kind.has_value());
  karta::AdmissionState state;
  state.catalog.add(karta::CompiledDefinition::compile(std::move(*parsed.definition), 1));
  state.policy = test::policy_from_yaml(karta::read_text_file(test::source_dir() / "examples/policy.yaml"));
  karta::AdmissionState builtin{test::builtin_catalog(), state.policy};
  CHECK(patch_of(state, demo_jobset()) == patch_of(builtin, demo_jobset()));
}

TEST_CASE("the old dialect is refused with the field named and the published spelling suggested") {
  const std::string status = "spec.structureDefinition.rootComponent.statusDefinition";
  const std::string child = "spec.structureDefinition.childComponents[0]";
  auto faults_of = [](const std::function<void(json&)>& change) {
    json d = catalog_definition("jobset.x-k8s.io-jobset-v1alpha2.yaml");
    change(d);
    return check(d).faults;
  };
  CHECK(faults_of([&](json& d) {
          auto& mappings = d["spec"]["structureDefinition"]["rootComponent"]["statusDefinition"]["statusMappings"];
          mappings["Running"] = mappings["running"];
          mappings.erase("running");
        }) == Faults{status + ".statusMappings.Running: unknown field; did you mean \"running\"?"});
  CHECK(faults_of([&](json& d) {
          d["spec"]["structureDefinition"]["rootComponent"]["statusDefinition"]["statusMappings"]["running"][0]
           ["byExpression"]["expectedResult"] = true;
        }) == Faults{status + ".statusMappings.running[0].byExpression.expectedResult: must be a string, not boolean"});
  CHECK(faults_of([&](json& d) {
          d["spec"]["structureDefinition"]["childComponents"][0]["podSelector"] = {
              {"labelSelector", {{"jobset.sigs.k8s.io/replicatedjob-name", "{{instance}}"}}}};
        }) == Faults{child + ".podSelector.labelSelector: unknown field"});
  CHECK(faults_of([&](json& d) {
          d["spec"]["structureDefinition"]["childComponents"][0]["specDefinition"]["additionalContainerPaths"] =
              json::array({".spec.x"});
        }) == Faults{child + ".specDefinition.additionalContainerPaths: unknown field"});
  CHECK(faults_of([&](json& d) {
          d["spec"]["structureDefinition"]["childComponents"][0]["podSelector"] = {
              {"componentTypeSelector", {{"value", "worker"}}}};
        }) == Faults{child + ".podSelector.componentTypeSelector: at least one of keyPath or matchLabels must be set",
                     child + ".podSelector.componentTypeSelector: value requires keyPath"});
  CHECK(faults_of([&](json& d) {
          d["spec"]["structureDefinition"]["rootComponent"]["suspendDefinition"]["suspendActions"] = json::array();
        }) == Faults{"spec.structureDefinition.rootComponent.suspendDefinition.suspendActions: must have at least 1 item"});
  CHECK(faults_of([&](json& d) {
          d["spec"]["structureDefinition"]["rootComponent"]["suspendDefinition"]["suspendActions"][0]["value"] = "yes";
        }) == Faults{"spec.structureDefinition.rootComponent.suspendDefinition.suspendActions[0].value: `yes` is not "
                     "JSON text (write \"true\", \"0\", \"\\\"paused\\\"\" or \"null\")"});
}

TEST_CASE("the published validator's rules refuse a broken definition with the field and the fault") {
  const std::string root = "spec.structureDefinition.rootComponent";
  const std::string child = "spec.structureDefinition.childComponents[0]";
  auto faults_of = [](const std::function<void(json&)>& change) {
    json d = catalog_definition("jobset.x-k8s.io-jobset-v1alpha2.yaml");
    change(d);
    return check(d).faults;
  };
  CHECK(faults_of([&](json& d) { d["spec"]["structureDefinition"]["rootComponent"].erase("kind"); }) ==
        Faults{root + ".kind: the root component needs a full kind: group, version and kind (only Pod has an empty group)"});
  CHECK(faults_of([&](json& d) { d["spec"]["structureDefinition"]["rootComponent"]["kind"]["group"] = ""; }) ==
        Faults{root + ".kind: the root component needs a full kind: group, version and kind (only Pod has an empty group)"});
  CHECK(faults_of([&](json& d) { d["spec"]["structureDefinition"]["rootComponent"]["kind"].erase("group"); }) ==
        Faults{root + ".kind.group: is required"});
  CHECK(faults_of([&](json& d) { d["spec"]["structureDefinition"]["rootComponent"].erase("statusDefinition"); }) ==
        Faults{root + ".statusDefinition: is required on the root component"});
  CHECK(faults_of([&](json& d) { d["spec"]["structureDefinition"]["rootComponent"]["ownerRef"] = "jobset"; }) ==
        Faults{root + ".ownerRef: the root component has no owner"});
  CHECK(faults_of([&](json& d) { d["spec"]["structureDefinition"]["childComponents"][0].erase("ownerRef"); }) ==
        Faults{child + ".ownerRef: is required on a child component (the name of its owner)"});
  CHECK(faults_of([&](json& d) { d["spec"]["structureDefinition"]["childComponents"][0]["ownerRef"] = "nobody"; }) ==
        Faults{child + ".ownerRef: \"nobody\" names no component"});
  CHECK(faults_of([&](json& d) {
          auto& children = d["spec"]["structureDefinition"]["childComponents"];
          children.push_back({{"name", "a"}, {"ownerRef", "b"}});
          children.push_back({{"name", "b"}, {"ownerRef", "a"}});
        }) == Faults{"spec.structureDefinition.childComponents[1].ownerRef: the ownership of \"a\" runs in a cycle",
                     "spec.structureDefinition.childComponents[2].ownerRef: the ownership of \"b\" runs in a cycle"});
  CHECK(faults_of([&](json& d) {
          json extra = d["spec"]["structureDefinition"]["childComponents"][0];
          d["spec"]["structureDefinition"]["childComponents"].push_back(extra);
        }) == Faults{"spec.structureDefinition.childComponents[1]: duplicate entry: name \"replicatedjob\" is already at [0]"});
  CHECK(faults_of([&](json& d) {
          d["spec"]["structureDefinition"]["childComponents"].push_back({{"name", "jobset"}, {"ownerRef", "replicatedjob"}});
        }) == Faults{"spec.structureDefinition.childComponents[1].name: \"jobset\" is already the name of " + root});
  CHECK(faults_of([&](json& d) {
          d["spec"]["structureDefinition"]["childComponents"][0]["specDefinition"]["podSpecPath"] =
              ".spec.replicatedJobs[].template.spec.template.spec";
        }) == Faults{child + ".specDefinition: holds more than one of podTemplateSpecPath, podSpecPath and "
                             "fragmentedPodSpecDefinition; a component has one pod spec definition"});
  CHECK(faults_of([&](json& d) { d["spec"]["structureDefinition"]["childComponents"][0].erase("podSelector"); }) ==
        Faults{child + ".podSelector: needs componentInstanceSelector with instanceIdPath (how a pod names its instance)"});
  CHECK(faults_of([&](json& d) { d["spec"]["structureDefinition"]["childComponents"][0].erase("instanceIdPath"); }) ==
        Faults{child + ".instanceIdPath: is required with podSelector.componentInstanceSelector"});
  CHECK(faults_of([&](json& d) {
          d["spec"]["optimizationInstructions"]["gangScheduling"]["podGroup"]["subGroups"][0]["componentName"] = "ghost";
        }) == Faults{"spec.optimizationInstructions.gangScheduling.podGroup.subGroups[0].componentName: \"ghost\" names "
                     "no component"});
  CHECK(faults_of([&](json& d) {
          d["spec"]["optimizationInstructions"]["gangScheduling"] = {
              {"podGroups", {{{"name", "g"}, {"members", {{{"componentName", "ghost"}}}}}}}};
        }) == Faults{"spec.optimizationInstructions.gangScheduling.podGroups[\"g\"].members[0].componentName: \"ghost\" "
                     "names no component"});
}

TEST_CASE("the older form refuses what only the Karta form has") {
  json ri = as_resource_interface(catalog_definition("jobset.x-k8s.io-jobset-v1alpha2.yaml"));
  json with_suspend = ri;
  with_suspend["spec"]["structureDefinition"]["rootComponent"]["suspendDefinition"] =
      catalog_definition("jobset.x-k8s.io-jobset-v1alpha2.yaml")["spec"]["structureDefinition"]["rootComponent"]["suspendDefinition"];
  CHECK(check(with_suspend).faults == Faults{"spec.structureDefinition.rootComponent.suspendDefinition: unknown field; "
                                            "did you mean \"specDefinition\"?"});
  json with_status = ri;
  with_status["spec"]["structureDefinition"]["rootComponent"]["statusDefinition"]["statusMappings"]["suspended"] =
      json::array({{{"byPhase", "Suspended"}}});
  CHECK(check(with_status).faults ==
        Faults{"spec.structureDefinition.rootComponent.statusDefinition.statusMappings.suspended: unknown field"});
}

TEST_CASE("the two mistakes found in published definitions are refused, naming the field and the fix") {
  // RayJob: the worker groups are under .spec.rayClusterSpec.
  json rayjob = catalog_definition("ray.io-rayjob-v1.yaml");
  std::string field;
  auto& children = rayjob["spec"]["structureDefinition"]["childComponents"];
  for (std::size_t i = 0; i < children.size(); ++i) {
    if (children[i]["name"] == "worker") {
      children[i]["instanceIdPath"] = ".spec.workerGroupSpecs[].groupName";
      field = "spec.structureDefinition.childComponents[" + std::to_string(i) + "].instanceIdPath";
    }
  }
  REQUIRE(!field.empty());
  CHECK(check(rayjob).faults == Faults{field + ": `.spec.workerGroupSpecs` is not in RayJob's schema at `.spec`; "
                                               "`workerGroupSpecs` exists at `.spec.rayClusterSpec.workerGroupSpecs`"});
  // Milvus: a component holds the pod's fields inline and has no template (a definition as written for
  // Workload Map, without our extensions annotation).
  json milvus = catalog_definition("milvus.io-milvus-v1beta1.yaml");
  milvus["metadata"].erase("annotations");
  json& first = milvus["spec"]["structureDefinition"]["childComponents"][0];
  first["specDefinition"] = {{"podTemplateSpecPath", ".spec.components.queryNode.template"}};
  CHECK(check(milvus).faults ==
        Faults{"spec.structureDefinition.childComponents[0].specDefinition.podTemplateSpecPath: "
               "`.spec.components.queryNode.template` is not in Milvus's schema at `.spec.components.queryNode`; "
               "`.spec.components.queryNode` holds the pod's fields inline (resources, tolerations, nodeSelector, "
               "affinity, schedulerName, priorityClassName, podLabels, podAnnotations) and has no pod template: "
               "describe it with fragmentedPodSpecDefinition (for example resourcesPath: "
               "`.spec.components.queryNode.resources`)"});
}

TEST_CASE("paths evaluated on pods are checked against the core Pod schema and the jq allow-list") {
  const std::string child = "spec.structureDefinition.childComponents[0]";
  json d = catalog_definition("jobset.x-k8s.io-jobset-v1alpha2.yaml");
  d["spec"]["structureDefinition"]["childComponents"][0]["podSelector"]["componentInstanceSelector"]["idPath"] =
      ".metadata.lables[\"jobset.sigs.k8s.io/replicatedjob-name\"]";
  CHECK(check(d).faults == Faults{child + ".podSelector.componentInstanceSelector.idPath: `.metadata.lables` is not in "
                                          "Pod's schema at `.metadata`; did you mean `labels`?"});
  d["spec"]["structureDefinition"]["childComponents"][0]["podSelector"]["componentInstanceSelector"]["idPath"] = "env.HOME";
  CHECK(check(d).faults == Faults{child + ".podSelector.componentInstanceSelector.idPath: env.HOME: `env` is not allowed: "
                                          "it would expose the webhook's environment"});
  json deprecated = catalog_definition("jobset.x-k8s.io-jobset-v1alpha2.yaml");
  deprecated["spec"]["optimizationInstructions"]["gangScheduling"] = {
      {"podGroups",
       {{{"name", "g"},
         {"members",
          {{{"componentName", "replicatedjob"},
            {"filters", {"(.spec.containers[0].resources.limits[\"nvidia.com/gpu\"] // 0) > 0", ".spec.nodeNme != null"}},
            {"groupByKeyPaths", {".metadata.labels[\"jobset.sigs.k8s.io/job-index\"]", ".status.phaze"}}}}}}}}};
  const std::string member = "spec.optimizationInstructions.gangScheduling.podGroups[0].members[0]";
  CHECK(check(deprecated).faults ==
        Faults{member + ".filters[1]: `.spec.nodeNme` is not in Pod's schema at `.spec`; did you mean `nodeName`?",
               member + ".groupByKeyPaths[1]: `.status.phaze` is not in Pod's schema at `.status`; did you mean `phase`?"});
  // Suspend paths and status paths are walked through the workload's CRD.
  json suspend = catalog_definition("jobset.x-k8s.io-jobset-v1alpha2.yaml");
  suspend["spec"]["structureDefinition"]["rootComponent"]["suspendDefinition"]["resumeActions"][0]["path"] = ".spec.suspnd";
  suspend["spec"]["structureDefinition"]["rootComponent"]["statusDefinition"]["conditionsDefinition"]["path"] =
      ".status.condition";
  CHECK(check(suspend).faults ==
        Faults{"spec.structureDefinition.rootComponent.statusDefinition.conditionsDefinition.path: `.status.condition` "
               "is not in JobSet's schema at `.status`; did you mean `conditions`?",
               "spec.structureDefinition.rootComponent.suspendDefinition.resumeActions[0].path: `.spec.suspnd` is not in "
               "JobSet's schema at `.spec`; did you mean `suspend`?"});
}

TEST_CASE("the extensions annotation is read strictly, and its paths are checked like the spec's") {
  const std::string where = "metadata.annotations[\"karta-webhook.io/extensions\"]";
  auto faults_with = [](const std::string& file, const std::string& annotation) {
    json d = catalog_definition(file);
    d["metadata"]["annotations"]["karta-webhook.io/extensions"] = annotation;
    return check(d).faults;
  };
  const std::string milvus = "milvus.io-milvus-v1beta1.yaml";
  CHECK(faults_with(milvus, "components:\n  querynode:\n    tolerationPath: .spec.components.queryNode.tolerations\n") ==
        Faults{where + ".components.querynode.tolerationPath: unknown field; did you mean \"tolerationsPath\"?"});
  CHECK(faults_with(milvus, "components:\n  ghost:\n    tolerationsPath: .spec.x\n") ==
        Faults{where + ".components.ghost: names no component of this definition"});
  CHECK(faults_with(milvus, "components: [") ==
        Faults{where + ": is not valid YAML (its value line 1 column 1: end of sequence flow not found)"});
  CHECK(faults_with("jobset.x-k8s.io-jobset-v1alpha2.yaml",
                    "components:\n  replicatedjob:\n    tolerationsPath: .spec.x\n") ==
        Faults{where + ".components.replicatedjob: tolerationsPath and nodeSelectorPath go with a "
                       "fragmentedPodSpecDefinition only (a pod template or pod spec has its own)"});
  auto faults = faults_with(milvus, "components:\n  querynode:\n    tolerationsPath: .spec.components.queryNode.tolerashuns\n");
  CHECK(faults == Faults{where + ".components.querynode.tolerationsPath: `.spec.components.queryNode.tolerashuns` is "
                                 "not in Milvus's schema at `.spec.components.queryNode`; did you mean `tolerations`?"});
  // The catalog's own annotation is read: the paths end up where the mutation uses them.
  auto parsed = karta::parse_karta_definition(catalog_definition(milvus), milvus);
  REQUIRE(parsed.definition);
  const auto* querynode = parsed.definition->find_component("querynode");
  REQUIRE(querynode != nullptr);
  REQUIRE(querynode->spec->fragmented->tolerations);
  CHECK(querynode->spec->fragmented->tolerations->expression == ".spec.components.queryNode.tolerations");
  CHECK(querynode->spec->fragmented->tolerations->field == where + ".components.querynode.tolerationsPath");
}

TEST_CASE("a definitions file that is not YAML is refused with its file, line and column") {
  test::TempDir dir;
  std::ofstream(dir.path / "broken.yaml") << "apiVersion: run.ai/v1alpha1\nkind: Karta\nspec: {structureDefinition: [\n";
  int code = 0;
  std::string out = test::run_command(test::binary_path().string() + " validate -f " + (dir.path / "broken.yaml").string(), &code);
  CHECK(code == 1);
  CHECK(out == "karta-webhook: " + (dir.path / "broken.yaml").string() + " line 4 column 1: end of sequence flow not found\n");
  CHECK_THROWS_WITH_AS(karta::AdmissionStateLoader({dir.path}, {}, 1).load(),
                       ((dir.path / "broken.yaml").string() + " line 4 column 1: end of sequence flow not found").c_str(),
                       karta::InputError);
}

TEST_CASE("definitions from --definitions get the checks a cluster's Karta gets: unsafe jq refuses the load") {
  test::TempDir dir;
  json d = catalog_definition("jobset.x-k8s.io-jobset-v1alpha2.yaml");
  d["spec"]["structureDefinition"]["childComponents"][0]["instanceIdPath"] = "env.HOME";
  std::ofstream(dir.path / "jobset.json") << d.dump();
  const std::string expected = "invalid Karta definition:\n  " + (dir.path / "jobset.json").string() +
                               "#0: spec.structureDefinition.childComponents[0].instanceIdPath: env.HOME: `env` is not "
                               "allowed: it would expose the webhook's environment";
  CHECK_THROWS_WITH_AS(karta::AdmissionStateLoader({dir.path}, {}, 1).load(), expected.c_str(), karta::InputError);
  // On a terminal, a fault a line, each escaped on its own: no literal "\n" between them, and what the file
  // name holds (an ESC here) cannot start a line of its own or move the cursor.
  {
    test::TempDir hostile;
    std::ofstream(hostile.path / "job\x1b[2Jset.yaml") << d.dump() << "\n---\n" << d.dump() << "\n";
    int code = 0;
    const std::string err = test::run_command(test::binary_path().string() + " mutate --definitions '" +
                                                  hostile.path.string() + "' -f '" +
                                                  (test::source_dir() / "examples/jobset-demo.yaml").string() + "'",
                                              &code);
    CHECK(code == 1);
    const std::string fault = ": spec.structureDefinition.childComponents[0].instanceIdPath: env.HOME: `env` is not "
                              "allowed: it would expose the webhook's environment";
    const std::string file = (hostile.path / "job^[[2Jset.yaml").string();
    CHECK(err == "karta-webhook: invalid Karta definition:\n  " + file + "#0" + fault + "\n  " + file + "#1" + fault + "\n");
  }
  // With the CRDs known, paths are checked against them too.
  d["spec"]["structureDefinition"]["childComponents"][0]["instanceIdPath"] = ".spec.replicatedJob[].name";
  std::ofstream(dir.path / "jobset.json") << d.dump();
  CHECK_THROWS_WITH_AS(karta::AdmissionStateLoader({dir.path}, {}, 1, {test::source_dir() / "tests/corpus/crds"}).load(),
                       ("invalid Karta definition:\n  " + (dir.path / "jobset.json").string() +
                        "#0: spec.structureDefinition.childComponents[0].instanceIdPath: `.spec.replicatedJob` is not in "
                        "JobSet's schema at `.spec`; did you mean `replicatedJobs`?").c_str(),
                       karta::InputError);
  // Without them, the definition loads (its paths are not verified).
  CHECK(karta::AdmissionStateLoader({dir.path}, {}, 1).load()->catalog.find({"jobset.x-k8s.io", "v1alpha2", "JobSet"}) !=
        nullptr);
}

}  // namespace unit_published_api
