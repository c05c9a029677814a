#include <doctest/doctest.h>

#include "admission/admission_service.h"
#include "definitions/jq_program.h"
#include "runtime/admission_http.h"
#include "support/test_support.h"
#include "validate/definition_validation.h"

#include <fstream>

namespace unit_definition_validation {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

namespace {

const karta::CrdSchemaSet* corpus_crds() {
  static std::unique_ptr<karta::CrdSchemaSet> crds = [] {
    auto corpus = test::corpus_dir();
    return corpus ? std::make_unique<karta::CrdSchemaSet>(karta::CrdSchemaSet::load_directory(*corpus / "crds"))
                  : nullptr;
  }();
  return crds.get();
}

karta::DefinitionReport check(const json& definition) {
  const auto* crds = corpus_crds();
  return karta::validate_definition(definition, [crds](const karta::GroupVersionKind& kind) {
    return crds != nullptr ? crds->find(kind) : nullptr;
  });
}

json catalog_definition(const std::string& file) {
  return test::document(test::source_dir() / "definitions/catalog" / file);
}

json jobset() { return catalog_definition("jobset.x-k8s.io-jobset-v1alpha2.yaml"); }

const std::string kChild = "spec.structureDefinition.childComponents[0]";

}  // namespace

TEST_CASE("every definition of the built-in catalog validates clean against the real CRDs") {
  if (!corpus_crds()) return;
  std::size_t checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::source_dir() / "definitions/catalog")) {
    if (entry.path().extension() != ".yaml") continue;
    for (const auto& document : test::documents(entry.path())) {
      CAPTURE(document.source);
      auto report = check(document.value);
      CHECK(report.faults == std::vector<std::string>{});
      ++checked;
    }
  }
  CHECK(checked == 35);
}

TEST_CASE("a typo in a path is refused with the field, the expression and a suggestion") {
  if (!corpus_crds()) return;
  json d = jobset();
  d["spec"]["structureDefinition"]["childComponents"][0]["specDefinition"]["podTemplateSpecPath"] =
      ".spec.replicatedJob[].template.spec.template";
  CHECK(check(d).faults == std::vector<std::string>{
      kChild + ".specDefinition.podTemplateSpecPath: `.spec.replicatedJob` is not in JobSet's schema at `.spec`; did "
               "you mean `replicatedJobs`?"});
}

TEST_CASE("a pod spec given where a pod template belongs is refused") {
  if (!corpus_crds()) return;
  json d = jobset();
  d["spec"]["structureDefinition"]["childComponents"][0]["specDefinition"]["podTemplateSpecPath"] =
      ".spec.replicatedJobs[].template.spec.template.spec";
  auto faults = check(d).faults;
  REQUIRE(faults.size() == 1);
  CHECK(faults[0].rfind(kChild + ".specDefinition.podTemplateSpecPath: `.spec.replicatedJobs[].template.spec.template.spec` "
                                 "is a PodSpec", 0) == 0);
}

TEST_CASE("a string where replicas belong is refused") {
  if (!corpus_crds()) return;
  json d = jobset();
  d["spec"]["structureDefinition"]["childComponents"][0]["scaleDefinition"]["replicasPath"] = ".spec.replicatedJobs[].name";
  CHECK(check(d).faults == std::vector<std::string>{
      kChild + ".scaleDefinition.replicasPath: `.spec.replicatedJobs[].name` is a string, but replicasPath needs an "
               "integer"});
}

TEST_CASE("each forbidden jq construct refuses the definition, naming the field") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"env.HOME", "`env`"}, {"$ENV.HOME", "`$ENV`"}, {"input", "`input`"}, {"[inputs]", "`inputs`"},
      {".a | debug", "`debug`"}, {".a | stderr", "`stderr`"}, {"input_filename", "`input_filename`"},
      {"$__loc__", "`$__loc__`"}, {"halt", "`halt`"}, {"\"x\" | halt_error", "`halt_error`"}, {"..", "`..`"},
      {"recurse", "`recurse`"}, {"walk(.)", "`walk`"}, {"[paths]", "`paths`"}, {"range(10)", "`range`"},
      {"repeat(.)", "`repeat`"}, {"while(true; .)", "`while`"}, {"until(false; .)", "`until`"},
      {"def f: f; f", "`def`"}, {".a = 1", "`=`"}, {".a |= 1", "`|=`"},
      {".a += 1", "`+=`"}, {".a -= 1", "`-=`"}, {".a *= 1", "`*=`"}, {".a /= 1", "`/=`"}, {".a %= 1", "`%=`"},
      {".a //= 1", "`//=`"}, {"del(.a)", "`del`"}, {"setpath([\"a\"]; 1)", "`setpath`"},
      {"delpaths([[\"a\"]])", "`delpaths`"}, {".a | test(\"x\")", "`test`"}, {".a | match(\"x\")", "`match`"},
      {".a | capture(\"x\")", "`capture`"}, {".a | scan(\"x\")", "`scan`"}, {".a | split(\"x\"; \"g\")", "`split/2`"},
      {".a | splits(\"x\")", "`splits`"}, {".a | sub(\"x\"; \"y\")", "`sub`"}, {".a | gsub(\"x\"; \"y\")", "`gsub`"}};
  for (const auto& [expression, construct] : cases) {
    CAPTURE(expression);
    json d = jobset();
    d["spec"]["structureDefinition"]["childComponents"][0]["instanceIdPath"] = expression;
    auto faults = check(d).faults;
    REQUIRE(!faults.empty());
    CHECK(faults[0].rfind(kChild + ".instanceIdPath: " + expression + ": " + construct, 0) == 0);
  }
}

TEST_CASE("each expression that does not compile is named, though valid ones are compiled in one program") {
  json d = jobset();
  d["spec"]["structureDefinition"]["rootComponent"]["kind"]["group"] = "unknown.example.com";  // only jq is checked
  json& child = d["spec"]["structureDefinition"]["childComponents"][0];
  // Both pass the safety check; only libjq finds the unbound variables. A variable bound in one expression
  // is not in scope in the next, as when each is compiled alone.
  child["instanceIdPath"] = ".spec.replicatedJobs[] | .name as $job | $job";
  child["scaleDefinition"]["replicasPath"] = "$job";
  child["podSelector"]["componentInstanceSelector"]["idPath"] = ".metadata.name as $x | $y";
  auto jq_error = [](const std::string& expression) { return karta::jq_compile_error(expression).value_or("compiles"); };
  CHECK(jq_error("$job") == "jq: error: $job is not defined at <top-level>, line 1:\n$job; jq: 1 compile error");
  CHECK(check(d).faults == std::vector<std::string>{
      kChild + ".scaleDefinition.replicasPath: $job: does not compile: " + jq_error("$job"),
      kChild + ".podSelector.componentInstanceSelector.idPath: .metadata.name as $x | $y: does not compile: " +
          jq_error(".metadata.name as $x | $y")});
  // Its own expressions, a `#` comment at the end of one included, compile together.
  json commented = jobset();
  commented["spec"]["structureDefinition"]["childComponents"][0]["instanceIdPath"] = ".spec.replicatedJobs[].name # the job";
  CHECK(check(commented).faults == std::vector<std::string>{});
}

TEST_CASE("a definition whose CRD is unknown is admitted with a warning that its paths were not verified") {
  json d = jobset();
  d["spec"]["structureDefinition"]["rootComponent"]["kind"]["group"] = "unknown.example.com";
  auto report = check(d);
  CHECK(report.faults.empty());
  CHECK(report.warnings == std::vector<std::string>{
      "no CustomResourceDefinition known for unknown.example.com/v1alpha2 JobSet: paths not verified against a schema"});
}

TEST_CASE("/validate refuses a bad Karta with 422 and every fault, and a second Karta for a kind already defined") {
  if (!corpus_crds()) return;
  auto state = std::make_shared<karta::AdmissionState>();
  state->catalog = test::builtin_catalog();
  state->crds = std::make_shared<karta::CrdSchemaSet>(*corpus_crds());
  state->cluster_kartas["jobset.x-k8s.io/v1alpha2/JobSet"] = "jobset-v1alpha2";
  karta::AdmissionService service;
  service.update(state);
  auto respond = [&](const json& object) {
    json review = test::admission_review(object, "CREATE", "k-1");
    review["request"]["kind"] = {{"group", "run.ai"}, {"version", "v1alpha1"}, {"kind", "Karta"}};
    auto reply = karta::handle_admission(service, karta::AdmissionEndpoint::Validate,
                                         {"POST", "/validate", "", "application/json", review.dump()});
    REQUIRE(reply.status == 200);
    return json::parse(reply.body)["response"];
  };
  json same = jobset();
  CHECK(respond(same) == json::parse(R"({"uid":"k-1","allowed":true,"status":{"code":200}})"));

  json second = jobset();
  second["metadata"]["name"] = "my-jobset";
  CHECK(respond(second) == json::parse(R"J({"uid":"k-1","allowed":false,"status":{"code":422,"reason":"Invalid",
      "message":"Karta my-jobset is invalid: spec.structureDefinition.rootComponent.kind: jobset.x-k8s.io/v1alpha2 JobSet is already defined by Karta \"jobset-v1alpha2\" (KAI Scheduler refuses two definitions of one kind)"}})J"));

  json broken = jobset();
  broken["spec"]["structureDefinition"]["childComponents"][0]["instanceIdPath"] = "env.HOME";
  broken["spec"]["structureDefinition"]["childComponents"][0]["scaleDefinition"]["replicasPath"] = ".spec.replicatedJobz[].replicas";
  json response = respond(broken);
  CHECK(response["allowed"] == false);
  CHECK(response["status"]["code"] == 422);
  std::string message = response["status"]["message"];
  CHECK(message.find(kChild + ".instanceIdPath: env.HOME: `env` is not allowed") != std::string::npos);
  CHECK(message.find(kChild + ".scaleDefinition.replicasPath: `.spec.replicatedJobz` is not in JobSet's schema at "
                              "`.spec`; did you mean `replicatedJobs`?") != std::string::npos);
}

TEST_CASE("/mutate stamps the labels KAI looks definitions up by on a Karta") {
  karta::AdmissionState state{test::builtin_catalog(), {}};
  json karta_object = jobset();
  karta_object["apiVersion"] = "run.ai/v1alpha1";
  auto request = karta::request_for_object(karta_object);
  auto result = karta::AdmissionService::mutate(request, state);
  CHECK(result.decision.patch.value() == json::parse(R"([{"op":"add","path":"/metadata/labels","value":{
      "run.ai/karta-group":"jobset.x-k8s.io","run.ai/karta-version":"v1alpha2","run.ai/karta-kind":"JobSet"}}])"));
  json patched = test::kubectl_apply(karta_object, result.decision.patch.value());
  CHECK(karta::AdmissionService::mutate(karta::request_for_object(patched), state).decision.patch.empty());
}

TEST_CASE("karta-webhook validate exits non-zero on a fault and prints it") {
  auto corpus = test::corpus_dir();
  if (!corpus) return;
  test::TempDir dir;
  json d = jobset();
  d["spec"]["structureDefinition"]["childComponents"][0]["specDefinition"]["podTemplateSpecPath"] =
      ".spec.replicatedJob[].template.spec.template";
  std::ofstream(dir.path / "bad.json") << d.dump();
  // JobSet's CRD alone: the whole corpus is 15 MB of YAML, which an unoptimised sanitizer build reads in 6 s.
  std::filesystem::create_directory(dir.path / "crds");
  std::filesystem::copy_file(*corpus / "crds/jobset.yaml", dir.path / "crds/jobset.yaml");
  const std::string crds = (dir.path / "crds").string();
  int code = 0;
  std::string out = test::run_command(test::binary_path().string() + " validate -f " + (dir.path / "bad.json").string() +
                                          " --crds " + crds, &code);
  CHECK(code == 1);
  CHECK(out == (dir.path / "bad.json").string() + "#0 jobset-v1alpha2: INVALID\n"
               "  fault: " + kChild + ".specDefinition.podTemplateSpecPath: `.spec.replicatedJob` is not in JobSet's "
               "schema at `.spec`; did you mean `replicatedJobs`?\n"
               "1 definitions, 1 with faults\n");
  out = test::run_command(test::binary_path().string() + " validate -f " +
                              (test::source_dir() / "definitions/catalog/jobset.x-k8s.io-jobset-v1alpha2.yaml").string() +
                              " --crds " + crds, &code);
  CHECK(code == 0);
}

}  // namespace unit_definition_validation
