// The tenant boundary (issue 58): the queues and priority classes a workload names itself must be ones its
// tenant permits (scheduling.queue.allowed, priority.allowed), wherever KAI Scheduler or the kind's own
// scheduler reads them: the workload's labels, its pod templates' labels and pod specs, and the kind's own
// queue field (Volcano's .spec.queue). Enforce denies, audit warns, replace rewrites the choice with a
// warning. Workloads are published objects: the Kubernetes docs' Job (tests/data/suspend/job.yaml),
// jobset-1 and volcano-job-1 of tests/corpus/samples.

#include <doctest/doctest.h>

#include "admission/admission_service.h"
#include "support/test_support.h"

namespace unit_tenant_boundary {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

// Two teams share the GPUs: research may name its own queue and the shared one, production its own.
std::string policy_with(const std::string& enforcement) {
  return R"(
scheduling:
  queue: {label: kai.scheduler/queue, default: default-queue}
tenants:
- name: research
  namespaces: [research, research-*]
  scheduling: {queue: {default: research-q, allowed: [shared-*], enforcement: )" +
         enforcement + R"(}}
  priority: {className: train, allowed: [build], enforcement: )" + enforcement + R"(}
- name: production
  namespaces: [serving]
  scheduling: {queue: {default: production-q, allowed: []}}
  priority: {className: inference}
)";
}

karta::AdmissionState state_with(const std::string& policy) {
  karta::AdmissionState state;
  state.catalog = test::builtin_catalog();
  state.policy = test::policy_from_yaml(policy);
  return state;
}

json job(const std::string& namespace_name, const json& labels = json::object()) {
  json object = test::document(test::source_dir() / "tests/data/suspend/job.yaml");
  object["metadata"]["namespace"] = namespace_name;
  if (!labels.empty()) object["metadata"]["labels"] = labels;
  return object;
}

karta::AdmissionResult mutate(const karta::AdmissionState& state, const json& object) {
  return karta::AdmissionService::mutate(karta::request_for_object(object), state);
}

karta::AdmissionResult validate(const karta::AdmissionState& state, const json& object) {
  return karta::AdmissionService::validate(karta::request_for_object(object), state);
}

// The object as the API server stores it after the mutating webhook's patch.
json patched(const json& object, const karta::AdmissionResult& result) {
  return object.patch(result.decision.patch.value());
}

TEST_CASE("a research Job naming production's queue is denied, naming the tenant and what it may name") {
  auto state = state_with(policy_with("enforce"));
  const json object = job("research-a", {{"kai.scheduler/queue", "production-q"}});
  auto mutated = mutate(state, object);
  CHECK(mutated.decision.warnings.empty());
  auto validated = validate(state, patched(object, mutated));
  CHECK(validated.outcome == "denied");
  CHECK(validated.decision.message ==
        "workload label kai.scheduler/queue: queue \"production-q\" is not one tenant research may name "
        "(research-q (its own), shared-*); "
        "job pod template label kai.scheduler/queue: queue \"production-q\" is not one tenant research may name "
        "(research-q (its own), shared-*)");

  SUBCASE("its own queue and the shared ones are allowed") {
    for (const char* queue : {"research-q", "shared-a100"}) {
      const json own = job("research-a", {{"kai.scheduler/queue", queue}});
      CHECK(validate(state, patched(own, mutate(state, own))).outcome == "allowed");
    }
  }
  SUBCASE("a Job naming no queue gets its tenant's, and is allowed") {
    const json plain = job("research-a");
    auto result = mutate(state, plain);
    CHECK(patched(plain, result)["metadata"]["labels"] == json{{"kai.scheduler/queue", "research-q"}, {"priorityClassName", "train"}});
    CHECK(validate(state, patched(plain, result)).outcome == "allowed");
  }
  SUBCASE("production may name only its own queue: research's is denied there") {
    const json theirs = job("serving", {{"kai.scheduler/queue", "research-q"}});
    auto denied = validate(state, patched(theirs, mutate(state, theirs)));
    CHECK(denied.outcome == "denied");
    CHECK(denied.decision.message.starts_with(
        "workload label kai.scheduler/queue: queue \"research-q\" is not one tenant production may name "
        "(production-q (its own)); "));
  }
}

TEST_CASE("with enforcement replace, the queue is replaced by the tenant's own, with a warning, and then allowed") {
  auto state = state_with(policy_with("replace"));
  const json object = job("research-a", {{"kai.scheduler/queue", "production-q"}});
  auto mutated = mutate(state, object);
  CHECK(mutated.decision.warnings ==
        std::vector<std::string>{"queue \"production-q\" is not one tenant research may name (research-q (its own), "
                                 "shared-*): replaced with research-q"});
  const json stored = patched(object, mutated);
  CHECK(stored["metadata"]["labels"] == json{{"kai.scheduler/queue", "research-q"}, {"priorityClassName", "train"}});
  CHECK(stored["spec"]["template"]["metadata"]["labels"] == json{{"kai.scheduler/queue", "research-q"}});
  CHECK(validate(state, stored).outcome == "allowed");

  SUBCASE("one that reaches /validate unreplaced (the mutating webhook skipped) is denied all the same") {
    CHECK(validate(state, object).outcome == "denied");
  }
}

TEST_CASE("with enforcement audit, a queue the tenant does not permit is admitted with a warning") {
  auto state = state_with(policy_with("audit"));
  const json object = job("research-a", {{"kai.scheduler/queue", "production-q"}});
  auto validated = validate(state, patched(object, mutate(state, object)));
  CHECK(validated.outcome == "allowed:warnings");
  CHECK(validated.decision.warnings ==
        std::vector<std::string>{
            "scheduling choices (audit): workload label kai.scheduler/queue: queue \"production-q\" is not one tenant "
            "research may name (research-q (its own), shared-*)",
            "scheduling choices (audit): job pod template label kai.scheduler/queue: queue \"production-q\" is not one "
            "tenant research may name (research-q (its own), shared-*)"});
}

TEST_CASE("a priority class the tenant does not permit is denied on the workload's label and on a pod spec") {
  auto state = state_with(policy_with("enforce"));
  json object = job("research-a", {{"priorityClassName", "inference"}});
  auto validated = validate(state, patched(object, mutate(state, object)));
  CHECK(validated.outcome == "denied");
  CHECK(validated.decision.message ==
        "workload label priorityClassName: priority class \"inference\" is not one tenant research may name "
        "(train (its own), build)");

  object = job("research-a");
  object["spec"]["template"]["spec"]["priorityClassName"] = "inference";
  validated = validate(state, patched(object, mutate(state, object)));
  CHECK(validated.decision.message ==
        "job pod spec priorityClassName: priority class \"inference\" is not one tenant research may name "
        "(train (its own), build)");

  SUBCASE("replace rewrites the pod spec's class and writes no workload label over it") {
    auto replacing = state_with(policy_with("replace"));
    auto mutated = mutate(replacing, object);
    CHECK(mutated.decision.warnings ==
          std::vector<std::string>{"priority class \"inference\" is not one tenant research may name (train (its own), "
                                   "build): replaced with train"});
    const json stored = patched(object, mutated);
    CHECK(stored["spec"]["template"]["spec"]["priorityClassName"] == "train");
    CHECK(stored["metadata"]["labels"] == json{{"kai.scheduler/queue", "research-q"}});
    CHECK(validate(replacing, stored).outcome == "allowed");
  }
}

TEST_CASE("a Volcano Job's own queue field is held to the tenant's queues too") {
  auto state = state_with(policy_with("enforce"));
  json object = test::document(test::source_dir() / "tests/corpus/samples/volcano-job-1.yaml");
  object["metadata"]["namespace"] = "research-a";
  object["spec"]["queue"] = "production-q";
  object["metadata"]["labels"] = {{"kai.scheduler/queue", "research-q"}};
  auto validated = validate(state, patched(object, mutate(state, object)));
  CHECK(validated.outcome == "denied");
  CHECK(validated.decision.message ==
        "metadata.annotations[\"karta-webhook.io/extensions\"].queuePath (/spec/queue): queue \"production-q\" is not "
        "one tenant research may name (research-q (its own), shared-*)");
}

TEST_CASE("a megabyte queue label is quoted cut, and the answer stays small") {
  auto state = state_with(policy_with("enforce"));
  json object = job("research-a");
  object["spec"]["template"]["metadata"]["labels"] = {{"kai.scheduler/queue", std::string(1 << 20, 'q')}};
  auto validated = validate(state, object);
  CHECK(validated.outcome == "denied");
  CHECK(validated.decision.message ==
        "job pod template label kai.scheduler/queue: queue \"" + std::string(128, 'q') +
            "... (1048576 bytes)\" is not one tenant research may name (research-q (its own), shared-*)");
}

TEST_CASE("the policy reader refuses enforcement without allowed, an unknown enforcement and a glob of no label value") {
  auto error_of = test::policy_error;
  CHECK(error_of("scheduling: {queue: {label: q, enforcement: replace}}") ==
        "policy.yaml: scheduling.queue.enforcement: needs scheduling.queue.allowed (without it any value may be "
        "named, and there is nothing to enforce)");
  CHECK(error_of("priority: {allowed: [a], enforcement: deny}") ==
        "policy.yaml: priority.enforcement: must be enforce, audit or replace, not \"deny\"");
  CHECK(error_of("scheduling: {queue: {label: q, allowed: [\"a b\"]}}") ==
        "policy.yaml: scheduling.queue.allowed[0]: \"a b\" holds ' ': only alphanumerics, '-', '_', '.' and '*' (any "
        "run of characters)");
  CHECK(error_of("scheduling: {queue: {allowed: [a]}}") == "policy.yaml: scheduling.queue.allowed: needs scheduling.queue.label");
}

}  // namespace unit_tenant_boundary
