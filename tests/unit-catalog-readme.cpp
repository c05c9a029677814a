// definitions/catalog/README.md and the catalog's files agree (issue 61): the table names every file of the
// catalog once, and each "`somethingPath` `.a.path`" it states is a field of that file's definition (its
// spec, or its extensions annotation) holding that path.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "support/test_support.h"

namespace unit_catalog_readme {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;
namespace fs = std::filesystem;

namespace {

const fs::path kCatalog = test::source_dir() / "definitions/catalog";

std::vector<std::string> backticked(const std::string& text) {
  std::vector<std::string> found;
  static const std::regex quoted("`([^`]+)`");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), quoted); it != std::sregex_iterator(); ++it) {
    found.push_back((*it)[1]);
  }
  return found;
}

// The files a row's File cell names: `a-v1.yaml`, `-v1alpha1.yaml` (a's name with another version),
// `kubeflow.org-{tfjob,jaxjob}-v1.yaml` (one file per name in braces).
std::vector<std::string> files_named(const std::string& cell) {
  std::vector<std::string> files;
  for (const std::string& token : backticked(cell)) {
    if (token.starts_with("-") && !files.empty()) {
      const std::string& previous = files.back();
      files.push_back(previous.substr(0, previous.rfind('-')) + token);
    } else if (auto open = token.find('{'); open != std::string::npos) {
      const auto close = token.find('}');
      std::istringstream names(token.substr(open + 1, close - open - 1));
      for (std::string name; std::getline(names, name, ',');) {
        files.push_back(token.substr(0, open) + name + token.substr(close + 1));
      }
    } else {
      files.push_back(token);
    }
  }
  return files;
}

// Every (key, string value) pair in `value`, at any depth.
void string_fields(const json& value, std::set<std::pair<std::string, std::string>>& out) {
  if (!value.is_object() && !value.is_array()) return;
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (value.is_object() && it->is_string()) out.insert({it.key(), it->get<std::string>()});
    string_fields(*it, out);
  }
}

std::set<std::pair<std::string, std::string>> definition_fields(const fs::path& file) {
  const json definition = test::document(file);
  std::set<std::pair<std::string, std::string>> fields;
  string_fields(definition["spec"], fields);
  const json* extensions = karta::find_json_at(definition, json::json_pointer("/metadata/annotations/karta-webhook.io~1extensions"));
  if (extensions != nullptr) string_fields(test::yaml(extensions->get<std::string>()), fields);
  return fields;
}

}  // namespace

TEST_CASE("the catalog README names every catalog file once, and each path field it states is the file's") {
  std::ifstream readme(kCatalog / "README.md");
  REQUIRE(readme.good());
  std::set<std::string> named;
  std::size_t rows = 0, claims = 0;
  for (std::string line; std::getline(readme, line);) {
    if (!line.starts_with("| ") || line.find(".yaml` |") == std::string::npos) continue;
    std::vector<std::string> cells;
    std::istringstream split(line.substr(1));
    for (std::string cell; std::getline(split, cell, '|');) cells.push_back(cell);
    REQUIRE(cells.size() > 2);
    const std::vector<std::string> files = files_named(cells[1]);
    if (files.empty()) continue;  // another table's row (the live flows')
    ++rows;
    std::set<std::pair<std::string, std::string>> fields;
    for (const std::string& file : files) {
      INFO(file);
      CHECK(named.insert(file).second);
      REQUIRE(fs::exists(kCatalog / file));
      for (auto& field : definition_fields(kCatalog / file)) fields.insert(field);
    }
    for (const std::string& cell : cells) {
      const std::vector<std::string> tokens = backticked(cell);
      for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
        if (!tokens[i].ends_with("Path") || !tokens[i + 1].starts_with(".")) continue;
        ++claims;
        CHECK_MESSAGE(fields.count({tokens[i], tokens[i + 1]}) == 1,
                      files.front() << ": the README says " << tokens[i] << " " << tokens[i + 1]);
      }
    }
  }
  std::set<std::string> on_disk;
  for (const auto& entry : fs::directory_iterator(kCatalog)) {
    if (entry.path().extension() == ".yaml") on_disk.insert(entry.path().filename().string());
  }
  CHECK(named == on_disk);
  CHECK(rows == 31);
  CHECK(claims == 3);  // TrainJob's resourcesPath, NIMCache's tolerationsPath and nodeSelectorPath
}

}  // namespace unit_catalog_readme
