// The overlays: cert-manager, plain (certs/generate.sh's Secret) and their existing-crd variants without the CRD.

#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "support/manifests_fixtures.h"

namespace unit_manifests_overlays {  // this file's names, apart from other tests' in a unity build

using namespace karta::test::manifest_fixtures;

namespace {

// The objects of a JSON rendering by kind and name, each once.
std::map<std::pair<std::string, std::string>, karta::json> by_id(const std::vector<karta::json>& objects) {
  std::map<std::pair<std::string, std::string>, karta::json> found;
  for (const karta::json& object : objects) {
    const std::pair<std::string, std::string> id{object.at("kind").get<std::string>(),
                                                 object.at("metadata").at("name").get<std::string>()};
    CHECK_MESSAGE(found.emplace(id, object).second, "duplicate " << id.first << " " << id.second);
  }
  return found;
}

// Checks that `variant` renders exactly the objects of `full`, object for object and field for field,
// except the kartas.run.ai CRD, and no CRD at all.
void check_same_without_karta_crd(const std::vector<karta::json>& full, const std::vector<karta::json>& variant) {
  auto expected = by_id(full);
  REQUIRE(expected.erase({"CustomResourceDefinition", "kartas.run.ai"}) == 1);
  const auto actual = by_id(variant);
  for (const auto& [id, object] : actual) {
    CHECK_MESSAGE(id.first != "CustomResourceDefinition", "the variant without the CRD renders CRD " << id.second);
  }
  std::set<std::pair<std::string, std::string>> expected_ids, actual_ids;
  for (const auto& entry : expected) expected_ids.insert(entry.first);
  for (const auto& entry : actual) actual_ids.insert(entry.first);
  CHECK(actual_ids == expected_ids);
  for (const auto& [id, object] : expected) {
    auto found = actual.find(id);
    if (found == actual.end()) continue;  // reported above
    CHECK_MESSAGE(found->second == object, id.first << " " << id.second << " differs from the full install");
  }
}

// A copy of manifests/ with certs/out made by certs/generate.sh beside it, as in a checkout.
struct PlainOverlayCheckout {
  TemporaryDirectory root;
  fs::path overlay() const { return root.path() / "manifests" / "overlays" / "plain"; }
  fs::path existing_crd_overlay() const { return root.path() / "manifests" / "overlays" / "existing-crd" / "plain"; }
  fs::path certs() const { return root.path() / "certs" / "out"; }
  explicit PlainOverlayCheckout(bool with_certificates) {
    fs::copy(source_dir / "manifests", root.path() / "manifests", fs::copy_options::recursive);
    if (with_certificates) {
      generate_certificates(certs());
    }
  }
};

}  // namespace

// =====================================================================================================

TEST_SUITE("manifests") {

TEST_CASE("The cert-manager overlay adds a CA chain issuing karta-webhook-tls for the Service") {
  const Documents& rendered = cert_manager_overlay();
  std::set<ObjectId> expected = base_object_ids();
  expected.insert({{"Issuer", "karta-webhook-selfsigned"},
                   {"Certificate", "karta-webhook-ca"},
                   {"Issuer", "karta-webhook-ca"},
                   {"Certificate", "karta-webhook"}});
  CHECK(object_ids(rendered) == expected);
  for (const char* kind : {"Issuer", "Certificate"}) {
    for (const YAML::Node& object : all_of_kind(rendered, kind)) {
      CHECK(scalar(object["apiVersion"], "apiVersion") == "cert-manager.io/v1");
      CHECK(scalar(object["metadata"]["namespace"], "namespace") == install_namespace);
    }
  }

  CHECK(find(rendered, "Issuer", "karta-webhook-selfsigned")["spec"]["selfSigned"].IsMap());
  const YAML::Node ca = find(rendered, "Certificate", "karta-webhook-ca")["spec"];
  CHECK(boolean(ca["isCA"], "isCA"));
  CHECK(scalar(ca["issuerRef"]["name"], "CA issuer") == "karta-webhook-selfsigned");
  CHECK(scalar(find(rendered, "Issuer", "karta-webhook-ca")["spec"]["ca"]["secretName"], "CA secret") ==
        scalar(ca["secretName"], "CA certificate secret"));

  const YAML::Node serving = find(rendered, "Certificate", "karta-webhook")["spec"];
  CHECK(scalar(serving["secretName"], "secretName") == "karta-webhook-tls");
  CHECK(scalar(serving["issuerRef"]["kind"], "issuerRef.kind") == "Issuer");
  CHECK(scalar(serving["issuerRef"]["name"], "issuerRef.name") == "karta-webhook-ca");
  CHECK(strings(serving["dnsNames"], "dnsNames") == service_names);
  CHECK(scalar(serving["privateKey"]["algorithm"], "algorithm") == "ECDSA");
  CHECK(integer(serving["privateKey"]["size"], "size") == 256);
}

TEST_CASE("The cert-manager overlay lets the cainjector own both caBundles") {
  const Documents& rendered = cert_manager_overlay();
  for (const char* kind : {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}) {
    const YAML::Node configuration = find(rendered, kind, app_name);
    CHECK(scalar(configuration["metadata"]["annotations"]["cert-manager.io/inject-ca-from"], "inject-ca-from") ==
          "karta-system/karta-webhook");
  }
  for (const YAML::Node& webhook : all_webhooks(rendered)) {
    INFO(scalar(webhook["name"], "name"));
    CHECK_FALSE(webhook["clientConfig"]["caBundle"].IsDefined());
    CHECK(scalar(webhook["clientConfig"]["service"]["name"], "service") == app_name);
  }
  CHECK(all_webhooks(rendered).size() == all_webhooks(base()).size());
  // Everything but the webhook configurations is the base, unchanged.
  for (const char* kind : {"Deployment", "Service", "PodDisruptionBudget", "CustomResourceDefinition"}) {
    for (const YAML::Node& object : all_of_kind(base(), kind)) {
      CHECK(YAML::Dump(find(rendered, kind, name_of(object))) == YAML::Dump(object));
    }
  }
}

TEST_CASE("The plain overlay installs the generated Secret and trusts its CA in every caBundle") {
  const PlainOverlayCheckout checkout(true);
  const Documents rendered = render_uncached(checkout.overlay());

  std::set<ObjectId> expected = base_object_ids();
  expected.insert({"Secret", "karta-webhook-tls"});
  CHECK(object_ids(rendered) == expected);

  const YAML::Node secret = find(rendered, "Secret", "karta-webhook-tls");
  CHECK(scalar(secret["metadata"]["namespace"], "namespace") == install_namespace);
  CHECK(scalar(secret["type"], "type") == "kubernetes.io/tls");
  for (const char* file : {"tls.crt", "tls.key", "ca.crt"}) {
    CHECK_MESSAGE(scalar(secret["data"][file], file) == base64(read_file(checkout.certs() / file)), file);
  }

  const std::string ca_bundle = base64(read_file(checkout.certs() / "ca.crt"));
  CHECK(trim(read_file(checkout.certs() / "ca-bundle.b64")) == ca_bundle);
  const std::vector<YAML::Node> webhooks = all_webhooks(rendered);
  CHECK(webhooks.size() == 6);
  for (const YAML::Node& webhook : webhooks) {
    INFO(scalar(webhook["name"], "name"));
    CHECK(scalar(webhook["clientConfig"]["caBundle"], "caBundle") == ca_bundle);
  }
  CHECK(YAML::Dump(find(rendered, "Deployment", app_name)) == YAML::Dump(find(base(), "Deployment", app_name)));
}

TEST_CASE("The existing-crd cert-manager overlay renders the cert-manager install less the Karta CRD") {
  const fs::path overlays = source_dir / "manifests" / "overlays";
  check_same_without_karta_crd(render_json(overlays / "cert-manager"), render_json(overlays / "existing-crd" / "cert-manager"));

  const Documents& rendered = cert_manager_existing_crd_overlay();
  CHECK(all_of_kind(rendered, "CustomResourceDefinition").empty());
  std::set<ObjectId> expected = object_ids(cert_manager_overlay());
  expected.erase({"CustomResourceDefinition", "kartas.run.ai"});
  CHECK(object_ids(rendered) == expected);
  for (const char* kind : {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}) {
    CHECK(scalar(find(rendered, kind, app_name)["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
                 "inject-ca-from") == "karta-system/karta-webhook");
  }
  CHECK(all_webhooks(rendered).size() == 6);
  for (const YAML::Node& webhook : all_webhooks(rendered)) {
    INFO(scalar(webhook["name"], "name"));
    CHECK_FALSE(webhook["clientConfig"]["caBundle"].IsDefined());
  }
  CHECK(find(rendered, "Certificate", app_name)["spec"]["secretName"].as<std::string>() == "karta-webhook-tls");
}

TEST_CASE("The existing-crd plain overlay renders the plain install less the Karta CRD") {
  const PlainOverlayCheckout checkout(true);
  check_same_without_karta_crd(render_json(checkout.overlay()), render_json(checkout.existing_crd_overlay()));

  const Documents rendered = render_uncached(checkout.existing_crd_overlay());
  std::set<ObjectId> expected = base_object_ids();
  expected.erase({"CustomResourceDefinition", "kartas.run.ai"});
  expected.insert({"Secret", "karta-webhook-tls"});
  CHECK(object_ids(rendered) == expected);
  const std::string ca_bundle = base64(read_file(checkout.certs() / "ca.crt"));
  const std::vector<YAML::Node> webhooks = all_webhooks(rendered);
  CHECK(webhooks.size() == 6);
  for (const YAML::Node& webhook : webhooks) {
    INFO(scalar(webhook["name"], "name"));
    CHECK(scalar(webhook["clientConfig"]["caBundle"], "caBundle") == ca_bundle);
  }
}

TEST_CASE("Without the CRD the webhook may still read and watch Kartas") {
  const PlainOverlayCheckout checkout(true);
  const Documents plain = render_uncached(checkout.existing_crd_overlay());
  for (const Documents* rendered : {&cert_manager_existing_crd_overlay(), &plain}) {
    bool kartas = false;
    for (const YAML::Node& rule : find(*rendered, "ClusterRole", app_name)["rules"]) {
      if (string_set(rule["apiGroups"], "apiGroups").count("run.ai") > 0 &&
          string_set(rule["resources"], "resources").count("kartas") > 0) {
        kartas = true;
        CHECK(string_set(rule["verbs"], "verbs") == std::set<std::string>{"get", "list", "watch"});
      }
    }
    CHECK(kartas);
    const YAML::Node binding = find(*rendered, "ClusterRoleBinding", app_name);
    CHECK(scalar(binding["subjects"][0]["name"], "subject name") == app_name);
  }
}

TEST_CASE("The existing-crd plain overlay does not render before the certs script has run either") {
  const PlainOverlayCheckout checkout(false);
  const CommandResult result = kustomize(checkout.existing_crd_overlay());
  CHECK(result.exit_code != 0);
  CHECK_MESSAGE(result.err.find("certs/out") != std::string::npos, result.err);
}

TEST_CASE("The plain overlay does not render before the certs script has run, and says where it looked") {
  const PlainOverlayCheckout checkout(false);
  const CommandResult result = kustomize(checkout.overlay());
  CHECK(result.exit_code != 0);
  CHECK_MESSAGE(result.err.find("certs/out") != std::string::npos, result.err);
}

}  // TEST_SUITE

}  // namespace unit_manifests_overlays
