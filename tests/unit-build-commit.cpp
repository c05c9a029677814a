// The commit `karta-webhook --version` names (cmake/build_commit.cmake, cli/build_commit.h): the one the
// build was configured with, from the KARTA_COMMIT cache variable, `git rev-parse HEAD`, or, where the
// sources have no .git (the image's build context), the environment's KARTA_COMMIT.

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/build_commit.h"
#include "support/test_support.h"

namespace unit_build_commit {  // this file's names, apart from other tests' in a unity build

namespace fs = std::filesystem;

bool is_hash(std::string_view text) {
  return text.size() >= 7 && text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// CMake wraps an error's text at some 80 columns and indents it: compared with its whitespace squeezed.
std::string squeezed(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool space = c == ' ' || c == '\n' || c == '\t';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out += space ? ' ' : c;
  }
  return out;
}

// Runs cmake/build_commit.cmake on `sources` with the environment's KARTA_COMMIT set to `environment`
// ("" leaves it unset) and the cache variable `cache`; returns the commit the generated file names, or
// the script's error (its exit code in `code`).
std::string commit_for(const fs::path& sources, const std::string& environment, const std::string& cache, int& code) {
  karta::test::TempDir out;
  const fs::path file = out.path / "build_commit.cpp";
  const std::string command = (environment.empty() ? std::string("env -u KARTA_COMMIT ") : "env KARTA_COMMIT='" + environment + "' ") +
                              "cmake -DSOURCE_DIR='" + sources.string() + "' -DOUTPUT='" + file.string() + "' -DKARTA_COMMIT='" +
                              cache + "' -P '" + (karta::test::source_dir() / "cmake/build_commit.cmake").string() + "' 2>&1";
  const std::string output = karta::test::run_command(command, &code);
  if (code != 0) return squeezed(output);
  const std::string text = read_file(file);
  const std::string before = "return \"";
  const auto at = text.find(before);
  REQUIRE(at != std::string::npos);
  return text.substr(at + before.size(), text.find('"', at + before.size()) - at - before.size());
}

// A scratch git repository with one commit; returns its hash.
std::string commit_once(const fs::path& dir) {
  int code = 0;
  const std::string out = karta::test::run_command(
      "cd '" + dir.string() + "' && git init -q . && git -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m one "
      "&& git rev-parse HEAD 2>&1", &code);
  REQUIRE_MESSAGE(code == 0, out);
  return out.substr(0, out.find('\n'));
}

TEST_CASE("karta-webhook --version names the commit the build was configured with") {
  const std::string commit(karta::build_commit());
  int code = 0;
  const std::string version = karta::test::run_command("'" + karta::test::binary_path().string() + "' --version", &code);
  CHECK(code == 0);
  CHECK(version == "karta-webhook 0.1.0 (commit " + commit + ")\n");
  // Configured here from a git checkout: a commit of this repository (perhaps not HEAD: committing does not
  // configure again).
  if (fs::exists(karta::test::source_dir() / ".git")) {
    REQUIRE(is_hash(commit));
    CHECK(karta::test::run_command("git -C '" + karta::test::source_dir().string() + "' cat-file -t " + commit + " 2>&1") ==
          "commit\n");
  }
}

TEST_CASE("The commit comes from the cache variable, else git, else the environment's KARTA_COMMIT, else unknown") {
  karta::test::TempDir checkout;
  const std::string head = commit_once(checkout.path);
  karta::test::TempDir context;  // sources without .git, as the image's build context
  const std::string given = "0123456789abcdef0123456789abcdef01234567";
  int code = 0;
  CHECK(commit_for(checkout.path, "", "", code) == head);
  CHECK(code == 0);
  CHECK(commit_for(checkout.path, given, "", code) == head);  // git wins over the environment
  CHECK(commit_for(checkout.path, "", "abcdef1", code) == "abcdef1");  // the cache variable over git
  CHECK(commit_for(context.path, given, "", code) == given);
  CHECK(code == 0);
  CHECK(commit_for(context.path, "", "", code) == "unknown");
  CHECK(code == 0);
}

TEST_CASE("A KARTA_COMMIT that is no commit hash stops the configure, saying where it came from") {
  karta::test::TempDir context;
  int code = 0;
  const std::string error = commit_for(context.path, "v1.0; rm -rf /", "", code);
  CHECK(code != 0);
  CHECK(error.find("the environment's KARTA_COMMIT gives \"v1.0; rm -rf /\", which is not a commit hash") != std::string::npos);
  CHECK(commit_for(context.path, "", "ABCDEF1", code).find("the KARTA_COMMIT cache variable gives") != std::string::npos);
  CHECK(code != 0);
}

}  // namespace unit_build_commit
