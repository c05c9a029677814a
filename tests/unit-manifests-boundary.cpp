// The tenant boundary in the install (issue 58), as `kubectl kustomize` renders it: in every rendering a
// user can install (manifests/, each overlay), the workload and pod validating webhooks fail closed and no
// label on an object skips them; kube-system and the webhook's namespace are never sent; and the fail-open
// component (manifests/components/fail-open) makes exactly those two fail open again.

#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "support/manifests_fixtures.h"

namespace unit_manifests_boundary {  // this file's names, apart from other tests' in a unity build

using namespace karta::test::manifest_fixtures;

namespace {

// The failurePolicy of each validating webhook of a rendering, by name; and that none has an objectSelector
// and each leaves kube-system and karta-system out by namespace (but the one of the webhook's own policy
// ConfigMap, which sees karta-system only).
std::map<std::string, std::string> validating_failure_policies(const Documents& rendered) {
  std::map<std::string, std::string> policies;
  for (const YAML::Node& webhook : find(rendered, "ValidatingWebhookConfiguration", app_name)["webhooks"]) {
    const std::string name = scalar(webhook["name"], "name");
    INFO(name);
    CHECK_FALSE(webhook["objectSelector"].IsDefined());
    if (name == "policy.validate.karta.run.ai") {
      CHECK(scalar(webhook["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"], "namespace") ==
            "karta-system");
      policies[name] = scalar(webhook["failurePolicy"], "failurePolicy");
      continue;
    }
    bool system_namespaces_left_out = false;
    for (const YAML::Node& expression : webhook["namespaceSelector"]["matchExpressions"]) {
      if (scalar(expression["key"], "key") == "kubernetes.io/metadata.name" &&
          scalar(expression["operator"], "operator") == "NotIn" &&
          string_set(expression["values"], "values") == std::set<std::string>{"kube-system", "karta-system"}) {
        system_namespaces_left_out = true;
      }
    }
    CHECK(system_namespaces_left_out);
    policies[name] = scalar(webhook["failurePolicy"], "failurePolicy");
  }
  return policies;
}

// The policy ConfigMap's check fails open (webhooks.yaml says why): it guards mistakes, not a boundary.
const std::map<std::string, std::string> kFailClosed = {{"kartas.validate.karta.run.ai", "Fail"},
                                                        {"workloads.validate.karta.run.ai", "Fail"},
                                                        {"pods.validate.karta.run.ai", "Fail"},
                                                        {"policy.validate.karta.run.ai", "Ignore"}};

// A copy of manifests/ with an overlay of base/ and `components`, rendered.
Documents render_with_components(const std::vector<std::string>& components) {
  TemporaryDirectory root;
  fs::copy(source_dir / "manifests", root.path() / "manifests", fs::copy_options::recursive);
  const fs::path overlay = root.path() / "manifests" / "overlays" / "under-test";
  fs::create_directories(overlay);
  std::ofstream out(overlay / "kustomization.yaml");
  out << "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [../../base]\ncomponents:\n";
  for (const auto& component : components) out << "  - ../../components/" << component << "\n";
  out.close();
  return render_uncached(overlay);
}

}  // namespace

TEST_SUITE("manifests") {

TEST_CASE("every rendering a user installs validates workloads and pods fail-closed, with no opt-out label") {
  CHECK(validating_failure_policies(render_uncached(source_dir / "manifests")) == kFailClosed);
  CHECK(validating_failure_policies(cert_manager_overlay()) == kFailClosed);
  CHECK(validating_failure_policies(cert_manager_existing_crd_overlay()) == kFailClosed);
  TemporaryDirectory checkout;
  fs::copy(source_dir / "manifests", checkout.path() / "manifests", fs::copy_options::recursive);
  generate_certificates(checkout.path() / "certs" / "out");
  for (const char* overlay : {"plain", "existing-crd/plain"}) {
    INFO(overlay);
    CHECK(validating_failure_policies(render_uncached(checkout.path() / "manifests" / "overlays" / overlay)) == kFailClosed);
  }
}

TEST_CASE("the fail-open component makes workload and pod validation fail open, and leaves everything else as it was") {
  const Documents failing_open = render_with_components({"fail-open"});
  CHECK(validating_failure_policies(failing_open) == std::map<std::string, std::string>{
                                                         {"kartas.validate.karta.run.ai", "Fail"},
                                                         {"workloads.validate.karta.run.ai", "Ignore"},
                                                         {"pods.validate.karta.run.ai", "Ignore"},
                                                         {"policy.validate.karta.run.ai", "Ignore"}});
  // Nothing else differs from the base: the two failure policies put back, the renderings are equal.
  YAML::Node validating = YAML::Clone(find(failing_open, "ValidatingWebhookConfiguration", app_name));
  validating["webhooks"][1]["failurePolicy"] = "Fail";
  validating["webhooks"][2]["failurePolicy"] = "Fail";
  CHECK(YAML::Dump(validating) == YAML::Dump(find(base(), "ValidatingWebhookConfiguration", app_name)));
  CHECK(object_ids(failing_open) == object_ids(base()));
  CHECK(YAML::Dump(find(failing_open, "MutatingWebhookConfiguration", app_name)) ==
        YAML::Dump(find(base(), "MutatingWebhookConfiguration", app_name)));

  SUBCASE("with the component that leaves out the Karta CRD too") {
    const Documents both = render_with_components({"existing-karta-crd", "fail-open"});
    CHECK(validating_failure_policies(both).at("workloads.validate.karta.run.ai") == "Ignore");
  }
}

}  // TEST_SUITE

}  // namespace unit_manifests_boundary
