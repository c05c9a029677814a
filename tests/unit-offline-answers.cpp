// The offline commands answer as the server does (issue 61): `inspect --output json` says which objects
// it does not cover, rather than leaving them out; with --crds, an object in a served version whose schema
// is a defined version's is handled as that version, as matchPolicy: Equivalent has the API server send it.

#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.h"
#include "validate/crd_schema_set.h"
#include "validate/definition_validation.h"

namespace unit_offline_answers {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

TEST_CASE("inspect --output json names an object of a kind with no definition, and marks the covered ones") {
  test::TempDir dir;
  std::ofstream(dir.path / "objects.yaml")
      << "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: team-a}\nspec: {}\n---\n"
      << "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: team-a}\n"
         "spec: {template: {spec: {containers: [{name: c, image: busybox}]}}}\n";
  const test::CliRun run = test::run_cli({"karta-webhook", "inspect", "-f", (dir.path / "objects.yaml").string(), "-o", "json"});
  CHECK(run.code == 0);
  CHECK(run.err == "");
  const json reports = json::parse(run.out);
  REQUIRE(reports.size() == 2);
  CHECK(reports[0] == json{{"apiVersion", "example.com/v1"},
                           {"kind", "Widget"},
                           {"namespace", "team-a"},
                           {"name", "w"},
                           {"source", (dir.path / "objects.yaml").string() + "#0"},
                           {"covered", false},
                           {"why", "no definition for this kind"}});
  CHECK(reports[1]["kind"] == "Job");
  CHECK(reports[1]["covered"] == true);
  CHECK(reports[1]["components"].size() == 1);

  // Nothing in the file: an empty list, which now means only that.
  std::ofstream(dir.path / "empty.yaml") << "# nothing\n";
  const test::CliRun empty = test::run_cli({"karta-webhook", "inspect", "-f", (dir.path / "empty.yaml").string(), "-o", "json"});
  CHECK(empty.code == 0);
  CHECK(empty.out == "[]\n");
}

namespace {

const std::filesystem::path kNotebookSample = test::source_dir() / "tests/corpus/samples/notebook-1.yaml";

// `mutate -f` of the Notebook sample in `version`, with `args` added: exit code and output.
test::CliRun mutate_notebook(const std::string& version, std::vector<std::string> args) {
  test::TempDir dir;
  json notebook = test::document(kNotebookSample);
  notebook["apiVersion"] = "kubeflow.org/" + version;
  std::ofstream(dir.path / "notebook.json") << notebook.dump();
  args.insert(args.begin(), {"karta-webhook", "mutate", "-f", (dir.path / "notebook.json").string(), "--policy",
                             (test::source_dir() / "examples/policy.yaml").string()});
  test::CliRun run = test::run_cli(args);
  const std::string prefix = (dir.path / "").string();
  if (auto at = run.out.find(prefix); at != std::string::npos) run.out.erase(at, prefix.size());
  return run;
}

std::string after_header(const std::string& out) { return out.substr(out.find('\n') + 1); }

std::string file_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), path.string());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("mutate --crds patches a Notebook in v1beta1 or v1alpha1 as v1, whose schema they share; without, not") {
  const std::string crds = (test::source_dir() / "tests/corpus/crds").string();
  const test::CliRun v1 = mutate_notebook("v1", {});
  REQUIRE(v1.code == 0);
  REQUIRE(after_header(v1.out).size() > 10);
  for (const char* version : {"v1beta1", "v1alpha1"}) {
    CAPTURE(version);
    const test::CliRun equivalent = mutate_notebook(version, {"--crds", crds});
    CHECK(equivalent.code == 0);
    CHECK(equivalent.err == "");
    CHECK(after_header(equivalent.out) == after_header(v1.out));
    // Without --crds too: the catalog's Notebook definition names them its equivalentVersions (before,
    // "not mutated (no-definition)").
    const test::CliRun alone = mutate_notebook(version, {});
    CHECK(alone.code == 0);
    CHECK(alone.err == "");
    CHECK(alone.out == equivalent.out);
  }
}

TEST_CASE("each built-in definition's equivalentVersions are exactly the served versions its corpus CRD gives the defined version's schema") {
  const karta::CrdSchemaSet crds = karta::CrdSchemaSet::load_directory(*test::corpus_dir() / "crds");
  std::map<std::string, std::vector<std::string>> declared, computed;  // by root kind
  for (const auto& definition : test::builtin_catalog().definitions()) {
    const karta::GroupVersionKind& root = definition->root_kind();
    if (!definition->definition().equivalent_versions.empty())
      declared[root.to_string()] = definition->definition().equivalent_versions;
    const auto defined = crds.entries().find(root);
    if (defined == crds.entries().end()) continue;
    for (const auto& [served, schema] : crds.entries()) {
      if (served.group == root.group && served.kind == root.kind && served.version != root.version &&
          test::builtin_catalog().find(served) == definition.get() && schema->schema == defined->second->schema)
        computed[root.to_string()].push_back(served.version);
    }
    for (const auto& [served, schema] : crds.entries()) {  // the other way: same schema, not declared
      if (served.group == root.group && served.kind == root.kind && served.version != root.version &&
          schema->schema == defined->second->schema && test::builtin_catalog().find(served) == nullptr)
        computed[root.to_string() + " (not declared)"].push_back(served.version);
    }
  }
  CHECK(json(declared) == json::parse(R"({"kubeflow.org/v1 Notebook": ["v1beta1", "v1alpha1"]})"));
  CHECK(json(computed) == json::parse(R"({"kubeflow.org/v1 Notebook": ["v1alpha1", "v1beta1"]})"));
}

TEST_CASE("validate refuses equivalentVersions the CRD does not serve with the defined version's schema") {
  const std::string notebook = file_text(test::source_dir() / "definitions/catalog/kubeflow.org-notebook-v1.yaml");
  json crd = test::document(test::source_dir() / "tests/corpus/crds/notebook.yaml");
  for (json& version : crd["spec"]["versions"]) {
    if (version["name"] == "v1alpha1")
      version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["extra"] = {{"type", "string"}};
  }
  test::TempDir dir;
  std::ofstream(dir.path / "notebook-crd.json") << crd.dump();
  const karta::CrdSchemaSet crds = karta::CrdSchemaSet::load_directory(dir.path);
  auto faults = [&](const std::string& versions) {
    std::string text = notebook;
    const std::string declared = "equivalentVersions: [v1beta1, v1alpha1]";
    text.replace(text.find(declared), declared.size(), "equivalentVersions: " + versions);
    return json(karta::validate_definition(test::yaml(text), [&](const karta::GroupVersionKind& kind) {
                  return crds.find(kind);
                }).faults);
  };
  const std::string field = "metadata.annotations[\"karta-webhook.io/extensions\"].equivalentVersions";
  CHECK(faults("[v1beta1]") == json::array());
  CHECK(faults("[v1beta1, v1alpha1]") ==
        json{field + "[1]: the CRD's schema of v1alpha1 differs from v1's: an object in v1alpha1 would be read "
                     "with v1's paths"});
  CHECK(faults("[v2]") == json{field + "[0]: no CustomResourceDefinition serves kubeflow.org/v2 Notebook: an "
                                       "equivalent version must be one the CRD serves"});
  CHECK(faults("[v1, v1beta1, v1beta1, \"1.0\", 7]") ==
        json{field + "[0]: is the root kind's own version, v1", field + "[2]: names v1beta1 twice",
             field + "[3]: must be a Kubernetes version name (v1, v1beta1, v2alpha3), not `1.0`",
             field + "[4]: must be a Kubernetes version name (v1, v1beta1, v2alpha3), not number"});
}

TEST_CASE("a definition that replaces one with equivalentVersions takes its versions away with it") {
  // A user's own Notebook definition without the annotation: v1beta1 is no longer read as v1.
  test::TempDir dir;
  std::string notebook = file_text(test::source_dir() / "definitions/catalog/kubeflow.org-notebook-v1.yaml");
  const std::string annotation = "  annotations:\n    karta-webhook.io/extensions: |\n      equivalentVersions: [v1beta1, v1alpha1]\n";
  REQUIRE(notebook.find(annotation) != std::string::npos);
  notebook.erase(notebook.find(annotation), annotation.size());
  std::filesystem::create_directory(dir.path / "definitions");
  std::ofstream(dir.path / "definitions/notebook.yaml") << notebook;
  const test::CliRun replaced = mutate_notebook("v1beta1", {"--definitions", (dir.path / "definitions").string()});
  CHECK(replaced.code == 0);
  CHECK(replaced.out == "# notebook.json#0: kubeflow.org/v1beta1 Notebook notebook-sample-v1: not mutated (no-definition)\n");
}

TEST_CASE("mutate --crds: a served version whose schema differs from the defined one's is not taken for it") {
  test::TempDir dir;
  json crd = test::document(test::source_dir() / "tests/corpus/crds/notebook.yaml");
  for (json& version : crd["spec"]["versions"]) {
    if (version["name"] == "v1beta1") {
      version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["extra"] = {{"type", "string"}};
    }
  }
  std::ofstream(dir.path / "notebook.json") << crd.dump();
  const test::CliRun changed = mutate_notebook("v1beta1", {"--crds", dir.path.string()});
  CHECK(changed.code == 0);
  CHECK(changed.out == "# notebook.json#0: kubeflow.org/v1beta1 Notebook notebook-sample-v1: not mutated (no-definition)\n");
  // v1alpha1 kept v1's schema in that CRD.
  CHECK(after_header(mutate_notebook("v1alpha1", {"--crds", dir.path.string()}).out) ==
        after_header(mutate_notebook("v1", {}).out));
}

namespace {

// The pods `inspect --output json` counts in one report: every instance's replicas.
long long pods_of(const json& report) {
  long long pods = 0;
  for (const auto& component : report["components"]) {
    for (const auto& instance : component["instances"]) pods += instance["replicas"].get<long long>();
  }
  return pods;
}

}  // namespace

TEST_CASE("inspect -f of a TrainJob and the runtime it names counts the runtime's nodes when the TrainJob gives none") {
  // The upstream example's TrainingRuntime and TrainJob (05-multi-step.yaml, documents 1 and 2). The
  // runtime's numNodes is raised from 1 to 4 so that it differs from the one node counted without it.
  json runtime = test::document(test::source_dir() / "tests/corpus/runtimes/trainingruntime-1.yaml");
  runtime["spec"]["mlPolicy"]["numNodes"] = 4;
  json trainjob = test::document(test::source_dir() / "tests/corpus/samples/trainjob-2.yaml");
  REQUIRE(trainjob["spec"]["trainer"]["numNodes"] == 2);
  test::TempDir dir;
  auto inspect = [&](const json& job) {
    std::ofstream(dir.path / "both.yaml") << runtime.dump() << "\n---\n" << job.dump() << "\n";
    const test::CliRun run = test::run_cli({"karta-webhook", "inspect", "-f", (dir.path / "both.yaml").string(), "-o", "json"});
    REQUIRE_MESSAGE(run.code == 0, run.err);
    return json::parse(run.out);
  };
  // The TrainJob's own count stands.
  json reports = inspect(trainjob);
  REQUIRE(reports.size() == 2);
  CHECK(reports[0]["covered"] == false);
  CHECK(reports[0]["why"] == "a runtime of Kubeflow Trainer: it runs no pods itself, the TrainJobs that name it do");
  CHECK(pods_of(reports[1]) == 2);
  CHECK(reports[1]["notes"] == json::array());

  trainjob["spec"]["trainer"].erase("numNodes");
  reports = inspect(trainjob);
  CHECK(pods_of(reports[1]) == 4);
  CHECK(reports[1]["notes"] == json{"numNodes 4 from TrainingRuntime torch-with-dataset-init (.spec.mlPolicy.numNodes): "
                                    "the TrainJob gives none"});
  // Without the runtime, one node, as the definition counts.
  std::ofstream(dir.path / "alone.yaml") << trainjob.dump() << "\n";
  const test::CliRun alone = test::run_cli({"karta-webhook", "inspect", "-f", (dir.path / "alone.yaml").string(), "-o", "json"});
  CHECK(pods_of(json::parse(alone.out)[0]) == 1);
}

TEST_CASE("-f may be given more than once: the files are read in order, and a runtime in one counts for a TrainJob in another") {
  // kubectl's `-f trainjob.yaml -f runtime.yaml`: before, CLI11 refused a second -f ("At Most 1 required but
  // received 2"). The upstream example's TrainJob without numNodes, and its runtime with 4 nodes.
  json trainjob = test::document(test::source_dir() / "tests/corpus/samples/trainjob-2.yaml");
  trainjob["spec"]["trainer"].erase("numNodes");
  json runtime = test::document(test::source_dir() / "tests/corpus/runtimes/trainingruntime-1.yaml");
  runtime["spec"]["mlPolicy"]["numNodes"] = 4;
  test::TempDir dir;
  const std::string trainjob_file = (dir.path / "trainjob.yaml").string(), runtime_file = (dir.path / "runtime.yaml").string();
  std::ofstream(trainjob_file) << trainjob.dump() << "\n";
  std::ofstream(runtime_file) << runtime.dump() << "\n";

  const test::CliRun inspected = test::run_cli({"karta-webhook", "inspect", "-f", trainjob_file, "-f", runtime_file});
  CHECK(inspected.code == 0);
  CHECK(inspected.err == "");
  CHECK(inspected.out ==
        "TrainJob multi-step-example (trainer.kubeflow.org/v1alpha1)  state: Undefined\n"
        "statuses: Undefined  suspended: no\n"
        "└── node (jobset.x-k8s.io/v1alpha2 JobSet)\n"
        "    └── node 4 replicas 0 GPU\n"
        "\n"
        "ROLE   COMPONENT  REPLICAS  GPU/POD  GPU  CPU  MEMORY\n"
        "node   node       4         0        0    16   32Gi\n"
        "total             4                  0    16   32Gi\n"
        "note: numNodes 4 from TrainingRuntime torch-with-dataset-init (.spec.mlPolicy.numNodes): the TrainJob gives none\n"
        "\n"
        "# " + runtime_file + "#0: trainer.kubeflow.org/v1alpha1 TrainingRuntime torch-with-dataset-init: a runtime of "
        "Kubeflow Trainer: it runs no pods itself, the TrainJobs that name it do\n"
        "\n");
  // In JSON, each report names the file and document it came from, in the order the files were given.
  const test::CliRun as_json =
      test::run_cli({"karta-webhook", "inspect", "-f", runtime_file, "--filename", trainjob_file, "-o", "json"});
  CHECK(as_json.code == 0);
  const json reports = json::parse(as_json.out);
  REQUIRE(reports.size() == 2);
  CHECK(reports[0]["source"] == runtime_file + "#0");
  CHECK(reports[0]["covered"] == false);
  CHECK(reports[1]["source"] == trainjob_file + "#0");
  CHECK(reports[1]["totals"]["pods"] == 4);

  // mutate reads both files too, each header naming its file and document.
  const std::string jobset_file = (test::source_dir() / "examples/jobset-demo.yaml").string();
  const test::CliRun mutated = test::run_cli({"karta-webhook", "mutate", "-f", runtime_file, "-f", jobset_file, "--policy",
                                              (test::source_dir() / "examples/policy.yaml").string()});
  CHECK(mutated.code == 0);
  std::vector<std::string> headers;
  std::istringstream lines(mutated.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("# ")) headers.push_back(line);
  }
  CHECK(headers == std::vector<std::string>{
                       "# " + runtime_file + "#0: trainer.kubeflow.org/v1alpha1 TrainingRuntime "
                       "torch-with-dataset-init: not mutated (no-definition)",
                       "# " + jobset_file + "#0: jobset.x-k8s.io/v1alpha2 JobSet research/demo: 9 patch operations"});
}

}  // namespace unit_offline_answers
