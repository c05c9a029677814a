// Provenance (issue 60): the webhook lists on the workload the keys it wrote (karta.run.ai/written), so a
// policy change reaches admitted workloads on their next UPDATE while a value the user set stays theirs,
// a forged entry takes nothing over, and `audit` shows the drift before that UPDATE.

#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "admission/admission_service.h"
#include "cli/audit.h"
#include "support/test_support.h"

namespace unit_provenance {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

namespace {

std::shared_ptr<karta::AdmissionState> state_with_queue(const std::string& production_queue) {
  auto state = std::make_shared<karta::AdmissionState>();
  state->catalog = test::builtin_catalog();
  state->policy = test::policy_from_yaml(R"(
scheduling:
  queue: {label: kai.scheduler/queue, default: default-queue}
tenants:
- name: production
  namespaces: ["prod-*"]
  scheduling: {queue: {default: )" + production_queue + R"(}}
)");
  return state;
}

json deployment(const std::string& name, const json& labels) {
  json object = test::yaml(R"(
apiVersion: apps/v1
kind: Deployment
metadata: {namespace: prod-a}
spec:
  replicas: 1
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: x}}
    spec: {containers: [{name: c, image: busybox}]}
)");
  object["metadata"]["name"] = name;
  object["metadata"]["labels"] = labels;
  return object;
}

// The patch /mutate answers for `object` (on UPDATE, with `old` as stored).
json mutate(const karta::AdmissionState& state, const json& object, const json& old = nullptr) {
  json review = test::admission_review(object, old.is_null() ? "CREATE" : "UPDATE");
  review["request"]["oldObject"] = old;
  karta::ReviewDecoding decoding = karta::decode_admission_review(review.dump());
  REQUIRE(decoding.review);
  return karta::AdmissionService::mutate(decoding.review->request, state).decision.patch.value();
}

json admitted(const karta::AdmissionState& state, const json& object) { return object.patch(mutate(state, object)); }

}  // namespace

TEST_CASE("a queue the webhook wrote follows the policy on the next UPDATE; a queue the user set stays; audit shows the drift") {
  auto before = state_with_queue("prod-q");
  json webhooks = admitted(*before, deployment("webhooks", {{"app", "x"}}));
  json users = admitted(*before, deployment("users", {{"app", "x"}, {"kai.scheduler/queue", "team-q"}}));
  CHECK(webhooks["metadata"]["labels"] == json{{"app", "x"}, {"kai.scheduler/queue", "prod-q"}});
  CHECK(webhooks["metadata"]["annotations"] == json{{"karta.run.ai/written", "label:kai.scheduler/queue"}});
  CHECK(users["metadata"]["labels"] == json{{"app", "x"}, {"kai.scheduler/queue", "team-q"}});
  CHECK_FALSE(users["metadata"].contains("annotations"));  // the webhook wrote nothing of the workload's own

  auto after = state_with_queue("prod-gold");
  karta::AuditReport report("files", after);
  report.add(webhooks);
  report.add(users);
  json document = report.to_json();
  REQUIRE(document["workloads"].size() == 1);  // "users": nothing to patch, nothing drifted
  CHECK(document["workloads"][0]["name"] == "webhooks");
  CHECK(document["workloads"][0]["drift"] ==
        json::parse(R"([{"key": "label:kai.scheduler/queue", "value": "prod-q", "policy": "prod-gold"}])"));
  CHECK(document["workloads"][0]["patch"]["set"] == json::parse(R"([
    {"op": "add", "path": "/metadata/labels/kai.scheduler~1queue", "value": "prod-gold"},
    {"op": "add", "path": "/spec/template/metadata/labels/kai.scheduler~1queue", "value": "prod-gold"}])"));
  CHECK(document["drifted"] == 1);
  const std::string text = karta::render_audit(document);
  CHECK(text.find("\nDeployment prod-a/webhooks (apps/v1)\n  tenant: production\n"
                  "  drift: label kai.scheduler/queue is \"prod-q\", written by the webhook; the policy now writes "
                  "\"prod-gold\"\n") != std::string::npos);
  CHECK(text.find("2 workloads audited, 0 violate the label policy, 1 would be patched, 1 carry values the webhook "
                  "wrote that the policy has changed since (their next UPDATE follows the policy)\n") != std::string::npos);

  // The next UPDATE (a scale: the pod template is as it was, and stays as it was) carries the new queue.
  json scaled = webhooks;
  scaled["spec"]["replicas"] = 3;
  CHECK(mutate(*after, scaled, webhooks) == json::parse(R"([
    {"op": "add", "path": "/metadata/labels/kai.scheduler~1queue", "value": "prod-gold"}])"));
  // Sent again with that patch applied (reinvocation), the same UPDATE gets nothing more: the new queue
  // is the webhook's and stays listed.
  CHECK(mutate(*after, scaled.patch(mutate(*after, scaled, webhooks)), webhooks) == json::array());
  json scaled_users = users;
  scaled_users["spec"]["replicas"] = 3;
  CHECK(mutate(*after, scaled_users, users) == json::array());
}

TEST_CASE("a queue the user sets on an UPDATE over the webhook's becomes theirs and stays") {
  auto state = state_with_queue("prod-q");
  json stored = admitted(*state, deployment("webhooks", {{"app", "x"}}));
  json changed = stored;
  changed["metadata"]["labels"]["kai.scheduler/queue"] = "team-q";
  json patch = mutate(*state, changed, stored);
  CHECK(patch == json::parse(R"([{"op": "add", "path": "/metadata/annotations/karta.run.ai~1written", "value": ""}])"));
  json now = changed.patch(patch);
  auto later = state_with_queue("prod-gold");
  json again = now;
  again["spec"]["replicas"] = 2;
  CHECK(mutate(*later, again, now) == json::array());
}

TEST_CASE("a forged provenance entry only lets the webhook write the tenant's own value, and names no key it does not write") {
  auto state = state_with_queue("prod-q");
  json forged = deployment("forged", {{"app", "x"}, {"team", "mine"}, {"kai.scheduler/queue", "other-tenants-q"}});
  forged["metadata"]["annotations"] = {{"karta.run.ai/written", "label:team,label:kai.scheduler/queue,bogus"}};
  CHECK(mutate(*state, forged) == json::parse(R"([
    {"op": "add", "path": "/metadata/labels/kai.scheduler~1queue", "value": "prod-q"},
    {"op": "add", "path": "/spec/template/metadata/labels/kai.scheduler~1queue", "value": "prod-q"},
    {"op": "add", "path": "/metadata/annotations/karta.run.ai~1written", "value": "label:kai.scheduler/queue"}])"));
}

}  // namespace unit_provenance
