#include <doctest/doctest.h>

#include "admission/admission_service.h"
#include "runtime/admission_http.h"
#include "support/test_support.h"

namespace unit_label_policy {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

namespace {

json review_response(const std::string& policy_yaml, const json& object, const std::string& namespace_name) {
  karta::AdmissionService service;
  auto state = std::make_shared<karta::AdmissionState>();
  state->catalog = test::builtin_catalog();
  state->policy = test::policy_from_yaml(policy_yaml);
  service.update(state);
  json review = test::admission_review(object, "CREATE", "lp-1");
  review["request"]["namespace"] = namespace_name;
  auto response =
      karta::handle_admission(service, karta::AdmissionEndpoint::Validate,
                              karta::HttpRequest{"POST", "/validate", "", "application/json", review.dump()});
  REQUIRE(response.status == 200);
  return json::parse(response.body)["response"];
}

const char* kEnforce = R"(
labelPolicy:
  mode: enforce
  exemptNamespaces: [kube-system]
  workload:
    required: [team]
    allowed: {team: "^[a-z][a-z0-9-]{1,30}$"}
  podTemplates:
    required: [platform.example.com/managed]
)";

json demo() { return test::document(test::source_dir() / "examples/jobset-demo.yaml"); }

}  // namespace

TEST_CASE("a workload without team is denied in enforce mode, with every violation and its place") {
  json object = demo();
  object["metadata"]["labels"].erase("team");
  CHECK(review_response(kEnforce, object, "research") == json::parse(R"({"uid":"lp-1","allowed":false,
    "status":{"code":403,"reason":"Forbidden","message":
      "label policy: workload: label \"team\" missing; worker pod template: label \"platform.example.com/managed\" missing"}})"));
}

TEST_CASE("a bad team value is denied, naming the value and the rule") {
  json object = demo();
  object["metadata"]["labels"]["team"] = "Vision_Team";
  object["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["metadata"] = {
      {"labels", {{"platform.example.com/managed", "true"}}}};
  CHECK(review_response(kEnforce, object, "research") == json::parse(R"({"uid":"lp-1","allowed":false,
    "status":{"code":403,"reason":"Forbidden","message":
      "label policy: workload: label \"team\" value \"Vision_Team\" does not match ^[a-z][a-z0-9-]{1,30}$"}})"));
}

TEST_CASE("audit mode admits the same workload with warnings naming team") {
  json object = demo();
  object["metadata"]["labels"].erase("team");
  std::string audit = kEnforce;
  audit.replace(audit.find("enforce"), 7, "audit");
  CHECK(review_response(audit, object, "research") == json::parse(R"({"uid":"lp-1","allowed":true,
    "status":{"code":200},"warnings":[
      "label policy (audit): workload: label \"team\" missing",
      "label policy (audit): worker pod template: label \"platform.example.com/managed\" missing"]})"));
}

TEST_CASE("exempt namespaces and conforming workloads are admitted") {
  json object = demo();
  object["metadata"]["labels"].erase("team");
  CHECK(review_response(kEnforce, object, "kube-system") == json::parse(R"({"uid":"lp-1","allowed":true,"status":{"code":200}})"));
  json good = demo();
  good["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["metadata"] = {
      {"labels", {{"platform.example.com/managed", "true"}}}};
  CHECK(review_response(kEnforce, good, "research") == json::parse(R"({"uid":"lp-1","allowed":true,"status":{"code":200}})"));
}

TEST_CASE("what the mutating webhook adds satisfies the pod-template rule the validating one checks") {
  json object = demo();
  karta::AdmissionState state{test::builtin_catalog(), test::policy_from_yaml(std::string(kEnforce) + R"(
podTemplates:
  labels: {platform.example.com/managed: "true"}
)")};
  auto request = karta::request_for_object(object);
  auto mutated = karta::AdmissionService::mutate(request, state);
  json patched = test::kubectl_apply(object, mutated.decision.patch.value());
  auto patched_request = karta::request_for_object(patched);
  auto validated = karta::AdmissionService::validate(patched_request, state);
  CHECK(validated.decision.allowed);
  CHECK(validated.outcome == "allowed");
}

namespace {

const char* kTeamPattern = R"(
labelPolicy:
  mode: enforce
  podTemplates:
    allowed: {team: "^[a-z0-9-]+$"}
)";

// The demo with `team` set to `value` on the leader's pod template.
json with_leader_team(const std::string& value) {
  json object = demo();
  object["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["labels"]["team"] = value;
  return object;
}

json denied(const std::string& message) {
  return {{"uid", "lp-1"}, {"allowed", false}, {"status", {{"code", 403}, {"reason", "Forbidden"}, {"message", message}}}};
}

}  // namespace

TEST_CASE("a 200,000-character label value in a pod template is a length violation, never searched") {
  // The API server does not length-check labels nested in a custom resource; std::regex overflowed the
  // stack searching this value with this pattern.
  CHECK(review_response(kTeamPattern, with_leader_team(std::string(200000, 'a')), "research") ==
        denied("label policy: leader pod template: label \"team\" value is 200000 characters; at most 63 are allowed"));

  std::string audit = kTeamPattern;
  audit.replace(audit.find("enforce"), 7, "audit");
  CHECK(review_response(audit, with_leader_team(std::string(200000, 'a')), "research") == json::parse(R"({
    "uid":"lp-1","allowed":true,"status":{"code":200},"warnings":[
      "label policy (audit): leader pod template: label \"team\" value is 200000 characters; at most 63 are allowed"]})"));
}

TEST_CASE("label values are held to Kubernetes' rules before the pattern: 63 characters pass, 64 do not") {
  const json allowed = json::parse(R"({"uid":"lp-1","allowed":true,"status":{"code":200}})");
  CHECK(review_response(kTeamPattern, with_leader_team(std::string(63, 'a')), "research") == allowed);
  CHECK(review_response(kTeamPattern, with_leader_team(std::string(64, 'a')), "research") ==
        denied("label policy: leader pod template: label \"team\" value is 64 characters; at most 63 are allowed"));
  // The pattern accepts a leading '-'; Kubernetes does not.
  CHECK(review_response(kTeamPattern, with_leader_team("-vision"), "research") ==
        denied("label policy: leader pod template: label \"team\" value \"-vision\" must begin and end with an "
               "alphanumeric character"));
  // A valid value the pattern refuses is reported as before, and the pattern is searched, not matched whole.
  CHECK(review_response(kTeamPattern, with_leader_team("Vision"), "research") ==
        denied("label policy: leader pod template: label \"team\" value \"Vision\" does not match ^[a-z0-9-]+$"));
  CHECK(review_response(R"(
labelPolicy:
  podTemplates:
    allowed: {team: "vis"}
)", with_leader_team("Team.vision_1"), "research") == allowed);
}

}  // namespace unit_label_policy
