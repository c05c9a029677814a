// The layout a newcomer reads: every folder of the repository is in README's layout table and every folder
// the table names exists; each source folder includes only the folders below it (the transport knows
// nothing of Karta, admission/ nothing of HTTP, nothing points upward); no source file runs past 500
// lines without saying why in its opening comment, and none outside tests/, fuzz/ and bench/ past 600.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "json/documents.h"
#include "support/test_support.h"

namespace unit_layout {  // this file's names, apart from other tests' in a unity build

namespace {

namespace fs = std::filesystem;
namespace test = karta::test;

// The folders of the repository's top level: what `git ls-files` would show, less the build trees.
std::set<std::string> top_level_folders() {
  std::set<std::string> folders;
  for (const auto& entry : fs::directory_iterator(test::source_dir())) {
    if (!entry.is_directory()) continue;
    std::string name = entry.path().filename().string();
    if (name.starts_with(".") || name.starts_with("build")) continue;
    folders.insert(name);
  }
  return folders;
}

// The folders named in the first column of README's "## Layout" table (`server/`, or several in one row:
// "`fuzz/`, `bench/`, `scripts/load-test.sh`").
std::set<std::string> layout_table_folders() {
  std::string readme = karta::read_text_file(test::source_dir() / "README.md");
  auto start = readme.find("\n## Layout\n");
  REQUIRE_MESSAGE(start != std::string::npos, "README.md has no \"## Layout\" section");
  auto end = readme.find("\n## ", start + 1);
  std::istringstream section(readme.substr(start, end == std::string::npos ? std::string::npos : end - start));
  std::set<std::string> folders;
  static const std::regex kFolder("`([a-z0-9_.-]+)/`");
  for (std::string line; std::getline(section, line);) {
    if (!line.starts_with("| `")) continue;
    std::string first_cell = line.substr(0, line.find(" |", 2));
    for (std::sregex_iterator it(first_cell.begin(), first_cell.end(), kFolder), done; it != done; ++it) {
      folders.insert((*it)[1]);
    }
  }
  return folders;
}

// Which folders each source folder may include from (besides itself). The graph points one way: json and
// k8s at the bottom, then definitions and the policy, then mutate and validate, then admission; the
// transport (server) stands alone, the API client (kube) uses only json/ (its one bounded parser);
// runtime wires them; cli is on top.
// third_party builds other projects' code into the binary and includes nothing of ours.
const std::map<std::string, std::set<std::string>>& allowed_includes() {
  static const std::map<std::string, std::set<std::string>> kAllowed = {
      {"json", {}},
      {"k8s", {"json"}},
      {"definitions", {"json", "k8s"}},
      {"policy", {"json", "k8s"}},
      {"mutate", {"json", "k8s", "definitions", "policy"}},
      {"validate", {"json", "k8s", "definitions", "policy"}},
      {"generate", {"json", "k8s", "definitions", "policy", "validate"}},
      {"admission", {"json", "k8s", "definitions", "policy", "mutate", "validate"}},
      {"server", {}},
      {"kube", {"json"}},
      {"third_party", {}},
      {"runtime", {"json", "k8s", "definitions", "policy", "mutate", "validate", "admission", "server", "kube"}},
      {"cli",
       {"json", "k8s", "definitions", "policy", "mutate", "validate", "generate", "admission", "server", "kube",
        "runtime"}},
  };
  return kAllowed;
}

// The folder a project include names (`#include "server/http_exchange.h"` gives "server"), or "".
std::string included_folder(const std::string& line) {
  static const std::regex kInclude(R"(^#include "([a-z0-9_]+)/[^"]+")");
  std::smatch match;
  return std::regex_search(line, match, kInclude) ? match[1].str() : std::string();
}

bool is_source(const fs::path& path) { return path.extension() == ".h" || path.extension() == ".cpp"; }

std::vector<fs::path> sources_under(const fs::path& folder) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(folder)) {
    if (entry.is_regular_file() && is_source(entry.path())) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The first block of comment lines in a file, before any code: a header's comes after `#pragma once`, a
// source file's may follow its own #include.
std::string opening_comment(const std::string& text) {
  std::istringstream lines(text);
  std::string comment;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("//")) {
      comment += line + "\n";
    } else if (!comment.empty() || !(line.empty() || line.starts_with("#"))) {
      break;
    }
  }
  return comment;
}

// A test topic file (unit-*.cpp, e2e-*.cpp) is compiled in a batch with others (tests/CMakeLists.txt: a unity
// build), so its names must not meet theirs: everything after its includes is in `namespace TOPIC {`
// (the file name with '_' for '-'), closed on its last line. "" when it is; else what is wrong.
std::string unity_scope_fault(const std::string& text, const std::string& topic) {
  std::string opening = "namespace " + topic + " {";
  std::string closing = "}  // namespace " + topic;
  std::istringstream in(text);
  std::string line, first_code, last_code;
  bool after_opening = false;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line.starts_with("//")) continue;
    if (line.starts_with("#include") && after_opening)
      return "line " + std::to_string(number) + ": an #include inside the namespace";
    if (line.starts_with("#include")) continue;
    if (first_code.empty()) {
      first_code = line;
      if (!line.starts_with(opening))
        return "the first line after the includes is \"" + line + "\", not \"" + opening + "\"";
      after_opening = true;
    }
    last_code = line;
  }
  if (!after_opening) return "no \"" + opening + "\" after the includes";
  if (last_code != closing) return "the last line is \"" + last_code + "\", not \"" + closing + "\"";
  return "";
}
}  // namespace

TEST_CASE("every folder of the repository is in README's layout table, and every folder the table names exists") {
  std::set<std::string> table = layout_table_folders();
  std::set<std::string> folders = top_level_folders();
  for (const auto& folder : folders)
    CHECK_MESSAGE(table.count(folder) == 1, folder << "/ is not in README's layout table");
  for (const auto& folder : table)
    CHECK_MESSAGE(folders.count(folder) == 1, "README's layout table names " << folder << "/, which does not exist");
  CHECK(allowed_includes().size() == 13);
  for (const auto& [folder, allowed] : allowed_includes()) CHECK_MESSAGE(table.count(folder) == 1, folder);
}

TEST_CASE("each source folder includes only the folders below it; admission/ includes nothing from server/") {
  std::set<std::string> project_folders;
  for (const auto& [folder, allowed] : allowed_includes()) project_folders.insert(folder);
  std::size_t files = 0;
  for (const auto& [folder, allowed] : allowed_includes()) {
    for (const auto& file : sources_under(test::source_dir() / folder)) {
      ++files;
      std::istringstream lines(karta::read_text_file(file));
      for (std::string line; std::getline(lines, line);) {
        const std::string target = included_folder(line);
        if (target.empty() || target == folder || project_folders.count(target) == 0) continue;
        CHECK_MESSAGE(allowed.count(target) == 1, fs::relative(file, test::source_dir()).string()
                                                      << " includes " << target << "/ (" << line << ")");
      }
    }
  }
  CHECK(files > 100);
}

TEST_CASE("the one-way rule is checked: a file of admission/ that included server/ would be reported") {
  // The rule above, applied to a made-up line, so that a broken regular expression cannot pass it silently.
  CHECK(included_folder("#include \"server/http_exchange.h\"") == "server");
  CHECK(included_folder("#include <boost/beast/http.hpp>") == "");
  CHECK(allowed_includes().at("admission").count("server") == 0);
  CHECK(allowed_includes().at("admission").count("runtime") == 0);
  CHECK(allowed_includes().at("server").empty());
}

TEST_CASE("no source file runs past 500 lines without the reason in its opening comment") {
  // Only the opening comment counts: a reason further down, after code, is not one a reader meets first.
  CHECK(opening_comment("#pragma once\n\n// a\n// b\n\nint x;  // Longer than 500 lines because\n") == "// a\n// b\n");
  CHECK(opening_comment("#include \"x/y.h\"\n\n// c\n#include <z>\n") == "// c\n");
  CHECK(opening_comment("namespace {\n// d\n") == "");
  std::vector<fs::path> roots;
  for (const auto& [folder, allowed] : allowed_includes()) roots.push_back(test::source_dir() / folder);
  for (const char* other : {"tests", "fuzz", "bench"}) roots.push_back(test::source_dir() / other);
  std::size_t long_files = 0;
  for (const auto& root : roots) {
    for (const auto& file : sources_under(root)) {
      std::string text = karta::read_text_file(file);
      auto lines = std::count(text.begin(), text.end(), '\n');
      if (lines <= 500) continue;
      ++long_files;
      CHECK_MESSAGE(opening_comment(text).find("Longer than 500 lines because") != std::string::npos,
                    fs::relative(file, test::source_dir()).string()
                        << " has " << lines
                        << " lines and no \"Longer than 500 lines because\" in its opening comment");
    }
  }
  MESSAGE(long_files << " source files over 500 lines, each with its reason");
}

TEST_CASE("no source file outside tests/, fuzz/ and bench/ runs past 600 lines, whatever its reason") {
  std::vector<std::string> too_long;
  std::size_t files = 0;
  for (const auto& [folder, allowed] : allowed_includes()) {
    for (const auto& file : sources_under(test::source_dir() / folder)) {
      ++files;
      std::string text = karta::read_text_file(file);
      auto lines = std::count(text.begin(), text.end(), '\n');
      if (lines > 600) too_long.push_back(fs::relative(file, test::source_dir()).string() + ": " + std::to_string(lines));
    }
  }
  CHECK(files > 100);
  std::string named;
  for (const auto& file : too_long) named += "\n  " + file;
  CHECK_MESSAGE(too_long.empty(), "source files past 600 lines:" << named);
}

TEST_CASE("each test topic file keeps its names in a namespace of its own, as its unity build needs") {
  CHECK(unity_scope_fault("// t\n#include <a>\n\nnamespace unit_x {  // mine\nint a;\n}  // namespace unit_x\n",
                          "unit_x") == "");
  CHECK(unity_scope_fault("#include <a>\nnamespace {\n}\n", "unit_x") ==
        "the first line after the includes is \"namespace {\", not \"namespace unit_x {\"");
  CHECK(unity_scope_fault("namespace unit_x {\n#include <a>\n}  // namespace unit_x\n", "unit_x") ==
        "line 2: an #include inside the namespace");
  CHECK(unity_scope_fault("namespace unit_x {\n}  // namespace unit_x\nint stray;\n", "unit_x") ==
        "the last line is \"int stray;\", not \"}  // namespace unit_x\"");
  std::size_t topics = 0;
  for (const auto& entry : fs::directory_iterator(test::source_dir() / "tests")) {
    std::string name = entry.path().filename().string();
    if (!(name.starts_with("unit-") || name.starts_with("e2e-")) || !name.ends_with(".cpp")) continue;
    ++topics;
    std::string topic = name.substr(0, name.size() - 4);
    std::replace(topic.begin(), topic.end(), '-', '_');
    CHECK_MESSAGE(unity_scope_fault(karta::read_text_file(entry.path()), topic) == "", "tests/" << name);
  }
  CHECK(topics >= 70);
}

}  // namespace unit_layout
