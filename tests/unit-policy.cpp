#include <doctest/doctest.h>

#include "json/documents.h"
#include "policy/policy.h"
#include "support/test_support.h"

namespace unit_policy {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

namespace {

std::string error_of(const std::string& yaml) {
  try {
    karta::parse_policy(test::yaml(yaml), "policy.yaml");
  } catch (const karta::InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("the issue's whole policy reads into every field") {
  auto policy = test::policy_from_yaml(karta::read_text_file(test::source_dir() / "examples/policy.yaml"));
  CHECK(policy.pod_templates.labels == std::map<std::string, std::string>{
      {"platform.example.com/managed", "true"}, {"platform.example.com/role", "{{instance}}"}});
  CHECK(policy.scheduling.scheduler_name == "kai-scheduler");
  CHECK(policy.scheduling.queue_label == "kai.scheduler/queue");
  CHECK(policy.scheduling.default_queue == "default-queue");
  CHECK(policy.gpu.resource_names == std::vector<std::string>{"nvidia.com/gpu"});
  CHECK(policy.gpu.tolerations == json::parse(R"([{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}])"));
  CHECK(policy.gpu.tolerations_text == R"([{"effect":"NoSchedule","key":"nvidia.com/gpu","operator":"Exists"}])");
  CHECK(policy.gpu.workload_total_annotation == "platform.example.com/gpu-total");
  CHECK(policy.gang.min_member_annotation == "kai.scheduler/batch-min-member");
  CHECK(policy.label_policy.enabled);
  CHECK(policy.label_policy.mode == karta::LabelPolicyMode::Enforce);
  CHECK(policy.label_policy.exempt_namespaces == std::vector<std::string>{"kube-system"});
  CHECK(policy.label_policy.workload.required == std::vector<std::string>{"team"});
  CHECK(policy.definition_policy.mode == karta::DefinitionPolicyMode::Enforce);
}

TEST_CASE("a bad policy is refused with the field and the fault") {
  CHECK(error_of("podTemplate: {}") == "policy.yaml: podTemplate: unknown field (did you mean \"podTemplates\"?)");
  CHECK(error_of("podTemplates: {labelz: {}}") == "policy.yaml: podTemplates.labelz: unknown field (did you mean \"labels\"?)");
  CHECK(error_of("podTemplates: {labels: {a: 1}}") ==
        "policy.yaml: podTemplates.labels.a: must be a string, not number (quote it in YAML)");
  CHECK(error_of("podTemplates: {labels: {\"Bad Key\": x}}") ==
        "policy.yaml: podTemplates.labels: key \"Bad Key\" may contain only alphanumerics, '-', '_' and '.'");
  CHECK(error_of("podTemplates: {labels: {a: \"-x\"}}") ==
        "policy.yaml: podTemplates.labels.a: value \"-x\" must begin and end with an alphanumeric character");
  CHECK(error_of("podTemplates: {labels: {a: \"{{team}}\"}}") ==
        "policy.yaml: podTemplates.labels.a: unknown placeholder {{team}} (known: namespace, name, kind, group, "
        "component, instance, gpus)");
  CHECK(error_of("podTemplates: {overwrite: yes please}") == "policy.yaml: podTemplates.overwrite: must be true or false");
  CHECK(error_of("labelPolicy: {mode: strict}") == "policy.yaml: labelPolicy.mode: must be enforce or audit");
  CHECK(error_of("labelPolicy: {workload: {allowed: {team: \"([\"}}}").rfind(
            "policy.yaml: labelPolicy.workload.allowed.team: not a regular expression: ", 0) == 0);
  // RE2 syntax: what a linear-time matcher cannot do is refused at start-up, naming the field.
  CHECK(error_of("labelPolicy: {podTemplates: {allowed: {team: \"(a)\\\\1\"}}}") ==
        "policy.yaml: labelPolicy.podTemplates.allowed.team: not a regular expression: invalid escape sequence: \\1");
  CHECK(error_of("labelPolicy: {workload: {allowed: {team: \"(?=x)\"}}}") ==
        "policy.yaml: labelPolicy.workload.allowed.team: not a regular expression: invalid perl operator: (?=");
  CHECK(error_of("gpu: {tolerations: [nvidia]}") ==
        "policy.yaml: gpu.tolerations[0]: must be a toleration (a map), not string");
  CHECK(error_of("scheduling: {queue: {default: q}}") == "policy.yaml: scheduling.queue.default: needs scheduling.queue.label");
}

TEST_CASE("placeholders are replaced where they stand and other text is kept") {
  karta::PlaceholderValues v{"ns", "job", "JobSet", "jobset.x-k8s.io", "replicatedjob", "worker", "8"};
  CHECK(karta::fill_placeholders("{{instance}}-{{gpus}}gpu", v) == "worker-8gpu");
  CHECK(karta::fill_placeholders("plain", v) == "plain");
  CHECK(karta::fill_placeholders("{{namespace}}/{{name}}", v) == "ns/job");
}

TEST_CASE("GPU tolerations are checked as the API server checks a pod's, so the patch is never refused") {
  CHECK(error_of("gpu: {tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule},"
                 " {key: a, operator: Equal, value: b, effect: NoExecute, tolerationSeconds: 30}, {operator: Exists}]}") ==
        "(no error)");
  CHECK(error_of("gpu: {tolerations: [{key: nvidia.com/gpu, operater: Exists}]}") ==
        "policy.yaml: gpu.tolerations[0].operater: unknown field (did you mean \"operator\"?)");
  CHECK(error_of("gpu: {tolerations: [{key: \"nvidia.com/g pu\", operator: Exists}]}") ==
        "policy.yaml: gpu.tolerations[0].key: \"nvidia.com/g pu\" name part may contain only alphanumerics, '-', '_' and '.'");
  CHECK(error_of("gpu: {tolerations: [{key: a, operator: In}]}") ==
        "policy.yaml: gpu.tolerations[0].operator: \"In\" is not one of Exists, Equal");
  CHECK(error_of("gpu: {tolerations: [{value: b}]}") ==
        "policy.yaml: gpu.tolerations[0].operator: must be Exists when key is empty");
  CHECK(error_of("gpu: {tolerations: [{key: a, operator: Exists, value: b}]}") ==
        "policy.yaml: gpu.tolerations[0].value: must be empty when operator is Exists");
  CHECK(error_of("gpu: {tolerations: [{key: a, value: \"b c\"}]}") ==
        "policy.yaml: gpu.tolerations[0].value: \"b c\" may contain only alphanumerics, '-', '_' and '.'");
  CHECK(error_of("gpu: {tolerations: [{key: a, operator: Exists, effect: NoRun}]}") ==
        "policy.yaml: gpu.tolerations[0].effect: \"NoRun\" is not one of NoSchedule, PreferNoSchedule, NoExecute");
  CHECK(error_of("gpu: {tolerations: [{key: a, operator: Exists, effect: NoSchedule, tolerationSeconds: 5}]}") ==
        "policy.yaml: gpu.tolerations[0].tolerationSeconds: only with effect NoExecute");
  CHECK(error_of("gpu: {tolerations: [{key: a, operator: Exists, effect: NoExecute, tolerationSeconds: soon}]}") ==
        "policy.yaml: gpu.tolerations[0].tolerationSeconds: must be an integer");
  CHECK(error_of("gpu: {tolerations: [{key: 5, operator: Exists}]}") ==
        "policy.yaml: gpu.tolerations[0].key: must be a string, not number");
}

TEST_CASE("the annotation keys the policy has the webhook set are checked as annotation keys") {
  CHECK(error_of("gang: {minMemberAnnotation: \"kai scheduler/min\"}") ==
        "policy.yaml: gang.minMemberAnnotation: \"kai scheduler/min\" prefix must be a lowercase DNS subdomain");
  CHECK(error_of("gpu: {workloadTotalAnnotation: \"/gpus\"}").rfind("policy.yaml: gpu.workloadTotalAnnotation: \"/gpus\" ", 0) == 0);
  CHECK(error_of("gpu: {workloadTotalAnnotation: platform.example.com/gpu-total}") == "(no error)");
}

TEST_CASE("definitionPolicy.mode is enforce by default, warn when set, and anything else is refused naming the field") {
  CHECK(test::policy_from_yaml("podTemplates: {}").definition_policy.mode == karta::DefinitionPolicyMode::Enforce);
  CHECK(test::policy_from_yaml("definitionPolicy: {}").definition_policy.mode == karta::DefinitionPolicyMode::Enforce);
  CHECK(test::policy_from_yaml("definitionPolicy: {mode: enforce}").definition_policy.mode ==
        karta::DefinitionPolicyMode::Enforce);
  CHECK(test::policy_from_yaml("definitionPolicy: {mode: warn}").definition_policy.mode == karta::DefinitionPolicyMode::Warn);
  CHECK(error_of("definitionPolicy: {mode: audit}") == "policy.yaml: definitionPolicy.mode: must be enforce or warn, not \"audit\"");
  CHECK(error_of("definitionPolicy: {mode: 1}") == "policy.yaml: definitionPolicy.mode: must be a string, not number");
  CHECK(error_of("definitionPolicy: {modes: warn}") == "policy.yaml: definitionPolicy.modes: unknown field (did you mean \"mode\"?)");
  CHECK(error_of("definitionPolicy: warn") == "policy.yaml: definitionPolicy: must be a map, not string");
}

}  // namespace unit_policy
