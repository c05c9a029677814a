// The label of karta_definition_faults_admitted_total (issue 58): under definitionPolicy.mode warn every
// Karta sent to /validate with faults is counted, and the kinds those Kartas define are their senders' to
// choose. A label value is a series /metrics keeps for good, so the label names the kind only when a
// loaded definition registers it, and `other` otherwise.

#include <doctest/doctest.h>

#include <set>
#include <sstream>

#include "admission/admission_service.h"
#include "runtime/admission_http.h"
#include "support/test_support.h"

namespace unit_definition_fault_metrics {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

namespace {

// A Karta for `group`/`version` `kind` that reads the environment: a fault /validate admits under warn.
json unsafe_karta(const std::string& name, const std::string& group, const std::string& kind,
                  const std::string& version = "v1") {
  return test::yaml(R"(
apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: )" + name + R"(}
spec:
  structureDefinition:
    rootComponent:
      name: root
      kind: {group: )" + group + R"(, version: )" + version + R"(, kind: )" + kind + R"(}
      statusDefinition:
        phaseDefinition: {path: $ENV.HOME}
        statusMappings:
          running: [{byPhase: Running}]
)");
}

json validate(const karta::AdmissionService& service, const json& karta_object) {
  json review = test::admission_review(karta_object, "CREATE", "k-1");
  review["request"]["kind"] = {{"group", "run.ai"}, {"version", "v1alpha1"}, {"kind", "Karta"}};
  auto reply = karta::handle_admission(service, karta::AdmissionEndpoint::Validate,
                                       {"POST", "/validate", "timeout=5s", "application/json", review.dump()});
  REQUIRE(reply.status == 200);
  return json::parse(reply.body)["response"];
}

// The lines of /metrics of that counter.
std::vector<std::string> fault_series(karta::AdmissionService& service) {
  std::vector<std::string> lines;
  std::istringstream text(service.metrics().render());
  for (std::string line; std::getline(text, line);) {
    if (line.starts_with("karta_definition_faults_admitted_total{")) lines.push_back(line);
  }
  return lines;
}

// Every series on /metrics, without its value: what grows with new kinds, and not with larger counts.
std::set<std::string> series(karta::AdmissionService& service) {
  std::set<std::string> names;
  std::istringstream text(service.metrics().render());
  for (std::string line; std::getline(text, line);) {
    if (!line.empty() && !line.starts_with("#")) names.insert(line.substr(0, line.rfind(' ')));
  }
  return names;
}

}  // namespace

TEST_CASE("300 faulty Karta kinds under warn add one metric series; a kind a loaded definition registers keeps its own") {
  karta::AdmissionService service;
  auto state = std::make_shared<karta::AdmissionState>();
  state->catalog = test::builtin_catalog();
  state->policy = test::policy_from_yaml("definitionPolicy: {mode: warn}\n");
  service.update(state);
  std::set<std::string> after_first;
  for (int i = 0; i < 300; ++i) {
    json response = validate(service, unsafe_karta("k" + std::to_string(i), "acme.example.com", "Kind" + std::to_string(i)));
    REQUIRE(response["allowed"] == true);
    if (i == 0) after_first = series(service);
  }
  CHECK(fault_series(service) == std::vector<std::string>{"karta_definition_faults_admitted_total{kind=\"other\"} 300"});
  // Nor does anything else on /metrics grow with them (the requests' kind label was bounded already): the
  // same series, only their values change. (A byte bound on the whole text failed once at 32 of 32: the
  // latency sums' digits vary with timing.)
  CHECK(series(service) == after_first);
  // JobSet is the built-in catalog's: its own value.
  CHECK(validate(service, unsafe_karta("js", "jobset.x-k8s.io", "JobSet", "v1alpha2"))["allowed"] == true);
  CHECK(fault_series(service) ==
        std::vector<std::string>{"karta_definition_faults_admitted_total{kind=\"jobset.x-k8s.io/v1alpha2/JobSet\"} 1",
                                 "karta_definition_faults_admitted_total{kind=\"other\"} 300"});
}

}  // namespace unit_definition_fault_metrics
