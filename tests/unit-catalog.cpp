// The built-in catalog on the real upstream samples of tests/corpus. The expectations in
// tests/data/catalog-expected.json were derived by reading each manifest (which templates exist, how
// many pods each role runs, what one pod requests), not by running the definitions.

#include <doctest/doctest.h>

#include <fstream>
#include <set>

#include "admission/admission_service.h"
#include "cli/inspect.h"
#include "definitions/jq_program.h"
#include "definitions/workload.h"
#include "mutate/json_patch_builder.h"
#include "mutate/mutation.h"
#include "support/test_support.h"

namespace unit_catalog {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

namespace {

const json& expectations() {
  static const json data = json::parse(std::ifstream(test::source_dir() / "tests/data/catalog-expected.json"));
  return data;
}

const karta::Policy& label_only_policy() {
  static const karta::Policy policy = test::policy_from_yaml("podTemplates: {labels: {karta.test/managed: \"yes\"}}");
  return policy;
}

const karta::Policy& full_policy() {
  static const karta::Policy policy = test::policy_from_yaml(R"(
podTemplates:
  labels: {platform.example.com/managed: "true", platform.example.com/role: "{{instance}}"}
  annotations: {platform.example.com/gpus: "{{gpus}}"}
scheduling:
  schedulerName: kai-scheduler
  queue: {label: kai.scheduler/queue, default: default-queue}
gpu:
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  workloadTotalAnnotation: platform.example.com/gpu-total
gang:
  minMemberAnnotation: kai.scheduler/batch-min-member
)");
  return policy;
}

// Every place in `value` holding the key, as JSON Pointers.
void find_key(const json& value, const std::string& key, const json::json_pointer& at, std::set<std::string>& found) {
  if (value.is_object()) {
    if (value.contains(key)) found.insert(at.to_string());
    for (const auto& [k, v] : value.items()) find_key(v, key, at / k, found);
  } else if (value.is_array()) {
    for (std::size_t i = 0; i < value.size(); ++i) find_key(value[i], key, at / i, found);
  }
}

bool related(const std::string& a, const std::string& b) {
  auto prefix = [](const std::string& p, const std::string& s) {
    return s.rfind(p, 0) == 0 && (s.size() == p.size() || s[p.size()] == '/');
  };
  return prefix(a, b) || prefix(b, a);
}

// All the checks on one sample entry; returns the number of objects checked.
void check_entry(const json& entry, const std::filesystem::path& corpus) {
  const std::string where = entry["file"].get<std::string>() + "#" + std::to_string(entry["index"].get<int>());
  CAPTURE(where);
  json object = test::document(corpus / "samples" / entry["file"].get<std::string>(), entry["index"].get<std::size_t>());
  CHECK(object["kind"] == entry["kind"]);
  auto request = karta::request_for_object(object);
  if (entry.value("unregistered", false)) {
    karta::AdmissionState state{test::builtin_catalog(), full_policy()};
    auto result = karta::AdmissionService::mutate(request, state);
    CHECK(result.outcome == "skipped:no-definition");
    CHECK(result.decision.patch.empty());
    return;
  }
  const auto* definition = test::builtin_catalog().find(request.kind);
  REQUIRE_MESSAGE(definition != nullptr, request.kind.to_string());

  // The exact set of pod-label maps, and nothing else touched.
  auto outcome = karta::mutate_workload(object, *definition, label_only_policy());
  CHECK(outcome.notes == std::vector<std::string>{});
  json patched = outcome.patch.empty() ? object : test::kubectl_apply(object, outcome.patch.value());
  std::set<std::string> labelled;
  find_key(patched, "karta.test/managed", json::json_pointer(), labelled);
  std::set<std::string> expected;
  for (const auto& map : entry["labelMaps"]) expected.insert(map.get<std::string>());
  CHECK(labelled == expected);
  for (const auto& op : json::diff(object, patched)) {
    CAPTURE(op);
    CHECK(op["op"] == "add");
    CHECK(std::any_of(expected.begin(), expected.end(),
                      [&](const std::string& map) { return related(map, op["path"].get<std::string>()); }));
  }

  // Roles, replicas and GPUs, as read from the manifest.
  auto document = karta::JsonDocument::from(object);
  karta::DefinitionEvaluation evaluation(*definition, document.root());
  auto analysis = karta::analyze_workload(evaluation, {"nvidia.com/gpu"});
  json instances = json::array();
  for (std::size_t i = 0; i < analysis.layout.templates.size(); ++i) {
    const auto& t = analysis.layout.templates[i];
    instances.push_back({{"component", t.component}, {"instance", t.instance}, {"replicas", t.replicas},
                         {"gpusPerPod", analysis.per_pod[i].gpus}});
  }
  CHECK(instances == entry["instances"]);
  CHECK(analysis.total_gpus == entry["gpuTotal"].get<double>());
  {  // The admission counts GPUs only: the same GPUs, per pod and in total.
    karta::DefinitionEvaluation again(*definition, document.root());
    auto gpus_only = karta::analyze_workload(again, {"nvidia.com/gpu"}, karta::Counted::GpusOnly);
    REQUIRE(gpus_only.per_pod.size() == analysis.per_pod.size());
    for (std::size_t i = 0; i < analysis.per_pod.size(); ++i) {
      CHECK(gpus_only.per_pod[i].gpus == analysis.per_pod[i].gpus);
      CHECK(gpus_only.per_pod[i].cpu == 0);
    }
    CHECK(gpus_only.total_gpus == analysis.total_gpus);
  }

  // The maps the locator hands on as found (the patch builder starts from them) are what their pointers
  // reach, where that is an object; and where it is not, none is handed on.
  for (const auto& t : analysis.layout.templates) {
    CAPTURE(t.location.to_string());
    auto check_found = [&](const std::optional<karta::JsonPointer>& pointer, const std::optional<karta::JsonElement>& found) {
      std::optional<karta::JsonElement> reached = pointer ? karta::find_at(document.root(), *pointer) : std::nullopt;
      if (reached && !reached->is_object()) reached.reset();
      CHECK(found.has_value() == reached.has_value());
      if (found && reached) CHECK(karta::to_json(*found) == karta::to_json(*reached));
    };
    if (t.kind == karta::SpecKind::PodTemplateSpec) {
      check_found(t.labels, t.labels_found);
      check_found(t.annotations, t.annotations_found);
    }
    if (t.kind == karta::SpecKind::PodTemplateSpec || t.kind == karta::SpecKind::PodSpec) {
      check_found(t.pod_spec, t.pod_spec_found);
    } else {
      CHECK_FALSE(t.pod_spec_found.has_value());
    }
  }

  // The whole policy: kubectl applies it, and a second pass changes nothing.
  auto full = karta::mutate_workload(object, *definition, full_policy());
  CHECK(full.notes == std::vector<std::string>{});
  // Where the expectations spell the whole patch out, it is compared whole.
  if (entry.contains("patch")) CHECK(full.patch.value() == entry["patch"]);
  json fully_patched = full.patch.empty() ? object : test::kubectl_apply(object, full.patch.value());
  CHECK(karta::mutate_workload(fully_patched, *definition, full_policy()).patch.value() == json::array());

  // The gang size written: none, since the full policy asks for no kind's gang (gang.kinds is empty by
  // default; tests/unit-kai-hints.cpp has the JobSet's and the batch Job's when asked), and the state: no
  // sample has a status, so every one is Undefined.
  json annotations = fully_patched["metadata"].value("annotations", json::object());
  json gang = annotations.contains("kai.scheduler/batch-min-member") ? annotations["kai.scheduler/batch-min-member"] : json();
  CHECK(gang == entry["gangMinMember"]);
  CHECK(karta::inspect_workload(object, *definition, {"nvidia.com/gpu"})["state"] == entry["state"]);
}

void check_kind(const std::string& api_version, const std::string& kind, std::size_t samples) {
  auto corpus = test::corpus_dir();
  if (!corpus) return;
  std::size_t checked = 0;
  for (const auto& entry : expectations()) {
    if (entry["kind"] != kind || entry.value("apiVersion", "") != api_version) continue;
    check_entry(entry, *corpus);
    ++checked;
  }
  CHECK(checked == samples);
}

}  // namespace

TEST_CASE("JobSet samples: every replicated job's template is labelled") {
  check_kind("jobset.x-k8s.io/v1alpha2", "JobSet", 3);
}
TEST_CASE("LeaderWorkerSet samples: leader and worker templates, and no leader template where none is written") {
  check_kind("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", 3);
}
TEST_CASE("PyTorchJob samples: Master and Worker replica specs") { check_kind("kubeflow.org/v1", "PyTorchJob", 3); }
TEST_CASE("MPIJob v1 samples: Launcher and Worker") { check_kind("kubeflow.org/v1", "MPIJob", 1); }
TEST_CASE("MPIJob v2beta1 samples: Launcher and Worker") { check_kind("kubeflow.org/v2beta1", "MPIJob", 2); }
TEST_CASE("RayCluster samples: head group and every worker group") { check_kind("ray.io/v1", "RayCluster", 3); }
TEST_CASE("RayJob samples: the cluster under rayClusterSpec, and none for an existing cluster") {
  check_kind("ray.io/v1", "RayJob", 3);
}
TEST_CASE("RayService samples: the cluster under rayClusterConfig") { check_kind("ray.io/v1", "RayService", 3); }
TEST_CASE("InferenceService samples: predictor, transformer and explainer label maps") {
  check_kind("serving.kserve.io/v1beta1", "InferenceService", 3);
}
TEST_CASE("Knative Service samples: the revision template") {
  check_kind("serving.knative.dev/v1", "Service", 5);
}
TEST_CASE("NIMService samples: the service's own labels map") { check_kind("apps.nvidia.com/v1alpha1", "NIMService", 3); }
TEST_CASE("Milvus samples: per-component pod labels") { check_kind("milvus.io/v1beta1", "Milvus", 3); }
TEST_CASE("PodCliqueSet samples: every clique") { check_kind("grove.io/v1alpha1", "PodCliqueSet", 3); }
TEST_CASE("DynamoGraphDeployment v1alpha1 samples: every service's pod metadata") {
  check_kind("nvidia.com/v1alpha1", "DynamoGraphDeployment", 2);
}
TEST_CASE("DynamoGraphDeployment v1beta1 samples: every component's pod template") {
  check_kind("nvidia.com/v1beta1", "DynamoGraphDeployment", 1);
}
TEST_CASE("LLMInferenceService samples: decode, prefill and multi-node worker pod specs, labelled through spec.labels and spec.prefill.labels") {
  check_kind("serving.kserve.io/v1alpha2", "LLMInferenceService", 3);
}
TEST_CASE("Sandbox samples: the pod template, with or without its own metadata") {
  check_kind("agents.x-k8s.io/v1beta1", "Sandbox", 3);
}
TEST_CASE("Volcano Job samples: every task's template, the queue also in spec.queue") {
  check_kind("batch.volcano.sh/v1alpha1", "Job", 3);
}
TEST_CASE("SparkApplication samples: the driver's and the executors' label maps") {
  check_kind("sparkoperator.k8s.io/v1beta2", "SparkApplication", 3);
}
TEST_CASE("TrainJob samples: no pod place, the training nodes counted from numNodes") {
  check_kind("trainer.kubeflow.org/v1alpha1", "TrainJob", 2);
}
TEST_CASE("Argo Workflow samples: every container and script template, counted from the entrypoint") {
  check_kind("argoproj.io/v1alpha1", "Workflow", 3);
}
TEST_CASE("NIMCache samples, alone and beside NIMServices: the caching Job's one pod") {
  check_kind("apps.nvidia.com/v1alpha1", "NIMCache", 5);
}
TEST_CASE("TFJob, XGBoostJob, PaddleJob and JAXJob samples: every replica spec, as PyTorchJob") {
  check_kind("kubeflow.org/v1", "TFJob", 2);
  check_kind("kubeflow.org/v1", "XGBoostJob", 2);
  check_kind("kubeflow.org/v1", "PaddleJob", 2);
  check_kind("kubeflow.org/v1", "JAXJob", 2);
}
TEST_CASE("Notebook samples: the server pod, labelled through the Notebook's own metadata") {
  check_kind("kubeflow.org/v1", "Notebook", 2);
}
TEST_CASE("objects of kinds without a definition are untouched: core Service, Secret, ResourceClaimTemplate") {
  auto corpus = test::corpus_dir();
  if (!corpus) return;
  std::size_t checked = 0;
  for (const auto& entry : expectations()) {
    if (!entry.value("unregistered", false)) continue;
    check_entry(entry, *corpus);
    ++checked;
  }
  CHECK(checked == 4);
}

TEST_CASE("every sample object of the corpus is covered by the expectations") {
  auto corpus = test::corpus_dir();
  if (!corpus) return;
  std::size_t objects = 0;
  for (const auto& file : std::filesystem::directory_iterator(*corpus / "samples")) {
    objects += test::documents(file.path()).size();
  }
  CHECK(objects == expectations().size());
}

TEST_CASE("the built-in catalog holds every framework and Kubernetes' pod controllers") {
  std::vector<std::string> kinds;
  for (const auto& definition : test::builtin_catalog().definitions()) kinds.push_back(definition->root_kind().to_string());
  CHECK(kinds == std::vector<std::string>{
      "v1 Pod", "agents.x-k8s.io/v1beta1 Sandbox", "apps/v1 DaemonSet", "apps/v1 Deployment", "apps/v1 ReplicaSet",
      "apps/v1 StatefulSet", "apps.nvidia.com/v1alpha1 NIMCache", "apps.nvidia.com/v1alpha1 NIMService",
      "argoproj.io/v1alpha1 Workflow", "batch/v1 CronJob", "batch/v1 Job", "batch.volcano.sh/v1alpha1 Job",
      "grove.io/v1alpha1 PodCliqueSet", "jobset.x-k8s.io/v1alpha2 JobSet", "kubeflow.org/v1 JAXJob",
      "kubeflow.org/v1 MPIJob", "kubeflow.org/v1 Notebook", "kubeflow.org/v1 PaddleJob", "kubeflow.org/v1 PyTorchJob",
      "kubeflow.org/v1 TFJob", "kubeflow.org/v1 XGBoostJob", "kubeflow.org/v2beta1 MPIJob",
      "leaderworkerset.x-k8s.io/v1 LeaderWorkerSet", "milvus.io/v1beta1 Milvus",
      "nvidia.com/v1alpha1 DynamoGraphDeployment", "nvidia.com/v1beta1 DynamoGraphDeployment", "ray.io/v1 RayCluster",
      "ray.io/v1 RayJob", "ray.io/v1 RayService", "serving.knative.dev/v1 Service",
      "serving.kserve.io/v1alpha1 LLMInferenceService", "serving.kserve.io/v1alpha2 LLMInferenceService",
      "serving.kserve.io/v1beta1 InferenceService", "sparkoperator.k8s.io/v1beta2 SparkApplication",
      "trainer.kubeflow.org/v1alpha1 TrainJob"});
}

TEST_CASE("a kind is found by its group, version and kind, each compared whole") {
  const karta::Catalog& catalog = test::builtin_catalog();
  for (const auto& definition : catalog.definitions()) {
    const karta::GroupVersionKind& kind = definition->root_kind();
    CAPTURE(kind.to_string());
    const auto entry = catalog.find_entry(kind);
    CHECK(entry.definition == definition.get());
    REQUIRE(entry.key != nullptr);
    CHECK(*entry.key == kind.group + "/" + kind.version + "/" + kind.kind);
    CHECK(catalog.find_shared(kind) == definition);
  }
  // Near misses: another group, version or case, a part moved across the '/', a prefix, a longer kind.
  for (const karta::GroupVersionKind& kind : std::vector<karta::GroupVersionKind>{
           {"", "v1", "Service"}, {"serving.knative.dev", "v1", "service"}, {"jobset.x-k8s.io", "v1alpha1", "JobSet"},
           {"jobset.x-k8s.io/v1alpha2", "", "JobSet"}, {"jobset.x-k8s.io", "v1alpha2/JobSet", ""},
           {"jobset.x-k8s.io", "v1alpha2", "JobSe"}, {"jobset.x-k8s.io", "v1alpha2", "JobSets"}, {"", "", ""}}) {
    CAPTURE(kind.to_string());
    CHECK(catalog.find_entry(kind).definition == nullptr);
    CHECK(catalog.find_key(kind) == nullptr);
  }
}

TEST_CASE("every simple catalog path gives what libjq gives, on every sample") {
  const std::vector<json> objects = test::sample_objects();
  if (objects.empty()) return;
  std::size_t compared = 0;
  for (const auto& definition : test::builtin_catalog().definitions()) {
    for (const auto& e : definition->expressions()) {
      if (!e.simple) continue;
      CAPTURE(e.field.expression);
      std::string program = e.mode == karta::ExpressionMode::Path ? "path(" + e.field.expression + ")" : e.field.expression;
      karta::JqProgram jq(program, 1);
      for (const auto& object : objects) {
        karta::JqInput input(object);
        auto by_jq = jq.run(input, 1000);
        auto document = karta::JsonDocument::from(object);
        auto native = e.simple->evaluate(document.root(), 1000);
        json native_outputs = json::array();
        for (const auto& m : native.matches) {
          if (e.mode == karta::ExpressionMode::Value) {
            native_outputs.push_back(m.value ? karta::to_json(*m.value) : json(nullptr));
          } else {
            json path = json::array();
            for (const auto& token : m.pointer.tokens()) path.push_back(token);
            native_outputs.push_back(path);
          }
        }
        json jq_outputs = by_jq.outputs;
        if (e.mode == karta::ExpressionMode::Path) {  // indexes come back as numbers from jq
          for (auto& p : jq_outputs) {
            for (auto& token : p) {
              if (token.is_number()) token = std::to_string(token.get<std::int64_t>());
            }
          }
        }
        CHECK(native_outputs == jq_outputs);
        CHECK(native.error.has_value() == by_jq.error.has_value());
        ++compared;
      }
    }
  }
  CHECK(compared > 1000);
}

TEST_CASE("a kind's catalog key names it as group/version/kind; unknown kinds and versions have none") {
  const auto& catalog = test::builtin_catalog();
  const std::string* key = catalog.find_key({"jobset.x-k8s.io", "v1alpha2", "JobSet"});
  REQUIRE(key != nullptr);
  CHECK(*key == "jobset.x-k8s.io/v1alpha2/JobSet");
  CHECK(catalog.find({"jobset.x-k8s.io", "v1alpha2", "JobSet"})->root_kind().kind == "JobSet");
  key = catalog.find_key({"", "v1", "Pod"});
  REQUIRE(key != nullptr);
  CHECK(*key == "/v1/Pod");
  CHECK(catalog.find_key({"jobset.x-k8s.io", "v1", "JobSet"}) == nullptr);
  CHECK(catalog.find_key({"example.com", "v1", "Gizmo"}) == nullptr);
  CHECK(catalog.find({"example.com", "v1", "Gizmo"}) == nullptr);
}

}  // namespace unit_catalog
