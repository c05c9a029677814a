#include "support/kube_fixtures.h"

#include <thread>

namespace karta::test::kube_fixtures {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (!condition()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

json karta_object(const std::string& name, const std::string& kind) {
  return {{"apiVersion", "run.ai/v1alpha1"},
          {"kind", "Karta"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"structureDefinition",
             {{"rootComponent",
               {{"name", "root"},
                {"kind", {{"group", "example.com"}, {"version", "v1"}, {"kind", kind}}},
                {"specDefinition", {{"podTemplateSpecPath", ".spec.template"}}},
                {"statusDefinition",
                 {{"phaseDefinition", {{"path", ".status.phase"}}},
                  {"statusMappings", {{"running", {{{"byPhase", "Running"}}}}}}}}}}}}}}};
}

std::vector<std::string> names(const std::vector<json>& objects) {
  std::vector<std::string> result;
  for (const auto& object : objects) result.push_back(object["metadata"]["name"].get<std::string>());
  return result;
}

kube::WatcherOptions test_options() {
  kube::WatcherOptions options;
  options.page_size = 2;
  options.backoff.initial = 20ms;
  options.backoff.cap = 200ms;
  return options;
}

}  // namespace karta::test::kube_fixtures
