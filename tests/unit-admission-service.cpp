#include <doctest/doctest.h>

#include <thread>
#include <vector>

#include "admission/admission_service.h"
#include "admission/metrics.h"
#include "runtime/admission_http.h"
#include "support/test_support.h"

namespace unit_admission_service {  // this file's names, apart from other tests' in a unity build

using karta::AdmissionEndpoint;
using karta::HttpRequest;
using karta::json;
namespace test = karta::test;

namespace {

karta::AdmissionService& service() {
  static auto instance = [] {
    auto s = std::make_unique<karta::AdmissionService>();
    auto state = std::make_shared<karta::AdmissionState>();
    state->catalog = test::builtin_catalog();
    state->policy = test::policy_from_yaml(R"(
podTemplates:
  labels: {platform.example.com/managed: "true"}
)");
    s->update(state);
    return s;
  }();
  return *instance;
}

karta::HttpResponse post(AdmissionEndpoint endpoint, const std::string& body) {
  return karta::handle_admission(service(), endpoint,
                                 HttpRequest{"POST", "/mutate", "timeout=10s", "application/json", body});
}

json demo() { return test::document(test::source_dir() / "examples/jobset-demo.yaml"); }

}  // namespace

TEST_CASE("a JobSet review is answered with its uid and the patch of both templates") {
  auto response = post(AdmissionEndpoint::Mutate, test::admission_review(demo(), "CREATE", "abc-123").dump());
  CHECK(response.status == 200);
  CHECK(response.content_type == "application/json");
  json review = json::parse(response.body);
  CHECK(review["apiVersion"] == "admission.k8s.io/v1");
  CHECK(review["kind"] == "AdmissionReview");
  CHECK(review["response"]["uid"] == "abc-123");
  CHECK(review["response"]["allowed"] == true);
  CHECK(review["response"]["patchType"] == "JSONPatch");
  CHECK(test::decoded_patch(review) == json::parse(R"([{"op":"add",
      "path":"/spec/replicatedJobs/1/template/spec/template/metadata",
      "value":{"labels":{"platform.example.com/managed":"true"}}}])"));
}

TEST_CASE("out-of-scope requests are admitted with no patch") {
  const json no_patch = json::parse(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",
      "response":{"uid":"uid-1","allowed":true,"status":{"code":200}}})");
  SUBCASE("a kind without a definition: the core v1 Service") {
    json svc = {{"apiVersion", "v1"}, {"kind", "Service"}, {"metadata", {{"name", "s"}}}, {"spec", json::object()}};
    CHECK(json::parse(post(AdmissionEndpoint::Mutate, test::admission_review(svc).dump()).body) == no_patch);
  }
  SUBCASE("Knative's Service is not the core Service, and vice versa") {
    json svc = {{"apiVersion", "serving.knative.dev/v1"}, {"kind", "Service"}, {"metadata", {{"name", "s"}}}};
    json review = test::admission_review(svc);
    review["request"]["kind"] = {{"group", ""}, {"version", "v1"}, {"kind", "Service"}};
    CHECK(json::parse(post(AdmissionEndpoint::Mutate, review.dump()).body) == no_patch);
  }
  SUBCASE("DELETE, with no object") {
    json review = test::admission_review(demo(), "DELETE");
    review["request"]["object"] = nullptr;
    review["request"]["oldObject"] = demo();
    CHECK(json::parse(post(AdmissionEndpoint::Mutate, review.dump()).body) == no_patch);
  }
  SUBCASE("the status subresource") {
    json review = test::admission_review(demo(), "UPDATE");
    review["request"]["subResource"] = "status";
    CHECK(json::parse(post(AdmissionEndpoint::Mutate, review.dump()).body) == no_patch);
  }
  SUBCASE("the scale subresource") {
    json review = test::admission_review(demo(), "UPDATE");
    review["request"]["subResource"] = "scale";
    CHECK(json::parse(post(AdmissionEndpoint::Mutate, review.dump()).body) == no_patch);
  }
  SUBCASE("/validate admits everything") {
    CHECK(json::parse(post(AdmissionEndpoint::Validate, test::admission_review(demo()).dump()).body) == no_patch);
  }
}

TEST_CASE("each admission's metric names the catalog's key of its kind, however it was decided") {
  // A service of its own, with a label policy so that validate reaches the definition too.
  karta::AdmissionService service;
  auto state = std::make_shared<karta::AdmissionState>();
  state->catalog = test::builtin_catalog();
  state->policy = test::policy_from_yaml(R"(
podTemplates:
  labels: {platform.example.com/managed: "true"}
labelPolicy:
  mode: enforce
  workload: {required: [team]}
)");
  service.update(state);
  auto answer = [&](AdmissionEndpoint endpoint, const json& object, const std::string& operation) {
    auto response = karta::handle_admission(
        service, endpoint,
        HttpRequest{"POST", "/mutate", "", "application/json", test::admission_review(object, operation, "u").dump()});
    REQUIRE(response.status == 200);
  };
  json unlabelled = demo();
  unlabelled["metadata"].erase("labels");
  json config_map = json::parse(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"n"}})");
  answer(AdmissionEndpoint::Mutate, demo(), "CREATE");         // found by mutate
  answer(AdmissionEndpoint::Validate, demo(), "CREATE");       // found by validate: allowed
  answer(AdmissionEndpoint::Validate, unlabelled, "CREATE");   // and denied
  answer(AdmissionEndpoint::Mutate, demo(), "DELETE");         // skipped before the lookup: looked up for the metric
  answer(AdmissionEndpoint::Mutate, config_map, "CREATE");     // no definition

  const std::string text = service.metrics().render();
  auto count = [&](const std::string& labels) {
    const std::string prefix = "karta_admission_requests_total{" + labels + "} ";
    auto at = text.find(prefix);
    return at == std::string::npos ? std::string("absent") : text.substr(at + prefix.size(), text.find('\n', at) - at - prefix.size());
  };
  const std::string jobset = "kind=\"jobset.x-k8s.io/v1alpha2/JobSet\"";
  CHECK(count("endpoint=\"mutate\",operation=\"CREATE\"," + jobset + ",result=\"patched\"") == "1");
  CHECK(count("endpoint=\"validate\",operation=\"CREATE\"," + jobset + ",result=\"allowed\"") == "1");
  CHECK(count("endpoint=\"validate\",operation=\"CREATE\"," + jobset + ",result=\"denied\"") == "1");
  CHECK(count("endpoint=\"mutate\",operation=\"DELETE\"," + jobset + ",result=\"skipped\"") == "1");
  CHECK(count("endpoint=\"mutate\",operation=\"CREATE\",kind=\"unregistered\",result=\"skipped\"") == "1");
}

TEST_CASE("a malformed envelope is an HTTP 400 with the reason, so the failure policy applies") {
  auto response = post(AdmissionEndpoint::Mutate, R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",
      "request":{"kind":{"version":"v1","kind":"Pod"},"operation":"CREATE"}})");
  CHECK(response.status == 400);
  CHECK(response.body == "malformed AdmissionReview: request.uid: is required\n");
  response = post(AdmissionEndpoint::Mutate, "{truncated");
  CHECK(response.status == 400);
  CHECK(response.body.rfind("malformed AdmissionReview: body is not JSON: ", 0) == 0);
  response = karta::handle_admission(service(), AdmissionEndpoint::Mutate,
                                     HttpRequest{"POST", "/mutate", "", "text/plain", "{}"});
  CHECK(response.status == 415);
}

TEST_CASE("a service with nothing loaded answers 503 and is not ready") {
  karta::AdmissionService empty;
  CHECK_FALSE(empty.ready());
  auto response = karta::handle_admission(
      empty, AdmissionEndpoint::Mutate,
      HttpRequest{"POST", "/mutate", "", "application/json", test::admission_review(demo()).dump()});
  CHECK(response.status == 503);
}

TEST_CASE("Metrics: admissions counted on many threads add up in render(), and two Metrics stay apart") {
  karta::Metrics metrics, other;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&metrics] {
      for (int i = 0; i < 1000; ++i) {
        metrics.record_admission("mutate", "CREATE", "jobset.x-k8s.io/v1alpha2/JobSet", "patched", 9, 0.0002);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  metrics.record_admission("mutate", "CREATE", "jobset.x-k8s.io/v1alpha2/JobSet", "patched", 9, 0.5);
  metrics.record_admission("validate", "UPDATE", "unregistered", "skipped", 0, 0.00005);
  other.record_admission("mutate", "CREATE", "apps/v1/Deployment", "unchanged", 0, 0.001);

  std::string text = metrics.render();
  auto has = [&](const std::string& line) { return text.find(line + "\n") != std::string::npos; };
  CHECK(has("karta_admission_requests_total{endpoint=\"mutate\",operation=\"CREATE\","
            "kind=\"jobset.x-k8s.io/v1alpha2/JobSet\",result=\"patched\"} 4001"));
  CHECK(has("karta_admission_requests_total{endpoint=\"validate\",operation=\"UPDATE\",kind=\"unregistered\","
            "result=\"skipped\"} 1"));
  CHECK(has("karta_admission_duration_seconds_bucket{endpoint=\"mutate\",le=\"0.0001\"} 0"));
  CHECK(has("karta_admission_duration_seconds_bucket{endpoint=\"mutate\",le=\"0.00025\"} 4000"));
  CHECK(has("karta_admission_duration_seconds_bucket{endpoint=\"mutate\",le=\"0.25\"} 4000"));
  CHECK(has("karta_admission_duration_seconds_bucket{endpoint=\"mutate\",le=\"1\"} 4001"));
  CHECK(has("karta_admission_duration_seconds_bucket{endpoint=\"mutate\",le=\"+Inf\"} 4001"));
  CHECK(has("karta_admission_duration_seconds_count{endpoint=\"mutate\"} 4001"));
  // 4000 x 0.0002 + 0.5, added up in shards in an order that varies: 1.3 to the last few bits.
  const std::string sum_line = "karta_admission_duration_seconds_sum{endpoint=\"mutate\"} ";
  auto sum_at = text.find(sum_line);
  REQUIRE(sum_at != std::string::npos);
  CHECK(std::stod(text.substr(sum_at + sum_line.size())) == doctest::Approx(1.3).epsilon(1e-12));
  CHECK(has("karta_admission_duration_seconds_count{endpoint=\"validate\"} 1"));
  CHECK(has("karta_patch_operations_total{kind=\"jobset.x-k8s.io/v1alpha2/JobSet\"} 36009"));
  CHECK(text.find("Deployment") == std::string::npos);  // counted by `other` only
  CHECK(other.render().find("karta_admission_requests_total{endpoint=\"mutate\",operation=\"CREATE\","
                            "kind=\"apps/v1/Deployment\",result=\"unchanged\"} 1\n") != std::string::npos);
}

TEST_CASE("Metrics: admissions of labels that change from one to the next are each counted under their own") {
  // One thread, so one shard: each admission either repeats the last one's labels or changes one of them.
  karta::Metrics metrics;
  const std::string jobset = "jobset.x-k8s.io/v1alpha2/JobSet", job = "batch/v1/Job";
  metrics.record_admission("mutate", "CREATE", jobset, "unchanged", 0, 0.001);
  metrics.record_admission("mutate", "CREATE", jobset, "unchanged", 0, 0.001);
  metrics.record_admission("mutate", "CREATE", jobset, "patched", 3, 0.001);   // the result changes
  metrics.record_admission("mutate", "CREATE", jobset, "patched", 4, 0.001);
  metrics.record_admission("mutate", "UPDATE", jobset, "patched", 5, 0.001);   // the operation
  metrics.record_admission("mutate", "CREATE", job, "patched", 1, 0.001);      // the kind
  metrics.record_admission("validate", "CREATE", job, "patched", 2, 0.5);      // the endpoint
  metrics.record_admission("mutate", "CREATE", jobset, "patched", 6, 0.001);   // back to one counted before
  metrics.record_admission("mutate", "CREATE", jobset, "unchanged", 0, 0.001);

  std::string text = metrics.render();
  auto has = [&](const std::string& line) { return text.find(line + "\n") != std::string::npos; };
  auto requests = [&](const char* endpoint, const char* operation, const std::string& kind, const char* result) {
    return std::string("karta_admission_requests_total{endpoint=\"") + endpoint + "\",operation=\"" + operation +
           "\",kind=\"" + kind + "\",result=\"" + result + "\"} ";
  };
  CHECK(has(requests("mutate", "CREATE", jobset, "unchanged") + "3"));
  CHECK(has(requests("mutate", "CREATE", jobset, "patched") + "3"));
  CHECK(has(requests("mutate", "UPDATE", jobset, "patched") + "1"));
  CHECK(has(requests("mutate", "CREATE", job, "patched") + "1"));
  CHECK(has(requests("validate", "CREATE", job, "patched") + "1"));
  CHECK(has("karta_admission_duration_seconds_count{endpoint=\"mutate\"} 8"));
  CHECK(has("karta_admission_duration_seconds_count{endpoint=\"validate\"} 1"));
  CHECK(has("karta_admission_duration_seconds_bucket{endpoint=\"validate\",le=\"0.25\"} 0"));
  CHECK(has("karta_admission_duration_seconds_bucket{endpoint=\"mutate\",le=\"0.25\"} 8"));
  CHECK(has("karta_patch_operations_total{kind=\"" + jobset + "\"} 18"));  // 3 + 4 + 5 + 6
  CHECK(has("karta_patch_operations_total{kind=\"" + job + "\"} 3"));     // 1 + 2
}

TEST_CASE("Metrics: the duration sum is printed in full, not to six significant digits") {
  karta::Metrics metrics;
  metrics.record_admission("mutate", "CREATE", "batch/v1/Job", "patched", 1, 86400.125);
  metrics.record_admission("mutate", "CREATE", "batch/v1/Job", "patched", 1, 0.25);  // both exact in binary
  std::string text = metrics.render();
  CHECK(text.find("karta_admission_duration_seconds_sum{endpoint=\"mutate\"} 86400.375\n") != std::string::npos);
  CHECK(text.find("karta_admission_duration_seconds_bucket{endpoint=\"mutate\",le=\"0.25\"} 1\n") != std::string::npos);  // bounds as before
}

}  // namespace unit_admission_service
