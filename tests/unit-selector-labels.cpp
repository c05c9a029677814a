// componentTypeSelector.matchLabels must be labels a pod can carry: every bad key and every bad value is a
// fault of its own, naming the label and the rule, in /validate and in `karta-webhook validate`.

#include <doctest/doctest.h>

#include <fstream>

#include "support/test_support.h"
#include "validate/definition_validation.h"

namespace unit_selector_labels {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

namespace {

const std::string kLabels =
    "spec.structureDefinition.childComponents[0].podSelector.componentTypeSelector.matchLabels";

// The built-in MPIJob definition, whose launcher is told apart by matchLabels, with `labels` instead.
json mpijob_selecting(const json& labels) {
  json d = test::document(test::source_dir() / "definitions/catalog/kubeflow.org-mpijob-v2beta1.yaml");
  auto& selector = d["spec"]["structureDefinition"]["childComponents"][0]["podSelector"]["componentTypeSelector"];
  REQUIRE(selector.contains("matchLabels"));
  selector["matchLabels"] = labels;
  return d;
}

std::vector<std::string> faults(const json& definition) {
  return karta::validate_definition(definition, [](const karta::GroupVersionKind&) {
           return static_cast<const karta::CrdSchema*>(nullptr);
         }).faults;
}

}  // namespace

TEST_CASE("matchLabels of Kubernetes label syntax have no fault") {
  CHECK(faults(mpijob_selecting({{"training.kubeflow.org/job-role", "launcher"}, {"app", ""}, {"a.b_c-d", "X.y_1"}}))
            .empty());
}

TEST_CASE("a matchLabels key no pod can carry is one fault naming the label and the rule") {
  CHECK(faults(mpijob_selecting({{"app name", "proxy"}})) ==
        std::vector<std::string>{kLabels + "[\"app name\"]: key is not a valid label key: may contain only "
                                           "alphanumerics, '-', '_' and '.'"});
  CHECK(faults(mpijob_selecting({{"Example.com/role", "proxy"}})) ==
        std::vector<std::string>{kLabels +
                                 "[\"Example.com/role\"]: key is not a valid label key: prefix must be a lowercase "
                                 "DNS subdomain"});
  CHECK(faults(mpijob_selecting({{"example.com/-role", "proxy"}})) ==
        std::vector<std::string>{kLabels + "[\"example.com/-role\"]: key is not a valid label key: name part must "
                                           "begin and end with an alphanumeric character"});
  CHECK(faults(mpijob_selecting({{std::string(64, 'k'), "proxy"}})) ==
        std::vector<std::string>{kLabels + "[\"" + std::string(64, 'k') +
                                 "\"]: key is not a valid label key: must be no more than 63 characters"});
}

TEST_CASE("a matchLabels value no pod can carry is one fault naming the label, the value and the rule") {
  CHECK(faults(mpijob_selecting({{"app", "proxy "}})) ==
        std::vector<std::string>{kLabels + "[\"app\"]: value \"proxy \" is not a valid label value: must begin and "
                                           "end with an alphanumeric character"});
  CHECK(faults(mpijob_selecting({{"app", "a/b"}})) ==
        std::vector<std::string>{kLabels + "[\"app\"]: value \"a/b\" is not a valid label value: may contain only "
                                           "alphanumerics, '-', '_' and '.'"});
  CHECK(faults(mpijob_selecting({{"app", std::string(64, 'v')}})) ==
        std::vector<std::string>{kLabels + "[\"app\"]: value \"" + std::string(64, 'v') +
                                 "\" is not a valid label value: must be no more than 63 characters"});
}

TEST_CASE("several bad keys and values give one fault each, in key order, key before value") {
  CHECK(faults(mpijob_selecting({{"app name", "proxy "}, {"ok", "fine"}, {"role", "-x"}, {"z z", "fine"}})) ==
        std::vector<std::string>{
            kLabels + "[\"app name\"]: key is not a valid label key: may contain only alphanumerics, '-', '_' and '.'",
            kLabels + "[\"app name\"]: value \"proxy \" is not a valid label value: must begin and end with an "
                      "alphanumeric character",
            kLabels + "[\"role\"]: value \"-x\" is not a valid label value: must begin and end with an alphanumeric "
                      "character",
            kLabels + "[\"z z\"]: key is not a valid label key: may contain only alphanumerics, '-', '_' and '.'"});
}

TEST_CASE("karta-webhook validate prints each matchLabels fault and exits 1") {
  test::TempDir dir;
  std::ofstream(dir.path / "mpijob.json") << mpijob_selecting({{"app name", "proxy "}}).dump();
  int code = 0;
  const std::string out =
      test::run_command(test::binary_path().string() + " validate -f " + (dir.path / "mpijob.json").string() + " 2>&1",
                        &code);
  CHECK(code == 1);
  CHECK(out.find(kLabels + "[\"app name\"]: key is not a valid label key: may contain only alphanumerics, '-', '_' "
                           "and '.'") != std::string::npos);
  CHECK(out.find(kLabels + "[\"app name\"]: value \"proxy \" is not a valid label value: must begin and end with an "
                           "alphanumeric character") != std::string::npos);
}

}  // namespace unit_selector_labels
