// The base install's objects: namespace, RBAC, ConfigMaps, Deployment and pod, PodDisruptionBudget and Service.

#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "support/manifests_fixtures.h"

namespace unit_manifests_install {  // this file's names, apart from other tests' in a unity build

using namespace karta::test::manifest_fixtures;

namespace {

YAML::Node pod_spec() { return find(base(), "Deployment", app_name)["spec"]["template"]["spec"]; }

YAML::Node webhook_container() {
  const YAML::Node containers = pod_spec()["containers"];
  REQUIRE(containers.IsSequence());
  REQUIRE(containers.size() == 1);
  return containers[0];
}

const std::map<std::string, std::string>& pod_labels() {
  static const std::map<std::string, std::string> labels{
      {"app.kubernetes.io/name", "karta-webhook"},
      {"app.kubernetes.io/component", "webhook"},
  };
  return labels;
}

}  // namespace

// =====================================================================================================

TEST_SUITE("manifests") {

TEST_CASE("The base renders exactly the objects of the install") {
  CHECK(object_ids(base()) == base_object_ids());
}

TEST_CASE("Every namespaced object of the base is in karta-system and cluster objects have no namespace") {
  const std::set<std::string> cluster_scoped{"Namespace", "CustomResourceDefinition", "ClusterRole",
                                             "ClusterRoleBinding", "MutatingWebhookConfiguration",
                                             "ValidatingWebhookConfiguration"};
  for (const YAML::Node& object : base()) {
    INFO(kind_of(object), " ", name_of(object));
    if (cluster_scoped.count(kind_of(object)) > 0) {
      CHECK_FALSE(object["metadata"]["namespace"].IsDefined());
    } else {
      CHECK(scalar(object["metadata"]["namespace"], "metadata.namespace") == install_namespace);
    }
  }
}

TEST_CASE("The namespace enforces the restricted pod security profile") {
  const YAML::Node ns = find(base(), "Namespace", install_namespace);
  CHECK(scalar(ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"], "enforce label") == "restricted");
}

TEST_CASE("The cluster role only reads kartas, resourceinterfaces, CRDs and namespaces") {
  const YAML::Node role = find(base(), "ClusterRole", app_name);
  std::set<std::tuple<std::string, std::string>> granted;
  for (const YAML::Node& rule : role["rules"]) {
    CHECK(strings(rule["verbs"], "verbs") == std::vector<std::string>{"get", "list", "watch"});
    for (const std::string& group : strings(rule["apiGroups"], "apiGroups")) {
      for (const std::string& resource : strings(rule["resources"], "resources")) {
        granted.emplace(group, resource);
      }
    }
  }
  CHECK(granted == std::set<std::tuple<std::string, std::string>>{
                       {"run.ai", "kartas"},
                       {"optimization.nvidia.com", "resourceinterfaces"},
                       {"apiextensions.k8s.io", "customresourcedefinitions"},
                       {"", "namespaces"},
                   });
}

TEST_CASE("The cluster role is bound to the webhook's service account") {
  const YAML::Node binding = find(base(), "ClusterRoleBinding", app_name);
  CHECK(scalar(binding["roleRef"]["apiGroup"], "roleRef.apiGroup") == "rbac.authorization.k8s.io");
  CHECK(scalar(binding["roleRef"]["kind"], "roleRef.kind") == "ClusterRole");
  CHECK(scalar(binding["roleRef"]["name"], "roleRef.name") == app_name);
  REQUIRE(binding["subjects"].size() == 1);
  CHECK(scalar(binding["subjects"][0]["kind"], "subject kind") == "ServiceAccount");
  CHECK(scalar(binding["subjects"][0]["name"], "subject name") == app_name);
  CHECK(scalar(binding["subjects"][0]["namespace"], "subject namespace") == install_namespace);
  CHECK(scalar(pod_spec()["serviceAccountName"], "serviceAccountName") == app_name);
}

TEST_CASE("The policy ConfigMap holds a policy.yaml and the definitions ConfigMap exists") {
  const YAML::Node policy = find(base(), "ConfigMap", "karta-webhook-policy");
  const std::string text = scalar(policy["data"]["policy.yaml"], "data.policy.yaml");
  CHECK_NOTHROW(YAML::Load(text));
  CHECK(policy["data"].size() == 1);
  CHECK(find(base(), "ConfigMap", "karta-webhook-definitions")["data"].IsDefined());
}

TEST_CASE("The Deployment runs two replicas spread across nodes") {
  const YAML::Node deployment = find(base(), "Deployment", app_name);
  CHECK(integer(deployment["spec"]["replicas"], "replicas") == 2);
  CHECK(string_map(deployment["spec"]["selector"]["matchLabels"], "selector") == pod_labels());
  const auto template_labels = string_map(deployment["spec"]["template"]["metadata"]["labels"], "template labels");
  for (const auto& [key, value] : pod_labels()) {
    CHECK(template_labels.at(key) == value);
  }
  CHECK(integer(deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], "maxUnavailable") == 0);

  bool spread_by_hostname = false;
  for (const YAML::Node& constraint : pod_spec()["topologySpreadConstraints"]) {
    if (scalar(constraint["topologyKey"], "topologyKey") == "kubernetes.io/hostname") {
      spread_by_hostname = true;
      CHECK(integer(constraint["maxSkew"], "maxSkew") == 1);
      CHECK(scalar(constraint["whenUnsatisfiable"], "whenUnsatisfiable") == "DoNotSchedule");
      CHECK(string_map(constraint["labelSelector"]["matchLabels"], "labelSelector") == pod_labels());
    }
  }
  CHECK(spread_by_hostname);

  const YAML::Node preferred = pod_spec()["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"];
  REQUIRE(preferred.size() == 1);
  CHECK(scalar(preferred[0]["podAffinityTerm"]["topologyKey"], "anti-affinity topologyKey") == "kubernetes.io/hostname");
  CHECK(string_map(preferred[0]["podAffinityTerm"]["labelSelector"]["matchLabels"], "anti-affinity selector") ==
        pod_labels());
}

TEST_CASE("The webhook container runs serve with the mounted certificate, policy and definitions") {
  const YAML::Node container = webhook_container();
  CHECK(scalar(container["image"], "image") == "karta-webhook:0.1.0");
  CHECK(strings(container["args"], "args") == std::vector<std::string>{
                                                  "serve",
                                                  "--tls-cert-file=/etc/karta-webhook/tls/tls.crt",
                                                  "--tls-private-key-file=/etc/karta-webhook/tls/tls.key",
                                                  "--port=8443",
                                                  "--bind-address=0.0.0.0",
                                                  "--definitions=/etc/karta-webhook/definitions",
                                                  "--policy=/etc/karta-webhook/policy/policy.yaml",
                                                  "--log-format=json",
                                                  "--log-level=info",
                                                  "--in-cluster",
                                                  "--shutdown-delay-ms=5000",
                                              });
  CHECK_FALSE(container["command"].IsDefined());
  REQUIRE(container["ports"].size() == 1);
  CHECK(integer(container["ports"][0]["containerPort"], "containerPort") == 8443);
  CHECK(scalar(container["ports"][0]["name"], "port name") == "https");

  std::map<std::string, std::pair<std::string, bool>> mounts;  // volume -> path, read-only
  for (const YAML::Node& mount : container["volumeMounts"]) {
    mounts[scalar(mount["name"], "mount name")] = {
        scalar(mount["mountPath"], "mountPath"),
        mount["readOnly"].IsDefined() && mount["readOnly"].as<bool>()};
  }
  CHECK(mounts["tls"] == std::make_pair(std::string("/etc/karta-webhook/tls"), true));
  CHECK(mounts["policy"] == std::make_pair(std::string("/etc/karta-webhook/policy"), true));
  CHECK(mounts["definitions"] == std::make_pair(std::string("/etc/karta-webhook/definitions"), true));

  std::map<std::string, YAML::Node> volumes;
  for (const YAML::Node& volume : pod_spec()["volumes"]) {
    volumes[scalar(volume["name"], "volume name")] = volume;
  }
  CHECK(scalar(volumes["tls"]["secret"]["secretName"], "tls secretName") == "karta-webhook-tls");
  CHECK(scalar(volumes["policy"]["configMap"]["name"], "policy configMap") == "karta-webhook-policy");
  CHECK(scalar(volumes["definitions"]["configMap"]["name"], "definitions configMap") == "karta-webhook-definitions");
  // A directory mount (not subPath) so that ConfigMap and Secret updates reach the running pod.
  for (const YAML::Node& mount : container["volumeMounts"]) {
    CHECK_FALSE(mount["subPath"].IsDefined());
  }
}

TEST_CASE("The probes ask /readyz and /healthz over HTTPS on 8443") {
  const YAML::Node container = webhook_container();
  const YAML::Node readiness = container["readinessProbe"]["httpGet"];
  CHECK(scalar(readiness["path"], "readiness path") == "/readyz");
  CHECK(integer(readiness["port"], "readiness port") == 8443);
  CHECK(scalar(readiness["scheme"], "readiness scheme") == "HTTPS");
  const YAML::Node liveness = container["livenessProbe"]["httpGet"];
  CHECK(scalar(liveness["path"], "liveness path") == "/healthz");
  CHECK(integer(liveness["port"], "liveness port") == 8443);
  CHECK(scalar(liveness["scheme"], "liveness scheme") == "HTTPS");
}

TEST_CASE("The webhook container has small resource requests and limits") {
  const YAML::Node resources = webhook_container()["resources"];
  CHECK(scalar(resources["requests"]["cpu"], "requests.cpu") == "100m");
  CHECK(scalar(resources["requests"]["memory"], "requests.memory") == "64Mi");
  CHECK(scalar(resources["limits"]["cpu"], "limits.cpu") == "1");
  CHECK(scalar(resources["limits"]["memory"], "limits.memory") == "256Mi");
}

TEST_CASE("The webhook pod runs as a numeric non-root user with a locked-down security context") {
  const YAML::Node pod = pod_spec()["securityContext"];
  CHECK(boolean(pod["runAsNonRoot"], "pod runAsNonRoot"));
  CHECK(integer(pod["runAsUser"], "pod runAsUser") == 65532);
  CHECK(integer(pod["runAsGroup"], "pod runAsGroup") == 65532);
  CHECK(scalar(pod["seccompProfile"]["type"], "pod seccompProfile") == "RuntimeDefault");

  const YAML::Node container = webhook_container()["securityContext"];
  CHECK(boolean(container["runAsNonRoot"], "runAsNonRoot"));
  CHECK(integer(container["runAsUser"], "runAsUser") == 65532);
  CHECK(boolean(container["readOnlyRootFilesystem"], "readOnlyRootFilesystem"));
  CHECK_FALSE(boolean(container["allowPrivilegeEscalation"], "allowPrivilegeEscalation"));
  CHECK_FALSE(boolean(container["privileged"], "privileged"));
  CHECK(strings(container["capabilities"]["drop"], "capabilities.drop") == std::vector<std::string>{"ALL"});
  CHECK_FALSE(container["capabilities"]["add"].IsDefined());
  CHECK(scalar(container["seccompProfile"]["type"], "seccompProfile") == "RuntimeDefault");
}

TEST_CASE("The grace period outlasts the server's drain") {
  CHECK(integer(pod_spec()["terminationGracePeriodSeconds"], "terminationGracePeriodSeconds") == 60);
}

TEST_CASE("The PodDisruptionBudget keeps one webhook pod available") {
  const YAML::Node pdb = find(base(), "PodDisruptionBudget", app_name);
  CHECK(scalar(pdb["apiVersion"], "apiVersion") == "policy/v1");
  CHECK(integer(pdb["spec"]["minAvailable"], "minAvailable") == 1);
  CHECK_FALSE(pdb["spec"]["maxUnavailable"].IsDefined());
  CHECK(string_map(pdb["spec"]["selector"]["matchLabels"], "selector") == pod_labels());
}

TEST_CASE("The Service sends port 443 to 8443 on the webhook pods") {
  const YAML::Node service = find(base(), "Service", app_name);
  CHECK(scalar(service["spec"]["type"], "type") == "ClusterIP");
  CHECK(string_map(service["spec"]["selector"], "selector") == pod_labels());
  REQUIRE(service["spec"]["ports"].size() == 1);
  const YAML::Node port = service["spec"]["ports"][0];
  CHECK(integer(port["port"], "port") == 443);
  CHECK(integer(port["targetPort"], "targetPort") == 8443);
  CHECK(scalar(port["protocol"], "protocol") == "TCP");
}

}  // TEST_SUITE

}  // namespace unit_manifests_install
