// Tenants (issue 49): the policy a namespace gets (tenant rules, first match wins, by name glob or
// namespaceSelector), the queue's order (exemption, the workload's own label, the namespace's label, the
// tenant's default, the global default), the hints KAI Scheduler reads (gang annotation on gang.kinds only,
// priority and topology on the top owner), the validator's refusals, and the offline commands'
// --namespaces and --print-policy. Workloads are the published objects of tests/corpus/samples.
// Longer than 500 lines because each refusal of the validator is pinned with its whole message, and the
// offline commands are checked on the same policy and namespaces as admission (e2e-tenants.cpp has serve's).

#include <doctest/doctest.h>

#include <fstream>

#include "admission/admission_service.h"
#include "k8s/name_syntax.h"
#include "mutate/mutation.h"
#include "support/test_support.h"

namespace unit_tenants {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

const char* const kTenantPolicy = R"(
scheduling:
  queue: {label: kai.scheduler/queue, namespaceLabel: runai/queue, default: default-queue}
gang: {minMemberAnnotation: kai.scheduler/batch-min-member}
labelPolicy:
  mode: enforce
  workload: {required: [team]}
tenants:
- name: platform
  namespaces: [kube-*]
  exempt: true
- name: production
  namespaceSelector:
    matchLabels: {tier: production}
    matchExpressions: [{key: team, operator: Exists}]
  scheduling: {queue: {default: production-q}}
  podTemplates: {labels: {platform.example.com/tier: production}}
)";

const char* const kNamespaces = R"(
apiVersion: v1
kind: Namespace
metadata: {name: research, labels: {runai/queue: research-q}}
---
apiVersion: v1
kind: Namespace
metadata: {name: serving, labels: {tier: production, team: inference}}
---
apiVersion: v1
kind: Namespace
metadata: {name: serving-eu, labels: {tier: production, team: inference, runai/queue: eu-q}}
---
apiVersion: v1
kind: Namespace
metadata: {name: kube-jobs, labels: {runai/queue: research-q}}
)";

std::vector<json> namespace_objects(const std::string& text) {
  std::vector<json> objects;
  for (auto& document : karta::parse_documents(text, "namespaces.yaml")) objects.push_back(document.value);
  return objects;
}

karta::AdmissionState state_with(const std::string& policy, const std::string& namespaces = kNamespaces) {
  karta::AdmissionState state;
  state.catalog = test::builtin_catalog();
  state.policy = test::policy_from_yaml(policy);
  state.namespaces = std::make_shared<karta::NamespaceFile>(
      karta::NamespaceFile::from_objects(namespace_objects(namespaces), "namespaces.yaml"));
  return state;
}

json sample(const std::string& file, const std::string& namespace_name = "") {
  json object = test::document(test::source_dir() / "tests/corpus/samples" / file);
  if (!namespace_name.empty()) object["metadata"]["namespace"] = namespace_name;
  return object;
}

karta::AdmissionResult mutate(const karta::AdmissionState& state, const json& object) {
  return karta::AdmissionService::mutate(karta::request_for_object(object), state);
}

json patch_of(const karta::AdmissionResult& result) { return result.decision.patch.value(); }

// The JobSet paralleljobs (tests/corpus/samples/jobset-1.yaml): workers (parallelism 4) and driver (1).
json jobset_patch(const std::string& queue, const json& extra_labels = json::object()) {
  json labels = extra_labels;
  labels["kai.scheduler/queue"] = queue;
  return json::array({
      {{"op", "add"}, {"path", "/metadata/labels"}, {"value", {{"kai.scheduler/queue", queue}}}},
      {{"op", "add"}, {"path", "/spec/replicatedJobs/0/template/spec/template/metadata"}, {"value", {{"labels", labels}}}},
      {{"op", "add"}, {"path", "/spec/replicatedJobs/1/template/spec/template/metadata"}, {"value", {{"labels", labels}}}},
      // The workload's queue label is the webhook's: it follows the policy (README, karta.run.ai/written).
      {{"op", "add"}, {"path", "/metadata/annotations"}, {"value", {{"karta.run.ai/written", "label:kai.scheduler/queue"}}}},
  });
}

TEST_CASE("a JobSet in a namespace labelled runai/queue: research-q gets that queue, before the global default") {
  auto state = state_with(kTenantPolicy);
  auto result = mutate(state, sample("jobset-1.yaml", "research"));
  CHECK(patch_of(result) == jobset_patch("research-q"));
  CHECK(result.tenant.tenant() == "");
  CHECK(result.decision.warnings.empty());
  CHECK_FALSE(result.namespace_labels_unknown);
}

TEST_CASE("a JobSet in a namespace a namespaceSelector rule matches gets the rule's queue and labels") {
  auto state = state_with(kTenantPolicy);
  auto result = mutate(state, sample("jobset-1.yaml", "serving"));
  CHECK(patch_of(result) == jobset_patch("production-q", {{"platform.example.com/tier", "production"}}));
  CHECK(result.tenant.tenant() == "production");

  SUBCASE("the namespace's own queue label wins over the tenant's default") {
    auto eu = mutate(state, sample("jobset-1.yaml", "serving-eu"));
    CHECK(patch_of(eu) == jobset_patch("eu-q", {{"platform.example.com/tier", "production"}}));
    CHECK(eu.tenant.tenant() == "production");
  }
  SUBCASE("the tenant's label policy is the one enforced: the global one, merged in") {
    auto validated = karta::AdmissionService::validate(karta::request_for_object(sample("jobset-1.yaml", "serving")), state);
    CHECK(validated.outcome == "denied");
    CHECK(validated.violations == std::vector<std::string>{"workload: label \"team\" missing"});
  }
}

TEST_CASE("a JobSet in a namespace whose labels are unknown gets the global default, and a warning says why") {
  auto state = state_with(kTenantPolicy);
  auto result = mutate(state, sample("jobset-1.yaml", "elsewhere"));
  CHECK(patch_of(result) == jobset_patch("default-queue"));
  CHECK(result.tenant.tenant() == "");
  CHECK(result.namespace_labels_unknown);
  CHECK(result.decision.warnings ==
        std::vector<std::string>{"namespace \"elsewhere\": labels unknown (not in namespaces.yaml); decided without "
                                 "them: the global policy, no queue from namespace labels"});

  SUBCASE("without any source of namespaces, the same") {
    state.namespaces = nullptr;
    auto alone = mutate(state, sample("jobset-1.yaml", "research"));
    CHECK(patch_of(alone) == jobset_patch("default-queue"));
    CHECK(alone.decision.warnings ==
          std::vector<std::string>{"namespace \"research\": labels unknown (no namespaces to read them from); decided "
                                   "without them: the global policy, no queue from namespace labels"});
  }
  SUBCASE("a namespace known, with no rule matching and no queue label, gets the default without a warning") {
    auto known = state_with(kTenantPolicy, "apiVersion: v1\nkind: Namespace\nmetadata: {name: elsewhere}\n");
    auto plain = mutate(known, sample("jobset-1.yaml", "elsewhere"));
    CHECK(patch_of(plain) == jobset_patch("default-queue"));
    CHECK(plain.decision.warnings.empty());
  }
  SUBCASE("rules decided by name still apply while the labels are unknown: an exempt namespace stays exempt") {
    auto exempt = mutate(state, sample("jobset-1.yaml", "kube-unlisted"));
    CHECK(exempt.outcome == "skipped:exempt-tenant platform");
    CHECK(patch_of(exempt) == json::array());
  }
}

TEST_CASE("a workload in an exempt namespace gets no patch at all, and no check, though a default queue is set") {
  auto state = state_with(kTenantPolicy);
  auto request = karta::request_for_object(sample("jobset-1.yaml", "kube-jobs"));
  auto mutated = karta::AdmissionService::mutate(request, state);
  CHECK(mutated.outcome == "skipped:exempt-tenant platform");
  CHECK(mutated.decision.patch.empty());
  CHECK(mutated.decision.warnings.empty());
  auto validated = karta::AdmissionService::validate(request, state);
  CHECK(validated.outcome == "skipped:exempt-tenant platform");
  CHECK(validated.decision.allowed);
}

TEST_CASE("a workload that names its queue keeps it, in a namespace with a queue label and a tenant default") {
  auto state = state_with(kTenantPolicy);
  for (const char* namespace_name : {"research", "serving-eu", "elsewhere"}) {
    CAPTURE(namespace_name);
    json jobset = sample("jobset-1.yaml", namespace_name);
    jobset["metadata"]["labels"] = {{"kai.scheduler/queue", "own-q"}, {"team", "a"}};
    json patch = patch_of(mutate(state, jobset));
    REQUIRE(patch.size() == 2);
    json expected = jobset_patch("own-q", std::string(namespace_name) == "serving-eu"
                                              ? json{{"platform.example.com/tier", "production"}}
                                              : json::object());
    expected.erase(3);  // the workload's own label is there already, and the user's: not listed as written
    expected.erase(0);
    CHECK(patch == expected);
  }
}

TEST_CASE("the gang annotation goes only on the kinds gang.kinds names: none by default") {
  auto state = state_with("gang: {minMemberAnnotation: kai.scheduler/batch-min-member}\n");
  json job = test::yaml(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: pi, namespace: research}
spec:
  parallelism: 3
  completions: 6
  template:
    spec:
      restartPolicy: Never
      containers: [{name: pi, image: perl}]
)");
  CHECK(patch_of(mutate(state, job)) == json::array());
  for (const char* file : {"jobset-1.yaml", "pytorchjob-1.yaml", "rayjob-1.yaml", "leaderworkerset-1.yaml"}) {
    CAPTURE(file);
    CHECK(patch_of(mutate(state, sample(file))) == json::array());
  }

  SUBCASE("a policy that names a kind in gang.kinds gets it there, and only there") {
    auto named = state_with(
        "gang: {minMemberAnnotation: kai.scheduler/batch-min-member, kinds: [kubeflow.org/PyTorchJob, batch/Job]}\n");
    CHECK(patch_of(mutate(named, sample("pytorchjob-1.yaml"))) ==
          json::array({{{"op", "add"}, {"path", "/metadata/annotations"}, {"value", {{"kai.scheduler/batch-min-member", "2"}}}}}));
    CHECK(patch_of(mutate(named, job)) ==
          json::array({{{"op", "add"}, {"path", "/metadata/annotations"}, {"value", {{"kai.scheduler/batch-min-member", "3"}}}}}));
    CHECK(patch_of(mutate(named, sample("jobset-1.yaml"))) == json::array());
  }
}

TEST_CASE("priority and topology are written on the top owner only, and a workload's own priority wins") {
  auto state = state_with(R"(
priority: {className: train}
topology:
  name: cluster-topology
  requiredPlacement: cloud.provider.com/topology-block
  preferredPlacement: cloud.provider.com/topology-rack
)");
  json expected = json::array(
      {{{"op", "add"}, {"path", "/metadata/labels"}, {"value", {{"priorityClassName", "train"}}}},
       {{"op", "add"},
        {"path", "/metadata/annotations"},
        {"value",
         {{"kai.scheduler/topology", "cluster-topology"},
          {"kai.scheduler/topology-preferred-placement", "cloud.provider.com/topology-rack"},
          {"kai.scheduler/topology-required-placement", "cloud.provider.com/topology-block"},
          {"karta.run.ai/written", "label:priorityClassName"}}}}});
  CHECK(patch_of(mutate(state, sample("jobset-1.yaml"))) == expected);
  CHECK(patch_of(mutate(state, sample("pytorchjob-1.yaml"))) == expected);

  json own = sample("jobset-1.yaml");
  own["metadata"]["labels"] = {{"priorityClassName", "inference"}};
  own["metadata"]["annotations"] = {{"kai.scheduler/topology", "other-topology"}};
  CHECK(patch_of(mutate(state, own)) ==
        json::array({{{"op", "add"},
                      {"path", "/metadata/annotations/kai.scheduler~1topology-required-placement"},
                      {"value", "cloud.provider.com/topology-block"}},
                     {{"op", "add"},
                      {"path", "/metadata/annotations/kai.scheduler~1topology-preferred-placement"},
                      {"value", "cloud.provider.com/topology-rack"}}}));
}

TEST_CASE("a tenant's priority and topology apply in its namespaces only") {
  auto state = state_with(R"(
tenants:
- name: research
  namespaces: [research, research-*]
  priority: {className: train}
  topology: {name: cluster-topology}
)");
  CHECK(patch_of(mutate(state, sample("jobset-1.yaml", "research-vision"))) ==
        json::array({{{"op", "add"}, {"path", "/metadata/labels"}, {"value", {{"priorityClassName", "train"}}}},
                     {{"op", "add"},
                      {"path", "/metadata/annotations"},
                      {"value", {{"kai.scheduler/topology", "cluster-topology"}, {"karta.run.ai/written", "label:priorityClassName"}}}}}));
  CHECK(patch_of(mutate(state, sample("jobset-1.yaml", "serving"))) == json::array());
}

TEST_CASE("namespaceSelector expressions mean what Kubernetes means: In, NotIn, Exists, DoesNotExist") {
  auto policy = test::policy_from_yaml(R"(
tenants:
- name: in
  namespaceSelector: {matchExpressions: [{key: tier, operator: In, values: [gold, silver]}]}
- name: not-in
  namespaceSelector: {matchExpressions: [{key: tier, operator: NotIn, values: [bronze]}, {key: team, operator: Exists}]}
- name: does-not-exist
  namespaceSelector: {matchExpressions: [{key: team, operator: DoesNotExist}]}
)");
  auto tenant = [&](const karta::LabelMap& labels) { return karta::choose_tenant(policy, "ns", &labels).tenant(); };
  CHECK(tenant({{"tier", "gold"}}) == "in");
  CHECK(tenant({{"tier", "silver"}, {"team", "a"}}) == "in");
  CHECK(tenant({{"team", "a"}}) == "not-in");  // NotIn holds for a namespace without the label
  CHECK(tenant({{"tier", "bronze"}, {"team", "a"}}) == "");
  CHECK(tenant({{"tier", "bronze"}}) == "does-not-exist");
  CHECK(tenant({}) == "does-not-exist");
  // Labels unknown: the first rule needs them, so the global policy applies.
  CHECK(karta::choose_tenant(policy, "ns", nullptr).rule == nullptr);
}

TEST_CASE("namespace globs: '*' stands for any run of characters") {
  CHECK(karta::glob_matches("team-a-*", "team-a-dev"));
  CHECK(karta::glob_matches("team-a-*", "team-a-"));
  CHECK_FALSE(karta::glob_matches("team-a-*", "team-b-dev"));
  CHECK(karta::glob_matches("*-prod", "search-prod"));
  CHECK(karta::glob_matches("a*b*c", "aXbYbZc"));
  CHECK_FALSE(karta::glob_matches("a*b*c", "aXbYbZ"));
  CHECK(karta::glob_matches("research", "research"));
  CHECK_FALSE(karta::glob_matches("research", "research-x"));
}

std::string error_of(const std::string& yaml) {
  try {
    karta::parse_policy(test::yaml(yaml), "policy.yaml");
  } catch (const karta::InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST_CASE("the validator refuses unreachable rules, bad globs and bad selectors, naming the rule") {
  CHECK(error_of("tenants: [{name: all}, {name: a, namespaces: [a]}]") ==
        "policy.yaml: tenants[1] (a) is unreachable: tenants[0] (all) before it matches every namespace (first match "
        "wins; put the catch-all last)");
  CHECK(error_of("tenants: [{name: all, namespaces: ['*']}, {name: a, namespaceSelector: {matchLabels: {x: y}}}]") ==
        "policy.yaml: tenants[1] (a) is unreachable: tenants[0] (all) before it matches every namespace (first match "
        "wins; put the catch-all last)");
  CHECK(error_of("tenants: [{name: all, namespaceSelector: {}}, {name: a, namespaces: [a]}]") ==
        "policy.yaml: tenants[1] (a) is unreachable: tenants[0] (all) before it matches every namespace (first match "
        "wins; put the catch-all last)");
  CHECK(error_of("tenants: [{name: teams, namespaces: [team-*]}, {name: a, namespaces: [team-a-*, team-b]}]") ==
        "policy.yaml: tenants[1] (a) is unreachable: every namespace it names is matched first (team-a-* by team-* of "
        "tenants[0] (teams), team-b by team-* of tenants[0] (teams))");
  CHECK(error_of("tenants: [{name: p, namespaceSelector: {matchLabels: {tier: p}}}, "
                 "{name: q, namespaceSelector: {matchLabels: {tier: p}}}]") ==
        "policy.yaml: tenants[1] (q) is unreachable: tenants[0] (p) before it has the same namespaceSelector");
  CHECK(error_of("tenants: [{name: a, namespaces: [Team_A]}]") ==
        "policy.yaml: tenants[0].namespaces[0]: \"Team_A\" is not a namespace name glob: 'T' is none of lowercase "
        "letters, digits, '-' and '*' (the only wildcard)");
  CHECK(error_of("tenants: [{name: a, namespaces: ['team-[ab]']}]") ==
        "policy.yaml: tenants[0].namespaces[0]: \"team-[ab]\" is not a namespace name glob: '[' is none of lowercase "
        "letters, digits, '-' and '*' (the only wildcard)");
  CHECK(error_of("tenants: [{name: a, namespaces: []}]") ==
        "policy.yaml: tenants[0].namespaces: an empty list matches no namespace; leave it out to match any name");
  CHECK(error_of("tenants: [{namespaces: [a]}]") ==
        "policy.yaml: tenants[0].name: every rule needs a name (audit and logs name the tenant)");
  CHECK(error_of("tenants: [{name: a, namespaces: [a]}, {name: a, namespaces: [b]}]") ==
        "policy.yaml: tenants[1].name: \"a\" names an earlier rule too");
  CHECK(error_of("tenants: [{name: a, namespaceSelector: {matchExpressions: [{key: t, operator: Equals, values: [x]}]}}]") ==
        "policy.yaml: tenants[0].namespaceSelector.matchExpressions[0].operator: \"Equals\" is not one of In, NotIn, "
        "Exists, DoesNotExist");
  CHECK(error_of("tenants: [{name: a, namespaceSelector: {matchExpressions: [{key: t, operator: In}]}}]") ==
        "policy.yaml: tenants[0].namespaceSelector.matchExpressions[0].values: must not be empty with In");
  CHECK(error_of("tenants: [{name: a, namespaceSelector: {matchExpressions: [{key: t, operator: Exists, values: [x]}]}}]") ==
        "policy.yaml: tenants[0].namespaceSelector.matchExpressions[0].values: must be empty with Exists");
  CHECK(error_of("tenants: [{name: a, namespaces: [a], exempt: true, scheduling: {schedulerName: x}}]") ==
        "policy.yaml: tenants[0].scheduling: an exempt rule gets nothing injected and nothing enforced; it overrides "
        "no section");
  CHECK(error_of("tenants: [{name: a, namespaces: [a], definitionPolicy: {mode: warn}}]") ==
        "policy.yaml: tenants[0].definitionPolicy: unknown field");
  CHECK(error_of("tenants: [{name: a, namespaces: [a], scheduling: {queue: {default: q}}}]") ==
        "policy.yaml: tenants[0] (a), merged with the global policy: scheduling.queue.default: needs "
        "scheduling.queue.label");
  CHECK(error_of("tenants: {name: a}") == "policy.yaml: tenants: must be a list of rules, not object");
}

TEST_CASE("the validator refuses a namespaceLabel without a queue label, placements without a topology, bad kinds") {
  CHECK(error_of("scheduling: {queue: {namespaceLabel: runai/queue}}") ==
        "policy.yaml: scheduling.queue.namespaceLabel: needs scheduling.queue.label");
  CHECK(error_of("scheduling: {queue: {label: q, namespaceLabel: 'runai queue'}}") ==
        "policy.yaml: scheduling.queue.namespaceLabel: \"runai queue\" " + karta::label_key_error("runai queue"));
  CHECK(error_of("topology: {requiredPlacement: kubernetes.io/hostname}") ==
        "policy.yaml: topology.requiredPlacement: needs topology.name");
  CHECK(error_of("priority: {className: High}") ==
        "policy.yaml: priority.className: \"High\" " + karta::dns_subdomain_error("High"));
  CHECK(error_of("gang: {kinds: [jobset]}") ==
        "policy.yaml: gang.kinds[0]: \"jobset\" is not GROUP/Kind (batch/Job, jobset.x-k8s.io/JobSet) or Kind for "
        "the core group");
}

TEST_CASE("a tenant's sections merge into the global ones: maps key by key, lists and values replace, null removes") {
  auto policy = test::policy_from_yaml(R"(
podTemplates: {labels: {managed: "true", owner: platform}}
scheduling: {schedulerName: kai-scheduler, queue: {label: kai.scheduler/queue, default: default-queue}}
labelPolicy: {workload: {required: [team]}}
tenants:
- name: research
  namespaces: [research]
  podTemplates: {labels: {owner: research, managed: null}}
  scheduling: {queue: {default: research-q}}
  labelPolicy: null
)");
  const karta::Policy& research = *policy.tenants.at(0).policy;
  CHECK(research.pod_templates.labels == std::map<std::string, std::string>{{"owner", "research"}});
  CHECK(research.scheduling.scheduler_name == "kai-scheduler");
  CHECK(research.scheduling.queue_label == "kai.scheduler/queue");
  CHECK(research.scheduling.default_queue == "research-q");
  CHECK_FALSE(research.label_policy.enabled);
  CHECK(policy.label_policy.enabled);
  CHECK(policy.tenants.at(0).document ==
        json::parse(R"({"podTemplates":{"labels":{"owner":"research"}},
                        "scheduling":{"schedulerName":"kai-scheduler","queue":{"label":"kai.scheduler/queue","default":"research-q"}}})"));
}

TEST_CASE("Namespaces are read from a v1 List or a stream of Namespace objects, and nothing else") {
  auto file = karta::NamespaceFile::from_objects(namespace_objects(R"(
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Namespace, metadata: {name: a, labels: {x: "1"}}}
---
apiVersion: v1
kind: Namespace
metadata: {name: b}
)"),
                                                 "ns.yaml");
  CHECK(file.find("a").labels == karta::LabelMap{{"x", "1"}});
  CHECK(file.find("b").labels == karta::LabelMap{});
  CHECK_FALSE(file.find("c").labels);
  CHECK(file.find("c").why_unknown == "not in ns.yaml");
  CHECK_THROWS_WITH_AS(karta::NamespaceFile::from_objects(namespace_objects("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"), "ns.yaml"),
                       "ns.yaml#0: not a v1 Namespace (or a List of them, as kubectl get ns -o yaml prints): kind Pod",
                       karta::InputError);
  CHECK_THROWS_WITH_AS(karta::NamespaceFile::from_objects(namespace_objects("apiVersion: v1\nkind: Namespace\nmetadata: {}\n"), "ns.yaml"),
                       "ns.yaml#0: a Namespace without metadata.name", karta::InputError);
}

TEST_CASE("README's worked example: examples/tenants-policy.yaml gives each namespace of examples/namespaces.yaml its tenant") {
  karta::AdmissionState state;
  state.catalog = test::builtin_catalog();
  state.policy = karta::load_policy(test::source_dir() / "examples/tenants-policy.yaml");
  state.namespaces = std::make_shared<karta::NamespaceFile>(
      karta::NamespaceFile::load(test::source_dir() / "examples/namespaces.yaml"));
  const std::vector<std::pair<std::string, std::string>> expected{
      {"research", "research"}, {"research-vision", "research"}, {"serving", "production"},
      {"alice", "sandbox"},     {"kube-system", "platform"},     {"elsewhere", ""}};
  for (const auto& [namespace_name, tenant] : expected) {
    CAPTURE(namespace_name);
    CHECK(karta::decide_tenant(state, namespace_name).choice.tenant() == tenant);
  }
  // The demo JobSet, in namespace research: the namespace's queue, the tenant's priority and topology.
  json demo = test::document(test::source_dir() / "examples/jobset-demo.yaml");
  json patch = patch_of(mutate(state, demo));
  REQUIRE(patch.size() == 7);
  CHECK(patch[0] == json{{"op", "add"}, {"path", "/metadata/labels/kai.scheduler~1queue"}, {"value", "research-q"}});
  CHECK(patch[5] == json{{"op", "add"}, {"path", "/metadata/labels/priorityClassName"}, {"value", "train"}});
  CHECK(patch[6] == json{{"op", "add"},
                         {"path", "/metadata/annotations"},
                         {"value",
                          {{"kai.scheduler/topology", "cluster-topology"},
                           {"kai.scheduler/topology-preferred-placement", "cloud.provider.com/topology-rack"},
                           {"karta.run.ai/written", "label:kai.scheduler/queue,label:priorityClassName"}}}});
}

// ---------------------------------------------------------------------------------------------------
// The offline commands

struct Files {
  test::TempDir dir;
  std::string policy = (dir.path / "policy.yaml").string();
  std::string namespaces = (dir.path / "namespaces.yaml").string();
  std::string manifest = (dir.path / "jobset.yaml").string();
  Files() {
    std::ofstream(policy) << kTenantPolicy;
    std::ofstream(namespaces) << kNamespaces;
    std::ofstream(manifest) << sample("jobset-1.yaml", "serving").dump();
  }
};

// The JSON array printed after the comment lines of `mutate`.
json printed_patch(const std::string& out) { return json::parse(out.substr(out.find('['))); }

TEST_CASE("mutate --namespaces reads the labels from the file and names the tenant") {
  Files files;
  auto run = test::run_cli({"karta-webhook", "mutate", "-f", files.manifest, "--policy", files.policy, "--namespaces",
                            files.namespaces});
  REQUIRE(run.code == 0);
  CHECK(run.out.substr(0, run.out.find('[')) ==
        "# " + files.manifest + "#0: jobset.x-k8s.io/v1alpha2 JobSet serving/paralleljobs: 4 patch operations\n"
        "# tenant: production\n");
  CHECK(printed_patch(run.out) == jobset_patch("production-q", {{"platform.example.com/tier", "production"}}));
}

TEST_CASE("mutate --print-policy shows the rule a namespace matches and the merged policy it gets") {
  Files files;
  auto run = test::run_cli({"karta-webhook", "mutate", "--policy", files.policy, "--namespaces", files.namespaces,
                            "--print-policy", "serving"});
  REQUIRE(run.code == 0);
  CHECK(run.out.substr(0, run.out.find('{')) == "# namespace serving: tenant production (tenants[1])\n");
  CHECK(json::parse(run.out.substr(run.out.find('{'))) == json::parse(R"({
    "scheduling": {"queue": {"label": "kai.scheduler/queue", "namespaceLabel": "runai/queue", "default": "production-q"}},
    "gang": {"minMemberAnnotation": "kai.scheduler/batch-min-member"},
    "labelPolicy": {"mode": "enforce", "workload": {"required": ["team"]}},
    "podTemplates": {"labels": {"platform.example.com/tier": "production"}}})"));

  auto exempt = test::run_cli({"karta-webhook", "mutate", "--policy", files.policy, "--print-policy", "kube-system"});
  CHECK(exempt.out == "# namespace kube-system: tenant platform (tenants[0]): exempt, nothing injected and nothing enforced\n");

  auto unknown = test::run_cli({"karta-webhook", "mutate", "--policy", files.policy, "--namespaces", files.namespaces,
                                "--print-policy", "elsewhere"});
  CHECK(unknown.out.substr(0, unknown.out.find('{')) ==
        "# namespace elsewhere: the global policy (no tenant rule matches)\n"
        "# warning: namespace \"elsewhere\": labels unknown (not in " + files.namespaces +
        "); decided without them: the global policy, no queue from namespace labels\n");

  auto neither = test::run_cli({"karta-webhook", "mutate", "--policy", files.policy});
  CHECK(neither.code == 1);
  CHECK(neither.err == "karta-webhook: mutate: -f MANIFEST or --print-policy NAMESPACE is needed\n");
}

TEST_CASE("inspect --namespaces names the tenant whose policy counts the workload's GPUs") {
  Files files;
  auto run = test::run_cli({"karta-webhook", "inspect", "-f", files.manifest, "--policy", files.policy, "--namespaces",
                            files.namespaces, "--output", "json"});
  REQUIRE(run.code == 0);
  json reports = json::parse(run.out);
  REQUIRE(reports.size() == 1);
  CHECK(reports[0]["tenant"] == "production");
  auto text = test::run_cli({"karta-webhook", "inspect", "-f", files.manifest, "--policy", files.policy, "--namespaces",
                             files.namespaces});
  CHECK(text.out.starts_with("# tenant: production\nJobSet serving/paralleljobs (jobset.x-k8s.io/v1alpha2)"));
}

TEST_CASE("audit -f --namespaces names the tenant of each workload, and a tenant's enforced label policy fails it") {
  Files files;
  std::ofstream(files.manifest) << sample("jobset-1.yaml", "serving").dump() << "\n---\n"
                                << sample("jobset-1.yaml", "research").dump() << "\n---\n"
                                << sample("jobset-1.yaml", "kube-jobs").dump() << "\n";
  auto run = test::run_cli({"karta-webhook", "audit", "-f", files.manifest, "--policy", files.policy, "--namespaces",
                            files.namespaces, "--output", "json"});
  json report = json::parse(run.out);
  REQUIRE(report["workloads"].size() == 2);
  CHECK(report["workloads"][0]["namespace"] == "serving");
  CHECK(report["workloads"][0]["tenant"] == "production");
  CHECK(report["workloads"][1]["namespace"] == "research");
  CHECK(report["workloads"][1]["tenant"] == nullptr);
  CHECK(report["totals"]["skipped"] == 1);  // kube-jobs: exempt
  CHECK(run.code == 1);                    // the global policy enforces "team" too

  auto text = test::run_cli({"karta-webhook", "audit", "-f", files.manifest, "--policy", files.policy, "--namespaces",
                             files.namespaces});
  CHECK(text.out.find("JobSet serving/paralleljobs (jobset.x-k8s.io/v1alpha2)  " + files.manifest +
                      "#0\n  tenant: production\n") != std::string::npos);
}

}  // namespace unit_tenants
