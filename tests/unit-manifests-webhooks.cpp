// The webhook configurations: Service, rules, matchConditions, selectors, failure policies, timeouts, caBundle.

#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "admission/webhook_scope.h"
#include "support/manifests_fixtures.h"

namespace unit_manifests_webhooks {  // this file's names, apart from other tests' in a unity build

using namespace karta::test::manifest_fixtures;

namespace {

// base64 of "karta-webhook caBundle placeholder: set by manifests/overlays/*\n"
constexpr const char* ca_bundle_placeholder =
    "a2FydGEtd2ViaG9vayBjYUJ1bmRsZSBwbGFjZWhvbGRlcjogc2V0IGJ5IG1hbmlmZXN0cy9vdmVybGF5cy8qCg==";

YAML::Node webhook_named(const YAML::Node& configuration, const std::string& name) {
  for (const YAML::Node& webhook : configuration["webhooks"]) {
    if (scalar(webhook["name"], "webhooks[].name") == name) {
      return webhook;
    }
  }
  FAIL(kind_of(configuration) << " has no webhook named " << name);
  return {};
}

// The resources every built-in catalog kind is admitted as: group, version, plural.
struct Resource {
  std::string group;
  std::string version;
  std::string plural;
};

const std::vector<Resource>& built_in_resources() {
  static const std::vector<Resource> resources{
      {"jobset.x-k8s.io", "v1alpha2", "jobsets"},
      {"leaderworkerset.x-k8s.io", "v1", "leaderworkersets"},
      {"kubeflow.org", "v1", "pytorchjobs"},
      {"kubeflow.org", "v1", "mpijobs"},
      {"kubeflow.org", "v2beta1", "mpijobs"},
      {"ray.io", "v1", "rayclusters"},
      {"ray.io", "v1", "rayjobs"},
      {"ray.io", "v1", "rayservices"},
      {"serving.kserve.io", "v1beta1", "inferenceservices"},
      {"serving.kserve.io", "v1alpha1", "llminferenceservices"},
      {"serving.kserve.io", "v1alpha2", "llminferenceservices"},
      {"agents.x-k8s.io", "v1beta1", "sandboxes"},
      {"serving.knative.dev", "v1", "services"},
      {"apps.nvidia.com", "v1alpha1", "nimservices"},
      {"milvus.io", "v1beta1", "milvuses"},
      {"grove.io", "v1alpha1", "podcliquesets"},
      {"nvidia.com", "v1alpha1", "dynamographdeployments"},
      {"nvidia.com", "v1beta1", "dynamographdeployments"},
      {"", "v1", "pods"},
      {"apps", "v1", "deployments"},
      {"apps", "v1", "statefulsets"},
      {"apps", "v1", "daemonsets"},
      {"apps", "v1", "replicasets"},
      {"batch", "v1", "jobs"},
      {"batch", "v1", "cronjobs"},
  };
  return resources;
}

bool contains_or_star(const std::set<std::string>& values, const std::string& value) {
  return values.count(value) > 0 || values.count("*") > 0;
}

// Whether some rule of the webhook matches the resource for the operation (as the API server decides).
bool covers(const YAML::Node& webhook, const Resource& resource, const std::string& operation) {
  for (const YAML::Node& rule : webhook["rules"]) {
    if (contains_or_star(string_set(rule["apiGroups"], "apiGroups"), resource.group) &&
        contains_or_star(string_set(rule["apiVersions"], "apiVersions"), resource.version) &&
        contains_or_star(string_set(rule["resources"], "resources"), resource.plural) &&
        contains_or_star(string_set(rule["operations"], "operations"), operation)) {
      return true;
    }
  }
  return false;
}

std::string describe(const Resource& resource) {
  return (resource.group.empty() ? std::string("core") : resource.group) + "/" + resource.version + " " +
         resource.plural;
}

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// Kubernetes' default plural of a kind, which every catalog CRD follows (Milvus -> milvuses, Sandbox ->
// sandboxes).
std::string plural_of(const std::string& kind) {
  const std::string lower = lowercase(kind);
  return lower + (lower.back() == 's' || lower.back() == 'x' ? "es" : "s");
}

}  // namespace

// =====================================================================================================

TEST_SUITE("manifests") {

TEST_CASE("Every webhook calls the Service over admission v1 without side effects within 5 seconds") {
  for (const char* kind : {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}) {
    const YAML::Node configuration = find(base(), kind, app_name);
    CHECK(scalar(configuration["apiVersion"], "apiVersion") == "admissionregistration.k8s.io/v1");
    const std::string path = std::string(kind) == "MutatingWebhookConfiguration" ? "/mutate" : "/validate";
    for (const YAML::Node& webhook : configuration["webhooks"]) {
      INFO(kind, " ", scalar(webhook["name"], "name"));
      CHECK(strings(webhook["admissionReviewVersions"], "admissionReviewVersions") == std::vector<std::string>{"v1"});
      CHECK(scalar(webhook["sideEffects"], "sideEffects") == "None");
      const int timeout = integer(webhook["timeoutSeconds"], "timeoutSeconds");
      CHECK(timeout == 5);
      CHECK(timeout <= 10);
      CHECK(scalar(webhook["matchPolicy"], "matchPolicy") == "Equivalent");
      const YAML::Node service = webhook["clientConfig"]["service"];
      CHECK(scalar(service["name"], "service.name") == app_name);
      CHECK(scalar(service["namespace"], "service.namespace") == install_namespace);
      CHECK(integer(service["port"], "service.port") == 443);
      // The policy ConfigMap's webhook has a path of its own (checked below).
      if (scalar(webhook["name"], "name") != "policy.validate.karta.run.ai") CHECK(scalar(service["path"], "service.path") == path);
      CHECK_FALSE(webhook["clientConfig"]["url"].IsDefined());
    }
  }
}

TEST_CASE("The base carries a caBundle placeholder that the overlays replace") {
  for (const YAML::Node& webhook : all_webhooks(base())) {
    CHECK(scalar(webhook["clientConfig"]["caBundle"], "caBundle") == ca_bundle_placeholder);
  }
}

TEST_CASE("Mutation fails open and runs again when a later webhook changes the object") {
  const YAML::Node configuration = find(base(), "MutatingWebhookConfiguration", app_name);
  REQUIRE(configuration["webhooks"].size() == 2);
  const YAML::Node webhook = configuration["webhooks"][0];
  CHECK(scalar(webhook["name"], "name") == "mutate.karta.run.ai");
  CHECK(scalar(webhook["failurePolicy"], "failurePolicy") == "Ignore");
  CHECK(scalar(webhook["reinvocationPolicy"], "reinvocationPolicy") == "IfNeeded");
  CHECK_FALSE(covers(webhook, {"run.ai", "v1alpha1", "kartas"}, "CREATE"));
}

TEST_CASE("Kartas are sent to /mutate, which stamps the labels KAI looks them up by, and fail closed there") {
  const YAML::Node configuration = find(base(), "MutatingWebhookConfiguration", app_name);
  const YAML::Node kartas = webhook_named(configuration, "kartas.mutate.karta.run.ai");
  CHECK(scalar(kartas["clientConfig"]["service"]["path"], "path") == "/mutate");
  CHECK(scalar(kartas["failurePolicy"], "failurePolicy") == "Fail");
  CHECK(covers(kartas, {"run.ai", "v1alpha1", "kartas"}, "CREATE"));
  CHECK(covers(kartas, {"run.ai", "v1alpha1", "kartas"}, "UPDATE"));
  CHECK_FALSE(covers(kartas, {"run.ai", "v1alpha1", "kartas"}, "DELETE"));
  CHECK_FALSE(kartas["objectSelector"].IsDefined());
  for (const Resource& resource : built_in_resources()) {
    CHECK_MESSAGE(!covers(kartas, resource, "CREATE"), "the fail-closed webhook must not see " << describe(resource));
  }
  CHECK(scalar(kartas["rules"][0]["scope"], "kartas rule scope") == "Cluster");
}

TEST_CASE("The workload webhooks skip, before the call, objects whose controller has a built-in definition") {
  // The kinds of the built-in catalog, as an ownerReference names them (apiVersion/kind).
  std::set<std::string> catalog_kinds;
  for (const auto& entry : fs::directory_iterator(source_dir / "definitions/catalog")) {
    if (entry.path().extension() != ".yaml") continue;
    const YAML::Node kind = YAML::LoadFile(entry.path().string())["spec"]["structureDefinition"]["rootComponent"]["kind"];
    const std::string group = scalar(kind["group"], "group");
    catalog_kinds.insert((group.empty() ? "" : group + "/") + scalar(kind["version"], "version") + "/" +
                         scalar(kind["kind"], "kind"));
  }
  REQUIRE(catalog_kinds.size() == 35);
  for (const YAML::Node& webhook :
       {webhook_named(find(base(), "MutatingWebhookConfiguration", app_name), "mutate.karta.run.ai"),
        webhook_named(find(base(), "ValidatingWebhookConfiguration", app_name), "workloads.validate.karta.run.ai")}) {
    INFO(scalar(webhook["name"], "name"));
    REQUIRE(webhook["matchConditions"].size() == 1);
    const YAML::Node condition = webhook["matchConditions"][0];
    CHECK(scalar(condition["name"], "matchConditions[0].name") == "not-owned-by-a-defined-kind");
    const std::string expression = scalar(condition["expression"], "matchConditions[0].expression");
    const std::string prefix =
        "object == null || !has(object.metadata.ownerReferences) || "
        "!object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller && "
        "(r.apiVersion + '/' + r.kind) in [";
    REQUIRE(expression.rfind(prefix, 0) == 0);
    REQUIRE(expression.size() > prefix.size() + 2);
    CHECK(expression.substr(expression.size() - 2) == "])");
    std::set<std::string> listed;
    std::stringstream list(expression.substr(prefix.size(), expression.size() - prefix.size() - 2));
    for (std::string item; std::getline(list, item, ',');) {
      auto first = item.find('\'');
      auto last = item.rfind('\'');
      REQUIRE(first != std::string::npos);
      REQUIRE(last > first);
      listed.insert(item.substr(first + 1, last - first - 1));
    }
    CHECK(listed == catalog_kinds);
  }
  // The Karta webhooks have none: every definition is seen.
  for (const char* name : {"kartas.mutate.karta.run.ai"}) {
    CHECK_FALSE(webhook_named(find(base(), "MutatingWebhookConfiguration", app_name), name)["matchConditions"].IsDefined());
  }
  CHECK_FALSE(webhook_named(find(base(), "ValidatingWebhookConfiguration", app_name), "kartas.validate.karta.run.ai")
                  ["matchConditions"].IsDefined());
}

TEST_CASE("Karta validation and workload validation fail closed; pods made by a controller are never sent") {
  const YAML::Node configuration = find(base(), "ValidatingWebhookConfiguration", app_name);
  REQUIRE(configuration["webhooks"].size() == 4);

  const YAML::Node kartas = webhook_named(configuration, "kartas.validate.karta.run.ai");
  CHECK(scalar(kartas["failurePolicy"], "failurePolicy") == "Fail");
  // A label must not be able to skip the check of a definition.
  CHECK_FALSE(kartas["objectSelector"].IsDefined());
  CHECK(covers(kartas, {"run.ai", "v1alpha1", "kartas"}, "CREATE"));
  CHECK(covers(kartas, {"run.ai", "v1alpha1", "kartas"}, "UPDATE"));
  CHECK(covers(kartas, {"optimization.nvidia.com", "v1alpha1", "resourceinterfaces"}, "CREATE"));
  CHECK(covers(kartas, {"optimization.nvidia.com", "v1alpha1", "resourceinterfaces"}, "UPDATE"));
  CHECK_FALSE(covers(kartas, {"run.ai", "v1alpha1", "kartas"}, "DELETE"));
  for (const Resource& resource : built_in_resources()) {
    CHECK_MESSAGE(!covers(kartas, resource, "CREATE"), "the Karta webhook must not see " << describe(resource));
  }
  CHECK(scalar(kartas["rules"][0]["scope"], "kartas rule scope") == "Cluster");

  // The tenant's boundary: fails closed, and no label on the object skips it.
  const YAML::Node workloads = webhook_named(configuration, "workloads.validate.karta.run.ai");
  CHECK(scalar(workloads["failurePolicy"], "failurePolicy") == "Fail");
  CHECK_FALSE(workloads["objectSelector"].IsDefined());
  CHECK_FALSE(covers(workloads, {"run.ai", "v1alpha1", "kartas"}, "CREATE"));
  CHECK_FALSE(covers(workloads, {"", "v1", "pods"}, "CREATE"));

  const YAML::Node pods = webhook_named(configuration, "pods.validate.karta.run.ai");
  CHECK(scalar(pods["failurePolicy"], "failurePolicy") == "Fail");
  CHECK_FALSE(pods["objectSelector"].IsDefined());
  CHECK(scalar(pods["clientConfig"]["service"]["path"], "path") == "/validate");
  REQUIRE(pods["matchConditions"].size() == 1);
  CHECK(scalar(pods["matchConditions"][0]["name"], "name") == "not-made-by-a-controller");
  CHECK(scalar(pods["matchConditions"][0]["expression"], "expression") ==
        "object == null || !has(object.metadata.ownerReferences) || "
        "!object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller)");
  for (const Resource& resource : built_in_resources()) {
    INFO(describe(resource));
    CHECK(covers(pods, resource, "CREATE") == (resource.plural == "pods"));
  }
}

TEST_CASE("Every webhook skips kube-system, karta-system and namespaces that opt out") {
  for (const YAML::Node& webhook : all_webhooks(base())) {
    INFO(scalar(webhook["name"], "name"));
    if (scalar(webhook["name"], "name") == "policy.validate.karta.run.ai") continue;  // karta-system's own, below
    const YAML::Node selector = webhook["namespaceSelector"];
    CHECK_FALSE(selector["matchLabels"].IsDefined());
    std::map<std::string, std::pair<std::string, std::set<std::string>>> expressions;
    for (const YAML::Node& expression : selector["matchExpressions"]) {
      expressions[scalar(expression["key"], "key")] = {scalar(expression["operator"], "operator"),
                                                       string_set(expression["values"], "values")};
    }
    CHECK(expressions.size() == 2);
    CHECK(expressions["kubernetes.io/metadata.name"] ==
          std::make_pair(std::string("NotIn"), std::set<std::string>{"kube-system", "karta-system"}));
    CHECK(expressions["karta.run.ai/webhook"] == std::make_pair(std::string("NotIn"), std::set<std::string>{"disabled"}));
    // The list `audit` reports as "not sent" (admission/webhook_scope.h) is this one.
    CHECK(std::set<std::string>(karta::kUnsentNamespaces.begin(), karta::kUnsentNamespaces.end()) ==
          expressions["kubernetes.io/metadata.name"].second);
    CHECK(std::string(karta::kOptOutLabel) == "karta.run.ai/webhook");
    CHECK(std::set<std::string>{std::string(karta::kOptOutValue)} == expressions["karta.run.ai/webhook"].second);
  }
}

TEST_CASE("The policy webhook sees the webhook's own policy ConfigMap, and nothing else, at /validate-policy") {
  const YAML::Node policy = webhook_named(find(base(), "ValidatingWebhookConfiguration", app_name),
                                          "policy.validate.karta.run.ai");
  const YAML::Node configmap = find(base(), "ConfigMap", "karta-webhook-policy");
  CHECK(scalar(policy["clientConfig"]["service"]["path"], "path") == "/validate-policy");
  CHECK(scalar(policy["failurePolicy"], "failurePolicy") == "Ignore");
  // Its namespace by the label the API server sets on every namespace, its name by a match condition: a
  // ConfigMap's name cannot be selected by a rule.
  CHECK(string_map(policy["namespaceSelector"]["matchLabels"], "matchLabels") ==
        std::map<std::string, std::string>{
            {"kubernetes.io/metadata.name", scalar(configmap["metadata"]["namespace"], "ConfigMap namespace")}});
  CHECK_FALSE(policy["namespaceSelector"]["matchExpressions"].IsDefined());
  REQUIRE(policy["matchConditions"].size() == 1);
  CHECK(scalar(policy["matchConditions"][0]["expression"], "expression") ==
        "object.metadata.name == '" + scalar(configmap["metadata"]["name"], "ConfigMap name") + "'");
  CHECK(covers(policy, {"", "v1", "configmaps"}, "CREATE"));
  CHECK(covers(policy, {"", "v1", "configmaps"}, "UPDATE"));
  CHECK_FALSE(covers(policy, {"", "v1", "configmaps"}, "DELETE"));
  for (const Resource& resource : built_in_resources()) {
    CHECK_MESSAGE(!covers(policy, resource, "CREATE"), "the policy webhook must not see " << describe(resource));
  }
}

TEST_CASE("Workloads opt out of mutation with karta.run.ai/webhook=disabled, never out of validation") {
  const YAML::Node expressions = find(base(), "MutatingWebhookConfiguration", app_name)["webhooks"][0]["objectSelector"]["matchExpressions"];
  REQUIRE(expressions.size() == 1);
  CHECK(scalar(expressions[0]["key"], "key") == "karta.run.ai/webhook");
  CHECK(scalar(expressions[0]["operator"], "operator") == "NotIn");
  CHECK(strings(expressions[0]["values"], "values") == std::vector<std::string>{"disabled"});
  for (const YAML::Node& webhook : find(base(), "ValidatingWebhookConfiguration", app_name)["webhooks"]) {
    INFO(scalar(webhook["name"], "name"));
    CHECK_FALSE(webhook["objectSelector"].IsDefined());
  }
}

TEST_CASE("The workload webhooks see every built-in kind on CREATE and UPDATE") {
  const YAML::Node mutate = find(base(), "MutatingWebhookConfiguration", app_name)["webhooks"][0];
  for (const Resource& resource : built_in_resources()) {
    INFO(describe(resource));
    const YAML::Node validate = webhook_named(find(base(), "ValidatingWebhookConfiguration", app_name),
                                              resource.plural == "pods" ? "pods.validate.karta.run.ai"
                                                                        : "workloads.validate.karta.run.ai");
    CHECK(covers(mutate, resource, "CREATE"));
    CHECK(covers(validate, resource, "CREATE"));
    CHECK(covers(validate, resource, "UPDATE"));
    CHECK_FALSE(covers(mutate, resource, "DELETE"));
    CHECK_FALSE(covers(validate, resource, "DELETE"));
    if (resource.plural == "pods") {
      // A pod's spec is immutable: mutating one on UPDATE could only turn an update into a rejection.
      CHECK_FALSE(covers(mutate, resource, "UPDATE"));
    } else {
      CHECK(covers(mutate, resource, "UPDATE"));
    }
  }
  for (const YAML::Node& webhook :
       {mutate, webhook_named(find(base(), "ValidatingWebhookConfiguration", app_name), "workloads.validate.karta.run.ai"),
        webhook_named(find(base(), "ValidatingWebhookConfiguration", app_name), "pods.validate.karta.run.ai")}) {
    for (const YAML::Node& rule : webhook["rules"]) {
      CHECK(scalar(rule["scope"], "scope") == "Namespaced");
      CHECK_FALSE(string_set(rule["resources"], "resources").count("*"));
    }
  }
}

TEST_CASE("Every kind of the built-in catalog is seen by the workload webhooks") {
  const YAML::Node mutate = find(base(), "MutatingWebhookConfiguration", app_name)["webhooks"][0];
  const YAML::Node workloads =
      webhook_named(find(base(), "ValidatingWebhookConfiguration", app_name), "workloads.validate.karta.run.ai");
  const YAML::Node pods = webhook_named(find(base(), "ValidatingWebhookConfiguration", app_name), "pods.validate.karta.run.ai");
  for (const fs::path& file : catalog_files()) {
    const YAML::Node kind = YAML::LoadFile(file.string())["spec"]["structureDefinition"]["rootComponent"]["kind"];
    const Resource resource{scalar(kind["group"], "group"), scalar(kind["version"], "version"),
                            plural_of(scalar(kind["kind"], "kind"))};
    INFO(file.filename().string(), ": ", describe(resource));
    CHECK(covers(mutate, resource, "CREATE"));
    CHECK(covers(resource.plural == "pods" ? pods : workloads, resource, "CREATE"));
  }
}

}  // TEST_SUITE

}  // namespace unit_manifests_webhooks
