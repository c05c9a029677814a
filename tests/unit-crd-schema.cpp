#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "support/test_support.h"
#include "validate/crd_schema.h"

namespace unit_crd_schema {  // this file's names, apart from other tests' in a unity build

using karta::check_path_against_schema;
using karta::CrdSchema;
using karta::CrdSchemaSet;
using karta::ExpectedShape;
using karta::GroupVersionKind;
using karta::json;

namespace {

using Lines = std::vector<std::string>;

// "fault: ..." or "warning: ...", in order.
Lines findings(const CrdSchema& crd, const std::string& expression, ExpectedShape expected = ExpectedShape::Any,
               const std::string& field = {}) {
  Lines out;
  for (const auto& finding : check_path_against_schema(crd, expression, expected, field))
    out.push_back((finding.fault ? "fault: " : "warning: ") + finding.message);
  return out;
}

// The corpus CRDs, loaded once (about 12 MB of YAML); nullptr when there is no corpus.
const CrdSchemaSet* corpus_crds() {
  auto corpus = karta::test::corpus_dir();
  if (!corpus) return nullptr;
  static const CrdSchemaSet set = CrdSchemaSet::load_directory(*corpus / "crds");
  return &set;
}

const CrdSchema& corpus_crd(const CrdSchemaSet& set, const std::string& group, const std::string& version,
                            const std::string& kind) {
  const CrdSchema* crd = set.find({group, version, kind});
  REQUIRE_MESSAGE(crd != nullptr, group << "/" << version << " " << kind);
  return *crd;
}

// A small CRD exercising what the corpus does not hold in one place.
const CrdSchemaSet& widgets() {
  static const CrdSchemaSet set = [] {
    CrdSchemaSet s;
    s.add_crd(karta::test::yaml(R"(
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            apiVersion: {type: string}
            kind: {type: string}
            metadata: {type: object}
            spec:
              type: object
              properties:
                size: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}
                name: {type: string}
                enabled: {type: boolean}
                extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
                opaque: {type: object}
                labels: {type: object, additionalProperties: {type: string}}
                counts: {type: object, additionalProperties: {type: integer}}
                parts:
                  type: array
                  items:
                    type: object
                    allOf:
                      - properties: {left: {type: string}}
                      - properties: {right: {type: integer}}
                embedded: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
    - name: v2
      served: false
      storage: false
      schema: {openAPIV3Schema: {type: object}}
    - name: v3
      served: true
      storage: false
)"));
    s.add_crd(karta::test::yaml(R"(
apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  version: v1beta1
  names: {kind: Gadget, plural: gadgets}
  validation:
    openAPIV3Schema:
      type: object
      properties:
        spec: {type: object, properties: {count: {type: integer}}}
)"));
    return s;
  }();
  return set;
}

const CrdSchema& widget() { return *widgets().find({"example.com", "v1", "Widget"}); }

}  // namespace

TEST_CASE("each corpus CRD is found by group, version and kind, one schema per served version") {
  const CrdSchemaSet* set = corpus_crds();
  if (set == nullptr) return;
  const std::map<std::string, std::string> expected = {
      {"nvidia.com/v1alpha1 DynamoGraphDeployment", "dynamographdeployments"},
      {"nvidia.com/v1beta1 DynamoGraphDeployment", "dynamographdeployments"},
      {"serving.kserve.io/v1beta1 InferenceService", "inferenceservices"},
      {"serving.kserve.io/v1alpha1 LLMInferenceService", "llminferenceservices"},
      {"serving.kserve.io/v1alpha2 LLMInferenceService", "llminferenceservices"},
      {"agents.x-k8s.io/v1alpha1 Sandbox", "sandboxes"},
      {"agents.x-k8s.io/v1beta1 Sandbox", "sandboxes"},
      {"jobset.x-k8s.io/v1alpha2 JobSet", "jobsets"},
      {"serving.knative.dev/v1 Service", "services"},
      {"leaderworkerset.x-k8s.io/v1 LeaderWorkerSet", "leaderworkersets"},
      {"milvus.io/v1alpha1 Milvus", "milvuses"},
      {"milvus.io/v1beta1 Milvus", "milvuses"},
      {"kubeflow.org/v1 MPIJob", "mpijobs"},
      {"kubeflow.org/v2beta1 MPIJob", "mpijobs"},
      {"apps.nvidia.com/v1alpha1 NIMService", "nimservices"},
      {"grove.io/v1alpha1 PodCliqueSet", "podcliquesets"},
      {"kubeflow.org/v1 PyTorchJob", "pytorchjobs"},
      {"ray.io/v1 RayCluster", "rayclusters"},
      {"ray.io/v1alpha1 RayCluster", "rayclusters"},
      {"ray.io/v1 RayJob", "rayjobs"},
      {"ray.io/v1alpha1 RayJob", "rayjobs"},
      {"ray.io/v1 RayService", "rayservices"},
      {"ray.io/v1alpha1 RayService", "rayservices"},
      {"batch.volcano.sh/v1alpha1 Job", "jobs"},
      {"sparkoperator.k8s.io/v1beta2 SparkApplication", "sparkapplications"},
      {"trainer.kubeflow.org/v1alpha1 TrainJob", "trainjobs"},
      {"argoproj.io/v1alpha1 Workflow", "workflows"},
  };
  CHECK(set->size() == expected.size());
  for (const auto& [name, plural] : expected) {
    CAPTURE(name);
    const std::string api_version = name.substr(0, name.find(' '));
    const GroupVersionKind kind = GroupVersionKind::from_api_version(api_version, name.substr(name.find(' ') + 1));
    const CrdSchema* crd = set->find(kind);
    REQUIRE(crd != nullptr);
    CHECK(crd->kind == kind);
    CHECK(crd->plural == plural);
    CHECK(crd->schema.is_object());
  }
}

TEST_CASE("Knative's Service is found only as serving.knative.dev/v1 Service") {
  const CrdSchemaSet* set = corpus_crds();
  if (set == nullptr) return;
  CHECK(set->find({"", "v1", "Service"}) == nullptr);
  CHECK(set->find({"serving.knative.dev", "v1beta1", "Service"}) == nullptr);
  CHECK(set->find({"serving.kserve.io", "v1beta1", "Service"}) == nullptr);
  const CrdSchema& knative = corpus_crd(*set, "serving.knative.dev", "v1", "Service");
  CHECK(findings(knative, ".spec.template", ExpectedShape::PodTemplateSpec).empty());
  CHECK(findings(knative, ".spec.template.spec", ExpectedShape::PodSpec).empty());
}

TEST_CASE("a JobSet's replicated job template is a PodTemplateSpec") {
  const CrdSchemaSet* set = corpus_crds();
  if (set == nullptr) return;
  const CrdSchema& jobset = corpus_crd(*set, "jobset.x-k8s.io", "v1alpha2", "JobSet");
  CHECK(findings(jobset, ".spec.replicatedJobs[].template.spec.template", ExpectedShape::PodTemplateSpec).empty());
  CHECK(findings(jobset, ".spec.replicatedJobs[].template.spec.template.spec", ExpectedShape::PodSpec).empty());
  CHECK(findings(jobset, ".spec.replicatedJobs[].template.spec.template.metadata", ExpectedShape::ObjectWithLabels)
            .empty());
  CHECK(findings(jobset, ".spec.replicatedJobs[].name", ExpectedShape::String).empty());
  CHECK(findings(jobset, ".spec.replicatedJobs[].replicas", ExpectedShape::Integer).empty());
  CHECK(
      findings(jobset, ".spec.replicatedJobs[0].template.spec.template.spec.containers", ExpectedShape::List).empty());
  CHECK(findings(jobset, ".spec.replicatedJobs[].template.spec.template.spec.containers[].resources",
                 ExpectedShape::ResourceRequirements)
            .empty());
  CHECK(findings(jobset, ".spec.replicatedJobs[].template.spec.template.spec.nodeSelector", ExpectedShape::StringMap)
            .empty());
}

TEST_CASE("a misspelt field is a fault naming the kind, the place and the closest field") {
  const CrdSchemaSet* set = corpus_crds();
  if (set == nullptr) return;
  const CrdSchema& jobset = corpus_crd(*set, "jobset.x-k8s.io", "v1alpha2", "JobSet");
  CHECK(findings(jobset, ".spec.replicatedJob[].template.spec.template", ExpectedShape::PodTemplateSpec) ==
        Lines{"fault: `.spec.replicatedJob` is not in JobSet's schema at `.spec`; did you mean `replicatedJobs`?"});
  CHECK(findings(jobset, ".spec.replicatedJobs[].templates.spec.template", ExpectedShape::PodTemplateSpec) ==
        Lines{"fault: `.spec.replicatedJobs[].templates` is not in JobSet's schema at `.spec.replicatedJobs[]`; "
              "did you mean `template`?"});
}

TEST_CASE("a PodSpec where a PodTemplateSpec belongs is a fault naming it, and the reverse suggests `.spec`") {
  const CrdSchemaSet* set = corpus_crds();
  if (set == nullptr) return;
  const CrdSchema& jobset = corpus_crd(*set, "jobset.x-k8s.io", "v1alpha2", "JobSet");
  CHECK(findings(jobset, ".spec.replicatedJobs[].template.spec.template.spec", ExpectedShape::PodTemplateSpec) ==
        Lines{"fault: `.spec.replicatedJobs[].template.spec.template.spec` is a PodSpec, but podTemplateSpecPath "
              "needs a PodTemplateSpec (`{metadata, spec}`)"});
  CHECK(findings(jobset, ".spec.replicatedJobs[].template.spec.template", ExpectedShape::PodSpec) ==
        Lines{"fault: `.spec.replicatedJobs[].template.spec.template` is a PodTemplateSpec, but podSpecPath needs a "
              "PodSpec; did you mean `.spec.replicatedJobs[].template.spec.template.spec`?"});
}

TEST_CASE("a string where replicas belong is a fault") {
  const CrdSchemaSet* set = corpus_crds();
  if (set == nullptr) return;
  const CrdSchema& jobset = corpus_crd(*set, "jobset.x-k8s.io", "v1alpha2", "JobSet");
  CHECK(findings(jobset, ".spec.replicatedJobs[].name", ExpectedShape::Integer) ==
        Lines{"fault: `.spec.replicatedJobs[].name` is a string, but replicasPath needs an integer"});
  CHECK(findings(jobset, ".spec.replicatedJobs[].name // 1", ExpectedShape::Integer, "minReplicasPath") ==
        Lines{"fault: `.spec.replicatedJobs[].name` is a string, but minReplicasPath needs an integer"});
}

TEST_CASE("Milvus components have no template") {
  const CrdSchemaSet* set = corpus_crds();
  if (set == nullptr) return;
  const CrdSchema& milvus = corpus_crd(*set, "milvus.io", "v1beta1", "Milvus");
  CHECK(
      findings(milvus, ".spec.components.queryNode.template", ExpectedShape::PodTemplateSpec) ==
      Lines{"fault: `.spec.components.queryNode.template` is not in Milvus's schema at `.spec.components.queryNode`; "
            "`.spec.components.queryNode` holds the pod's fields inline (resources, tolerations, nodeSelector, affinity, "
            "schedulerName, priorityClassName, podLabels, podAnnotations) and has no pod template: describe it with "
            "fragmentedPodSpecDefinition (for example resourcesPath: `.spec.components.queryNode.resources`)"});
  CHECK(findings(milvus, ".spec.components.queryNode.podLabels", ExpectedShape::StringMap).empty());
  CHECK(findings(milvus, ".spec.components.queryNode.resources", ExpectedShape::ResourceRequirements).empty());
}

TEST_CASE("a field that lives elsewhere in the schema is a fault saying where it is") {
  const CrdSchemaSet* set = corpus_crds();
  if (set == nullptr) return;
  const CrdSchema& rayjob = corpus_crd(*set, "ray.io", "v1", "RayJob");
  CHECK(findings(rayjob, ".spec.workerGroupSpecs[].template", ExpectedShape::PodTemplateSpec) ==
        Lines{"fault: `.spec.workerGroupSpecs` is not in RayJob's schema at `.spec`; `workerGroupSpecs` exists at "
              "`.spec.rayClusterSpec.workerGroupSpecs`"});
  CHECK(findings(rayjob, ".spec.rayClusterSpec.workerGroupSpecs[].template", ExpectedShape::PodTemplateSpec).empty());
  CHECK(findings(rayjob, ".spec.rayClusterSpec.headGroupSpec.template", ExpectedShape::PodTemplateSpec).empty());
}

TEST_CASE("iterating a map of replica specs reaches their templates") {
  const CrdSchemaSet* set = corpus_crds();
  if (set == nullptr) return;
  const CrdSchema& pytorch = corpus_crd(*set, "kubeflow.org", "v1", "PyTorchJob");
  CHECK(findings(pytorch, ".spec.pytorchReplicaSpecs[].template", ExpectedShape::PodTemplateSpec).empty());
  CHECK(findings(pytorch, ".spec.pytorchReplicaSpecs.Worker.template", ExpectedShape::PodTemplateSpec).empty());
  CHECK(findings(pytorch, ".spec.pytorchReplicaSpecs[].replicas", ExpectedShape::Integer).empty());
  CHECK(findings(pytorch, ".spec.pytorchReplicaSpecs | keys[]", ExpectedShape::String).empty());
}

TEST_CASE("expressions beyond simple paths are checked stage by stage, relative paths at the place they read") {
  const CrdSchemaSet* set = corpus_crds();
  if (set == nullptr) return;
  const CrdSchema& jobset = corpus_crd(*set, "jobset.x-k8s.io", "v1alpha2", "JobSet");
  CHECK(findings(jobset,
                 ".spec.replicatedJobs[] | (.replicas // 1 | tonumber) * (.template.spec.parallelism // 1 | tonumber)",
                 ExpectedShape::Integer)
            .empty());
  CHECK(findings(jobset, ".spec.replicatedJobs[] | (.replica // 1) * (.template.spec.paralelism // 1)",
                 ExpectedShape::Integer) ==
        Lines{"fault: `.spec.replicatedJobs[].replica` is not in JobSet's schema at `.spec.replicatedJobs[]`; did you "
              "mean `replicas`?",
              "fault: `.spec.replicatedJobs[].template.spec.paralelism` is not in JobSet's schema at "
              "`.spec.replicatedJobs[].template.spec`; did you mean `parallelism`?"});
  CHECK(findings(jobset, "[.status.conditions[]? | select(.type == \"Ready\")] | length > 0").empty());
  CHECK(findings(jobset, ".status.conditions[]? | select(.typ == \"Ready\") | .status") ==
        Lines{"fault: `.status.conditions[].typ` is not in JobSet's schema at `.status.conditions[]`; did you mean "
              "`type`?"});
  CHECK(findings(jobset, ".spec.replicatedJobs[] | select(.replicas > 1) | .template.spec.template",
                 ExpectedShape::PodTemplateSpec)
            .empty());
  CHECK(findings(jobset, ".spec.replicatedJobs[] as $job | $job.nme") ==
        Lines{"fault: `.spec.replicatedJobs[].nme` is not in JobSet's schema at `.spec.replicatedJobs[]`; did you "
              "mean `name`?"});
  CHECK(findings(jobset, "reduce .spec.replicatedJobs[] as $job (0; . + $job.replicas)").empty());
  CHECK(findings(jobset, ".spec.replicatedJobs | map(.nme)") ==
        Lines{"fault: `.spec.replicatedJobs[].nme` is not in JobSet's schema at `.spec.replicatedJobs[]`; did you "
              "mean `name`?"});
  CHECK(findings(jobset, "if .spec.suspnd then 0 else .spec.replicatedJobs[0].replicas end") ==
        Lines{"fault: `.spec.suspnd` is not in JobSet's schema at `.spec`; did you mean `suspend`?"});
  CHECK(findings(jobset, ".spec.replicatedJobs[] | {name, n: .replcas, \"\\(.nam)\": 1}") ==
        Lines{"fault: `.spec.replicatedJobs[].replcas` is not in JobSet's schema at `.spec.replicatedJobs[]`; did "
              "you mean `replicas`?",
              "fault: `.spec.replicatedJobs[].nam` is not in JobSet's schema at `.spec.replicatedJobs[]`; did you "
              "mean `name`?"});
  CHECK(findings(jobset, ".spec.replicatedJobs.template") ==
        Lines{"fault: `.spec.replicatedJobs.template` is not in JobSet's schema: `.spec.replicatedJobs` is an array; "
              "did you mean `.spec.replicatedJobs[].template`?"});
}

TEST_CASE("a path read from a computed value is a warning that it is not checked") {
  const CrdSchemaSet* set = corpus_crds();
  if (set == nullptr) return;
  const CrdSchema& jobset = corpus_crd(*set, "jobset.x-k8s.io", "v1alpha2", "JobSet");
  CHECK(findings(jobset, ".spec | to_entries[] | .value.x") ==
        Lines{"warning: not checked against the schema: `.value.x` reads the output of `to_entries[]`"});
  CHECK(findings(jobset, ".spec.replicatedJobs[] | try .x catch .y") ==
        Lines{"fault: `.spec.replicatedJobs[].x` is not in JobSet's schema at `.spec.replicatedJobs[]`",
              "warning: not checked against the schema: `.y` reads the error caught by `catch`"});
  CHECK(findings(jobset, "$__loc__.file") ==
        Lines{"warning: not checked against the schema: `$__loc__.file` reads `$__loc__`, which holds no place of "
              "JobSet's schema"});
  CHECK(findings(jobset, "[.spec.replicatedJobs[0]][0] | .template", ExpectedShape::Object) ==
        Lines{"warning: not checked against the schema: `.template` reads the output of "
              "`[.spec.replicatedJobs[0]][0]`",
              "warning: not checked against the schema: `[.spec.replicatedJobs[0]][0] | .template` computes a value "
              "instead of naming a place, so its shape is unknown"});
  // Long expressions are shortened in messages.
  CHECK(
      findings(jobset, "if .spec.suspend then .spec.replicatedJobs[0] else .spec.replicatedJobs[1] end | .template") ==
      Lines{"warning: not checked against the schema: `.template` reads the output of `if .spec.suspend then "
            ".spec.replicatedJobs[0] else .spec....`"});
}

TEST_CASE("below a place the schema does not describe nothing is verified, which is a warning") {
  CHECK(findings(widget(), ".spec.extra.foo.bar") ==
        Lines{"warning: `.spec.extra.foo.bar` is not verified below `.spec.extra`: Widget's schema does not describe "
              "the fields there"});
  CHECK(findings(widget(), ".spec.opaque[].x") ==
        Lines{"warning: `.spec.opaque[].x` is not verified below `.spec.opaque`: Widget's schema does not describe the "
              "fields there"});
  CHECK(findings(widget(), ".spec.extra | .a.b") ==
        Lines{"warning: `.spec.extra.a.b` is not verified below `.spec.extra`: Widget's schema does not describe the "
              "fields there"});
  CHECK(findings(widget(), ".spec.opaque", ExpectedShape::PodTemplateSpec) ==
        Lines{"warning: `.spec.opaque` is not verified as a PodTemplateSpec: Widget's schema does not describe its "
              "fields"});
  CHECK(findings(widget(), ".spec[]") ==
        Lines{"warning: `.spec[]` is not verified below `.spec`: it iterates the fields of an object, which have "
              "schemas of their own"});
}

TEST_CASE("maps, merged allOf branches, ObjectMeta and embedded resources are walked") {
  CHECK(findings(widget(), ".spec.labels.anything", ExpectedShape::String).empty());
  CHECK(findings(widget(), ".spec.labels[]", ExpectedShape::String).empty());
  CHECK(findings(widget(), ".spec.parts[].left", ExpectedShape::String).empty());
  CHECK(findings(widget(), ".spec.parts[0].right", ExpectedShape::Integer).empty());
  CHECK(findings(widget(), ".spec.parts[].middle") ==
        Lines{"fault: `.spec.parts[].middle` is not in Widget's schema at `.spec.parts[]`"});
  CHECK(findings(widget(), ".metadata.labels", ExpectedShape::StringMap).empty());
  CHECK(findings(widget(), ".metadata", ExpectedShape::ObjectWithLabels).empty());
  CHECK(findings(widget(), ".metadata.nam") ==
        Lines{"fault: `.metadata.nam` is not in Widget's schema at `.metadata`; did you mean `name`?"});
  CHECK(findings(widget(), ".spec.embedded.metadata.annotations", ExpectedShape::StringMap).empty());
  CHECK(findings(widget(), ".spec.size", ExpectedShape::Integer).empty());
  CHECK(findings(widget(), ".spec.\"size\"", ExpectedShape::Integer).empty());
  CHECK(findings(widget(), ".[\"spec\"].size", ExpectedShape::Integer).empty());
}

TEST_CASE("a step that does not fit the type at its place is a fault") {
  CHECK(findings(widget(), ".spec.name[]") ==
        Lines{"fault: `.spec.name[]` is not in Widget's schema: `.spec.name` is a string, which cannot be iterated"});
  CHECK(findings(widget(), ".spec[0]") ==
        Lines{"fault: `.spec[0]` is not in Widget's schema: `.spec` is an object, not an array"});
  CHECK(findings(widget(), ".spec.enabled.x") ==
        Lines{"fault: `.spec.enabled.x` is not in Widget's schema: `.spec.enabled` is a boolean"});
  CHECK(findings(widget(), ".spec.parts.left") ==
        Lines{"fault: `.spec.parts.left` is not in Widget's schema: `.spec.parts` is an array; did you mean "
              "`.spec.parts[].left`?"});
}

TEST_CASE("the place a path leads to must have the shape its field needs") {
  CHECK(findings(widget(), ".spec.name", ExpectedShape::PodTemplateSpec) ==
        Lines{"fault: `.spec.name` is a string, but podTemplateSpecPath needs a PodTemplateSpec (`{metadata, spec}`)"});
  CHECK(findings(widget(), ".spec.parts[]", ExpectedShape::PodSpec) ==
        Lines{"fault: `.spec.parts[]` is an object without `containers`, but podSpecPath needs a PodSpec"});
  CHECK(findings(widget(), ".spec.counts", ExpectedShape::StringMap) ==
        Lines{"fault: `.spec.counts` is a map of integers, but labelsPath needs a map of strings"});
  CHECK(
      findings(widget(), ".spec.parts[]", ExpectedShape::StringMap, "annotationsPath") ==
      Lines{"fault: `.spec.parts[]` is an object with fields of its own, but annotationsPath needs a map of strings"});
  CHECK(findings(widget(), ".spec.parts", ExpectedShape::ObjectWithLabels) ==
        Lines{"fault: `.spec.parts` is an array, but metadataPath needs an object with `labels` and `annotations`"});
  CHECK(findings(widget(), ".spec.parts[]", ExpectedShape::ResourceRequirements) ==
        Lines{"fault: `.spec.parts[]` is an object without `limits` or `requests`, but resourcesPath needs a "
              "ResourceRequirements (`{limits, requests}`)"});
  CHECK(findings(widget(), ".spec.labels", ExpectedShape::List, "tolerationsPath") ==
        Lines{"fault: `.spec.labels` is an object, but tolerationsPath needs a list"});
  CHECK(findings(widget(), ".spec.parts", ExpectedShape::List).empty());
  CHECK(findings(widget(), ".spec.size", ExpectedShape::String).empty());
  CHECK(findings(widget(), ".spec.parts[0].right", ExpectedShape::String) ==
        Lines{"warning: `.spec.parts[0].right` is an integer, but instanceIdPath needs a string"});
  CHECK(findings(widget(), ".spec.labels", ExpectedShape::String) ==
        Lines{"fault: `.spec.labels` is an object, but instanceIdPath needs a string"});
  CHECK(findings(widget(), ".spec.name", ExpectedShape::Object, "podAffinityPath") ==
        Lines{"fault: `.spec.name` is a string, but podAffinityPath needs an object"});
}

TEST_CASE("versions that are not served are left out, and old CRDs share spec.validation across versions") {
  CHECK(widgets().size() == 3);
  CHECK(widgets().find({"example.com", "v2", "Widget"}) == nullptr);
  const CrdSchema* no_schema = widgets().find({"example.com", "v3", "Widget"});
  REQUIRE(no_schema != nullptr);
  CHECK(findings(*no_schema, ".spec") ==
        Lines{"warning: not checked against the schema: Widget's CustomResourceDefinition has no schema for "
              "example.com/v3"});
  const CrdSchema* gadget = widgets().find({"example.com", "v1beta1", "Gadget"});
  REQUIRE(gadget != nullptr);
  CHECK(gadget->plural == "gadgets");
  CHECK(findings(*gadget, ".spec.count", ExpectedShape::Integer).empty());
  CHECK(findings(*gadget, ".spec.cont") ==
        Lines{"fault: `.spec.cont` is not in Gadget's schema at `.spec`; did you mean `count`?"});
}

TEST_CASE("a document that is not a CustomResourceDefinition is refused") {
  CrdSchemaSet set;
  CHECK_THROWS_WITH_AS(set.add_crd(json{{"apiVersion", "v1"}, {"kind", "ConfigMap"}}), "not a CustomResourceDefinition",
                       karta::InputError);
  CHECK_THROWS_WITH_AS(
      set.add_crd(json{
          {"kind", "CustomResourceDefinition"}, {"metadata", {{"name", "x.example.com"}}}, {"spec", json::object()}}),
      "CustomResourceDefinition x.example.com: spec.group and spec.names.kind are required", karta::InputError);
  CHECK(set.size() == 0);
}

TEST_CASE("an expression that does not parse is not checked, which is a warning") {
  CHECK(findings(widget(), ".spec | \"abc") ==
        Lines{"warning: not checked against the schema: it does not parse: the string starting at column 9 is not "
              "terminated"});
}

TEST_CASE("every path of the built-in catalog fits the corpus CRD of its kind") {
  const CrdSchemaSet* set = corpus_crds();
  if (set == nullptr) return;
  const std::map<std::string, ExpectedShape> shapes = {
      {"podTemplateSpecPath", ExpectedShape::PodTemplateSpec},
      {"podSpecPath", ExpectedShape::PodSpec},
      {"metadataPath", ExpectedShape::ObjectWithLabels},
      {"labelsPath", ExpectedShape::StringMap},
      {"annotationsPath", ExpectedShape::StringMap},
      {"nodeSelectorPath", ExpectedShape::StringMap},
      {"replicasPath", ExpectedShape::Integer},
      {"minReplicasPath", ExpectedShape::Integer},
      {"maxReplicasPath", ExpectedShape::Integer},
      {"instanceIdPath", ExpectedShape::String},
      {"schedulerNamePath", ExpectedShape::String},
      {"priorityClassNamePath", ExpectedShape::String},
      {"imagePath", ExpectedShape::String},
      {"resourcesPath", ExpectedShape::ResourceRequirements},
      {"containersPath", ExpectedShape::List},
      {"tolerationsPath", ExpectedShape::List},
      {"resourceClaimsPath", ExpectedShape::List},
      {"containerPath", ExpectedShape::Object},
      {"podAffinityPath", ExpectedShape::Object},
      {"nodeAffinityPath", ExpectedShape::Object},
  };
  std::size_t checked = 0;
  for (const auto& compiled : karta::test::builtin_catalog().definitions()) {
    const CrdSchema* crd = set->find(compiled->root_kind());
    if (crd == nullptr) continue;
    for (const auto& field : karta::jq_fields(compiled->definition())) {
      const std::string leaf = field.field.substr(field.field.rfind('.') + 1);
      auto shape = shapes.find(leaf);
      CAPTURE(field.field);
      CAPTURE(field.expression);
      for (const auto& finding : check_path_against_schema(
               *crd, field.expression, shape == shapes.end() ? ExpectedShape::Any : shape->second, leaf))
        CHECK_MESSAGE(!finding.fault, finding.message);
      ++checked;
    }
  }
  CHECK(checked > 100);
}

}  // namespace unit_crd_schema
