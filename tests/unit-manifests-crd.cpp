// The Karta CRD the install carries: the published kartas.run.ai verbatim, structural, accepting the catalog.

#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "json/documents.h"
#include "support/manifests_fixtures.h"

namespace unit_manifests_crd {  // this file's names, apart from other tests' in a unity build

using namespace karta::test::manifest_fixtures;

namespace {

// ---------------------------------------------------------------------------------------------------
// Checking a document against a CRD schema, enough to catch unknown or missing fields and wrong shapes

void check_structural(const YAML::Node& schema, const std::string& where, std::vector<std::string>& problems) {
  const bool preserves = schema["x-kubernetes-preserve-unknown-fields"].IsDefined() &&
                         schema["x-kubernetes-preserve-unknown-fields"].as<bool>();
  const bool int_or_string =
      schema["x-kubernetes-int-or-string"].IsDefined() && schema["x-kubernetes-int-or-string"].as<bool>();
  if (!schema["type"].IsDefined() && !preserves && !int_or_string) {
    problems.push_back(where + " has no type");
  }
  std::set<std::string> properties;
  if (schema["properties"].IsDefined()) {
    for (const auto& property : schema["properties"]) {
      const std::string name = property.first.as<std::string>();
      properties.insert(name);
      check_structural(property.second, where + "." + name, problems);
    }
  }
  if (schema["items"].IsDefined()) {
    check_structural(schema["items"], where + "[]", problems);
  }
  if (schema["required"].IsDefined()) {
    for (const YAML::Node& required : schema["required"]) {
      if (properties.count(required.as<std::string>()) == 0) {
        problems.push_back(where + " requires " + required.as<std::string>() + ", which it does not define");
      }
    }
  }
  for (const char* forbidden : {"allOf", "anyOf", "oneOf", "not", "additionalProperties"}) {
    if (schema[forbidden].IsDefined() && schema["properties"].IsDefined()) {
      problems.push_back(where + " mixes properties with " + forbidden);
    }
  }
}

void check_against_schema(const YAML::Node& value, const YAML::Node& schema, const std::string& where,
                          std::vector<std::string>& problems) {
  const bool preserves = schema["x-kubernetes-preserve-unknown-fields"].IsDefined() &&
                         schema["x-kubernetes-preserve-unknown-fields"].as<bool>();
  if (!schema["type"].IsDefined()) {
    return;  // any value
  }
  const std::string type = schema["type"].as<std::string>();
  if (type == "object") {
    if (!value.IsMap()) {
      problems.push_back(where + " should be a map");
      return;
    }
    if (schema["required"].IsDefined()) {
      for (const YAML::Node& required : schema["required"]) {
        if (!value[required.as<std::string>()].IsDefined()) {
          problems.push_back(where + " misses " + required.as<std::string>());
        }
      }
    }
    if (!schema["properties"].IsDefined()) {
      return;
    }
    for (const auto& field : value) {
      const std::string name = field.first.as<std::string>();
      const YAML::Node property = schema["properties"][name];
      if (!property.IsDefined()) {
        if (!preserves) {
          problems.push_back(where + "." + name + " is not in the schema");
        }
        continue;
      }
      check_against_schema(field.second, property, where + "." + name, problems);
    }
  } else if (type == "array") {
    if (!value.IsSequence()) {
      problems.push_back(where + " should be a list");
      return;
    }
    for (std::size_t i = 0; i < value.size(); ++i) {
      check_against_schema(value[i], schema["items"], where + "[" + std::to_string(i) + "]", problems);
    }
  } else if (type == "string" || type == "integer" || type == "number" || type == "boolean") {
    if (!value.IsScalar()) {
      problems.push_back(where + " should be a " + type);
    }
  } else {
    problems.push_back(where + " has the unexpected schema type " + type);
  }
}

std::string join(const std::vector<std::string>& lines) {
  std::string joined;
  for (const std::string& line : lines) {
    joined += line + "\n";
  }
  return joined;
}

}  // namespace

// =====================================================================================================

TEST_SUITE("manifests") {

TEST_CASE("The install carries exactly one CRD, the published kartas.run.ai, with its whole spec unchanged") {
  const std::vector<karta::json> published = [] {
    std::vector<karta::json> values;
    for (karta::SourceDocument& document : karta::read_documents(published_karta_crd)) {
      values.push_back(std::move(document.value));
    }
    return values;
  }();
  REQUIRE(published.size() == 1);
  REQUIRE(published[0].at("kind") == "CustomResourceDefinition");
  REQUIRE(published[0].at("metadata").at("name") == "kartas.run.ai");

  const fs::path manifests = source_dir / "manifests";
  for (const fs::path& directory : {manifests, manifests / "overlays" / "cert-manager"}) {
    INFO("kubectl kustomize ", directory.string());
    std::vector<karta::json> crds;
    for (const karta::json& object : render_json(directory)) {
      if (object.at("kind") == "CustomResourceDefinition") crds.push_back(object);
    }
    REQUIRE(crds.size() == 1);
    CHECK(crds[0].at("apiVersion") == published[0].at("apiVersion"));
    CHECK(crds[0].at("metadata").at("name") == "kartas.run.ai");
    // The whole spec, descriptions included: the file is the published one, verbatim.
    CHECK_MESSAGE(crds[0].at("spec") == published[0].at("spec"),
                  "the rendered kartas.run.ai spec is not the published one (tests/corpus/karta/run.ai_kartas.yaml)");
    // kustomize adds its label to the metadata; the published annotations stay.
    CHECK(crds[0].at("metadata").at("labels") == karta::json{{"app.kubernetes.io/part-of", "karta-webhook"}});
    CHECK(crds[0].at("metadata").at("annotations") == published[0].at("metadata").at("annotations"));
  }
}

TEST_CASE("The CRD file of the manifests is the published Karta CRD, byte for byte") {
  const fs::path manifest = source_dir / "manifests" / "base" / "crd-kartas.yaml";
  const std::string ours = read_file(manifest);
  const std::string published = read_file(published_karta_crd);
  CHECK_FALSE(published.empty());
  CHECK_MESSAGE(ours == published, manifest.string() << " differs from " << published_karta_crd.string()
                                                     << ": copy the published file verbatim, never edit it");
  CHECK(fs::is_regular_file(source_dir / "manifests" / "LICENSE-Apache-2.0"));
}

TEST_CASE("No rendering installs the ResourceInterface CRD") {
  for (const Documents* rendered : {&base(), &cert_manager_overlay(), &cert_manager_existing_crd_overlay()}) {
    for (const YAML::Node& crd : all_of_kind(*rendered, "CustomResourceDefinition")) {
      CHECK(name_of(crd) == "kartas.run.ai");
      CHECK(name_of(crd) != "resourceinterfaces.optimization.nvidia.com");
    }
  }
}

TEST_CASE("The Karta CRD is cluster-scoped run.ai v1alpha1 with a structural schema") {
  const YAML::Node crd = find(base(), "CustomResourceDefinition", "kartas.run.ai");
  const YAML::Node spec = crd["spec"];
  CHECK(scalar(crd["apiVersion"], "apiVersion") == "apiextensions.k8s.io/v1");
  CHECK(scalar(spec["group"], "group") == "run.ai");
  CHECK(scalar(spec["scope"], "scope") == "Cluster");
  CHECK(scalar(spec["names"]["kind"], "names.kind") == "Karta");
  CHECK(scalar(spec["names"]["listKind"], "names.listKind") == "KartaList");
  CHECK(scalar(spec["names"]["plural"], "names.plural") == "kartas");
  CHECK(scalar(spec["names"]["singular"], "names.singular") == "karta");
  CHECK(strings(spec["names"]["shortNames"], "names.shortNames") == std::vector<std::string>{"krt"});
  REQUIRE(spec["versions"].size() == 1);
  const YAML::Node version = spec["versions"][0];
  CHECK(scalar(version["name"], "version name") == "v1alpha1");
  CHECK(boolean(version["served"], "served"));
  CHECK(boolean(version["storage"], "storage"));
  CHECK(version["subresources"]["status"].IsMap());

  const YAML::Node schema = version["schema"]["openAPIV3Schema"];
  REQUIRE(schema.IsMap());
  CHECK(scalar(schema["type"], "schema type") == "object");
  // The fields the webhook reads are declared (so the API server does not prune them).
  const YAML::Node structure = schema["properties"]["spec"]["properties"]["structureDefinition"];
  CHECK(string_set(schema["properties"]["spec"]["required"], "spec required") ==
        std::set<std::string>{"structureDefinition"});
  CHECK(string_set(structure["required"], "structureDefinition required") == std::set<std::string>{"rootComponent"});
  const YAML::Node root = structure["properties"]["rootComponent"];
  CHECK(string_set(root["required"], "rootComponent required") == std::set<std::string>{"name"});
  CHECK(string_set(root["properties"]["kind"]["required"], "kind required") ==
        std::set<std::string>{"group", "version", "kind"});
  for (const char* field : {"name", "kind", "ownerRef", "specDefinition", "instanceIdPath", "podSelector",
                            "scaleDefinition", "statusDefinition", "suspendDefinition"}) {
    CHECK_MESSAGE(root["properties"][field].IsDefined(), "rootComponent lacks " << field);
  }
  const YAML::Node child = structure["properties"]["childComponents"]["items"];
  for (const char* field : {"name", "kind", "ownerRef", "specDefinition", "instanceIdPath", "podSelector",
                            "scaleDefinition"}) {
    CHECK_MESSAGE(child["properties"][field].IsDefined(), "childComponents[] lacks " << field);
  }
  CHECK(structure["properties"]["additionalChildKinds"].IsDefined());
  const YAML::Node spec_definition = child["properties"]["specDefinition"]["properties"];
  for (const char* field : {"podTemplateSpecPath", "podSpecPath", "metadataPath", "fragmentedPodSpecDefinition"}) {
    CHECK_MESSAGE(spec_definition[field].IsDefined(), "specDefinition lacks " << field);
  }
  const YAML::Node pod_selector = child["properties"]["podSelector"]["properties"];
  for (const char* field : {"componentTypeSelector", "componentInstanceSelector", "replicaSelector"}) {
    CHECK_MESSAGE(pod_selector[field].IsDefined(), "podSelector lacks " << field);
  }
  const YAML::Node gang = schema["properties"]["spec"]["properties"]["optimizationInstructions"]["properties"]
                                ["gangScheduling"]["properties"];
  CHECK(gang["podGroup"]["properties"]["subGroups"].IsDefined());
  CHECK(gang["podGroups"]["items"]["properties"]["members"].IsDefined());
  CHECK(schema["properties"]["status"]["properties"]["conditions"].IsDefined());

  std::vector<std::string> problems;
  check_structural(schema, "openAPIV3Schema", problems);
  CHECK_MESSAGE(problems.empty(), "the schema is not structural:\n" << join(problems));
}

TEST_CASE("The Karta CRD prints the published columns: framework kind, root component and age") {
  const YAML::Node columns =
      find(base(), "CustomResourceDefinition", "kartas.run.ai")["spec"]["versions"][0]["additionalPrinterColumns"];
  std::vector<std::pair<std::string, std::string>> paths;
  for (const YAML::Node& column : columns) {
    paths.emplace_back(scalar(column["name"], "column name"), scalar(column["jsonPath"], "column jsonPath"));
  }
  CHECK(paths == std::vector<std::pair<std::string, std::string>>{
                     {"Framework", ".spec.structureDefinition.rootComponent.kind.kind"},
                     {"Root Component", ".spec.structureDefinition.rootComponent.name"},
                     {"Age", ".metadata.creationTimestamp"},
                 });
}

TEST_CASE("The Karta CRD schema accepts every definition of the built-in catalog") {
  const YAML::Node schema = find(base(), "CustomResourceDefinition", "kartas.run.ai")["spec"]["versions"][0]["schema"]
                                ["openAPIV3Schema"];
  const std::vector<fs::path> files = catalog_files();
  REQUIRE_FALSE(files.empty());
  for (const fs::path& file : files) {
    INFO(file.string());
    const YAML::Node definition = YAML::LoadFile(file.string());
    CHECK(scalar(definition["apiVersion"], "apiVersion") == "run.ai/v1alpha1");
    CHECK(scalar(definition["kind"], "kind") == "Karta");
    // A field the published schema does not declare would be pruned by the API server, silently, when
    // the definition is applied as a Karta object.
    std::vector<std::string> problems;
    check_against_schema(definition, schema, file.filename().string(), problems);
    CHECK_MESSAGE(problems.empty(), "not accepted by the published Karta CRD:\n" << join(problems));
  }
}

}  // TEST_SUITE

}  // namespace unit_manifests_crd
