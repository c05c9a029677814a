// What the API server and the built-in controllers really send, over HTTPS to the running webhook: objects
// a controller made from another object (a ReplicaSet of a Deployment, a Job of a CronJob, Pods), UPDATEs
// of a Job whose template is immutable, and server-side dry runs. The objects are written as the
// controllers write them (labels copied from the owner's template, pod-template-hash, ownerReferences
// with controller: true).
#include <doctest/doctest.h>

#include "json/documents.h"
#include "support/running_webhook.h"
#include "support/test_support.h"

namespace e2e_controllers {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

namespace {

// examples/policy.yaml: inject labels, scheduler, queue and GPU hints; enforce `team` on workloads.
std::string example_policy() { return karta::read_text_file(test::source_dir() / "examples/policy.yaml"); }

json deployment() {
  return json::parse(R"({"apiVersion":"apps/v1","kind":"Deployment",
    "metadata":{"name":"web","namespace":"research","uid":"d-1","labels":{"team":"vision"}},
    "spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},
      "template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx"}]}}}})");
}

// The ReplicaSet the Deployment controller makes from a Deployment's (patched) template: its labels are
// the template's plus pod-template-hash, not the Deployment's, so it has no `team`.
json replica_set_of(const json& deployment) {
  json rs = {{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}};
  json labels = deployment["spec"]["template"]["metadata"]["labels"];
  labels["pod-template-hash"] = "5d8f7c9b6";
  rs["metadata"] = {{"name", "web-5d8f7c9b6"},
                    {"namespace", "research"},
                    {"labels", labels},
                    {"ownerReferences", json::array({{{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "web"},
                                                      {"uid", "d-1"}, {"controller", true},
                                                      {"blockOwnerDeletion", true}}})}};
  json tmpl = deployment["spec"]["template"];
  tmpl["metadata"]["labels"]["pod-template-hash"] = "5d8f7c9b6";
  rs["spec"] = {{"replicas", 2}, {"selector", {{"matchLabels", {{"app", "web"}, {"pod-template-hash", "5d8f7c9b6"}}}}},
                {"template", tmpl}};
  return rs;
}

json pod_of(const std::string& owner_api_version, const std::string& owner_kind, const std::string& owner_name) {
  json pod = json::parse(R"({"apiVersion":"v1","kind":"Pod",
    "metadata":{"generateName":"x-","namespace":"research","labels":{"app":"web"}},
    "spec":{"containers":[{"name":"c","image":"i"}]}})");
  pod["metadata"]["ownerReferences"] = json::array({{{"apiVersion", owner_api_version}, {"kind", owner_kind},
                                                     {"name", owner_name}, {"uid", "o-1"}, {"controller", true}}});
  return pod;
}

// A Job as stored after its CREATE was patched, running.
json stored_job() {
  return json::parse(R"({"apiVersion":"batch/v1","kind":"Job",
    "metadata":{"name":"train","namespace":"research","uid":"j-1","resourceVersion":"7","labels":{"team":"vision",
      "kai.scheduler/queue":"default-queue"},"annotations":{"platform.example.com/gpu-total":"2",
      "kai.scheduler/batch-min-member":"2"}},
    "spec":{"parallelism":2,"completions":2,"suspend":false,
      "selector":{"matchLabels":{"batch.kubernetes.io/controller-uid":"j-1"}},
      "template":{"metadata":{"labels":{"batch.kubernetes.io/controller-uid":"j-1","batch.kubernetes.io/job-name":"train",
          "kai.scheduler/queue":"default-queue","platform.example.com/managed":"true","platform.example.com/role":"job"}},
        "spec":{"schedulerName":"kai-scheduler","restartPolicy":"Never","containers":[{"name":"t","image":"trainer",
          "resources":{"limits":{"nvidia.com/gpu":"1"}}}],
          "tolerations":[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}]}}},
    "status":{"active":2}})");
}

struct Webhook {
  test::RunningWebhook running{{}, example_policy()};
  test::HttpsClient client{running.port, running.certificates.ca};

  json review(const char* endpoint, const json& request_review) {
    auto reply = client.request("POST", endpoint, request_review.dump());
    REQUIRE(reply.status == 200);
    return json::parse(reply.body);
  }
};

json update_review(const json& object, const json& old_object) {
  json review = test::admission_review(object, "UPDATE", "u-1");
  review["request"]["oldObject"] = old_object;
  review["request"]["options"] = {{"apiVersion", "meta.k8s.io/v1"}, {"kind", "UpdateOptions"}};
  return review;
}

}  // namespace

TEST_CASE("an owned ReplicaSet, Job or Pod is neither patched nor denied; a bare one is still handled") {
  Webhook webhook;
  // The Deployment itself is patched, and its template then gives the ReplicaSet's.
  json review = webhook.review("/mutate", test::admission_review(deployment()));
  json patched = test::kubectl_apply(deployment(), test::decoded_patch(review));
  CHECK(patched["spec"]["template"]["metadata"]["labels"] ==
        json::parse(R"({"app":"web","kai.scheduler/queue":"default-queue","platform.example.com/managed":"true",
                        "platform.example.com/role":"deployment"})"));
  json rs = replica_set_of(patched);
  const json allowed = json::parse(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",
                                       "response":{"uid":"uid-1","allowed":true,"status":{"code":200}}})");
  CHECK(webhook.review("/mutate", test::admission_review(rs)) == allowed);
  CHECK(webhook.review("/validate", test::admission_review(rs)) == allowed);
  // Pods of a ReplicaSet, of a Job, of a JobSet's Job: made from templates that were patched.
  for (const auto& [api_version, kind] : std::vector<std::pair<std::string, std::string>>{
           {"apps/v1", "ReplicaSet"}, {"batch/v1", "Job"}, {"apps/v1", "StatefulSet"}}) {
    CAPTURE(kind);
    json pod = pod_of(api_version, kind, "web");
    CHECK(webhook.review("/mutate", test::admission_review(pod)) == allowed);
    CHECK(webhook.review("/validate", test::admission_review(pod)) == allowed);
  }
  json cron_job_job = stored_job();
  cron_job_job["metadata"]["labels"].erase("team");
  cron_job_job["metadata"]["ownerReferences"] = json::array(
      {{{"apiVersion", "batch/v1"}, {"kind", "CronJob"}, {"name", "nightly"}, {"uid", "c-1"}, {"controller", true}}});
  CHECK(webhook.review("/validate", test::admission_review(cron_job_job)) == allowed);

  // A bare ReplicaSet (no controller), one owned without controller: true, and a Pod whose controller has
  // no definition are handled: the label policy denies the ReplicaSet without `team`.
  json bare = rs;
  bare["metadata"].erase("ownerReferences");
  CHECK(webhook.review("/validate", test::admission_review(bare))["response"]["allowed"] == false);
  json not_controller = rs;
  not_controller["metadata"]["ownerReferences"][0]["controller"] = false;
  CHECK(webhook.review("/validate", test::admission_review(not_controller))["response"]["allowed"] == false);
  json foreign = pod_of("example.com/v1", "Unknown", "x");
  CHECK(test::decoded_patch(webhook.review("/mutate", test::admission_review(foreign))) ==
        json::parse(R"([{"op":"add","path":"/metadata/labels/kai.scheduler~1queue","value":"default-queue"},
                        {"op":"add","path":"/metadata/labels/platform.example.com~1managed","value":"true"},
                        {"op":"add","path":"/metadata/labels/platform.example.com~1role","value":"pod"},
                        {"op":"add","path":"/spec/schedulerName","value":"kai-scheduler"},
                        {"op":"add","path":"/metadata/annotations","value":{"karta.run.ai/written":"label:kai.scheduler/queue"}}])"));
}

TEST_CASE("an UPDATE that leaves a Job's immutable template as it is gets no patch under /spec/template") {
  Webhook webhook;
  json old_job = stored_job();
  // Kueue suspending it, a user adding a label: the template is the same.
  json updated = old_job;
  updated["spec"]["suspend"] = true;
  updated["metadata"]["labels"]["stage"] = "nightly";
  updated["metadata"]["annotations"]["note"] = "x";
  json response = webhook.review("/mutate", update_review(updated, old_job));
  CHECK(response["response"] == json::parse(R"({"uid":"u-1","allowed":true,"status":{"code":200}})"));
  // The same template without the labels we added at creation is left alone too: the Job is stored so.
  json without_ours = old_job;
  without_ours["spec"]["template"]["metadata"]["labels"].erase("platform.example.com/role");
  json again = without_ours;
  again["metadata"]["labels"]["stage"] = "nightly";
  CHECK(webhook.review("/mutate", update_review(again, without_ours))["response"] ==
        json::parse(R"({"uid":"u-1","allowed":true,"status":{"code":200}})"));
  // An UPDATE that changes the template (a suspended Job's template may change) is patched as on CREATE.
  json changed = without_ours;
  changed["spec"]["template"]["spec"]["containers"][0]["image"] = "trainer:v2";
  CHECK(test::decoded_patch(webhook.review("/mutate", update_review(changed, without_ours))) ==
        json::parse(R"([{"op":"add","path":"/spec/template/metadata/labels/platform.example.com~1role","value":"job"}])"));
  // Workload labels are mutable and still patched on UPDATE: a Job stored without the queue label gets it.
  json no_queue = old_job;
  no_queue["metadata"]["labels"].erase("kai.scheduler/queue");
  json no_queue_updated = no_queue;
  no_queue_updated["spec"]["suspend"] = true;
  CHECK(test::decoded_patch(webhook.review("/mutate", update_review(no_queue_updated, no_queue))) ==
        json::parse(R"([{"op":"add","path":"/metadata/labels/kai.scheduler~1queue","value":"default-queue"},
                        {"op":"add","path":"/metadata/annotations/karta.run.ai~1written","value":"label:kai.scheduler/queue"}])"));
}

TEST_CASE("a server-side dry run is mutated and validated exactly like the real request") {
  Webhook webhook;
  json demo = test::document(test::source_dir() / "examples/jobset-demo.yaml");
  json real = webhook.review("/mutate", test::admission_review(demo));
  json dry_review = test::admission_review(demo);
  dry_review["request"]["dryRun"] = true;
  json dry = webhook.review("/mutate", dry_review);
  REQUIRE(test::decoded_patch(real).is_array());
  CHECK(test::decoded_patch(real).size() == 9);
  CHECK(dry == real);
  // The label policy decides a dry run as the real request: allowed with `team`, denied without.
  CHECK(webhook.review("/validate", dry_review) == webhook.review("/validate", test::admission_review(demo)));
  json no_team = demo;
  no_team["metadata"]["labels"].erase("team");
  json dry_no_team = test::admission_review(no_team);
  dry_no_team["request"]["dryRun"] = true;
  json denied = webhook.review("/validate", dry_no_team);
  CHECK(denied["response"]["allowed"] == false);
  CHECK(denied == webhook.review("/validate", test::admission_review(no_team)));
}

}  // namespace e2e_controllers
