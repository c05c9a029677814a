// The test corpus kept in the repository (tests/corpus/): whole, as SOURCES.md lists it, and never
// silently missing.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.h"

namespace unit_corpus {  // this file's names, apart from other tests' in a unity build

namespace fs = std::filesystem;
namespace test = karta::test;

namespace {

const fs::path repository_corpus() { return test::source_dir() / "tests" / "corpus"; }

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read " << file.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

// The cells of a Markdown table row ("| a | b |" -> {"a", "b"}).
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::size_t start = line.find('|');
  while (start != std::string::npos) {
    const std::size_t end = line.find('|', start + 1);
    if (end == std::string::npos) break;
    out.push_back(trimmed(line.substr(start + 1, end - start - 1)));
    start = end;
  }
  return out;
}

struct SourceRow {
  std::string file;
  std::string license;
};

// The rows of the table of tests/corpus/SOURCES.md (| file | upstream repo | path | commit | license |).
std::vector<SourceRow> sources_table() {
  std::istringstream text(read_text(repository_corpus() / "SOURCES.md"));
  std::vector<SourceRow> rows;
  std::string line;
  while (std::getline(text, line)) {
    if (line.rfind("|", 0) != 0) continue;
    const std::vector<std::string> row = cells(line);
    if (row.size() != 5 || row[0] == "file" || row[0].rfind("---", 0) == 0) continue;
    rows.push_back({row[0], row[4]});
  }
  return rows;
}

std::set<std::string> files_under(const std::string& directory) {
  std::set<std::string> files;
  for (const auto& entry : fs::directory_iterator(repository_corpus() / directory)) {
    CHECK_MESSAGE(entry.is_regular_file(), entry.path().string() << " is not a regular file");
    files.insert(directory + "/" + entry.path().filename().string());
  }
  return files;
}

}  // namespace

TEST_SUITE("corpus") {

TEST_CASE("Every file SOURCES.md lists is in tests/corpus and is not empty") {
  const std::vector<SourceRow> rows = sources_table();
  CHECK(rows.size() == 97);  // 26 CRDs, 68 samples, 1 runtime, 2 Karta-API CRDs
  for (const SourceRow& row : rows) {
    INFO(row.file);
    const fs::path file = repository_corpus() / row.file;
    REQUIRE_MESSAGE(fs::is_regular_file(file), file.string() << " is listed in SOURCES.md but missing");
    CHECK(fs::file_size(file) > 0);
    CHECK(row.license == "Apache-2.0");
  }
}

TEST_CASE("Every file of tests/corpus is listed in SOURCES.md") {
  std::set<std::string> listed;
  for (const SourceRow& row : sources_table()) {
    CHECK_MESSAGE(listed.insert(row.file).second, row.file << " is listed twice");
  }
  std::set<std::string> present;
  for (const char* directory : {"crds", "samples", "runtimes", "karta"}) {
    for (const std::string& file : files_under(directory)) present.insert(file);
  }
  CHECK(present == listed);
}

TEST_CASE("The corpus holds 26 CRDs, 68 samples, a runtime and the two Karta-API CRDs") {
  CHECK(files_under("crds").size() == 26);
  CHECK(files_under("samples").size() == 68);
  // A runtime runs no pods itself: it is what a TrainJob sample names (tests/unit-offline-answers.cpp).
  CHECK(files_under("runtimes") == std::set<std::string>{"runtimes/trainingruntime-1.yaml"});
  CHECK(files_under("karta") == std::set<std::string>{"karta/run.ai_kartas.yaml",
                                                      "karta/optimization.nvidia.com_resourceinterfaces.yaml"});
  for (const auto& [file, name] : {std::pair{"karta/run.ai_kartas.yaml", "kartas.run.ai"},
                                   std::pair{"karta/optimization.nvidia.com_resourceinterfaces.yaml",
                                             "resourceinterfaces.optimization.nvidia.com"}}) {
    INFO(file);
    const test::json crd = test::document(repository_corpus() / file);
    CHECK(crd.at("kind") == "CustomResourceDefinition");
    CHECK(crd.at("metadata").at("name") == name);
  }
}

TEST_CASE("The corpus carries the Apache License 2.0 that covers it, and says so") {
  const fs::path license = repository_corpus() / "LICENSE-Apache-2.0";
  REQUIRE(fs::is_regular_file(license));
  const std::string text = read_text(license);
  CHECK(text.find("Apache License") != std::string::npos);
  CHECK(text.find("Version 2.0, January 2004") != std::string::npos);
  CHECK(text.find("END OF TERMS AND CONDITIONS") != std::string::npos);
  const std::string sources = read_text(repository_corpus() / "SOURCES.md");
  CHECK(sources.find("LICENSE-Apache-2.0") < sources.find("# Corpus sources"));
}

TEST_CASE("corpus_dir finds the corpus of the repository") {
  const auto corpus = test::corpus_dir();
  REQUIRE(corpus.has_value());
  if (std::getenv("KARTA_CORPUS_DIR") == nullptr) {
    CHECK(fs::equivalent(*corpus, repository_corpus()));
  }
  CHECK(fs::is_directory(*corpus / "samples"));
  CHECK(fs::is_directory(*corpus / "crds"));
}

TEST_CASE("A missing corpus fails the test, naming the path, rather than skipping it") {
  // Runs the test case above in a child process with the corpus pointed somewhere that does not exist.
  const fs::path self = fs::read_symlink("/proc/self/exe");
  const std::string missing = "/nonexistent/karta-corpus-for-a-test";
  int code = 0;
  const std::string out = test::run_command("env -u CI KARTA_CORPUS_DIR=" + missing + " '" + self.string() +
                                                "' --no-intro=true --test-case='corpus_dir finds the corpus of the repository'",
                                            &code);
  INFO(out);
  CHECK(code != 0);
  CHECK(out.find("the corpus is missing at " + missing) != std::string::npos);
  CHECK(out.find("not run") == std::string::npos);
}

}  // TEST_SUITE

}  // namespace unit_corpus
