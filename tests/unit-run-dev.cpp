// What scripts/run-dev.sh (and scripts/build-release.sh under it) builds before serving: nothing when no
// build input changed since the optimized binary was built, step 3 alone when the profile's inputs did not
// change, all three steps otherwise (issue 53). Decided on content, so it is tested on a scratch checkout:
// a git repository holding copies of the two scripts and of a file of each kind (a source only
// karta-webhook compiles, a profiled source, a training input, a CMake file, documentation, a test), with
// stand-ins on the PATH for cmake and the compiler. The cmake stand-in records its calls and writes a
// bench_admission that records a profile and a karta-webhook that prints its arguments, so the scripts'
// own steps run as written without the real pipeline (minutes; its first and second runs are measured in
// the README).

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "support/test_support.h"

namespace unit_run_dev {  // this file's names, apart from other tests' in a unity build

namespace fs = std::filesystem;

// cmake: `--version` answers, anything else is appended to $CMAKE_LOG; `--build DIR ... --target T...`
// writes each target.
constexpr const char* kCmakeStandIn = R"(#!/bin/sh
if [ "$1" = --version ]; then echo "cmake version 3.25.1"; exit 0; fi
echo "cmake $*" >>"$CMAKE_LOG"
[ "$1" = --build ] || exit 0
dir=$2
for target in "$@"; do
  case $target in
    bench_admission)
      mkdir -p "$dir/bench"
      printf '#!/bin/sh\nmkdir -p "$(dirname "$0")/../pgo-profile" && echo counts >"$(dirname "$0")/../pgo-profile/a.gcda"\n' >"$dir/bench/bench_admission"
      chmod +x "$dir/bench/bench_admission" ;;
    karta-webhook)
      printf '#!/bin/sh\necho "karta-webhook $*"\n' >"$dir/karta-webhook"
      chmod +x "$dir/karta-webhook" ;;
  esac
done
)";

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_text(const fs::path& path, const std::string& text, bool executable = false) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
  if (executable) fs::permissions(path, fs::perms::owner_all, fs::perm_options::add);
}

// The copied files, by what they are to the build.
constexpr const char* kCopied[] = {
    "scripts/build-release.sh", "scripts/run-dev.sh", ".gitignore",
    "cli/main.cpp",                            // compiled into karta-webhook only
    "mutate/mutation.cpp",                     // compiled into bench_admission too: profiled
    "examples/policy.yaml",                    // read by the training
    "tests/corpus/samples/raycluster-1.yaml",  // read by the training
    "CMakeLists.txt",
    "README.md",               // no build input
    "tests/unit-layout.cpp"};  // no build input

struct ScratchCheckout {
  karta::test::TempDir temp;
  fs::path root = temp.path / "checkout";
  fs::path tools = temp.path / "tools";
  fs::path cmake_log = temp.path / "cmake.log";

  ScratchCheckout() {
    for (const char* file : kCopied) {
      const fs::path from = karta::test::source_dir() / file;
      REQUIRE_MESSAGE(fs::is_regular_file(from), "missing " << from);
      fs::create_directories((root / file).parent_path());
      fs::copy_file(from, root / file);
    }
    write_text(root / "certs/generate.sh", "#!/bin/sh\necho certificates\n", true);
    write_text(tools / "cmake", kCmakeStandIn, true);
    compiler("c++ (stand-in) 12.2.0");
    int code = 0;
    const std::string out = karta::test::run_command("git init -q '" + root.string() + "'", &code);
    REQUIRE_MESSAGE(code == 0, out);
  }

  void compiler(const std::string& version) { write_text(tools / "c++", "#!/bin/sh\necho '" + version + "'\n", true); }

  // `SCRIPT ARGUMENTS` run in the checkout (stdout and stderr), with the stand-ins first on the PATH and
  // none of the environment the scripts read but `environment`.
  std::string run(const std::string& command, const std::string& environment = "", int expected_code = 0) {
    int code = 0;
    const std::string out = karta::test::run_command(
        "cd '" + root.string() + "' && env -u KARTA_CMAKE_ARGS -u KARTA_PGO -u CXXFLAGS -u LDFLAGS KARTA_JOBS=2 PATH='" +
            tools.string() + "':\"$PATH\" CXX='" + (tools / "c++").string() + "' CMAKE_LOG='" + cmake_log.string() +
            "' " + environment + " " + command,
        &code);
    CHECK_MESSAGE(code == expected_code, command << ": " << out);
    return out;
  }

  // CMake's calls since the last look.
  std::string cmake_calls() {
    std::string calls = read_text(cmake_log);
    fs::remove(cmake_log);
    return calls;
  }

  void edit(const std::string& file) { std::ofstream(root / file, std::ios::app) << "\n// edited\n"; }
};

const std::string kServe = "karta-webhook serve --tls-cert-file certs/out/tls.crt --tls-private-key-file certs/out/tls.key "
                           "--policy examples/policy.yaml --log-format text --port 9\n";
const std::string kReuse = "build-release: reusing build-release/karta-webhook: no source, CMake file, profile input, "
                           "compiler or option changed since it was built\n";
const std::string kSteps = "build-release: 1/3 instrumented build (KARTA_PGO=generate)\n"
                           "build-release: 2/3 training: bench_admission's admissions of every registered input\n"
                           "build-release: 3/3 optimized build (KARTA_PGO=use, 1 profiled object files)\n"
                           "build-release: built build-release/karta-webhook\n";

std::string optimized_calls(const ScratchCheckout& scratch) {
  return "cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DCMAKE_INTERPROCEDURAL_OPTIMIZATION=ON -DKARTA_BUILD_TESTS=OFF "
         "-DKARTA_PGO=use -DKARTA_PGO_DIR=" + (scratch.root / "build-release/pgo-profile").string() +
         " -DKARTA_BUILD_BENCHMARKS=ON\ncmake --build build-release -j2 --target karta-webhook bench_admission\n";
}

std::string pipeline_calls(const ScratchCheckout& scratch) {
  const std::string configure = "cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DCMAKE_INTERPROCEDURAL_OPTIMIZATION=ON "
                                "-DKARTA_BUILD_TESTS=OFF ";
  const std::string profile = (scratch.root / "build-release/pgo-profile").string();
  return configure + "-DKARTA_PGO=generate -DKARTA_PGO_DIR=" + profile + " -DKARTA_BUILD_BENCHMARKS=ON --fresh\n" +
         "cmake --build build-release -j2 --target bench_admission\n" + optimized_calls(scratch);
}

// A scratch checkout served once: all three steps ran and recorded their inputs.
struct BuiltCheckout : ScratchCheckout {
  BuiltCheckout() {
    REQUIRE(run("scripts/run-dev.sh --port 9") ==
            "build-release: all three steps: no profile recorded in build-release\n" + kSteps + kServe);
    REQUIRE(cmake_calls() == pipeline_calls(*this));
  }
};

TEST_CASE("The first run-dev.sh runs the three steps; a second on the unchanged checkout serves the same binary without CMake, saying so in one line") {
  BuiltCheckout scratch;
  CHECK(scratch.run("scripts/run-dev.sh --port 9") == kReuse + kServe);
  CHECK_FALSE(fs::exists(scratch.cmake_log));
  CHECK(scratch.run("scripts/run-dev.sh --plan") == kReuse);
}

TEST_CASE("Touching every file without changing it, as a fresh clone or a branch switched back does, still reuses the binary") {
  BuiltCheckout scratch;
  const auto later = fs::file_time_type::clock::now() + std::chrono::hours(1);
  for (const auto& entry : fs::recursive_directory_iterator(scratch.root)) {
    if (entry.is_regular_file()) fs::last_write_time(entry.path(), later);
  }
  CHECK(scratch.run("scripts/run-dev.sh --port 9") == kReuse + kServe);
  CHECK_FALSE(fs::exists(scratch.cmake_log));
}

TEST_CASE("Editing documentation or a test is no build input: the binary is reused") {
  BuiltCheckout scratch;
  scratch.edit("README.md");
  scratch.edit("tests/unit-layout.cpp");
  write_text(scratch.root / "tests/unit-new-topic.cpp", "// new\n");
  CHECK(scratch.run("scripts/run-dev.sh --plan") == kReuse);
}

TEST_CASE("An edited source that only karta-webhook compiles rebuilds step 3 alone, with the recorded profile") {
  BuiltCheckout scratch;
  scratch.edit("cli/main.cpp");
  const std::string step3 = "build-release: step 3 alone, the optimized build with the recorded profile: the profile is up "
                            "to date; changed since the last build: cli/main.cpp\n";
  CHECK(scratch.run("scripts/run-dev.sh --plan") == step3);
  CHECK_FALSE(fs::exists(scratch.cmake_log));
  CHECK(scratch.run("scripts/run-dev.sh --port 9") ==
        step3 + "build-release: 3/3 optimized build (KARTA_PGO=use, 1 profiled object files)\n"
                "build-release: built build-release/karta-webhook\n" + kServe);
  CHECK(scratch.cmake_calls() == optimized_calls(scratch));
  // Built: the next run reuses it.
  CHECK(scratch.run("scripts/run-dev.sh --plan") == kReuse);
}

TEST_CASE("An edited profiled source, a new source or a changed training input or CMake file records a new profile") {
  BuiltCheckout scratch;
  std::string changed;
  SUBCASE("a profiled source") { scratch.edit(changed = "mutate/mutation.cpp"); }
  SUBCASE("a new source, not yet added to git") { write_text(scratch.root / (changed = "mutate/patch_order.h"), "#pragma once\n"); }
  SUBCASE("the training's policy") { scratch.edit(changed = "examples/policy.yaml"); }
  SUBCASE("a corpus sample the training admits") { scratch.edit(changed = "tests/corpus/samples/raycluster-1.yaml"); }
  SUBCASE("a CMake file") { scratch.edit(changed = "CMakeLists.txt"); }
  SUBCASE("a deleted source") { fs::remove(scratch.root / (changed = "mutate/mutation.cpp")); }
  const std::string all = "build-release: all three steps: changed since the profile was recorded: " + changed + "\n";
  CHECK(scratch.run("scripts/run-dev.sh --plan") == all);
  CHECK(scratch.run("scripts/run-dev.sh --port 9") == all + kSteps + kServe);
  CHECK(scratch.cmake_calls() == pipeline_calls(scratch));
  CHECK(scratch.run("scripts/run-dev.sh --plan") == kReuse);
}

TEST_CASE("Several changed files are named, the first three of them") {
  BuiltCheckout scratch;
  for (const char* file : {"mutate/a.cpp", "mutate/b.cpp", "mutate/c.cpp", "mutate/d.cpp"}) write_text(scratch.root / file, "//\n");
  CHECK(scratch.run("scripts/run-dev.sh --plan") ==
        "build-release: all three steps: changed since the profile was recorded: mutate/a.cpp mutate/b.cpp mutate/c.cpp and 1 more\n");
}

TEST_CASE("A different compiler, compiler flags or CMake options record a new profile") {
  BuiltCheckout scratch;
  std::string environment;
  SUBCASE("the compiler") { scratch.compiler("c++ (stand-in) 12.3.0"); }
  SUBCASE("CXXFLAGS") { environment = "CXXFLAGS=-march=native"; }
  SUBCASE("KARTA_CMAKE_ARGS") { environment = "KARTA_CMAKE_ARGS='-DKARTA_BUILD_TESTS=OFF -DKARTA_JEMALLOC=OFF'"; }
  CHECK(scratch.run("scripts/build-release.sh --plan", environment) ==
        "build-release: all three steps: changed since the profile was recorded: the compiler, CMake, a library or an option\n");
}

TEST_CASE("--rebuild runs the three steps on an unchanged checkout") {
  BuiltCheckout scratch;
  CHECK(scratch.run("scripts/run-dev.sh --plan --rebuild") == "build-release: all three steps: --rebuild\n");
  CHECK(scratch.run("scripts/run-dev.sh --rebuild --port 9") == "build-release: all three steps: --rebuild\n" + kSteps + kServe);
  CHECK(scratch.cmake_calls() == pipeline_calls(scratch));
}

TEST_CASE("A binary that is not the one built, or a build stopped after the training, is built again with the recorded profile") {
  BuiltCheckout scratch;
  SUBCASE("another binary in its place") {
    write_text(scratch.root / "build-release/karta-webhook", "#!/bin/sh\necho other\n", true);
    CHECK(scratch.run("scripts/run-dev.sh --plan") ==
          "build-release: step 3 alone, the optimized build with the recorded profile: the profile is up to date; changed "
          "since the last build: build-release/karta-webhook is not the binary it built\n");
  }
  SUBCASE("no record of the optimized build") {
    fs::remove(scratch.root / "build-release/release-inputs");
    CHECK(scratch.run("scripts/run-dev.sh --plan") ==
          "build-release: step 3 alone, the optimized build with the recorded profile: the profile is up to date, the "
          "optimized build did not finish\n");
  }
  SUBCASE("no profile") {
    fs::remove_all(scratch.root / "build-release/pgo-profile");
    CHECK(scratch.run("scripts/run-dev.sh --plan") == "build-release: all three steps: no profile recorded in build-release\n");
  }
  CHECK_FALSE(fs::exists(scratch.cmake_log));
}

TEST_CASE("Outside a git checkout, as in the image's build context, every build runs the three steps and records nothing") {
  BuiltCheckout scratch;
  fs::remove_all(scratch.root / ".git");
  const std::string all = "build-release: all three steps: no git checkout here, so what changed is not known\n";
  CHECK(scratch.run("scripts/run-dev.sh --plan") == all);
  fs::remove_all(scratch.root / "build-release");
  std::string steps = kSteps;
  steps.replace(steps.find("built build-release/"), 20, "built build/");
  CHECK(scratch.run("scripts/build-release.sh build") == all + steps);
  CHECK(fs::is_regular_file(scratch.root / "build/karta-webhook"));
  CHECK_FALSE(fs::exists(scratch.root / "build/release-inputs"));
  CHECK_FALSE(fs::exists(scratch.root / "build/pgo-profile.inputs"));
}

TEST_CASE("An unknown option is refused with the usage, building nothing") {
  ScratchCheckout scratch;
  CHECK(scratch.run("scripts/build-release.sh --fast", "", 2) ==
        "usage: scripts/build-release.sh [--rebuild] [--plan] [BUILD_DIR]\n");
  CHECK_FALSE(fs::exists(scratch.cmake_log));
}

}  // namespace unit_run_dev
