// Structural-schema validation, defaulting and pruning (k8s/openapi_schema.h) against the published
// Karta and ResourceInterface CRDs compiled into the binary (definitions/api/published_api.h); what those
// CRDs do not use is tested on small schemas in unit-openapi-schema-keywords.cpp.

#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "definitions/api/published_api.h"
#include "definitions/catalog.h"
#include "json/documents.h"
#include "k8s/openapi_schema.h"
#include "support/schema_violations.h"
#include "support/test_support.h"

namespace unit_openapi_schema {  // this file's names, apart from other tests' in a unity build

using karta::apply_schema_defaults;
using karta::evaluate_validation_rule;
using karta::json;
using karta::prune_unknown_fields;
using karta::validate_against_schema;
using karta::test::Fields;
using karta::test::lines;
using karta::test::Violations;

namespace {

// A Karta with only its required fields, for tests that add one thing to it.
json minimal_karta() {
  return karta::test::yaml(R"(
apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: minimal}
spec:
  structureDefinition:
    rootComponent:
      name: root
      kind: {group: example.com, version: v1, kind: Widget}
)");
}

json& root_component(json& karta) { return karta["spec"]["structureDefinition"]["rootComponent"]; }

// A JobSet-like Karta using every section of the published schema.
json full_karta() {
  return karta::test::yaml(R"(
apiVersion: run.ai/v1alpha1
kind: Karta
metadata:
  name: jobset
  labels: {app.kubernetes.io/name: karta}
  annotations: {example.com/owner: "team-a"}
spec:
  structureDefinition:
    rootComponent:
      name: jobset
      kind: {group: jobset.x-k8s.io, version: v1alpha2, kind: JobSet}
      statusDefinition:
        conditionsDefinition:
          path: .status.conditions
          typeFieldName: type
          statusFieldName: status
          messageFieldName: message
          reasonFieldName: reason
        phaseDefinition: {path: .status.phase}
        statusMappings:
          initializing: [{byConditions: [{type: StartupPolicyInProgress, status: "True"}]}]
          running: [{byPhase: Running}]
          completed: [{byConditions: [{type: Completed, status: "True", reason: AllJobsCompleted}]}]
          failed: [{byConditions: [{type: Failed, status: "True"}]}]
          degraded: [{byExpression: {expression: '.status.restarts > 0', expectedResult: "true"}}]
          suspended: [{byConditions: [{type: Suspended, status: "True"}]}]
          suspending: [{byPhase: Suspending}]
          resuming: [{byPhase: Resuming}]
      suspendDefinition:
        suspendActions: [{path: .spec.suspend, value: "true"}]
        resumeActions: [{path: .spec.suspend, value: "false"}]
    childComponents:
      - name: replicatedjob
        kind: {group: batch, version: v1, kind: Job}
        ownerRef: jobset
        instanceIdPath: .metadata.labels["jobset.sigs.k8s.io/replicatedjob-name"]
        specDefinition:
          podTemplateSpecPath: .spec.replicatedJobs[].template.spec.template
        scaleDefinition:
          replicasPath: .spec.replicatedJobs[].replicas
          minReplicasPath: .spec.replicatedJobs[].minReplicas
          maxReplicasPath: .spec.replicatedJobs[].maxReplicas
        podSelector:
          componentTypeSelector:
            keyPath: .metadata.labels["jobset.sigs.k8s.io/replicatedjob-name"]
            value: worker
          componentInstanceSelector: {idPath: '.metadata.labels["jobset.sigs.k8s.io/job-index"]'}
          replicaSelector: {keyPath: '.metadata.labels["batch.kubernetes.io/job-completion-index"]'}
      - name: pod
        kind: {group: "", version: v1, kind: Pod}
        ownerRef: replicatedjob
        specDefinition:
          podSpecPath: .spec
          metadataPath: .metadata
          fragmentedPodSpecDefinition:
            labelsPath: .metadata.labels
            annotationsPath: .metadata.annotations
            schedulerNamePath: .spec.schedulerName
            resourcesPath: .spec.containers[].resources
            resourceClaimsPath: .spec.resourceClaims
            podAffinityPath: .spec.affinity.podAffinity
            nodeAffinityPath: .spec.affinity.nodeAffinity
            containersPath: .spec.containers
            containerPath: .spec.containers[0]
            priorityClassNamePath: .spec.priorityClassName
            imagePath: .spec.containers[0].image
        podSelector:
          componentTypeSelector:
            matchLabels: {jobset.sigs.k8s.io/jobset-name: demo}
    additionalChildKinds:
      - {group: "", version: v1, kind: Service}
  optimizationInstructions:
    gangScheduling:
      podGroup:
        name: jobset
        topology: {topologyName: default, requiredTopologyLevel: rack, preferredTopologyLevel: host}
        subGroups:
          - componentName: replicatedjob
            topology: {topologyName: default, requiredTopologyLevel: rack, preferredTopologyLevel: host}
      podGroups:
        - name: workers
          members:
            - componentName: pod
              filters: ['(.spec.containers[0].resources.limits["nvidia.com/gpu"] // 0) > 0']
              groupByKeyPaths: ['.metadata.labels["jobset.sigs.k8s.io/replicatedjob-name"]', .status.phase]
status:
  conditions:
    - type: Accepted
      status: "True"
      reason: Valid
      message: accepted
      lastTransitionTime: "2025-01-01T00:00:00Z"
      observedGeneration: 1
)");
}

// The x-kubernetes-validations of every place of `schema`, with the place's schema.
void each_rule_place(const json& schema, const std::function<void(const json&)>& visit) {
  if (!schema.is_object()) return;
  if (schema.contains("x-kubernetes-validations")) visit(schema);
  if (auto it = schema.find("properties"); it != schema.end()) {
    for (const auto& [name, property] : it->items()) each_rule_place(property, visit);
  }
  for (const char* key : {"items", "additionalProperties", "not"}) {
    if (auto it = schema.find(key); it != schema.end()) each_rule_place(*it, visit);
  }
  for (const char* key : {"allOf", "anyOf", "oneOf"}) {
    if (auto it = schema.find(key); it != schema.end() && it->is_array()) {
      for (const auto& part : *it) each_rule_place(part, visit);
    }
  }
}

// An object holding every property of `schema` (strings, objects, lists: enough for has()).
json with_every_field(const json& schema) {
  json object = json::object();
  if (auto it = schema.find("properties"); it != schema.end()) {
    for (const auto& [name, property] : it->items()) {
      std::string type = property.value("type", "string");
      object[name] = type == "object" ? json::object() : type == "array" ? json::array() : json("x");
    }
  }
  return object;
}

std::string file_text(const std::filesystem::path& path) { return karta::read_text_file(path); }

}  // namespace

TEST_CASE("openapi schema: the published schemas are parsed when asked for and kept only while held") {
  std::weak_ptr<const json> first = karta::karta_schema();
  CHECK(first.expired());  // nobody held it: not kept
  std::weak_ptr<const json> held;
  {
    const karta::PublishedSchemaHold outer;
    held = karta::karta_schema();
    REQUIRE_FALSE(held.expired());
    {
      const karta::PublishedSchemaHold inner;
      CHECK(karta::karta_schema() == held.lock());  // the same parse, not a second one
    }
    CHECK(karta::karta_schema() == held.lock());  // the outer hold still keeps it
    std::weak_ptr<const json> other = karta::resource_interface_schema();
    CHECK_FALSE(other.expired());
    CHECK(other.lock() != held.lock());
  }
  CHECK(held.expired());  // the last hold gone: dropped
  // A holder of the pointer keeps its schema after the hold has gone.
  std::shared_ptr<const json> kept;
  {
    const karta::PublishedSchemaHold hold;
    kept = karta::karta_schema();
  }
  CHECK((*kept)["properties"]["spec"]["required"] == json::array({"structureDefinition"}));
  CHECK(karta::karta_schema() != kept);
}

TEST_CASE("openapi schema: a loaded catalog keeps no published schema") {
  const karta::Catalog catalog = karta::load_catalog(karta::CatalogSources{});
  CHECK(catalog.size() == 35);  // the built-in catalog
  std::weak_ptr<const json> after = karta::karta_schema();
  CHECK(after.expired());  // parsed anew for this call, and dropped with it: the loading held none back
}

TEST_CASE("openapi schema: the published schemas are the single served versions") {
  CHECK((*karta::karta_schema())["properties"]["spec"]["required"] == json::array({"structureDefinition"}));
  CHECK((*karta::resource_interface_schema())["properties"]["spec"]["properties"].contains("structureDefinition"));
  CHECK(validate_against_schema(*karta::karta_schema(), minimal_karta()).empty());
}

TEST_CASE("openapi schema: a full Karta is valid, and keeps every field") {
  json karta = full_karta();
  CHECK(validate_against_schema(*karta::karta_schema(), karta) == Violations{});
  json pruned = karta;
  CHECK(lines(prune_unknown_fields(*karta::karta_schema(), pruned)) == lines(Fields{}));
  CHECK(pruned == karta);
}

TEST_CASE("openapi schema: unknown fields, with near misses suggested") {
  json karta = minimal_karta();
  root_component(karta)["podTemplatePath"] = ".spec.template";
  root_component(karta)["specDefinition"] = {{"podTemplatePath", ".spec.template"}};
  karta["spec"]["structureDefinition"]["childComponents"] =
      json::array({{{"name", "pod"}, {"specDefinition", {{"podSpecPath", ".spec"}, {"tolerationsPath", ".spec.x"}}}}});
  CHECK(validate_against_schema(*karta::karta_schema(), karta) ==
        Violations{
            {"spec.structureDefinition.childComponents[0].specDefinition.tolerationsPath", "unknown field"},
            {"spec.structureDefinition.rootComponent.podTemplatePath", "unknown field"},
            {"spec.structureDefinition.rootComponent.specDefinition.podTemplatePath",
             "unknown field; did you mean \"podTemplateSpecPath\"?"},
        });
}

TEST_CASE("openapi schema: the componentTypeSelector rules report their messages") {
  json karta = minimal_karta();
  root_component(karta)["podSelector"] = {{"componentTypeSelector", {{"value", "x"}}}};
  CHECK(validate_against_schema(*karta::karta_schema(), karta) ==
        Violations{
            {"spec.structureDefinition.rootComponent.podSelector.componentTypeSelector",
             "at least one of keyPath or matchLabels must be set"},
            {"spec.structureDefinition.rootComponent.podSelector.componentTypeSelector", "value requires keyPath"},
        });

  root_component(karta)["podSelector"] = {
      {"componentTypeSelector", {{"keyPath", ""}, {"matchLabels", json::object()}}}};
  CHECK(validate_against_schema(*karta::karta_schema(), karta) ==
        Violations{
            {"spec.structureDefinition.rootComponent.podSelector.componentTypeSelector.keyPath",
             "must be at least 1 character long"},
            {"spec.structureDefinition.rootComponent.podSelector.componentTypeSelector.matchLabels",
             "must have at least 1 field"},
        });
}

TEST_CASE("openapi schema: limits, required fields and types") {
  json karta = minimal_karta();
  root_component(karta)["suspendDefinition"] = {{"suspendActions", json::array()},
                                                {"resumeActions", json::array({{{"path", ".spec.suspend"}}})}};
  root_component(karta)["statusDefinition"] = {{"phaseDefinition", {{"path", ".status.phase"}}}};
  root_component(karta)["name"] = 3;
  CHECK(validate_against_schema(*karta::karta_schema(), karta) ==
        Violations{
            {"spec.structureDefinition.rootComponent.name", "must be a string, not number"},
            {"spec.structureDefinition.rootComponent.statusDefinition.statusMappings", "is required"},
            {"spec.structureDefinition.rootComponent.suspendDefinition.resumeActions[0].value", "is required"},
            {"spec.structureDefinition.rootComponent.suspendDefinition.suspendActions", "must have at least 1 item"},
        });
}

TEST_CASE("openapi schema: an expectedResult must be a string") {
  json karta = minimal_karta();
  root_component(karta)["statusDefinition"] = karta::test::yaml(R"(
statusMappings:
  running: [{byExpression: {expression: .status.ready, expectedResult: true}}]
)");
  CHECK(validate_against_schema(*karta::karta_schema(), karta) ==
        Violations{{"spec.structureDefinition.rootComponent.statusDefinition.statusMappings.running[0].byExpression."
                    "expectedResult",
                    "must be a string, not boolean"}});
}

TEST_CASE("openapi schema: list-type map and set duplicates") {
  json karta = full_karta();
  auto& children = karta["spec"]["structureDefinition"]["childComponents"];
  children[1]["name"] = "replicatedjob";
  children[1].erase("podSelector");
  auto& members = karta["spec"]["optimizationInstructions"]["gangScheduling"]["podGroups"][0]["members"];
  members[0]["componentName"] = "replicatedjob";
  members[0]["filters"] = json::array({".a", ".b", ".a"});
  CHECK(
      validate_against_schema(*karta::karta_schema(), karta) ==
      Violations{
          {"spec.optimizationInstructions.gangScheduling.podGroups[0].members[0].filters[2]",
           "duplicate entry: the same as [0]"},
          {"spec.structureDefinition.childComponents[1]", "duplicate entry: name \"replicatedjob\" is already at [0]"},
      });
}

TEST_CASE("openapi schema: defaults are filled in where the parent exists") {
  json karta = full_karta();
  auto& conditions = root_component(karta)["statusDefinition"]["conditionsDefinition"];
  conditions = {{"path", ".status.conditions"}};
  json child = karta["spec"]["structureDefinition"]["childComponents"][0];
  apply_schema_defaults(*karta::karta_schema(), karta);
  CHECK(root_component(karta)["statusDefinition"]["conditionsDefinition"] == json{{"path", ".status.conditions"},
                                                                                  {"typeFieldName", "type"},
                                                                                  {"statusFieldName", "status"},
                                                                                  {"messageFieldName", "message"},
                                                                                  {"reasonFieldName", "reason"}});
  // No statusDefinition in the child: nothing is made up there.
  CHECK(karta["spec"]["structureDefinition"]["childComponents"][0] == child);

  json bare = minimal_karta();
  json before = bare;
  apply_schema_defaults(*karta::karta_schema(), bare);
  CHECK(bare == before);
}

TEST_CASE("openapi schema: a null that is not nullable is removed, or replaced by the place's default, as the API server does") {
  // Fields, map values and list entries alike (apiextensions-apiserver: PruneNonNullableNullsWithoutDefaults,
  // then Default); a nullable null stays, and so does a null the schema does not describe.
  const json schema = json::parse(R"({"type":"object","properties":{
      "plain":{"type":"string"},
      "named":{"type":"string","default":"reason"},
      "optional":{"type":"string","nullable":true},
      "open":{"type":"object","x-kubernetes-preserve-unknown-fields":true},
      "map":{"type":"object","additionalProperties":{"type":"string","default":"x"}},
      "bare":{"type":"object","additionalProperties":{"type":"string"}},
      "list":{"type":"array","items":{"type":"integer","default":1}},
      "nested":{"type":"object","properties":{"inner":{"type":"string"},"kept":{"type":"string","default":"k"}}}}})");
  json object = json::parse(R"({"plain":null,"named":null,"optional":null,"open":{"anything":null},
      "map":{"a":null,"b":"set"},"bare":{"a":null},"list":[null,2],"nested":{"inner":null,"kept":null}})");
  apply_schema_defaults(schema, object);
  CHECK(object == json::parse(R"({"named":"reason","optional":null,"open":{"anything":null},
      "map":{"a":"x","b":"set"},"bare":{},"list":[1,2],"nested":{"kept":"k"}})"));
  CHECK(validate_against_schema(schema, object) == std::vector<karta::SchemaViolation>{});
}

TEST_CASE("openapi schema: pruning removes a field of an old dialect and says so") {
  json karta = full_karta();
  auto& fragmented =
      karta["spec"]["structureDefinition"]["childComponents"][1]["specDefinition"]["fragmentedPodSpecDefinition"];
  fragmented["tolerationsPath"] = ".spec.tolerations";
  json expected = full_karta();
  CHECK(lines(prune_unknown_fields(*karta::karta_schema(), karta)) ==
        lines(Fields{"spec.structureDefinition.childComponents[1].specDefinition.fragmentedPodSpecDefinition."
                     "tolerationsPath"}));
  CHECK(karta == expected);
}

TEST_CASE("openapi schema: every rule of the published CRDs is supported") {
  int rules = 0;
  for (const auto& schema : {karta::karta_schema(), karta::resource_interface_schema()}) {
    each_rule_place(*schema, [&](const json& place) {
      for (const auto& rule : place["x-kubernetes-validations"]) {
        ++rules;
        const std::string text = rule["rule"].get<std::string>();
        CAPTURE(text);
        CHECK(evaluate_validation_rule(text, json::object()).has_value());
        CHECK(evaluate_validation_rule(text, with_every_field(place)) == std::optional<bool>(true));
      }
      for (const json& object : {json::object(), with_every_field(place)}) {
        for (const auto& violation : validate_against_schema(place, object)) {
          CHECK_MESSAGE(violation.message.rfind("rule not supported", 0) != 0, violation.to_string());
        }
      }
    });
  }
  CHECK(rules == 4);  // the two componentTypeSelector rules, in rootComponent and in childComponents
}

TEST_CASE("openapi schema: the ResourceInterface schema has no suspend") {
  json ri = karta::test::yaml(R"(
apiVersion: optimization.nvidia.com/v1alpha1
kind: ResourceInterface
metadata: {name: old}
spec:
  structureDefinition:
    rootComponent:
      name: root
      kind: {group: example.com, version: v1, kind: Widget}
      suspendDefinition:
        suspendActions: [{path: .spec.suspend, value: "true"}]
        resumeActions: [{path: .spec.suspend, value: "false"}]
      statusDefinition:
        statusMappings:
          running: [{byPhase: Running}]
          suspended: [{byPhase: Suspended}]
)");
  CHECK(validate_against_schema(*karta::resource_interface_schema(), ri) ==
        Violations{
            {"spec.structureDefinition.rootComponent.statusDefinition.statusMappings.suspended", "unknown field"},
            {"spec.structureDefinition.rootComponent.suspendDefinition",
             "unknown field; did you mean \"specDefinition\"?"},
        });
  ri["kind"] = "Karta";
  ri["apiVersion"] = "run.ai/v1alpha1";
  CHECK(validate_against_schema(*karta::karta_schema(), ri) == Violations{});
}

TEST_CASE("openapi schema: the core v1 Pod schema") {
  const json& pod = karta::core_pod_schema();
  CHECK(pod["type"] == "object");
  CHECK(pod["properties"]["spec"]["properties"]["containers"]["items"]["properties"].contains("resources"));
  CHECK(pod["properties"]["metadata"]["properties"]["labels"]["additionalProperties"]["type"] == "string");
  CHECK(pod["properties"]["status"]["properties"].contains("phase"));
  CHECK(pod.dump().find("\"description\"") == std::string::npos);

  json sample = karta::test::yaml(R"(
apiVersion: v1
kind: Pod
metadata:
  name: worker-0
  labels: {jobset.sigs.k8s.io/replicatedjob-name: workers}
  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: workers-0, uid: u-1, controller: true}]
spec:
  containers:
    - name: main
      image: trainer:1
      resources: {limits: {nvidia.com/gpu: 8, memory: 16Gi}}
status:
  phase: Running
  conditions: [{type: Ready, status: "True"}]
  containerStatuses:
    - {name: main, ready: true, restartCount: 0, image: trainer:1, imageID: sha, state: {running: {}}}
)");
  CHECK(validate_against_schema(pod, sample) == Violations{});
  sample["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "eight";
  sample["status"]["phase"] = "Started";
  const json& quantity = pod["properties"]["spec"]["properties"]["containers"]["items"]["properties"]["resources"]
                            ["properties"]["limits"]["additionalProperties"];
  CHECK(validate_against_schema(pod, sample) ==
        Violations{
            {"spec.containers[0].resources.limits[\"nvidia.com/gpu\"]",
             "must match the pattern `" + quantity["pattern"].get<std::string>() + "`"},
            {"status.phase",
             "must be one of \"Pending\", \"Running\", \"Succeeded\", \"Failed\", \"Unknown\", not \"Started\""},
        });
}

TEST_CASE("openapi schema: the embedded files are the published ones, byte for byte") {
  auto api = karta::test::source_dir() / "definitions/api";
  auto corpus = karta::test::source_dir() / "tests/corpus/karta";
  CHECK(karta::embedded::run_ai_kartas_yaml() == file_text(api / "run.ai_kartas.yaml"));
  CHECK(karta::embedded::run_ai_kartas_yaml() == file_text(corpus / "run.ai_kartas.yaml"));
  CHECK(karta::embedded::optimization_nvidia_com_resourceinterfaces_yaml() ==
        file_text(api / "optimization.nvidia.com_resourceinterfaces.yaml"));
  CHECK(karta::embedded::optimization_nvidia_com_resourceinterfaces_yaml() ==
        file_text(corpus / "optimization.nvidia.com_resourceinterfaces.yaml"));
  CHECK(karta::embedded::pod_v1_json() == file_text(api / "pod-v1.json"));
}

}  // namespace unit_openapi_schema
