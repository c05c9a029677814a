// Admission metrics and log lines name the tenant whose policy decided (issue 60): the tenant rule's
// name from the policy, never a value of the request; the global policy's admissions carry no tenant label.

#include <doctest/doctest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <regex>
#include <sstream>
#include <string>

#include "admission/admission_service.h"
#include "runtime/admission_http.h"
#include "support/test_support.h"

namespace unit_tenant_metrics {  // this file's names, apart from other tests' in a unity build

using karta::json;
using karta::AdmissionEndpoint;
using karta::HttpRequest;
namespace test = karta::test;

namespace {

json job(const std::string& namespace_name, bool labelled) {
  json object = test::yaml(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: train}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
)");
  object["metadata"]["namespace"] = namespace_name;
  if (labelled) object["metadata"]["labels"] = {{"team", "ml"}};
  return object;
}

// The lines of the family karta_admission_requests_total, in the order rendered.
std::string request_lines(const std::string& text) {
  std::string lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("karta_admission_requests_total")) lines += line + "\n";
  }
  return lines;
}

}  // namespace

TEST_CASE("admissions are counted and logged by the tenant whose policy decided, and the global policy's without one") {
  karta::AdmissionService service;
  auto state = std::make_shared<karta::AdmissionState>();
  state->catalog = test::builtin_catalog();
  state->policy = test::policy_from_yaml(R"(
scheduling:
  queue: {label: kai.scheduler/queue, default: default-queue}
labelPolicy: {mode: audit, workload: {required: [team]}}
tenants:
- name: sandbox
  namespaces: ["sandbox-*"]
  exempt: true
- name: production
  namespaces: ["prod-*"]
  scheduling: {queue: {default: prod-q}}
  labelPolicy: {mode: enforce}
)");
  service.update(state);
  std::ostringstream log;
  auto previous = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::ostream_sink_st>(log));
  logger->set_pattern("%v");
  logger->set_level(spdlog::level::info);
  spdlog::set_default_logger(logger);
  auto answer = [&](AdmissionEndpoint endpoint, const json& object, const std::string& uid) {
    const char* path = endpoint == AdmissionEndpoint::Mutate ? "/mutate" : "/validate";
    auto response = karta::handle_admission(
        service, endpoint, HttpRequest{"POST", path, "", "application/json", test::admission_review(object, "CREATE", uid).dump()});
    CHECK(response.status == 200);
  };
  answer(AdmissionEndpoint::Mutate, job("prod-a", true), "u1");
  answer(AdmissionEndpoint::Validate, job("prod-a", false), "u2");  // production enforces: denied
  answer(AdmissionEndpoint::Validate, job("prod-b", true), "u3");
  answer(AdmissionEndpoint::Validate, job("web", false), "u4");  // the global policy audits: warned
  answer(AdmissionEndpoint::Mutate, job("sandbox-1", false), "u5");
  // A namespace named like a tenant is only a namespace: the global policy decided.
  answer(AdmissionEndpoint::Mutate, job("production", true), "u6");
  spdlog::set_default_logger(previous);

  CHECK(request_lines(service.metrics().render()) ==
        R"(karta_admission_requests_total{endpoint="mutate",operation="CREATE",kind="batch/v1/Job",result="patched"} 1
karta_admission_requests_total{endpoint="mutate",operation="CREATE",kind="batch/v1/Job",result="patched",tenant="production"} 1
karta_admission_requests_total{endpoint="mutate",operation="CREATE",kind="batch/v1/Job",result="skipped",tenant="sandbox"} 1
karta_admission_requests_total{endpoint="validate",operation="CREATE",kind="batch/v1/Job",result="allowed"} 1
karta_admission_requests_total{endpoint="validate",operation="CREATE",kind="batch/v1/Job",result="allowed",tenant="production"} 1
karta_admission_requests_total{endpoint="validate",operation="CREATE",kind="batch/v1/Job",result="denied",tenant="production"} 1
)");
  const std::string lines = std::regex_replace(log.str(), std::regex("duration_us=[0-9]+"), "duration_us=N");
  CHECK(lines ==
        "admission uid=u1 endpoint=mutate kind=batch/v1 Job object=prod-a/train operation=CREATE tenant=\"production\" "
        "outcome=patched patch_ops=3 duration_us=N\n"
        "admission uid=u2 endpoint=validate kind=batch/v1 Job object=prod-a/train operation=CREATE tenant=\"production\" "
        "outcome=denied patch_ops=0 duration_us=N\n"
        "admission uid=u3 endpoint=validate kind=batch/v1 Job object=prod-b/train operation=CREATE tenant=\"production\" "
        "outcome=allowed patch_ops=0 duration_us=N\n"
        "admission uid=u4 endpoint=validate kind=batch/v1 Job object=web/train operation=CREATE tenant=\"\" "
        "outcome=allowed:warnings patch_ops=0 duration_us=N\n"
        "admission uid=u5 endpoint=mutate kind=batch/v1 Job object=sandbox-1/train operation=CREATE tenant=\"sandbox\" "
        "outcome=skipped:exempt-tenant sandbox patch_ops=0 duration_us=N\n"
        "admission uid=u6 endpoint=mutate kind=batch/v1 Job object=production/train operation=CREATE tenant=\"\" "
        "outcome=patched patch_ops=3 duration_us=N\n");
}

}  // namespace unit_tenant_metrics
