// /metrics as Prometheus reads it (issue 23): a live scrape, after a few admissions of every outcome,
// passes `promtool check metrics` (Debian's prometheus package); the serving certificate's notAfter is
// published as a Unix timestamp and follows a certificate reload; a failed reload of the definitions
// turns karta_last_reload_successful to 0 and a good one back to 1.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "support/running_webhook.h"
#include "support/test_support.h"

namespace e2e_metrics_promtool {  // this file's names, apart from other tests' in a unity build

namespace test = karta::test;
using karta::json;

namespace {

// notAfter of a PEM certificate in seconds since the epoch, as openssl and date(1) read it.
std::string not_after_of(const std::filesystem::path& certificate) {
  int code = 0;
  std::string out = test::run_command("date -u -d \"$(openssl x509 -noout -enddate -in " + certificate.string() +
                                          " | cut -d= -f2)\" +%s",
                                      &code);
  REQUIRE_MESSAGE(code == 0, out);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::string scrape(const test::RunningWebhook& hook) {
  test::HttpsClient client(hook.port, hook.certificates.ca);
  test::HttpReply reply = client.request("GET", "/metrics");
  REQUIRE(reply.status == 200);
  return reply.body;
}

}  // namespace

TEST_CASE("a live scrape of /metrics after admissions of every outcome passes promtool check metrics") {
  test::RunningWebhook hook;
  test::HttpsClient client(hook.port, hook.certificates.ca);
  json jobset = test::document(test::source_dir() / "examples/jobset-demo.yaml");
  CHECK(client.request("POST", "/mutate", test::admission_review(jobset, "CREATE", "uid-1").dump()).status == 200);
  CHECK(client.request("POST", "/mutate", test::admission_review(jobset, "UPDATE", "uid-2").dump()).status == 200);
  CHECK(client.request("POST", "/validate", test::admission_review(jobset, "CREATE", "uid-3").dump()).status == 200);
  json config_map = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "c"}, {"namespace", "n"}}}};
  CHECK(client.request("POST", "/mutate", test::admission_review(config_map).dump()).status == 200);
  CHECK(client.request("POST", "/mutate", "not json").status == 400);

  const std::string body = scrape(hook);
  // Every family the alerts read is in the scrape.
  for (const char* family : {"karta_admission_requests_total{", "karta_admission_duration_seconds_bucket{",
                             "karta_definitions_loaded ", "karta_last_reload_successful ", "karta_jq_wait_timeouts_total ",
                             "karta_jq_states_replaced_total ", "karta_serving_certificate_expiration_timestamp_seconds "}) {
    CHECK_MESSAGE(body.find(std::string("\n") + family) != std::string::npos, family << " is not in the scrape");
  }
  CHECK(body.find("karta_admission_requests_total{endpoint=\"mutate\",operation=\"CREATE\",kind=\"jobset.x-k8s.io/v1alpha2/JobSet\","
                  "result=\"patched\"} 1\n") != std::string::npos);

  test::TempDir dir;
  std::ofstream(dir.path / "metrics.txt") << body;
  int code = -1;
  std::string out = test::run_command("promtool check metrics < " + (dir.path / "metrics.txt").string() + " 2>&1", &code);
  CHECK_MESSAGE(code == 0, out);
  CHECK(out == "");
}

TEST_CASE("the serving certificate's notAfter is a gauge in Unix seconds, updated when the certificate is reloaded") {
  test::RunningWebhook hook;
  const std::string name = "karta_serving_certificate_expiration_timestamp_seconds";
  CHECK(test::metric_sample(scrape(hook), name) == not_after_of(hook.certificates.certificate));

  // A certificate valid for 30 days (the first is valid for 2), signed by the same CA, written over the
  // served pair as a Secret volume's update would: key and certificate each renamed into place.
  const auto& dir = hook.dir.path;
  int code = 0;
  std::string out = test::run_command(
      "cd " + dir.string() + " && openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=localhost "
      "-keyout new.key -out new.csr 2>&1 && openssl x509 -req -in new.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
      "-days 30 -extfile server.ext -out new.crt 2>&1",
      &code);
  REQUIRE_MESSAGE(code == 0, out);
  const std::string expected = not_after_of(dir / "new.crt");
  REQUIRE(expected != not_after_of(hook.certificates.certificate));
  std::filesystem::rename(dir / "new.key", hook.certificates.key);
  std::filesystem::rename(dir / "new.crt", hook.certificates.certificate);
  CHECK(test::eventually([&] { return test::metric_sample(scrape(hook), name) == expected; }, std::chrono::seconds(10 * test::kSlowdown)));
  CHECK(test::metric_sample(scrape(hook), name) == expected);
  CHECK(test::metric_sample(scrape(hook), "karta_reloads_total{source=\"certificate\"}") == "1");
}

TEST_CASE("karta_last_reload_successful is 0 while a broken policy keeps the previous one served, 1 once it loads") {
  test::RunningWebhook hook;
  CHECK(test::metric_sample(scrape(hook), "karta_last_reload_successful") == "1");
  const auto policy = hook.dir.path / "policy.yaml";
  std::ofstream(policy) << "podTemplates: {labels: {\"bad key!\": x}}\n";
  CHECK(test::eventually([&] { return test::metric_sample(scrape(hook), "karta_last_reload_successful") == "0"; },
                         std::chrono::seconds(10 * test::kSlowdown)));
  std::ofstream(policy) << "podTemplates: {labels: {platform.example.com/managed: \"true\"}}\n";
  CHECK(test::eventually([&] { return test::metric_sample(scrape(hook), "karta_last_reload_successful") == "1"; },
                         std::chrono::seconds(10 * test::kSlowdown)));
}

}  // namespace e2e_metrics_promtool
