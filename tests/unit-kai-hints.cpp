// The scheduling hints as KAI Scheduler v0.17 reads them (issue 59; the files that read each key are in
// ../shared/reference/kai-scheduler, release v0.17.0): the gang of a JobSet and of a batch Job only where
// the policy asks and never over a value the user set, the kind's own queue field left to the user, no
// priority label over a class a pod template names, and preemptibility, node pool and preemption delay
// on the object each is read from. Every patch is applied with kubectl (the API server's JSON patch).

#include <doctest/doctest.h>

#include <sstream>

#include "admission/admission_service.h"
#include "support/test_support.h"

namespace unit_kai_hints {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

const std::string kGang = "gang: {minMemberAnnotation: kai.scheduler/batch-min-member}\n";
// A policy that asks for the gang of `kind`.
std::string gang_of(const std::string& kind) {
  return "gang: {minMemberAnnotation: kai.scheduler/batch-min-member, kinds: [" + kind + "]}\n";
}

karta::AdmissionState state_with(const std::string& policy) {
  karta::AdmissionState state;
  state.catalog = test::builtin_catalog();
  state.policy = test::policy_from_yaml(policy);
  return state;
}

karta::AdmissionResult mutate(const karta::AdmissionState& state, const json& object, const std::string& operation = "CREATE",
                              const json& old_object = nullptr) {
  karta::AdmissionRequest request = karta::request_for_object(object, operation);
  std::shared_ptr<const karta::JsonDocument> old_document;
  if (!old_object.is_null()) {
    old_document = std::make_shared<const karta::JsonDocument>(karta::JsonDocument::from(old_object));
    request.old_object = old_document->root();
  }
  return karta::AdmissionService::mutate(request, state);
}

// The object as stored after the patch, applied by kubectl.
json stored(const karta::AdmissionState& state, const json& object) {
  return test::kubectl_apply(object, mutate(state, object).decision.patch.value());
}

json annotations_at(const json& object, const std::string& pointer) {
  const json::json_pointer at(pointer);
  return object.contains(at) ? object.at(at) : json(nullptr);
}

json demo() { return test::document(test::source_dir() / "examples/jobset-demo.yaml"); }
json job() { return test::document(test::source_dir() / "tests/data/suspend/job.yaml"); }

TEST_CASE("a JobSet gets no gang value by default: KAI computes the demo's itself") {
  const json object = stored(state_with(kGang), demo());
  CHECK(annotations_at(object, "/metadata/annotations") == json(nullptr));
  CHECK(annotations_at(object, "/spec/replicatedJobs/0/template/metadata") == json(nullptr));
}

TEST_CASE("a JobSet whose policy asks for its gang gets what KAI v0.16+ reads: replicatedJobs at the root, parallelism per template") {
  auto state = state_with(gang_of("jobset.x-k8s.io/JobSet"));
  // The README demo: 2 replicatedJobs (AnyOrder, the default), parallelism 1 each. Not 3, its pods.
  json object = stored(state, demo());
  CHECK(annotations_at(object, "/metadata/annotations") == json{{"kai.scheduler/batch-min-member", "2"}});
  CHECK(annotations_at(object, "/spec/replicatedJobs/0/template/metadata/annotations") ==
        json{{"kai.scheduler/batch-min-member", "1"}});
  CHECK(annotations_at(object, "/spec/replicatedJobs/1/template/metadata/annotations") ==
        json{{"kai.scheduler/batch-min-member", "1"}});

  SUBCASE("an InOrder JobSet's root is 1: the jobset controller creates one replicatedJob at a time") {
    json in_order = test::document(test::source_dir() / "tests/corpus/samples/jobset-1.yaml");
    in_order["spec"]["startupPolicy"] = {{"startupPolicyOrder", "InOrder"}};
    object = stored(state, in_order);
    CHECK(annotations_at(object, "/metadata/annotations") == json{{"kai.scheduler/batch-min-member", "1"}});
    // paralleljobs: workers with parallelism 4, the driver 1.
    CHECK(annotations_at(object, "/spec/replicatedJobs/0/template/metadata/annotations") ==
          json{{"kai.scheduler/batch-min-member", "4"}});
    CHECK(annotations_at(object, "/spec/replicatedJobs/1/template/metadata/annotations") ==
          json{{"kai.scheduler/batch-min-member", "1"}});
  }
  SUBCASE("values the user set, at the root and on a template, are kept") {
    json own = demo();
    own["metadata"]["annotations"] = {{"kai.scheduler/batch-min-member", "1"}};
    own["spec"]["replicatedJobs"][1]["template"]["metadata"] = {{"annotations", {{"kai.scheduler/batch-min-member", "1"}}}};
    own["spec"]["replicatedJobs"][1]["template"]["spec"]["parallelism"] = 3;
    object = stored(state, own);
    CHECK(annotations_at(object, "/metadata/annotations") == json{{"kai.scheduler/batch-min-member", "1"}});
    CHECK(annotations_at(object, "/spec/replicatedJobs/1/template/metadata/annotations") ==
          json{{"kai.scheduler/batch-min-member", "1"}});
  }
  SUBCASE("on UPDATE the replicatedJobs, which a JobSet cannot change, are left alone") {
    const json before = demo();
    json after = demo();
    after["metadata"]["labels"]["note"] = "x";
    const json patch = mutate(state, after, "UPDATE", before).decision.patch.value();
    for (const json& op : patch) CHECK_FALSE(op["path"].get<std::string>().starts_with("/spec/replicatedJobs"));
  }
}

TEST_CASE("a multi-pod batch Job gets no gang unless the policy asks; one that carries its own keeps it") {
  // The Kubernetes docs' Job: parallelism 2, completions 4. KAI's default for a Job is independent pods.
  CHECK(annotations_at(stored(state_with(kGang), job()), "/metadata/annotations") == json(nullptr));

  auto asking = state_with(gang_of("batch/Job"));
  CHECK(annotations_at(stored(asking, job()), "/metadata/annotations") == json{{"kai.scheduler/batch-min-member", "2"}});
  // KAI's documented example: parallelism 6, at least 2 scheduled together.
  json hpo = job();
  hpo["spec"]["parallelism"] = 6;
  hpo["spec"]["completions"] = 6;
  hpo["metadata"]["annotations"] = {{"kai.scheduler/batch-min-member", "2"}};
  CHECK(annotations_at(stored(asking, hpo), "/metadata/annotations") == json{{"kai.scheduler/batch-min-member", "2"}});
}

TEST_CASE("a Volcano Job keeps the queue it names, with a warning when the tenant's differs; an UPDATE leaves it alone") {
  auto state = state_with("scheduling: {queue: {label: kai.scheduler/queue, default: research-q}}\n");
  const json volcano = test::document(test::source_dir() / "tests/corpus/samples/volcano-job-1.yaml");
  REQUIRE(volcano["spec"]["queue"] == "default");
  auto result = mutate(state, volcano);
  CHECK(result.decision.warnings ==
        std::vector<std::string>{"metadata.annotations[\"karta-webhook.io/extensions\"].queuePath (/spec/queue): "
                                 "\"default\" kept, though the workload's queue is \"research-q\" (kai.scheduler/queue)"});
  CHECK(test::kubectl_apply(volcano, result.decision.patch.value())["spec"]["queue"] == "default");

  json without = volcano;
  without["spec"].erase("queue");
  CHECK(stored(state, without)["spec"]["queue"] == "research-q");

  json updated = without;
  updated["metadata"]["annotations"] = {{"note", "x"}};
  const json patch = mutate(state, updated, "UPDATE", without).decision.patch.value();
  for (const json& op : patch) CHECK(op["path"] != "/spec/queue");
}

TEST_CASE("a Deployment whose pod template names a priority class gets no priorityClassName label over it") {
  auto state = state_with("priority: {className: train}\n");
  // The Kubernetes docs' nginx Deployment, its pods given the inference class.
  json deployment = test::yaml(R"(
apiVersion: apps/v1
kind: Deployment
metadata: {name: nginx-deployment, labels: {app: nginx}}
spec:
  replicas: 3
  selector: {matchLabels: {app: nginx}}
  template:
    metadata: {labels: {app: nginx}}
    spec:
      priorityClassName: inference
      containers: [{name: nginx, image: "nginx:1.14.2", ports: [{containerPort: 80}]}]
)");
  CHECK(stored(state, deployment)["metadata"]["labels"] == json{{"app", "nginx"}});
  deployment["spec"]["template"]["spec"].erase("priorityClassName");
  CHECK(stored(state, deployment)["metadata"]["labels"] == json{{"app", "nginx"}, {"priorityClassName", "train"}});
}

TEST_CASE("preemptibility and preemption delay go on the workload, the node pool on every pod template") {
  auto state = state_with(R"(
scheduling: {nodePool: {name: a100-pool}}
preemption: {preemptibility: non-preemptible, delay: 10m}
)");
  const json object = stored(state, demo());
  CHECK(object["metadata"]["labels"] == json{{"team", "vision"}, {"kai.scheduler/preemptibility", "non-preemptible"}});
  CHECK(object["metadata"]["annotations"] ==
        json{{"kai.scheduler/preemption-delay", "10m"}, {"karta.run.ai/written", "label:kai.scheduler/preemptibility"}});
  CHECK(object["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["labels"] ==
        json{{"platform.example.com/managed", "user-set"}, {"kai.scheduler/node-pool", "a100-pool"}});
  CHECK(object["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["metadata"]["labels"] ==
        json{{"kai.scheduler/node-pool", "a100-pool"}});

  SUBCASE("values the workload set are its own") {
    json own = demo();
    own["metadata"]["labels"]["kai.scheduler/preemptibility"] = "preemptible";
    own["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["metadata"] = {{"labels", {{"kai.scheduler/node-pool", "h100"}}}};
    const json kept = stored(state, own);
    CHECK(kept["metadata"]["labels"]["kai.scheduler/preemptibility"] == "preemptible");
    CHECK(kept["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["metadata"]["labels"] ==
          json{{"kai.scheduler/node-pool", "h100"}});
  }
  SUBCASE("the reader refuses a preemptibility and a delay KAI would not parse") {
    auto error_of = test::policy_error;
    CHECK(error_of("preemption: {preemptibility: sometimes}") ==
          "policy.yaml: preemption.preemptibility: \"sometimes\" is not one of preemptible, non-preemptible");
    CHECK(error_of("preemption: {delay: 10 minutes}") ==
          "policy.yaml: preemption.delay: \"10 minutes\" is not a duration as KAI reads it (Go's: 30s, 10m, 1h30m)");
    CHECK(error_of("preemption: {delay: 1h30m}") == "(no error)");
  }
}

TEST_CASE("README's table names every key the webhook writes for KAI, each with the KAI file that reads it") {
  const std::string readme = karta::read_text_file(test::source_dir() / "README.md");
  const auto start = readme.find("**Every key the webhook writes for KAI Scheduler**");
  REQUIRE(start != std::string::npos);
  const std::string table = readme.substr(start, readme.find("\n\n**", start + 10) - start);
  // The keys mutation writes (mutate/mutation.cpp, policy/policy.h's constants, the policy's defaults and
  // the Karta labels of admission/admission_service.cpp).
  for (const std::string key : {std::string("kai.scheduler/queue"), std::string(karta::kPriorityClassLabel),
                                std::string(karta::kPreemptibilityLabel), std::string(karta::kPreemptionDelayAnnotation),
                                karta::SchedulingPolicy{}.node_pool_label, std::string(karta::kTopologyAnnotation),
                                std::string("-required-placement"), std::string("-preferred-placement"),
                                std::string("kai.scheduler/batch-min-member"), std::string("run.ai/karta-group")}) {
    INFO(key);
    bool named_with_a_reader = false;
    std::istringstream rows(table);
    for (std::string row; std::getline(rows, row);) {
      if (row.starts_with("| ") && row.find(key) != std::string::npos && row.find(".go") != std::string::npos)
        named_with_a_reader = true;
    }
    CHECK(named_with_a_reader);
  }
  // schedulerName is read by the scheduler framework KAI's scheduler is built on, not by a file of its own.
  CHECK(table.find("| `schedulerName` (`scheduling.schedulerName`) | every pod spec |") != std::string::npos);
}

}  // namespace unit_kai_hints
