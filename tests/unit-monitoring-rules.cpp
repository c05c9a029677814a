// manifests/monitoring (issue 23): the alert rules pass `promtool check rules` and their unit tests
// (`promtool test rules`: every alert fires on series that should page and stays quiet on one that
// should not); the PrometheusRule holds exactly the rules file's groups; every alert says what to check
// first and has its runbook in manifests/README.md; and every overlay renders with the monitoring
// component (its objects and nothing else added) and without it.

#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "support/manifests_fixtures.h"
#include "support/test_support.h"

namespace unit_monitoring_rules {  // this file's names, apart from other tests' in a unity build

using namespace karta::test::manifest_fixtures;

namespace {

const fs::path monitoring = source_dir / "manifests" / "monitoring";
const fs::path rules_file = monitoring / "karta-webhook.rules.yaml";
const fs::path rules_tests = monitoring / "tests" / "karta-webhook.rules.test.yaml";

// One alert per failure mode of issue 23.
const std::set<std::string> kAlerts{
    "KartaWebhookAdmissionErrors",        // it answers errors
    "KartaWebhookSlow",                   // it is slow
    "KartaWebhookReloadFailing",          // its definitions or policy stopped reloading
    "KartaWebhookPolicyDiverged",         // its replicas serve different policies
    "KartaWebhookNoDefinitions",          // no definitions are loaded
    "KartaWebhookJqTimeouts",             // its jq states time out
    "KartaWebhookCertificateExpiresSoon", // its serving certificate is about to expire
    "KartaWebhookReplicasNotReady",       // its replicas are not ready
};

karta::json yaml_file_json(const fs::path& file) {
  auto documents = karta::test::documents(file);
  REQUIRE_MESSAGE(documents.size() == 1, file << " holds " << documents.size() << " documents");
  return documents.front().value;
}

std::vector<karta::json> rules() {
  karta::json file = yaml_file_json(rules_file);
  REQUIRE(file.at("groups").size() == 1);
  return file.at("groups").at(0).at("rules").get<std::vector<karta::json>>();
}

// A GitHub heading anchor: lower case, spaces as dashes.
std::string anchor(std::string heading) {
  std::transform(heading.begin(), heading.end(), heading.begin(), [](unsigned char c) { return std::tolower(c); });
  std::replace(heading.begin(), heading.end(), ' ', '-');
  return heading;
}

}  // namespace

TEST_SUITE("monitoring") {

TEST_CASE("promtool check rules passes on the rules file: one alert per failure mode") {
  CommandResult checked = run("promtool check rules " + shell_quote(rules_file.string()));
  CHECK_MESSAGE(checked.exit_code == 0, checked.out << checked.err);
  CHECK(checked.out == "Checking " + rules_file.string() + "\n  SUCCESS: 8 rules found\n\n");
  std::set<std::string> alerts;
  for (const auto& rule : rules()) alerts.insert(rule.at("alert").get<std::string>());
  CHECK(alerts == kAlerts);
}

TEST_CASE("promtool test rules passes, with a case that fires and one that stays quiet for every alert") {
  CommandResult tested = run("cd " + shell_quote(rules_tests.parent_path().string()) + " && promtool test rules " +
                             shell_quote(rules_tests.filename().string()));
  CHECK_MESSAGE(tested.exit_code == 0, tested.out << tested.err);
  CHECK(tested.out == "Unit Testing:  karta-webhook.rules.test.yaml\n  SUCCESS\n\n");

  karta::json tests = yaml_file_json(rules_tests);
  REQUIRE(tests.at("rule_files") == karta::json::array({"../karta-webhook.rules.yaml"}));
  std::map<std::string, int> firing, quiet;
  for (const auto& group : tests.at("tests")) {
    for (const auto& check : group.at("alert_rule_test")) {
      const std::string alert = check.at("alertname").get<std::string>();
      const karta::json& expected = check.at("exp_alerts");
      if (expected.empty()) {
        ++quiet[alert];
        continue;
      }
      ++firing[alert];
      for (const auto& fired : expected) {
        // What fires is compared whole: labels and the annotations as rendered.
        CHECK_MESSAGE(fired.contains("exp_labels"), alert);
        CHECK_MESSAGE(fired.contains("exp_annotations"), alert);
      }
    }
  }
  for (const auto& alert : kAlerts) {
    CHECK_MESSAGE(firing[alert] >= 1, alert << " has no case where it fires");
    CHECK_MESSAGE(quiet[alert] >= 1, alert << " has no case where it stays quiet");
  }
}

TEST_CASE("every alert has a severity, a summary, a description saying what to check first, and a runbook") {
  const std::string readme = read_file(source_dir / "manifests" / "README.md");
  std::set<std::string> anchors;
  for (std::size_t at = readme.find("\n### "); at != std::string::npos; at = readme.find("\n### ", at + 1)) {
    anchors.insert(anchor(readme.substr(at + 5, readme.find('\n', at + 5) - at - 5)));
  }
  for (const auto& rule : rules()) {
    const std::string alert = rule.at("alert").get<std::string>();
    CAPTURE(alert);
    const std::string severity = rule.at("labels").at("severity").get<std::string>();
    CHECK((severity == "critical" || severity == "warning"));
    const karta::json& annotations = rule.at("annotations");
    CHECK(annotations.size() == 3);
    CHECK(!annotations.at("summary").get<std::string>().empty());
    CHECK(annotations.at("description").get<std::string>().find("Check first") != std::string::npos);
    const std::string runbook = annotations.at("runbook_url").get<std::string>();
    CHECK(runbook == "manifests/README.md#" + anchor(alert));
    CHECK_MESSAGE(anchors.count(anchor(alert)) == 1, "manifests/README.md has no section ### " << alert);
  }
}

TEST_CASE("the PrometheusRule holds exactly the rules file's groups (generate-prometheusrule.sh writes it)") {
  karta::json rule = yaml_file_json(monitoring / "prometheusrule.yaml");
  CHECK(rule.at("apiVersion") == "monitoring.coreos.com/v1");
  CHECK(rule.at("kind") == "PrometheusRule");
  CHECK(rule.at("metadata").at("namespace") == install_namespace);
  const karta::json spec = {{"groups", yaml_file_json(rules_file).at("groups")}};
  CHECK_MESSAGE(rule.at("spec") == spec,
                "prometheusrule.yaml differs from karta-webhook.rules.yaml: run manifests/monitoring/generate-prometheusrule.sh");
}

TEST_CASE("every overlay renders without the monitoring component, and with it adds exactly its two objects") {
  // A checkout's manifests/ with certs/out beside it (overlays/plain needs it), and an overlay per
  // install that adds the component, as a user's overlay would.
  TemporaryDirectory root;
  fs::copy(source_dir / "manifests", root.path() / "manifests", fs::copy_options::recursive);
  generate_certificates(root.path() / "certs" / "out");
  const std::vector<std::string> overlays{"cert-manager", "plain", "existing-crd/cert-manager", "existing-crd/plain"};
  const karta::json service_monitor = yaml_file_json(monitoring / "servicemonitor.yaml");
  const karta::json prometheus_rule = yaml_file_json(monitoring / "prometheusrule.yaml");
  for (const std::string& overlay : overlays) {
    CAPTURE(overlay);
    const fs::path with = root.path() / "manifests" / "with-monitoring" / overlay;
    fs::create_directories(with);
    const std::string up = overlay.find('/') == std::string::npos ? "../../" : "../../../";
    std::ofstream(with / "kustomization.yaml") << "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                                                  "resources:\n  - " << up << "overlays/" << overlay << "\n"
                                                  "components:\n  - " << up << "monitoring\n";
    std::vector<karta::json> plain = render_json(root.path() / "manifests" / "overlays" / overlay);
    std::vector<karta::json> monitored = render_json(with);
    for (const auto& object : plain) {
      CHECK(object.at("apiVersion").get<std::string>().rfind("monitoring.coreos.com/", 0) == std::string::npos);
    }
    std::vector<karta::json> added;
    for (const auto& object : monitored) {
      if (std::find(plain.begin(), plain.end(), object) == plain.end()) added.push_back(object);
    }
    CHECK(monitored.size() == plain.size() + 2);
    REQUIRE(added.size() == 2);
    CHECK(added == std::vector<karta::json>{prometheus_rule, service_monitor});
  }
}

TEST_CASE("the ServiceMonitor scrapes the Service's https port, verifying the certificate the webhook serves") {
  karta::json monitor = yaml_file_json(monitoring / "servicemonitor.yaml");
  const YAML::Node service = find(base(), "Service", app_name);
  CHECK(monitor.at("metadata").at("namespace") == install_namespace);
  const auto service_labels = string_map(service["metadata"]["labels"], "Service labels");
  for (const auto& [key, value] : monitor.at("spec").at("selector").at("matchLabels").items()) {
    CHECK_MESSAGE(service_labels.count(key) == 1, key);
    if (service_labels.count(key) == 1) CHECK(service_labels.at(key) == value.get<std::string>());
  }
  CHECK(monitor.at("spec").at("namespaceSelector") == karta::json{{"matchNames", {install_namespace}}});
  karta::json endpoint = monitor.at("spec").at("endpoints").at(0);
  CHECK(endpoint.at("port") == scalar(service["spec"]["ports"][0]["name"], "Service port name"));
  CHECK(endpoint.at("scheme") == "https");
  CHECK(endpoint.at("path") == "/metrics");
  const std::string server_name = endpoint.at("tlsConfig").at("serverName").get<std::string>();
  CHECK(std::find(service_names.begin(), service_names.end(), server_name) != service_names.end());
  CHECK(endpoint.at("tlsConfig").at("ca").at("secret") == karta::json{{"name", "karta-webhook-tls"}, {"key", "ca.crt"}});
}

}  // TEST_SUITE

}  // namespace unit_monitoring_rules
