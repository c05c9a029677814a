// A namespace whose labels the policy needs and does not have (issue 58): the policy's
// namespaceLabels.whenUnknown (its default, read strictly, global only), what serve's decision does with
// a store that has not heard of the namespace yet (it waits) and with labels that stay unknown (deny or
// the global policy, per request), what the offline commands do (they warn), and the wait a review is
// given from the API server's ?timeout=. e2e-namespace-lookups.cpp runs them in serve.

#include <doctest/doctest.h>

#include <future>
#include <thread>

#include "admission/admission_service.h"
#include "k8s/name_syntax.h"
#include "runtime/admission_http.h"
#include "support/test_support.h"

namespace unit_unknown_namespace_labels {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;
using namespace std::chrono_literals;
using karta::UnknownLabelsAction;

const std::string kSelecting = R"(
scheduling:
  queue: {label: kai.scheduler/queue, namespaceLabel: runai/queue, default: default-queue}
tenants:
- name: platform
  namespaces: [kube-*]
  exempt: true
- name: production
  namespaceSelector: {matchLabels: {tier: production}}
  scheduling: {queue: {default: production-q}}
  labelPolicy: {mode: enforce, workload: {required: [team]}}
)";
const std::string kQueueOnly = "scheduling:\n  queue: {label: kai.scheduler/queue, namespaceLabel: runai/queue}\n";

std::string error_of(const std::string& yaml) { return test::policy_error(yaml); }

TEST_CASE("namespaceLabels.whenUnknown is deny by default when a rule selects namespaces by label, globalPolicy otherwise") {
  CHECK(test::policy_from_yaml(kSelecting).namespace_labels.when_unknown == UnknownLabelsAction::Deny);
  CHECK(test::policy_from_yaml(kQueueOnly).namespace_labels.when_unknown == UnknownLabelsAction::GlobalPolicy);
  CHECK(test::policy_from_yaml("tenants: [{name: a, namespaces: [a]}, {name: all, namespaceSelector: {}}]")
            .namespace_labels.when_unknown == UnknownLabelsAction::GlobalPolicy);  // an empty selector reads none
  CHECK(test::policy_from_yaml("{}").namespace_labels.when_unknown == UnknownLabelsAction::GlobalPolicy);
  CHECK(test::policy_from_yaml(kSelecting + "namespaceLabels: {whenUnknown: globalPolicy}\n").namespace_labels.when_unknown ==
        UnknownLabelsAction::GlobalPolicy);
  CHECK(test::policy_from_yaml(kQueueOnly + "namespaceLabels: {whenUnknown: deny}\n").namespace_labels.when_unknown ==
        UnknownLabelsAction::Deny);
  CHECK(test::policy_from_yaml(kSelecting + "namespaceLabels: {}\n").namespace_labels.when_unknown == UnknownLabelsAction::Deny);
  // Global only: not merged into a tenant's policy, which is read as strictly as ever.
  const karta::Policy policy = test::policy_from_yaml(kSelecting + "namespaceLabels: {whenUnknown: deny}\n");
  CHECK(policy.document["namespaceLabels"] == json{{"whenUnknown", "deny"}});
  CHECK_FALSE(policy.tenants[1].document.contains("namespaceLabels"));
}

TEST_CASE("namespaceLabels is read strictly, and a tenant rule has none") {
  CHECK(error_of("namespaceLabels: {whenUnknown: maybe}") ==
        "policy.yaml: namespaceLabels.whenUnknown: must be deny or globalPolicy, not \"maybe\"");
  CHECK(error_of("namespaceLabels: {whenUnknown: ''}") ==
        "policy.yaml: namespaceLabels.whenUnknown: must be deny or globalPolicy, not \"\"");
  CHECK(error_of("namespaceLabels: {whenUnknown: true}") == "policy.yaml: namespaceLabels.whenUnknown: must be a string, not boolean");
  CHECK(error_of("namespaceLabels: {whenUnkown: deny}") == "policy.yaml: namespaceLabels.whenUnkown: unknown field (did you mean \"whenUnknown\"?)");
  CHECK(error_of("namespaceLabels: deny") == "policy.yaml: namespaceLabels: must be a map, not string");
  CHECK(error_of("tenants: [{name: a, namespaces: [a], namespaceLabels: {whenUnknown: deny}}]") ==
        "policy.yaml: tenants[0].namespaceLabels: unknown field");
}

// serve's store as a decision sees it: `known` namespaces have labels, any other is pending.
class PendingStore : public karta::NamespaceLabels {
 public:
  explicit PendingStore(std::map<std::string, karta::LabelMap> known) : known_(std::move(known)) {}
  karta::NamespaceLookup find(const std::string& name) const override {
    if (auto it = known_.find(name); it != known_.end()) return {it->second, ""};
    return {std::nullopt, "not seen yet", true};
  }
  // Learnt later, on a thread of the store's.
  void await(const std::string& name, Clock::time_point, std::function<void(karta::NamespaceLookup)> done) const override {
    ++awaited;
    later_ = std::async(std::launch::async, [done, name] {
      std::this_thread::sleep_for(20ms);
      done(name == "late-production" ? karta::NamespaceLookup{karta::LabelMap{{"tier", "production"}}, ""}
                                     : karta::NamespaceLookup{std::nullopt, "no such namespace"});
    });
  }
  mutable int awaited = 0;

 private:
  std::map<std::string, karta::LabelMap> known_;
  mutable std::future<void> later_;
};

karta::AdmissionState state_with(const std::string& policy) {
  karta::AdmissionState state;
  state.catalog = test::builtin_catalog();
  state.policy = test::policy_from_yaml(policy);
  state.namespaces = std::make_shared<PendingStore>(std::map<std::string, karta::LabelMap>{{"serving", {{"tier", "production"}}}});
  return state;
}

json jobset(const std::string& namespace_name) {
  json object = test::document(test::source_dir() / "tests/corpus/samples/jobset-1.yaml");
  object["metadata"]["namespace"] = namespace_name;
  return object;
}

TEST_CASE("serve waits for a namespace its store has not heard of; labels that stay unknown get whenUnknown, per request") {
  const karta::AdmissionState state = state_with(kSelecting);
  const karta::LabelSource serving{.serving = true};
  SUBCASE("known, or decided by name: no wait") {
    CHECK(karta::decide_tenant(state, "serving", serving).choice.tenant() == "production");
    auto exempt = karta::decide_tenant(state, "kube-system", serving);
    CHECK_FALSE(exempt.awaiting);
    CHECK(exempt.choice.exempt());
  }
  SUBCASE("unheard of: the decision waits, and mutate and validate say so") {
    CHECK(karta::decide_tenant(state, "new", serving).awaiting);
    auto request = karta::request_for_object(jobset("new"));
    for (const auto& result : {karta::AdmissionService::mutate(request, state, serving),
                               karta::AdmissionService::validate(request, state, serving)}) {
      CHECK(result.awaiting_namespace);
      CHECK(result.outcome == "awaiting-namespace");
      CHECK(result.decision.patch_operations() == 0);
    }
  }
  SUBCASE("what the wait came to decides") {
    const karta::NamespaceLookup production{karta::LabelMap{{"tier", "production"}}, ""};
    CHECK(karta::decide_tenant(state, "new", {.serving = true, .awaited = &production}).choice.tenant() == "production");
    const karta::NamespaceLookup unknown{std::nullopt, "still being read at the admission's deadline"};
    auto refused = karta::AdmissionService::validate(karta::request_for_object(jobset("new")), state,
                                                     {.serving = true, .awaited = &unknown});
    CHECK_FALSE(refused.decision.allowed);
    CHECK(refused.decision.code == 503);
    CHECK(refused.decision.reason == "ServiceUnavailable");
    CHECK(refused.decision.message ==
          "the labels of namespace \"new\" could not be read in time (still being read at the admission's deadline); the "
          "policy decides by them (namespaceLabels.whenUnknown: deny): retry in a few seconds");
    CHECK(refused.outcome == "denied:namespace-labels-unknown");
    CHECK(refused.namespace_labels_unknown);
    CHECK(refused.notes == std::vector<std::string>{refused.decision.message});

    const karta::AdmissionState lenient = state_with(kSelecting + "namespaceLabels: {whenUnknown: globalPolicy}\n");
    auto global = karta::AdmissionService::validate(karta::request_for_object(jobset("new")), lenient,
                                                    {.serving = true, .awaited = &unknown});
    CHECK(global.decision.allowed);
    CHECK(global.outcome == "skipped:no-label-policy");
    CHECK(global.decision.warnings ==
          std::vector<std::string>{"namespace \"new\": labels unknown (still being read at the admission's deadline); "
                                   "decided without them: the global policy, no queue from namespace labels"});
  }
  SUBCASE("offline, the same state decides without the labels and warns, whatever whenUnknown says") {
    auto offline = karta::AdmissionService::validate(karta::request_for_object(jobset("new")), state);
    CHECK(offline.decision.allowed);
    CHECK(offline.decision.warnings ==
          std::vector<std::string>{"namespace \"new\": labels unknown (not learnt yet); decided without them: the "
                                   "global policy, no queue from namespace labels"});
  }
  SUBCASE("a namespace's name from a review is escaped and cut wherever it is quoted") {
    const std::string hostile = "\x1b]0;owned\x07" + std::string(1 << 20, 'n');
    const karta::NamespaceLookup unknown{std::nullopt, "not a namespace name"};
    auto refused = karta::decide_tenant(state, hostile, {.serving = true, .awaited = &unknown});
    CHECK(refused.refusal.starts_with("the labels of namespace \"^[]0;owned\\ann"));
    CHECK(refused.refusal.find("\\a" + std::string(70, 'n') + "... (1048586 bytes)\" could not be read in time (not a "
                               "namespace name); ") != std::string::npos);
    CHECK(refused.refusal.size() < 300);
  }
}

TEST_CASE("AdmissionService::answer says which namespace to await, and answers once given what the wait came to") {
  auto service = std::make_shared<karta::AdmissionService>();
  service->update(std::make_shared<karta::AdmissionState>(state_with(kSelecting)));
  const std::string review = test::admission_review(jobset("late-production")).dump();
  karta::ReviewReply first = service->answer(karta::AdmissionEndpoint::Validate, "application/json", review);
  CHECK(first.status == karta::ReviewReply::Status::AwaitingNamespace);
  CHECK(first.body == "late-production");
  // Over HTTP, waiting on the calling thread: the store's answer decides.
  karta::HttpRequest request{"POST", "/validate", "timeout=10s", "application/json", review};
  karta::HttpResponse response = karta::handle_admission(*service, karta::AdmissionEndpoint::Validate, request);
  CHECK(response.status == 200);
  CHECK(json::parse(response.body)["response"] ==
        json{{"uid", "uid-1"},
             {"allowed", false},
             {"status", {{"code", 403}, {"reason", "Forbidden"}, {"message", "label policy: workload: label \"team\" missing"}}}});
  request.body = test::admission_review(jobset("gone")).dump();
  response = karta::handle_admission(*service, karta::AdmissionEndpoint::Mutate, request);
  CHECK(json::parse(response.body)["response"]["status"]["message"] ==
        "the labels of namespace \"gone\" could not be read in time (no such namespace); the policy decides by them "
        "(namespaceLabels.whenUnknown: deny): retry in a few seconds");
  CHECK(std::dynamic_pointer_cast<const PendingStore>(service->state()->namespaces)->awaited == 2);
}

TEST_CASE("a review's wait for its namespace's labels ends well inside the API server's ?timeout=") {
  CHECK(karta::parse_go_duration("10s") == 10'000ms);
  CHECK(karta::parse_go_duration("1m0s") == 60'000ms);
  CHECK(karta::parse_go_duration("2.5s") == 2'500ms);
  CHECK(karta::parse_go_duration("500ms") == 500ms);
  CHECK(karta::parse_go_duration("1h0m30s") == 3'630'000ms);
  for (const char* text : {"", "10", "-1s", "abc", "1.2.3s", "10d", "100000h", "0"}) {
    CAPTURE(text);
    CHECK_FALSE(karta::parse_go_duration(text));
  }
  // The wait (the same budget as a Karta's CRD read on /validate): the timeout less 1 s, or half of a
  // timeout under 2 s, at most 3 s; 3 s when the call names no timeout that parses.
  CHECK(karta::review_budget("timeout=10s") == 3'000ms);
  CHECK(karta::review_budget("timeout=30s") == 3'000ms);
  CHECK(karta::review_budget("dryRun=All&timeout=3s") == 2'000ms);
  CHECK(karta::review_budget("timeout=2s") == 1'000ms);
  CHECK(karta::review_budget("timeout=1s") == 500ms);
  for (const char* query : {"", "timeout=", "timeouts=10s", "xtimeout=10s", "timeout=abc"}) {
    CAPTURE(query);
    CHECK(karta::review_budget(query) == 3'000ms);
  }
}

TEST_CASE("a namespace's name is a DNS label: what serve may GET") {
  for (const char* name : {"a", "research", "team-a-1", "0x", "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij123"}) {
    CAPTURE(name);
    CHECK(karta::is_dns_label(name));
  }
  for (const char* name : {"", "..", ".", "a.b", "a/b", "-a", "a-", "Caps", "a_b", "a b", "%2e%2e",
                           "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij1234"}) {
    CAPTURE(name);
    CHECK_FALSE(karta::is_dns_label(name));
  }
}

}  // namespace unit_unknown_namespace_labels
