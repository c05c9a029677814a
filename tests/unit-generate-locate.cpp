// `generate` against the built-in catalog: for every CRD of tests/corpus/crds, the Karta drafted from it
// (for the version of each sample), used instead of the built-in definition, locates on each of that
// kind's samples the same pod templates, pod specs and fragmented pods. Where the draft cannot know what
// the catalog's author knew, the difference is named below, place by place; every draft also passes
// `validate` against the corpus CRDs.

#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "definitions/pod_template_locator.h"
#include "generate/karta_draft.h"
#include "json/json_document.h"
#include "support/test_support.h"
#include "validate/crd_schema_set.h"
#include "validate/definition_validation.h"

namespace unit_generate_locate {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace fs = std::filesystem;
namespace test = karta::test;

namespace {

using Places = std::set<std::string>;

std::string text(const Places& places) {
  std::string out;
  for (const auto& place : places) out += place + "\n";
  return out;
}

// "PodTemplateSpec /spec/replicatedJobs/0/template/spec/template", one per place located.
Places located(const karta::CompiledDefinition& definition, const json& object,
               std::vector<std::string>* notes = nullptr) {
  auto document = karta::JsonDocument::from(object);
  karta::DefinitionEvaluation evaluation(definition, document.root());
  karta::WorkloadLayout layout = karta::locate_pod_templates(evaluation);
  if (notes != nullptr) *notes = layout.notes;
  Places places;
  for (const auto& t : layout.templates) {
    const char* shape = t.kind == karta::SpecKind::PodTemplateSpec ? "PodTemplateSpec"
                        : t.kind == karta::SpecKind::PodSpec       ? "PodSpec"
                                                                   : "Fragmented";
    places.insert(std::string(shape) + " " + t.location.to_string());
  }
  return places;
}

struct KnownDifference {
  std::string why;
  Places only_builtin;
  Places only_generated;
};

// Each difference, by sample and document, with what the catalog knows that the schema does not say.
const std::map<std::string, KnownDifference>& known_differences() {
  // DynamoGraphDeployment v1alpha1: a service's `extraPodSpec` is shaped like a PodSpec, so the draft
  // locates it (and says it is unsure, since the service entry has `resources` of its own); the catalog knows
  // the operator renders the pod from the whole entry (Dynamo's own `resources`, `extraPodMetadata`) and
  // describes the entry as a fragmented pod. The same services are found, one place deeper.
  const std::string dynamo =
      "DynamoGraphDeployment v1alpha1: PodSpec `extraPodSpec` instead of the fragmented service entry";
  // Notebook v1: its CRD's `.spec.template` has only `spec` (the API server would prune a template's
  // metadata), and the controller copies the Notebook's own labels to the pod; so the catalog describes
  // the pod spec, with the Notebook's metadata, where the draft takes the template for a PodTemplateSpec.
  const std::string notebook = "Notebook v1: PodTemplateSpec `template` instead of the pod spec under it";
  static const std::map<std::string, KnownDifference> differences = {
      {"notebook-1.yaml#0", {notebook, {"PodSpec /spec/template/spec"}, {"PodTemplateSpec /spec/template"}}},
      {"notebook-2.yaml#0", {notebook, {"PodSpec /spec/template/spec"}, {"PodTemplateSpec /spec/template"}}},
      {"dynamographdeployment-1.yaml#0",
       {dynamo,
        {"Fragmented /spec/services/Frontend", "Fragmented /spec/services/VllmDecodeWorker",
         "Fragmented /spec/services/VllmPrefillWorker"},
        {"PodSpec /spec/services/Frontend/extraPodSpec", "PodSpec /spec/services/VllmDecodeWorker/extraPodSpec",
         "PodSpec /spec/services/VllmPrefillWorker/extraPodSpec"}}},
      {"dynamographdeployment-2.yaml#0",
       {dynamo,
        {"Fragmented /spec/services/Frontend", "Fragmented /spec/services/decode", "Fragmented /spec/services/prefill"},
        {"PodSpec /spec/services/Frontend/extraPodSpec", "PodSpec /spec/services/decode/extraPodSpec",
         "PodSpec /spec/services/prefill/extraPodSpec"}}},
  };
  return differences;
}

// NIMCache's schema holds no pod template, pod spec or inline pod (only the caching Job's tolerations,
// node selector and cpu/memory), so `generate` refuses to draft it and says why.
bool draftable(const fs::path& crd_file) { return crd_file.filename() != "nimcache.yaml"; }

}  // namespace

TEST_CASE("generate refuses a CRD with no pod fields, NIMCache's, saying there is nothing to draft") {
  const json crd = test::document(*test::corpus_dir() / "crds/nimcache.yaml");
  CHECK_THROWS_WITH(karta::draft_karta(crd, "v1alpha1"),
                    "CustomResourceDefinition nimcaches.apps.nvidia.com version v1alpha1: its schema holds no pod "
                    "template, pod spec or inline pod fields, so there is nothing to draft");
}

TEST_CASE(
    "the Karta drafted from each corpus CRD locates on every sample of its kind what the built-in catalog locates") {
  const fs::path corpus = *test::corpus_dir();
  std::map<std::string, std::size_t> compared;  // by CRD file
  std::set<std::string> differences_seen;
  for (const auto& crd_file : fs::directory_iterator(corpus / "crds")) {
    if (!draftable(crd_file.path())) continue;
    const json crd = test::document(crd_file.path());
    const std::string group = crd["spec"]["group"].get<std::string>();
    const std::string kind = crd["spec"]["names"]["kind"].get<std::string>();
    std::set<std::string> served;
    for (const json& version : crd["spec"]["versions"])
      if (version.value("served", false)) served.insert(version["name"].get<std::string>());
    std::map<std::string, std::shared_ptr<const karta::CompiledDefinition>> drafts;  // by version
    for (const auto& sample_file : fs::directory_iterator(corpus / "samples")) {
      std::size_t index = 0;
      for (const auto& document : test::documents(sample_file.path())) {
        const json& object = document.value;
        const std::string where = sample_file.path().filename().string() + "#" + std::to_string(index++);
        if (object.value("kind", "") != kind) continue;
        const std::string api_version = object.value("apiVersion", "");
        const std::string version = api_version.substr(api_version.find('/') + 1);
        if (api_version.rfind(group + "/", 0) != 0 || served.count(version) == 0) continue;
        CAPTURE(where);
        if (!drafts.count(version)) drafts[version] = test::compile_definition(karta::draft_karta(crd, version));
        const auto* builtin = test::builtin_catalog().find(karta::GroupVersionKind{group, version, kind});
        REQUIRE(builtin != nullptr);
        const Places expected = located(*builtin, object);
        std::vector<std::string> notes;
        const Places drafted = located(*drafts[version], object, &notes);
        CHECK(json(notes) == json::array());  // ids, replicas and places line up; nothing fails
        auto known = known_differences().find(where);
        if (known == known_differences().end()) {
          CHECK(text(drafted) == text(expected));
        } else {
          differences_seen.insert(where);
          CAPTURE(known->second.why);
          Places only_builtin, only_generated;
          for (const auto& place : expected)
            if (!drafted.count(place)) only_builtin.insert(place);
          for (const auto& place : drafted)
            if (!expected.count(place)) only_generated.insert(place);
          CHECK(text(only_builtin) == text(known->second.only_builtin));
          CHECK(text(only_generated) == text(known->second.only_generated));
        }
        ++compared[crd_file.path().filename().string()];
      }
    }
  }
  // Every corpus CRD, with the number of sample objects of its kind (and of its versions).
  const std::map<std::string, std::size_t> expected_counts = {{"argo-workflow.yaml", 3},
                                                              {"dynamographdeployment.yaml", 3},
                                                              {"inferenceservice.yaml", 3},
                                                              {"jaxjob.yaml", 2},
                                                              {"jobset.yaml", 3},
                                                              {"knativeservice.yaml", 5},
                                                              {"leaderworkerset.yaml", 3},
                                                              {"llminferenceservice.yaml", 3},
                                                              {"milvus.yaml", 3},
                                                              {"mpijob-v2beta1.yaml", 2},
                                                              {"mpijob.yaml", 1},
                                                              {"nimservice.yaml", 3},
                                                              {"notebook.yaml", 2},
                                                              {"paddlejob.yaml", 2},
                                                              {"podcliqueset.yaml", 3},
                                                              {"pytorchjob.yaml", 3},
                                                              {"raycluster.yaml", 3},
                                                              {"rayjob.yaml", 3},
                                                              {"rayservice.yaml", 3},
                                                              {"sandbox.yaml", 3},
                                                              {"sparkapplication.yaml", 3},
                                                              {"tfjob.yaml", 2},
                                                              {"trainjob.yaml", 2},
                                                              {"volcano-job.yaml", 3},
                                                              {"xgboostjob.yaml", 2}};
  CHECK(json(compared) == json(expected_counts));
  CHECK(differences_seen.size() == known_differences().size());
}

TEST_CASE("every Karta drafted from a corpus CRD, for each served version, passes validate against the corpus CRDs") {
  const fs::path corpus = *test::corpus_dir();
  const karta::CrdSchemaSet crds = karta::CrdSchemaSet::load_directory(corpus / "crds");
  karta::CrdLookup lookup = [&](const karta::GroupVersionKind& kind) { return crds.find(kind); };
  std::size_t drafted = 0;
  for (const auto& crd_file : fs::directory_iterator(corpus / "crds")) {
    if (!draftable(crd_file.path())) continue;
    const json crd = test::document(crd_file.path());
    for (const json& version : crd["spec"]["versions"]) {
      if (!version.value("served", false)) continue;
      const std::string name = version["name"].get<std::string>();
      CAPTURE(crd_file.path().filename().string() + " " + name);
      const json karta_object = test::yaml(karta::draft_karta(crd, name));
      karta::DefinitionReport report = karta::validate_definition(karta_object, lookup);
      CHECK(json(report.faults) == json::array());
      CHECK(json(report.warnings) == json::array());
      ++drafted;
    }
  }
  // 25 CRDs that hold pods; DynamoGraphDeployment, LLMInferenceService, Milvus, RayCluster, RayJob, RayService and
  // Sandbox serve two versions each, Notebook three.
  CHECK(drafted == 34);
}

TEST_CASE("validate, run as a command, finds no fault in the drafts of the corpus CRDs") {
  test::TempDir dir;
  std::size_t files = 0;
  for (const auto& crd_file : fs::directory_iterator(*test::corpus_dir() / "crds")) {
    if (!draftable(crd_file.path())) continue;
    int code = -1;
    test::run_command(test::binary_path().string() + " generate -f " + crd_file.path().string() + " > " +
                          (dir.path / crd_file.path().filename()).string(),
                      &code);
    CHECK_MESSAGE(code == 0, crd_file.path().string());
    ++files;
  }
  CHECK(files == 25);
  int code = -1;
  const std::string out = test::run_command(test::binary_path().string() + " validate -f " + dir.path.string() +
                                                " --crds " + (*test::corpus_dir() / "crds").string(),
                                            &code);
  CHECK(code == 0);
  CHECK(out.ends_with("25 definitions, 0 with faults\n"));
}

}  // namespace unit_generate_locate
