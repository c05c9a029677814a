// The one place that decides "the tenant's policy, or the global one" and the tenant's name in output
// (policy/tenant_rules.h, TenantChoice): what each member gives for a tenant, the global policy and an
// exempt tenant, and that no command spells the choice out again.

#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "json/documents.h"
#include "policy/policy.h"
#include "support/test_support.h"

namespace unit_tenant_choice {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;
namespace fs = std::filesystem;

const char* const kPolicy = R"(
gpu: {resourceNames: [nvidia.com/gpu]}
tenants:
- name: platform
  namespaces: [kube-*]
  exempt: true
- name: research
  namespaces: [research-*]
  gpu: {resourceNames: [nvidia.com/gpu, nvidia.com/mig-1g.10gb]}
)";

TEST_CASE("a tenant's namespace gets the tenant's settings, named by the rule, in text and in JSON") {
  const karta::Policy policy = test::policy_from_yaml(kPolicy);
  const karta::TenantChoice choice = karta::choose_tenant(policy, "research-a", nullptr);
  CHECK(choice.tenant() == "research");
  CHECK(&choice.settings(policy) == choice.policy);
  CHECK(choice.settings(policy).gpu.resource_names == std::vector<std::string>{"nvidia.com/gpu", "nvidia.com/mig-1g.10gb"});
  CHECK(choice.display_name() == "research");
  CHECK(choice.json_field(policy) == json("research"));
}

TEST_CASE("a namespace no rule matches gets the global policy: \"(global policy)\" in text, null in JSON") {
  const karta::Policy policy = test::policy_from_yaml(kPolicy);
  const karta::TenantChoice choice = karta::choose_tenant(policy, "default", nullptr);
  CHECK(choice.rule == nullptr);
  CHECK(&choice.settings(policy) == &policy);
  CHECK(choice.display_name() == "(global policy)");
  CHECK(choice.json_field(policy) == json(nullptr));
}

TEST_CASE("an exempt tenant is named, and its workloads are described with the global policy's settings") {
  const karta::Policy policy = test::policy_from_yaml(kPolicy);
  const karta::TenantChoice choice = karta::choose_tenant(policy, "kube-system", nullptr);
  CHECK(choice.exempt());
  CHECK(choice.policy == nullptr);
  CHECK(&choice.settings(policy) == &policy);
  CHECK(choice.display_name() == "platform");
  CHECK(choice.json_field(policy) == json("platform"));
}

TEST_CASE("without tenant rules, JSON output carries no tenant field at all") {
  const karta::Policy policy = test::policy_from_yaml("gpu: {resourceNames: [nvidia.com/gpu]}");
  const karta::TenantChoice choice = karta::choose_tenant(policy, "anywhere", nullptr);
  CHECK(&choice.settings(policy) == &policy);
  CHECK_FALSE(choice.json_field(policy).has_value());
}

TEST_CASE("no command spells the choice out again: the fallback and the names are TenantChoice's alone") {
  // What the three commands wrote before the choice had one place (cli/commands.cpp, cli/live_inspect.cpp,
  // cli/audit.cpp): the fallback to the global policy, and the tenant's name for text and JSON.
  const std::vector<std::string> spelled_out = {"choice.policy != nullptr ?", "choice.rule == nullptr ? json(nullptr)",
                                                "\"(global policy)\"", "tenant.empty() ? json(nullptr)"};
  std::vector<std::string> found;
  std::size_t files = 0;
  for (const char* folder : {"cli", "admission", "runtime"}) {
    for (const auto& entry : fs::recursive_directory_iterator(test::source_dir() / folder)) {
      if (!entry.is_regular_file()) continue;
      ++files;
      const std::string text = karta::read_text_file(entry.path());
      for (const auto& pattern : spelled_out) {
        if (text.find(pattern) != std::string::npos) {
          found.push_back(fs::relative(entry.path(), test::source_dir()).string() + ": " + pattern);
        }
      }
    }
  }
  CHECK(files > 20);
  std::string named;
  for (const auto& place : found) named += "\n  " + place;
  CHECK_MESSAGE(found.empty(), "the choice spelled out again:" << named);
}

}  // namespace unit_tenant_choice
