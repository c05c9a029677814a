// Where a definition may let the webhook write (issue 58): the extensions annotation's queuePath (the
// resolved queue) and workloadPodLabelsPath (labels for every pod) must name a field of the CRD's schema
// of the right shape, outside the object's metadata, pod templates, pod specs and containers; a built-in
// kind, which has no CRD schema, may have neither. Offline (`validate -f --crds`), and on /validate.

#include <doctest/doctest.h>

#include <fstream>
#include <tuple>

#include "admission/admission_service.h"
#include "runtime/admission_http.h"
#include "support/test_support.h"
#include "validate/crd_schema.h"
#include "validate/definition_validation.h"

namespace unit_write_paths {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

namespace {

const std::filesystem::path kCrds = test::source_dir() / "tests/corpus/crds";

// JobSet's, SparkApplication's and Milvus's CRDs, and no other.
const karta::CrdSchemaSet& crds() {
  static const karta::CrdSchemaSet set = [] {
    karta::CrdSchemaSet loaded;
    for (const char* file : {"jobset.yaml", "sparkapplication.yaml", "milvus.yaml"}) {
      loaded.add_crd(test::document(kCrds / file));
    }
    return loaded;
  }();
  return set;
}

karta::DefinitionReport check(const json& definition) {
  return karta::validate_definition(definition, [](const karta::GroupVersionKind& kind) { return crds().find(kind); });
}

json catalog_definition(const std::string& file) {
  return test::document(test::source_dir() / "definitions/catalog" / file);
}

// The catalog's definition of `file` with `extensions` (YAML) as its extensions annotation.
json with_extensions(const std::string& file, const std::string& extensions) {
  json d = catalog_definition(file);
  d["metadata"]["annotations"]["karta-webhook.io/extensions"] = extensions;
  return d;
}

const std::string kQueuePath = "metadata.annotations[\"karta-webhook.io/extensions\"].queuePath";
const std::string kLabelsPath = "metadata.annotations[\"karta-webhook.io/extensions\"].workloadPodLabelsPath";
const std::string kInPod =
    ": queuePath is written by the webhook, and may name no field of a pod, a container or the object's metadata";
const std::string kJobSet = "jobset.x-k8s.io-jobset-v1alpha2.yaml";
const std::string kTemplate = ".spec.replicatedJobs[].template.spec.template";

// The faults of the definition of `file` whose queuePath is `path`.
std::vector<std::string> queue_faults(const std::string& file, const std::string& path) {
  karta::DefinitionReport report = check(with_extensions(file, "queuePath: '" + path + "'"));
  CHECK(report.path_faults == 0);  // a definition that would write there is never loaded, under warn too
  return report.faults;
}

}  // namespace

TEST_CASE("a queuePath into a container's image, command or environment, or a pod's SELinux type, is refused") {
  for (const std::string& path : {kTemplate + ".spec.containers[].image", kTemplate + ".spec.containers[0].command[]",
                                  kTemplate + ".spec.containers[].env[].value",
                                  kTemplate + ".spec.securityContext.seLinuxOptions.type"}) {
    CAPTURE(path);
    CHECK(queue_faults(kJobSet, path) ==
          std::vector<std::string>{kQueuePath + ": `" + path + "` is inside the pod template at `" + kTemplate + "`" + kInPod});
  }
}

TEST_CASE("a queuePath into the object's name, namespace or type is refused") {
  for (const std::string& path : {".metadata.name", ".metadata.namespace"}) {
    CAPTURE(path);
    CHECK(queue_faults(kJobSet, path) ==
          std::vector<std::string>{kQueuePath + ": `" + path + "` is in the object's metadata" + kInPod});
  }
  CHECK(queue_faults(kJobSet, ".kind") == std::vector<std::string>{kQueuePath + ": `.kind` is the object's type" + kInPod});
}

TEST_CASE("a queuePath into what a container runs, outside any pod template, is refused") {
  const std::string spark = "sparkoperator.k8s.io-sparkapplication-v1beta2.yaml";
  // SparkApplication's own image, and the driver's fields beside its image and environment.
  CHECK(queue_faults(spark, ".spec.image") ==
        std::vector<std::string>{kQueuePath + ": `.spec.image` goes through `image`, a field of a pod or container" + kInPod});
  CHECK(queue_faults(spark, ".spec.driver.env[].value") ==
        std::vector<std::string>{kQueuePath + ": `.spec.driver.env[].value` is inside `.spec.driver`, which holds a "
                                              "container's fields (image, command, args, env)" + kInPod});
  // Milvus's components: the defaults of every component's container.
  CHECK(queue_faults("milvus.io-milvus-v1beta1.yaml", ".spec.components.image") ==
        std::vector<std::string>{kQueuePath + ": `.spec.components.image` is inside `.spec.components`, which holds a "
                                              "container's fields (image, command, args, env)" + kInPod});
}

TEST_CASE("a queuePath that is not a plain path, is not a string, or that the schema leaves open is refused") {
  CHECK(queue_faults(kJobSet, ".spec.replicatedJobs[] | .name") ==
        std::vector<std::string>{kQueuePath + ": `.spec.replicatedJobs[] | .name` is not a plain path: queuePath is "
                                              "written by the webhook, and must be made of fields, `[N]` and `[]` "
                                              "only, so that where it writes can be checked"});
  CHECK(queue_faults(kJobSet, ".spec.replicatedJobs[].replicas") ==
        std::vector<std::string>{kQueuePath + ": `.spec.replicatedJobs[].replicas` is an integer: queuePath is "
                                              "written by the webhook, and must name a string field"});
  // Milvus's .spec.config keeps whatever it is given (x-kubernetes-preserve-unknown-fields).
  CHECK(queue_faults("milvus.io-milvus-v1beta1.yaml", ".spec.config.queue") ==
        std::vector<std::string>{kQueuePath + ": `.spec.config.queue` is not described by Milvus's schema below "
                                              "`.spec.config`: queuePath is written by the webhook, and must name a "
                                              "field the schema declares"});
  // A field the schema lacks is a path fault of its own, named with a suggestion, as for any path.
  karta::DefinitionReport missing = check(with_extensions(kJobSet, "queuePath: .spec.queu"));
  CHECK(missing.faults == std::vector<std::string>{kQueuePath + ": `.spec.queu` is not in JobSet's schema at `.spec`"});
  CHECK(missing.path_faults == 1);
}

TEST_CASE("a workloadPodLabelsPath into the object's labels or a pod template's is refused") {
  karta::DefinitionReport report = check(with_extensions(kJobSet, "workloadPodLabelsPath: .metadata.labels"));
  CHECK(report.faults == std::vector<std::string>{kLabelsPath + ": `.metadata.labels` is in the object's metadata: "
                                                  "workloadPodLabelsPath is written by the webhook, and may name no "
                                                  "field of a pod, a container or the object's metadata"});
  report = check(with_extensions(kJobSet, "workloadPodLabelsPath: " + kTemplate + ".metadata.labels"));
  CHECK(report.faults == std::vector<std::string>{kLabelsPath + ": `" + kTemplate + ".metadata.labels` is inside the pod "
                                                  "template at `" + kTemplate + "`: workloadPodLabelsPath is written "
                                                  "by the webhook, and may name no field of a pod, a container or the "
                                                  "object's metadata"});
}

TEST_CASE("every write path of a built-in kind is refused: no CRD schema says where it leads") {
  karta::DefinitionReport report = check(with_extensions(
      "batch-job-v1.yaml", "queuePath: .spec.template.spec.containers[].image\nworkloadPodLabelsPath: .spec.labels"));
  CHECK(report.faults ==
        std::vector<std::string>{
            kQueuePath + ": batch/v1 Job is a built-in kind, with no CustomResourceDefinition schema to check it "
                         "against: queuePath is written by the webhook, and is allowed only on a kind whose CRD schema "
                         "shows where it leads",
            kLabelsPath + ": batch/v1 Job is a built-in kind, with no CustomResourceDefinition schema to check it "
                          "against: workloadPodLabelsPath is written by the webhook, and is allowed only on a kind "
                          "whose CRD schema shows where it leads"});
  CHECK(report.path_faults == 0);
  // A CRD's kind whose CRD is not known here is not refused for it: its paths are unverified, as all are.
  json unknown = with_extensions(kJobSet, "queuePath: .spec.queue");
  unknown["spec"]["structureDefinition"]["rootComponent"]["kind"]["group"] = "unknown.example.com";
  report = check(unknown);
  CHECK(report.faults.empty());
  CHECK(report.warnings == std::vector<std::string>{"no CustomResourceDefinition known for unknown.example.com/v1alpha2 "
                                                    "JobSet: paths not verified against a schema"});
}

TEST_CASE("the catalog's write paths are where a scheduler or an operator reads them") {
  struct Case {
    const char* crd;
    karta::GroupVersionKind kind;
    const char* path;
    karta::WrittenShape shape;
  };
  karta::CrdSchemaSet more;
  for (const char* file : {"volcano-job.yaml", "argo-workflow.yaml"}) more.add_crd(test::document(kCrds / file));
  for (const Case& c : {Case{"volcano", {"batch.volcano.sh", "v1alpha1", "Job"}, ".spec.queue", karta::WrittenShape::String},
                        Case{"spark", {"sparkoperator.k8s.io", "v1beta2", "SparkApplication"},
                             ".spec.batchSchedulerOptions.queue", karta::WrittenShape::String},
                        Case{"argo", {"argoproj.io", "v1alpha1", "Workflow"}, ".spec.podMetadata.labels",
                             karta::WrittenShape::StringMap},
                        Case{"milvus", {"milvus.io", "v1beta1", "Milvus"}, ".spec.components.podLabels",
                             karta::WrittenShape::StringMap}}) {
    CAPTURE(c.crd);
    const karta::CrdSchema* schema = crds().find(c.kind) != nullptr ? crds().find(c.kind) : more.find(c.kind);
    REQUIRE(schema != nullptr);
    CHECK(karta::check_write_path(*schema, c.path, c.shape, "queuePath").empty());
  }
}

TEST_CASE("/validate and validate -f refuse a Karta that would write the queue into a container's environment, and "
          "a batch Job Karta with a queuePath") {
  const std::string path = kTemplate + ".spec.containers[].env[].value";
  json jobset_karta = with_extensions(kJobSet, "queuePath: '" + path + "'");
  jobset_karta["metadata"]["name"] = "jobset-queue";
  const std::string jobset_fault = kQueuePath + ": `" + path + "` is inside the pod template at `" + kTemplate + "`" + kInPod;
  json job_karta = with_extensions("batch-job-v1.yaml", "queuePath: .spec.template.spec.containers[].image");
  job_karta["metadata"]["name"] = "job-queue";
  const std::string job_fault = kQueuePath + ": batch/v1 Job is a built-in kind, with no CustomResourceDefinition "
                                             "schema to check it against: queuePath is written by the webhook, and is "
                                             "allowed only on a kind whose CRD schema shows where it leads";

  auto state = std::make_shared<karta::AdmissionState>();
  state->crds = std::make_shared<karta::CrdSchemaSet>(crds());
  karta::AdmissionService service;
  service.update(state);
  auto validate = [&](const json& karta_object) {
    json review = test::admission_review(karta_object, "CREATE", "k-1");
    review["request"]["kind"] = {{"group", "run.ai"}, {"version", "v1alpha1"}, {"kind", "Karta"}};
    auto reply = karta::handle_admission(service, karta::AdmissionEndpoint::Validate,
                                         {"POST", "/validate", "timeout=5s", "application/json", review.dump()});
    REQUIRE(reply.status == 200);
    return json::parse(reply.body)["response"];
  };
  CHECK(validate(jobset_karta) ==
        json{{"uid", "k-1"}, {"allowed", false},
             {"status", {{"code", 422}, {"reason", "Invalid"}, {"message", "Karta jobset-queue is invalid: " + jobset_fault}}}});
  CHECK(validate(job_karta) ==
        json{{"uid", "k-1"}, {"allowed", false},
             {"status", {{"code", 422}, {"reason", "Invalid"}, {"message", "Karta job-queue is invalid: " + job_fault}}},
             {"warnings", {"no CustomResourceDefinition known for batch/v1 Job: paths not verified against a schema"}}});

  test::TempDir dir;
  std::ofstream(dir.path / "jobset.json") << jobset_karta.dump();
  std::ofstream(dir.path / "job.json") << job_karta.dump();
  std::filesystem::create_directory(dir.path / "crds");
  std::filesystem::copy_file(kCrds / "jobset.yaml", dir.path / "crds/jobset.yaml");
  const std::string job_warning = "  warning: no CustomResourceDefinition known for batch/v1 Job: paths not verified "
                                  "against a schema\n";
  for (const auto& [file, name, fault, warnings] : {std::tuple{"jobset.json", "jobset-queue", jobset_fault, std::string()},
                                                    std::tuple{"job.json", "job-queue", job_fault, job_warning}}) {
    CAPTURE(file);
    int code = 0;
    std::string out = test::run_command(test::binary_path().string() + " validate -f " + (dir.path / file).string() +
                                            " --crds " + (dir.path / "crds").string(), &code);
    CHECK(code == 1);
    CHECK(out == (dir.path / file).string() + "#0 " + name + ": INVALID\n  fault: " + fault + "\n" + warnings +
                     "1 definitions, 1 with faults\n");
  }
}

}  // namespace unit_write_paths
