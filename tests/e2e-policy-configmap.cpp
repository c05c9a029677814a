// The policy ConfigMap checked when it is applied (/validate-policy, issue 60), and a policy reload that is
// counted as the policy's and shows which policy each replica serves (karta_policy_info).

#include <doctest/doctest.h>

#include <fstream>

#include "support/https_client.h"
#include "support/running_webhook.h"

namespace e2e_policy_configmap {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;
using namespace std::chrono_literals;

namespace {

json configmap(const json& data, const std::string& name = "karta-webhook-policy") {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"namespace", "karta-system"}}},
          {"data", data}};
}

// The review of `object` sent to /validate-policy as the API server sends it (request.kind v1 ConfigMap).
json review_of(const json& object, const std::string& operation = "UPDATE") {
  json review = test::admission_review(object, operation, "cm-1");
  review["request"]["kind"] = {{"group", ""}, {"version", "v1"}, {"kind", object.value("kind", "ConfigMap")}};
  review["request"]["resource"] = {{"group", ""}, {"version", "v1"}, {"resource", "configmaps"}};
  return review;
}

json answer(test::HttpsClient& client, const json& review) {
  auto reply = client.request("POST", "/validate-policy", review.dump());
  REQUIRE(reply.status == 200);
  return json::parse(reply.body)["response"];
}

const json kAllowed = {{"uid", "cm-1"}, {"allowed", true}, {"status", {{"code", 200}}}};

json denied(int code, const std::string& message) {
  return {{"uid", "cm-1"}, {"allowed", false}, {"status", {{"code", code}, {"message", message}, {"reason", "Invalid"}}}};
}

std::string sha256_prefix(const std::filesystem::path& file) {
  return test::run_command("sha256sum '" + file.string() + "' | cut -c1-16 | tr -d '\\n'");
}

}  // namespace

TEST_CASE("a policy ConfigMap that would not load is denied with the loader's message, naming key, line and column") {
  test::RunningWebhook running;
  test::HttpsClient client(running.port, running.certificates.ca);
  const std::string where = "ConfigMap karta-system/karta-webhook-policy data.policy.yaml";

  CHECK(answer(client, review_of(configmap({{"policy.yaml", "tenants:\n  - name: research\n    nme: x\n"}}))) ==
        denied(422, where + " line 3 column 5: tenants[0].nme: unknown field (did you mean \"name\"?)"));
  CHECK(answer(client, review_of(configmap({{"policy.yaml", "priority:\n  className: prod-critical\n  className: train\n"}}))) ==
        denied(422, where + "#0 line 3 column 3: duplicate key \"className\" (first at line 2 column 3); "
                            "YAML would keep only the last"));
  CHECK(answer(client, review_of(configmap({{"policy.yaml", "# emptied by mistake\n"}}))) ==
        denied(422, where + ": the policy sets nothing (the file is empty, only comments, or only empty sections); "
                            "to load no policy on purpose, write `nothing: true`"));
  CHECK(answer(client, review_of(configmap({{"other.yaml", "a: b"}}), "CREATE")) ==
        denied(422, "ConfigMap karta-system/karta-webhook-policy has no data.policy.yaml: the webhook reads its "
                    "policy from that key (to load no policy on purpose, write `nothing: true` there)"));
}

TEST_CASE("a policy ConfigMap that loads is allowed; one that says nothing: true is allowed with a warning") {
  test::RunningWebhook running;
  test::HttpsClient client(running.port, running.certificates.ca);
  CHECK(answer(client, review_of(configmap({{"policy.yaml", "scheduling: {schedulerName: kai-scheduler}\n"}}))) ==
        kAllowed);
  CHECK(answer(client, review_of(configmap({{"policy.yaml", "nothing: true\n"}}))) ==
        json{{"uid", "cm-1"},
             {"allowed", true},
             {"status", {{"code", 200}}},
             {"warnings", {"ConfigMap karta-system/karta-webhook-policy says nothing: true: once loaded, nothing will be "
                           "injected and nothing enforced"}}});
  // Rules that may both match a namespace: allowed, and said.
  CHECK(answer(client, review_of(configmap({{"policy.yaml", "podTemplates: {labels: {managed: \"true\"}}\n"
                                                            "tenants:\n"
                                                            "- {name: research, namespaceSelector: {matchLabels: {team: research}}}\n"
                                                            "- {name: sandbox, namespaces: [sandbox-*], exempt: true}\n"}}))) ==
        json{{"uid", "cm-1"},
             {"allowed", true},
             {"status", {{"code", 200}}},
             {"warnings", {"tenants[1] (sandbox) may match namespaces that tenants[0] (research) before it matches: "
                           "there tenants[0] (research) applies, not the exemption (first match wins)"}}});
  // The shipped ConfigMap's own policy loads (manifests/base/configmaps.yaml).
  const json shipped = test::documents(test::source_dir() / "manifests/base/configmaps.yaml")[0].value;
  CHECK(answer(client, review_of(shipped, "CREATE"))["allowed"] == true);
  // What a wider registration would send is let through unchecked.
  json secret = configmap({{"policy.yaml", "{}"}});
  secret["kind"] = "Secret";
  CHECK(answer(client, review_of(secret)) == kAllowed);
}

TEST_CASE("a policy reload is counted under source=\"policy\", and karta_policy_info names the policy served") {
  test::RunningWebhook running;
  test::HttpsClient client(running.port, running.certificates.ca);
  const auto file = running.dir.path / "policy.yaml";
  const std::string first = sha256_prefix(file);
  REQUIRE(first.size() == 16);
  auto metrics = [&] { return client.request("GET", "/metrics").body; };
  CHECK(test::metric_sample(metrics(), "karta_policy_info{digest=\"" + first + "\"}") == "1");

  std::ofstream(file) << "scheduling: {schedulerName: kai-scheduler}\n";
  const std::string second = sha256_prefix(file);
  CHECK(test::eventually([&] { return test::metric_sample(metrics(), "karta_reloads_total{source=\"policy\"}") == "1"; }, 10s));
  const std::string after = metrics();
  CHECK(test::metric_sample(after, "karta_policy_info{digest=\"" + second + "\"}") == "1");
  CHECK(after.find("karta_policy_info{digest=\"" + first + "\"}") == std::string::npos);
  CHECK(after.find("karta_reloads_total{source=\"definitions\"}") == std::string::npos);

  // A policy that does not load: counted as the policy's error; the last good one keeps serving, and says so.
  std::ofstream(file) << "scheduling: {schedulerNme: kai-scheduler}\n";
  CHECK(test::eventually([&] { return test::metric_sample(metrics(), "karta_reload_errors_total{source=\"policy\"}") == "1"; }, 10s));
  const std::string broken = metrics();
  CHECK(test::metric_sample(broken, "karta_policy_info{digest=\"" + second + "\"}") == "1");
  CHECK(test::metric_sample(broken, "karta_last_reload_successful") == "0");
  CHECK(broken.find("karta_reload_errors_total{source=\"definitions\"}") == std::string::npos);
}

}  // namespace e2e_policy_configmap
