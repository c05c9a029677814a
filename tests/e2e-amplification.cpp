// Amplification (issue 58): what a request sends is cut and escaped before it reaches a log line, a warning
// or a message, so one review with a megabyte namespace or label gets a small answer and writes small log
// lines, whatever the policy makes of it.

#include <doctest/doctest.h>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

#include "support/running_webhook.h"

namespace e2e_amplification {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

namespace {

// Every log line the process writes while it lives, instead of the default logger's.
struct CapturedLog {
  std::ostringstream out;
  std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
  CapturedLog() {
    auto logger = std::make_shared<spdlog::logger>("captured", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
    logger->set_level(spdlog::level::info);
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous); }
  std::size_t longest_line() const {
    std::istringstream lines(out.str());
    std::size_t longest = 0;
    for (std::string line; std::getline(lines, line);) longest = std::max(longest, line.size());
    return longest;
  }
};

// A policy whose tenant rules read namespace labels (none can be had: no cluster, and the policy decides
// without them, with a warning that quotes the namespace) and that puts the namespace and the queue in
// labels, so a hostile namespace or queue is quoted in warnings and notes.
const char* const kPolicy = R"(
podTemplates:
  labels: {platform.example.com/namespace: "{{namespace}}"}
scheduling:
  queue: {label: kai.scheduler/queue, default: default-queue}
namespaceLabels: {whenUnknown: globalPolicy}
tenants:
- name: production
  namespaceSelector: {matchLabels: {tier: production}}
)";

json demo() { return test::document(test::source_dir() / "examples/jobset-demo.yaml"); }

}  // namespace

TEST_CASE("a review whose namespace is a megabyte gets an answer under 16 KiB and log lines under 4 KiB") {
  CapturedLog log;
  test::RunningWebhook running({}, kPolicy);
  test::HttpsClient client(running.port, running.certificates.ca);
  const std::string hostile(1 << 20, 'n');
  json object = demo();
  object["metadata"]["namespace"] = hostile;
  json review = test::admission_review(object, "CREATE", "a-1");
  review["request"]["namespace"] = hostile;
  for (const char* endpoint : {"/mutate", "/validate"}) {
    INFO(endpoint);
    auto answer = client.request("POST", endpoint, review.dump());
    CHECK(answer.status == 200);
    CHECK(answer.body.size() < 16 * 1024);
    CHECK(json::parse(answer.body)["response"]["uid"] == "a-1");
  }
  CHECK(log.out.str().size() > 0);
  CHECK(log.longest_line() < 4 * 1024);
}

TEST_CASE("a review whose queue label is a megabyte gets an answer under 16 KiB, its warnings cut") {
  CapturedLog log;
  test::RunningWebhook running({}, kPolicy);
  test::HttpsClient client(running.port, running.certificates.ca);
  json object = demo();
  object["metadata"]["labels"]["kai.scheduler/queue"] = std::string(1 << 20, 'q');
  auto answer = client.request("POST", "/mutate", test::admission_review(object, "CREATE", "a-2").dump());
  REQUIRE(answer.status == 200);
  CHECK(answer.body.size() < 16 * 1024);
  const json warnings = json::parse(answer.body)["response"]["warnings"];
  REQUIRE(warnings.is_array());
  CHECK(warnings.size() >= 2);
  for (const json& warning : warnings) CHECK(warning.get<std::string>().size() <= karta::kMaxWarningBytes);
  CHECK(warnings[0].get<std::string>().starts_with("workload: label kai.scheduler/queue skipped: value \"" +
                                                   std::string(100, 'q')));
  CHECK(log.longest_line() < 4 * 1024);
}

}  // namespace e2e_amplification
