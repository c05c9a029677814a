// Many admissions at once, over HTTPS, while definitions are reloaded and Kartas validated: every answer
// is the one a lone request gets. In the ThreadSanitizer build (scripts/tsan.sh, with libjq itself built
// with -fsanitize=thread) this is the test that exercises libjq from several threads at once.

#include <doctest/doctest.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "support/running_webhook.h"

namespace e2e_concurrency {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;
using namespace std::chrono_literals;

namespace {

json trainer() {
  return json::parse(R"({"apiVersion":"acme.example.com/v1","kind":"Trainer","metadata":{"name":"t","namespace":"ml"},
      "spec":{"worker":{"template":{"spec":{"containers":[{"name":"w","image":"i"}]}}}}})");
}

// The trainer definition under another name: a different definition to compile, the same patch.
std::string renamed_trainer_definition(int generation) {
  json definition = test::document(test::source_dir() / "tests/data/trainer-karta.yaml");
  definition["metadata"]["name"] = "trainer-" + std::to_string(generation);
  return definition.dump();
}

}  // namespace

TEST_CASE("concurrent admissions during reloads and definition validation all get the lone request's answer") {
  test::TempDir definitions;
  std::ofstream(definitions.path / "trainer.json") << renamed_trainer_definition(0);
  test::RunningWebhook running([&](karta::WebhookConfig& c) {
    c.definition_directories = {definitions.path};
    c.server.threads = 3;
    c.reload_interval = 50ms;
  });
  const std::string jobset_review =
      test::admission_review(test::document(test::source_dir() / "examples/jobset-demo.yaml")).dump();
  const std::string trainer_review = test::admission_review(trainer()).dump();
  json karta = test::document(test::source_dir() / "tests/data/trainer-karta.yaml");
  karta["spec"]["structureDefinition"]["rootComponent"]["kind"]["kind"] = "OtherTrainer";
  const std::string karta_review = test::admission_review(karta).dump();

  // The answers one request at a time gives.
  test::HttpsClient lone(running.port, running.certificates.ca);
  const json jobset_patch = test::decoded_patch(json::parse(lone.request("POST", "/mutate", jobset_review).body));
  const json trainer_patch = test::decoded_patch(json::parse(lone.request("POST", "/mutate", trainer_review).body));
  REQUIRE(jobset_patch.is_array());
  REQUIRE(trainer_patch == json::parse(R"([{"op":"add","path":"/spec/worker/template/metadata",
      "value":{"labels":{"platform.example.com/managed":"true"},"annotations":{"platform.example.com/owner":"platform"}}}])"));
  const json karta_answer = json::parse(lone.request("POST", "/validate", karta_review).body)["response"];
  REQUIRE(karta_answer["allowed"] == true);

  std::atomic<bool> stop{false};
  std::atomic<int> reloads_written{0};
  std::thread reloader([&] {
    for (int generation = 1; !stop; ++generation) {
      std::ofstream(definitions.path / "trainer.json.new") << renamed_trainer_definition(generation);
      std::filesystem::rename(definitions.path / "trainer.json.new", definitions.path / "trainer.json");
      ++reloads_written;
      std::this_thread::sleep_for(60ms);
    }
  });

  constexpr int kClients = 4, kRounds = 25;
  std::atomic<int> answered{0}, wrong{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      test::HttpsClient client(running.port, running.certificates.ca);
      for (int i = 0; i < kRounds; ++i) {
        bool right = true;
        right &= test::decoded_patch(json::parse(client.request("POST", "/mutate", jobset_review).body)) == jobset_patch;
        right &= test::decoded_patch(json::parse(client.request("POST", "/mutate", trainer_review).body)) == trainer_patch;
        if (i % 5 == c % 5) {  // a definition compiled on the offload pool while evaluations run
          auto answer = json::parse(client.request("POST", "/validate", karta_review).body)["response"];
          right &= answer["allowed"] == true;
        }
        answered += 1;
        if (!right) wrong += 1;
      }
    });
  }
  for (auto& client : clients) client.join();
  stop = true;
  reloader.join();
  CHECK(answered == kClients * kRounds);
  CHECK(wrong == 0);
  CHECK(reloads_written >= 3);
  // Reloads happened while the clients ran, and none failed.
  auto metrics = lone.request("GET", "/metrics").body;
  CHECK(metrics.find("karta_reloads_total{source=\"definitions\"}") != std::string::npos);
  CHECK(metrics.find("karta_reload_errors_total{") == std::string::npos);
  CHECK(metrics.find("karta_jq_wait_timeouts_total 0\n") != std::string::npos);
}

}  // namespace e2e_concurrency
