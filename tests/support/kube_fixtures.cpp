#include "support/kube_fixtures.h"

#include <thread>

#include "support/fake_api_server.h"

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

std::string split_kubeconfig(const std::filesystem::path& dir, const kube::KubeConnection& connection) {
  write_text(dir / "ca.pem", connection.ca_pem.value());
  write_text(dir / "cluster.yaml", "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n    server: " +
                                       connection.server_url() + "\n    certificate-authority: ca.pem\n" +
                                       "contexts:\n- name: local\n  context: {cluster: local, user: me, namespace: research}\n"
                                       "current-context: local\n");
  write_text(dir / "user/token", connection.token + "\n");
  write_text(dir / "user/user.yaml", "apiVersion: v1\nkind: Config\nusers:\n- name: me\n  user: {tokenFile: token}\n");
  return (dir / "cluster.yaml").string() + ":" + (dir / "user/user.yaml").string() + ":" + (dir / "missing.yaml").string();
}

}  // namespace karta::test::kube_fixtures
