// A null in a definition read as the API server stores it: where the published CRD does not allow a null,
// the null is removed, and the field's default applies when it has one (apiextensions-apiserver's
// structural defaulting). And a definition's faults all come in one run: a fault the published schema
// finds does not hide the faults of its paths.

#include <doctest/doctest.h>

#include "cli/inspect.h"
#include "definitions/compiled_definition.h"
#include "support/test_support.h"
#include "validate/crd_schema_set.h"
#include "validate/definition_validation.h"

namespace unit_definition_nulls {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

namespace {

const karta::CrdSchemaSet& crds() {
  static const karta::CrdSchemaSet set = karta::CrdSchemaSet::load_directory(test::source_dir() / "tests/corpus/crds");
  return set;
}

karta::DefinitionReport check(const json& definition) {
  return karta::validate_definition(definition, [](const karta::GroupVersionKind& kind) { return crds().find(kind); });
}

// A ResourceInterface of our own for JobSet: its conditions are read with `reasonFieldName: null`, and a
// replicated job's instance is named by `instance_id_path`.
json runner(const std::string& instance_id_path) {
  return test::yaml(R"(
apiVersion: optimization.nvidia.com/v1alpha1
kind: ResourceInterface
metadata: {name: batch-runner}
spec:
  structureDefinition:
    rootComponent:
      name: runner
      kind: {group: jobset.x-k8s.io, version: v1alpha2, kind: JobSet}
      statusDefinition:
        conditionsDefinition: {path: .status.conditions, reasonFieldName: null}
        statusMappings:
          completed: [{byConditions: [{type: Completed, status: "True", reason: EveryJobDone}]}]
          failed: [{byConditions: [{type: Failed, status: "True"}]}]
    childComponents:
      - name: step
        kind: {group: batch, version: v1, kind: Job}
        ownerRef: runner
        specDefinition: {podTemplateSpecPath: '.spec.replicatedJobs[].template.spec.template'}
        instanceIdPath: )" + instance_id_path + R"(
        podSelector:
          componentInstanceSelector: {idPath: '.metadata.labels["jobset.sigs.k8s.io/replicatedjob-name"]'}
)");
}

json jobset_with_condition(const std::string& reason) {
  return test::yaml(R"(
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: nightly, namespace: ml}
spec:
  replicatedJobs:
  - name: step
    template: {spec: {template: {spec: {containers: [{name: c, image: i}]}}}}
status:
  conditions:
  - {type: Completed, status: "True", reason: )" + reason + R"(, message: done}
)");
}

// {"state", "reason"} of the first condition, as the definition reads them.
json read_by(const karta::CompiledDefinition& definition, const json& object) {
  json report = karta::inspect_workload(object, definition, {"nvidia.com/gpu"});
  return {{"state", report["state"]}, {"reason", report["conditions"][0]["reason"]}};
}

}  // namespace

TEST_CASE("a ResourceInterface with reasonFieldName null and a wrong instanceIdPath has one fault, naming the path") {
  karta::DefinitionReport report = check(runner(".spec.replicatedJobs[].title"));
  CHECK(report.faults == std::vector<std::string>{
      "spec.structureDefinition.childComponents[0].instanceIdPath: `.spec.replicatedJobs[].title` is not in JobSet's "
      "schema at `.spec.replicatedJobs[]`"});
  CHECK(report.path_faults == 1);
  CHECK(report.only_path_faults());
}

TEST_CASE("reasonFieldName null is the default, reason: the definition as loaded reads condition reasons from `reason`") {
  json definition = runner(".spec.replicatedJobs[].name");
  CHECK(check(definition).faults == std::vector<std::string>{});
  karta::DefinitionParse parsed = karta::parse_karta_definition(definition, "runner.yaml");
  REQUIRE(parsed.definition);
  CHECK(parsed.definition->root.status->conditions->reason_field == "reason");
  auto compiled = karta::CompiledDefinition::compile(*parsed.definition, 1);
  CHECK(read_by(*compiled, jobset_with_condition("EveryJobDone")) == json{{"state", "Completed"}, {"reason", "EveryJobDone"}});
  // The reason is compared: another one does not complete it.
  CHECK(read_by(*compiled, jobset_with_condition("SomeJobDone")) == json{{"state", "Undefined"}, {"reason", "SomeJobDone"}});
}

TEST_CASE("a Karta's null takes the field's default, and a null without a default is removed, as the API server stores it") {
  // typeFieldName defaults to `type` and statusFieldName to `status`; scaleDefinition has no default.
  auto gizmo = test::compile_definition(test::made_up_karta("gizmo", "Gizmo") + R"(      scaleDefinition: null
      statusDefinition:
        conditionsDefinition: {path: .status.conditions, typeFieldName: null, statusFieldName: null}
        statusMappings:
          running: [{byConditions: [{type: Ready, status: "True"}]}]
)");
  const auto& conditions = *gizmo->definition().root.status->conditions;
  CHECK(conditions.type_field == "type");
  CHECK(conditions.status_field == "status");
  CHECK_FALSE(gizmo->definition().root.scale);
  json object = test::yaml("{apiVersion: example.com/v1, kind: Gizmo, metadata: {name: g}, "
                           "status: {conditions: [{type: Ready, status: \"True\", reason: Up}]}}");
  CHECK(read_by(*gizmo, object) == json{{"state", "Running"}, {"reason", "Up"}});
}

TEST_CASE("a null where the published CRD requires a value is still the API server's fault: the field is required") {
  json definition = runner(".spec.replicatedJobs[].name");
  definition["spec"]["structureDefinition"]["rootComponent"]["name"] = nullptr;
  CHECK(check(definition).faults == std::vector<std::string>{
      "spec.structureDefinition.rootComponent.name: is required"});
}

TEST_CASE("a fault of the published schema does not hide the faults of the definition's paths and jq") {
  json definition = runner(".spec.replicatedJobs[].title");
  definition["spec"]["structureDefinition"]["rootComponent"]["statusDefinition"]["statusMappings"]["Running"] =
      json::array({{{"byPhase", "Running"}}});
  definition["spec"]["structureDefinition"]["childComponents"][0]["specDefinition"]["podTemplateSpecPath"] = "$ENV.HOME";
  karta::DefinitionReport report = check(definition);
  CHECK(report.faults == std::vector<std::string>{
      "spec.structureDefinition.rootComponent.statusDefinition.statusMappings.Running: unknown field; did you mean "
      "\"running\"?",
      "spec.structureDefinition.childComponents[0].specDefinition.podTemplateSpecPath: $ENV.HOME: `$ENV` is not allowed: it would expose the webhook's environment",
      "spec.structureDefinition.childComponents[0].instanceIdPath: `.spec.replicatedJobs[].title` is not in JobSet's "
      "schema at `.spec.replicatedJobs[]`"});
  CHECK_FALSE(report.only_path_faults());
}

}  // namespace unit_definition_nulls
