#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <optional>

#include "definitions/catalog.h"
#include "definitions/workload.h"
#include "mutate/mutation.h"
#include "support/test_support.h"

namespace unit_mutation {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

namespace {

const char* kPolicy = R"(
podTemplates:
  labels: {platform.example.com/managed: "true"}
  annotations: {platform.example.com/owner: platform}
  overwrite: false
)";

json demo_jobset() { return test::document(test::source_dir() / "examples/jobset-demo.yaml"); }

const karta::CompiledDefinition& jobset_definition() {
  const auto* definition = test::builtin_catalog().find({"jobset.x-k8s.io", "v1alpha2", "JobSet"});
  REQUIRE(definition != nullptr);
  return *definition;
}

// The catalog's JobSet definition under a kind of its own (example.com/TrainSet): its gang is then the
// definition's figure, the pods of its replicated jobs, where a JobSet's is what KAI reads on a JobSet
// (unit-kai-hints.cpp). For the checks of how that figure is counted.
const karta::CompiledDefinition& trainset_definition() {
  static const auto definition = [] {
    std::string text = karta::read_text_file(test::source_dir() / "definitions/catalog/jobset.x-k8s.io-jobset-v1alpha2.yaml");
    const std::string kind = "kind: {group: jobset.x-k8s.io, version: v1alpha2, kind: JobSet}";
    text.replace(text.find(kind), kind.size(), "kind: {group: example.com, version: v1, kind: TrainSet}");
    return test::compile_definition(text);
  }();
  return *definition;
}

}  // namespace

TEST_CASE("the demo JobSet's two pod templates are labelled and annotated, and the leader keeps its own label") {
  json object = demo_jobset();
  auto outcome = karta::mutate_workload(object, jobset_definition(), test::policy_from_yaml(kPolicy));
  CHECK(outcome.templates == 2);
  CHECK(outcome.notes.empty());
  CHECK(outcome.patch.value() == json::parse(R"([
    {"op":"add","path":"/spec/replicatedJobs/0/template/spec/template/metadata/annotations",
     "value":{"platform.example.com/owner":"platform"}},
    {"op":"add","path":"/spec/replicatedJobs/1/template/spec/template/metadata",
     "value":{"labels":{"platform.example.com/managed":"true"},"annotations":{"platform.example.com/owner":"platform"}}}
  ])"));

  json patched = test::kubectl_apply(object, outcome.patch.value());
  const json& jobs = patched["spec"]["replicatedJobs"];
  CHECK(jobs[0]["template"]["spec"]["template"]["metadata"] == json::parse(R"({
      "labels":{"platform.example.com/managed":"user-set"},
      "annotations":{"platform.example.com/owner":"platform"}})"));
  CHECK(jobs[1]["template"]["spec"]["template"]["metadata"] == json::parse(R"({
      "labels":{"platform.example.com/managed":"true"},
      "annotations":{"platform.example.com/owner":"platform"}})"));
  // Nothing else moved: the patched object minus the two metadata maps is the original.
  json reverted = patched;
  reverted["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"].erase("annotations");
  reverted["spec"]["replicatedJobs"][1]["template"]["spec"]["template"].erase("metadata");
  CHECK(reverted == object);

  SUBCASE("the patched object, sent again, gets no patch") {
    auto again = karta::mutate_workload(patched, jobset_definition(), test::policy_from_yaml(kPolicy));
    CHECK(again.patch.value() == json::array());
  }
}

TEST_CASE("overwrite: true replaces a label the user set, and is idempotent too") {
  json object = demo_jobset();
  auto policy = test::policy_from_yaml(R"(
podTemplates:
  labels: {platform.example.com/managed: "true"}
  overwrite: true
)");
  auto outcome = karta::mutate_workload(object, jobset_definition(), policy);
  CHECK(outcome.patch.value() == json::parse(R"([
    {"op":"add","path":"/spec/replicatedJobs/0/template/spec/template/metadata/labels/platform.example.com~1managed",
     "value":"true"},
    {"op":"add","path":"/spec/replicatedJobs/1/template/spec/template/metadata",
     "value":{"labels":{"platform.example.com/managed":"true"}}}
  ])"));
  json patched = test::kubectl_apply(object, outcome.patch.value());
  CHECK(karta::mutate_workload(patched, jobset_definition(), policy).patch.value() == json::array());
}

TEST_CASE("an absent optional template is not created") {
  // A made-up kind whose leader template is optional, like LeaderWorkerSet's leaderTemplate.
  auto definitions = karta::parse_definitions(R"(
apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: trainer}
spec:
  structureDefinition:
    rootComponent:
      name: trainer
      kind: {group: example.com, version: v1, kind: Trainer}
      statusDefinition: {phaseDefinition: {path: .status.phase}, statusMappings: {running: [{byPhase: Running}]}}
    childComponents:
      - name: leader
        kind: {group: "", version: v1, kind: Pod}
        ownerRef: trainer
        specDefinition: {podTemplateSpecPath: .spec.leader.template}
      - name: worker
        kind: {group: "", version: v1, kind: Pod}
        ownerRef: trainer
        specDefinition: {podTemplateSpecPath: .spec.worker.template}
)", "trainer.yaml");
  REQUIRE(definitions.size() == 1);
  auto definition = karta::CompiledDefinition::compile(definitions[0], 1);
  auto policy = test::policy_from_yaml(kPolicy);

  json without_leader = json::parse(R"({"apiVersion":"example.com/v1","kind":"Trainer","metadata":{"name":"t"},
      "spec":{"worker":{"template":{"spec":{"containers":[{"name":"w","image":"i"}]}}}}})");
  auto outcome = karta::mutate_workload(without_leader, *definition, policy);
  CHECK(outcome.templates == 1);
  CHECK(outcome.patch.value() == json::parse(R"([{"op":"add","path":"/spec/worker/template/metadata",
      "value":{"labels":{"platform.example.com/managed":"true"},"annotations":{"platform.example.com/owner":"platform"}}}])"));

  json null_leader = without_leader;
  null_leader["spec"]["leader"] = {{"template", nullptr}};
  CHECK(karta::mutate_workload(null_leader, *definition, policy).patch.value() == outcome.patch.value());
}

TEST_CASE("an object of the right kind but odd shape is left unpatched with a note, never an exception") {
  auto policy = test::policy_from_yaml(kPolicy);
  json strings = json::parse(R"({"apiVersion":"jobset.x-k8s.io/v1alpha2","kind":"JobSet","spec":"oops"})");
  auto outcome = karta::mutate_workload(strings, jobset_definition(), policy);
  CHECK(outcome.patch.value() == json::array());
  CHECK(outcome.notes == std::vector<std::string>{
      "spec.structureDefinition.childComponents[0].specDefinition.podTemplateSpecPath "
      "(.spec.replicatedJobs[].template.spec.template): stopped on error: Cannot index string with string "
      "\"replicatedJobs\"",
      "spec.structureDefinition.childComponents[0].instanceIdPath (.spec.replicatedJobs[].name): stopped on error: "
      "Cannot index string with string \"replicatedJobs\"",
      "spec.structureDefinition.childComponents[0].scaleDefinition.replicasPath (.spec.replicatedJobs[] | (.replicas "
      "// 1 | tonumber) * (.template.spec.parallelism // 1 | tonumber)): stopped on error: Cannot index string with "
      "string \"replicatedJobs\""});

  json label_list = demo_jobset();
  label_list["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["labels"] = json::array({"x"});
  outcome = karta::mutate_workload(label_list, jobset_definition(), policy);
  CHECK(outcome.notes == std::vector<std::string>{
      "leader pod template: /spec/replicatedJobs/0/template/spec/template/metadata/labels is an array, not an "
      "object; left as is"});
  // The other template and the leader's annotations are still patched.
  CHECK(outcome.patch.size() == 2);
  test::kubectl_apply(label_list, outcome.patch.value());
}

TEST_CASE("a template that is no object is skipped; the next of its component keeps its own name, replicas and patch") {
  // The locator builds each instance where it is kept and drops the skipped ones afterwards: what comes
  // after a dropped one must still be whole.
  json object = demo_jobset();
  object["spec"]["replicatedJobs"][0]["template"]["spec"]["template"] = "oops";
  object["spec"]["replicatedJobs"][1]["replicas"] = 3;
  auto policy = test::policy_from_yaml(R"(
podTemplates: {labels: {platform.example.com/role: "{{instance}}"}}
gang: {minMemberAnnotation: kai.scheduler/batch-min-member, kinds: [example.com/TrainSet]}
)");
  auto outcome = karta::mutate_workload(object, trainset_definition(), policy);
  CHECK(outcome.templates == 1);
  CHECK(outcome.notes == std::vector<std::string>{
      "replicatedjob: /spec/replicatedJobs/0/template/spec/template is a string, not an object; skipped"});
  CHECK(outcome.patch.value() == json::parse(R"([
    {"op":"add","path":"/spec/replicatedJobs/1/template/spec/template/metadata","value":{"labels":{"platform.example.com/role":"worker"}}},
    {"op":"add","path":"/metadata/annotations","value":{"kai.scheduler/batch-min-member":"3"}}])"));
}

TEST_CASE("regression: a string replica count times a huge parallelism does not make jq repeat the string") {
  // jq 1.6 repeats a string when it is multiplied by a number: "x" * 2e9 would allocate gigabytes. The
  // catalog pipes every factor through tonumber, which refuses such a string.
  json object = demo_jobset();
  object["spec"]["replicatedJobs"][1]["replicas"] = "xxxxxxxxxxxxxxxx";
  object["spec"]["replicatedJobs"][1]["template"]["spec"]["parallelism"] = 2000000000;
  auto outcome = karta::mutate_workload(object, jobset_definition(), test::policy_from_yaml(kPolicy));
  CHECK(outcome.templates == 2);
  CHECK(outcome.notes == std::vector<std::string>{
      "replicatedjob: replicasPath gave 1 values for 2 locations; 1 assumed",
      "spec.structureDefinition.childComponents[0].scaleDefinition.replicasPath (.spec.replicatedJobs[] | (.replicas "
      "// 1 | tonumber) * (.template.spec.parallelism // 1 | tonumber)): stopped on error: Invalid numeric literal at "
      "EOF at line 1, column 16 (while parsing 'xxxxxxxxxxxxxxxx')"});
}

TEST_CASE("replica counts beyond int32, fractional or negative are refused with a note, never cast") {
  // No CRD schema need bound a replica count; 1e300 cast to an integer is undefined behaviour.
  const char* gang_policy = "gang: {minMemberAnnotation: kai.scheduler/batch-min-member, kinds: [example.com/TrainSet]}\n";
  for (const auto& [replicas, shown] : std::vector<std::pair<json, std::string>>{
           {1e300, "1e+300"}, {2147483648.0, "2147483648"}, {2.5, "2.5"}, {-3, "-3"}}) {
    CAPTURE(shown);
    json object = demo_jobset();
    object["spec"]["replicatedJobs"][1]["replicas"] = replicas;
    object["spec"]["replicatedJobs"][1]["template"]["spec"]["parallelism"] = 1;
    auto outcome = karta::mutate_workload(object, trainset_definition(), test::policy_from_yaml(gang_policy));
    CHECK(outcome.notes == std::vector<std::string>{"replicatedjob worker: replicas " + shown +
                                                    " is not a replica count (an integer from 0 to 2147483647); 1 assumed"});
    // The leader's 1 and the worker's assumed 1.
    CHECK(outcome.patch.value() == json::parse(R"([{"op":"add","path":"/metadata/annotations",
                                                    "value":{"kai.scheduler/batch-min-member":"2"}}])"));
  }
  json largest = demo_jobset();
  largest["spec"]["replicatedJobs"][1]["replicas"] = 2147483647;
  largest["spec"]["replicatedJobs"][1]["template"]["spec"]["parallelism"] = 1;
  auto outcome = karta::mutate_workload(largest, trainset_definition(), test::policy_from_yaml(gang_policy));
  CHECK(outcome.notes.empty());
  CHECK(outcome.patch.value() == json::parse(R"([{"op":"add","path":"/metadata/annotations",
                                                  "value":{"kai.scheduler/batch-min-member":"2147483648"}}])"));
}


TEST_CASE("a fragmented pod's root is what its pieces' parents share, whole tokens only") {
  // Each component spreads its pod over two places; its root is the longest run of whole tokens their
  // parents share: /spec/ab and /spec/a share /spec, not /spec/a.
  auto definition = test::compile_definition(R"(apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: fragments}
spec:
  structureDefinition:
    rootComponent:
      name: root
      kind: {group: example.com, version: v1, kind: Fragments}
      statusDefinition:
        statusMappings:
          running: [{byConditions: [{type: Ready, status: "True"}]}]
    childComponents:
      - name: split
        kind: {group: apps, version: v1, kind: Deployment}
        ownerRef: root
        specDefinition:
          fragmentedPodSpecDefinition: {labelsPath: .spec.ab.podLabels, resourcesPath: .spec.a.resources}
      - name: nested
        kind: {group: apps, version: v1, kind: Deployment}
        ownerRef: root
        specDefinition:
          fragmentedPodSpecDefinition: {labelsPath: .spec.c.x.podLabels, resourcesPath: .spec.c.resources}
      - name: escaped
        kind: {group: apps, version: v1, kind: Deployment}
        ownerRef: root
        specDefinition:
          fragmentedPodSpecDefinition: {labelsPath: '.spec["d/e"].podLabels', resourcesPath: '.spec["d/ef"].resources'}
      - name: escaped-nested
        kind: {group: apps, version: v1, kind: Deployment}
        ownerRef: root
        specDefinition:
          fragmentedPodSpecDefinition: {labelsPath: '.spec["d/e"].podLabels', resourcesPath: '.spec["d/e"].g.resources'}
      - name: one-piece
        kind: {group: apps, version: v1, kind: Deployment}
        ownerRef: root
        specDefinition:
          fragmentedPodSpecDefinition: {labelsPath: .spec.h.i.podLabels}
)");
  const json object = json::parse(R"({"apiVersion":"example.com/v1","kind":"Fragments","metadata":{"name":"f"},
      "spec":{"a":{},"ab":{},"c":{"x":{}},"d/e":{"g":{}},"d/ef":{},"h":{"i":{}}}})");
  karta::JsonDocument document = karta::JsonDocument::from(object);
  karta::DefinitionEvaluation evaluation(*definition, document.root());
  auto layout = karta::analyze_workload(evaluation, {"nvidia.com/gpu"}, karta::Counted::GpusOnly).layout;
  std::vector<std::string> roots;
  for (const auto& t : layout.templates) roots.push_back(t.location.to_string());
  CHECK(roots == std::vector<std::string>{"/spec", "/spec/c", "/spec", "/spec/d~1e", "/spec/h/i"});
}

TEST_CASE("instance ids of every JSON type name their templates alike, read by a simple path or by jq") {
  // The built-in JobSet reads .spec.replicatedJobs[].name as a simple path, from the object itself; the
  // same path written as jq ([...][] is no simple path) is run by jq, whose outputs are JSON values.
  // Both must give the same names: a string as it is, any other value as its JSON text, and null or a
  // missing name the id by position.
  std::ifstream in(test::source_dir() / "definitions/catalog/jobset.x-k8s.io-jobset-v1alpha2.yaml");
  REQUIRE(in);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string simple = "instanceIdPath: .spec.replicatedJobs[].name";
  REQUIRE(text.find(simple) != std::string::npos);
  text.replace(text.find(simple), simple.size(), "instanceIdPath: '[.spec.replicatedJobs[].name][]'");
  auto by_jq = test::compile_definition(text);

  json object = demo_jobset();
  json job = object["spec"]["replicatedJobs"][0];
  json jobs = json::array();
  const std::vector<std::optional<json>> names{json("leader"), json(7), json(2.5), json::parse(R"({"b":1,"a":[true]})"),
                                               json(false), json(nullptr), std::nullopt};
  for (const auto& name : names) {
    job.erase("name");
    if (name) job["name"] = *name;  // the last has none
    jobs.push_back(job);
  }
  object["spec"]["replicatedJobs"] = jobs;
  const std::vector<std::string> expected{"leader", "7", "2.5", R"({"a":[true],"b":1})", "false",
                                          "replicatedjob-5", "replicatedjob-6"};
  for (const karta::CompiledDefinition* definition : {&jobset_definition(), by_jq.get()}) {
    karta::JsonDocument document = karta::JsonDocument::from(object);
    karta::DefinitionEvaluation evaluation(*definition, document.root());
    auto layout = karta::analyze_workload(evaluation, {"nvidia.com/gpu"}, karta::Counted::GpusOnly).layout;
    std::vector<std::string> names;
    for (const auto& t : layout.templates) names.push_back(t.instance);
    CHECK(names == expected);
    CHECK(layout.notes.empty());
    // Asked for as values afterwards (as the status reader does), the same outputs come out as JSON.
    const auto plan = std::find_if(definition->components().begin(), definition->components().end(),
                                   [](const auto& p) { return p.instance_id != karta::kNoExpression; });
    REQUIRE(plan != definition->components().end());
    const auto& ids = evaluation.outcome(plan->instance_id);
    REQUIRE(ids.values.size() == 7);
    CHECK(ids.values[3] == json::parse(R"({"b":1,"a":[true]})"));
    CHECK(ids.values[5].is_null());
    CHECK(ids.values[6].is_null());
  }
}

}  // namespace unit_mutation
