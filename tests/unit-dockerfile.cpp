// The container image recipe (Dockerfile): no Docker engine is needed, the file is parsed the way the
// builder reads it (continuations joined, comments dropped, one instruction per logical line) and each
// stage is checked against what the binary and the manifests expect. scripts/image-test.sh builds the
// image and runs it. Longer than 500 lines because the parser, the .dockerignore matcher and the dpkg
// readings serve checks of all three stages, which read best side by side.
#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <fnmatch.h>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.h"

namespace unit_dockerfile {  // this file's names, apart from other tests' in a unity build

#ifndef KARTA_SOURCE_DIR
#error "KARTA_SOURCE_DIR (the repository root, as a string literal) must be defined"
#endif

namespace {

namespace fs = std::filesystem;

const fs::path dockerfile_source_dir{KARTA_SOURCE_DIR};

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string strip(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) {
    return "";
  }
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> result;
  std::string word;
  while (in >> word) {
    result.push_back(word);
  }
  return result;
}

struct Instruction {
  std::string keyword;    // upper case: FROM, RUN, COPY, ...
  std::string arguments;  // the rest of the logical line, continuations joined with a space
};

struct Stage {
  std::string image;
  std::string name;
  std::vector<Instruction> instructions;  // after FROM

  std::vector<Instruction> all(const std::string& keyword) const {
    std::vector<Instruction> found;
    std::copy_if(instructions.begin(), instructions.end(), std::back_inserter(found),
                 [&](const Instruction& instruction) { return instruction.keyword == keyword; });
    return found;
  }
};

struct Dockerfile {
  std::vector<Instruction> preamble;  // before the first FROM (ARG, parser directives)
  std::vector<Stage> stages;
};

std::vector<Instruction> parse_instructions(const std::string& text) {
  std::vector<Instruction> instructions;
  std::istringstream in(text);
  std::string line;
  std::string logical;
  while (std::getline(in, line)) {
    const std::string trimmed = strip(line);
    // Comment lines are dropped, also in the middle of a continued instruction.
    if (trimmed.empty() || trimmed.front() == '#') {
      continue;
    }
    if (trimmed.back() == '\\') {
      logical += trimmed.substr(0, trimmed.size() - 1) + " ";
      continue;
    }
    logical += trimmed;
    const auto space = logical.find_first_of(" \t");
    Instruction instruction;
    instruction.keyword = logical.substr(0, space);
    std::transform(instruction.keyword.begin(), instruction.keyword.end(), instruction.keyword.begin(),
                   [](unsigned char c) { return std::toupper(c); });
    instruction.arguments = space == std::string::npos ? "" : strip(logical.substr(space));
    instructions.push_back(instruction);
    logical.clear();
  }
  REQUIRE_MESSAGE(logical.empty(), "the Dockerfile ends inside a continued line");
  return instructions;
}

Dockerfile parse_dockerfile() {
  Dockerfile dockerfile;
  for (const Instruction& instruction : parse_instructions(read_text(dockerfile_source_dir / "Dockerfile"))) {
    if (instruction.keyword == "FROM") {
      const std::vector<std::string> parts = words(instruction.arguments);
      Stage stage;
      REQUIRE_MESSAGE(!parts.empty(), "FROM without an image");
      stage.image = parts[0];
      if (parts.size() == 3) {
        std::string as = parts[1];
        std::transform(as.begin(), as.end(), as.begin(), [](unsigned char c) { return std::toupper(c); });
        REQUIRE(as == "AS");
        stage.name = parts[2];
      } else {
        REQUIRE_MESSAGE(parts.size() == 1, "unexpected FROM " << instruction.arguments);
      }
      dockerfile.stages.push_back(stage);
    } else if (dockerfile.stages.empty()) {
      dockerfile.preamble.push_back(instruction);
    } else {
      dockerfile.stages.back().instructions.push_back(instruction);
    }
  }
  return dockerfile;
}

const Dockerfile& dockerfile() {
  static const Dockerfile parsed = parse_dockerfile();
  return parsed;
}

const Stage& stage(std::size_t index) {
  REQUIRE(dockerfile().stages.size() == 3);
  return dockerfile().stages[index];
}
const Stage& build_stage() { return stage(0); }
const Stage& runtime_files_stage() { return stage(1); }
const Stage& runtime_stage() { return stage(2); }

// The packages of every `apt-get VERB` (install, download) in the stage's RUN instructions.
std::multiset<std::string> apt_packages(const Stage& stage, const std::string& verb) {
  std::multiset<std::string> packages;
  for (const Instruction& run : stage.all("RUN")) {
    const std::vector<std::string> tokens = words(run.arguments);
    for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
      if (tokens[i] != "apt-get") {
        continue;
      }
      std::size_t j = i + 1;
      while (j < tokens.size() && tokens[j] != verb && tokens[j] != "&&") {
        ++j;
      }
      if (j == tokens.size() || tokens[j] != verb) {
        continue;
      }
      for (++j; j < tokens.size() && tokens[j] != "&&" && tokens[j] != ";" && tokens[j] != "||"; ++j) {
        if (tokens[j].front() != '-') {
          packages.insert(tokens[j]);
        }
      }
    }
  }
  return packages;
}

std::multiset<std::string> apt_installed(const Stage& stage) { return apt_packages(stage, "install"); }

// Whether the build context leaves `path` out, as Docker and buildah read .dockerignore: each pattern
// (a path.Match pattern, `**` for any number of folders) excludes what it matches and everything below
// it, a `!` pattern takes back what it matches, and the last pattern that matches wins.
bool ignored_by_dockerignore(const std::string& path) {
  std::istringstream in(read_text(dockerfile_source_dir / ".dockerignore"));
  bool ignored = false;
  for (std::string line; std::getline(in, line);) {
    line = strip(line);
    if (line.empty() || line.front() == '#') continue;
    const bool exception = line.front() == '!';
    std::string pattern = exception ? line.substr(1) : line;
    std::vector<std::string> prefixes;  // the path and each folder above it
    for (std::size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
      prefixes.push_back(path.substr(0, slash));
    }
    prefixes.push_back(path);
    bool matches = false;
    for (const std::string& prefix : prefixes) {
      if (pattern.rfind("**/", 0) == 0) {  // any folder depth: the rest matches a tail of the path
        for (std::size_t at = 0; at != std::string::npos; at = prefix.find('/', at + 1)) {
          const std::string tail = at == 0 ? prefix : prefix.substr(at + 1);
          matches = matches || fnmatch(pattern.substr(3).c_str(), tail.c_str(), FNM_PATHNAME) == 0;
          if (at == 0 && prefix.find('/') == std::string::npos) break;
        }
      } else {
        matches = matches || fnmatch(pattern.c_str(), prefix.c_str(), FNM_PATHNAME) == 0;
      }
    }
    if (matches) ignored = !exception;
  }
  return ignored;
}

std::string all_run_text(const Stage& stage) {
  std::string text;
  for (const Instruction& run : stage.all("RUN")) {
    text += run.arguments + "\n";
  }
  return text;
}

// The JSON (exec) form of ENTRYPOINT and CMD: a flow sequence of strings, which YAML reads as is.
std::vector<std::string> exec_form(const Instruction& instruction) {
  REQUIRE_MESSAGE(instruction.arguments.front() == '[', instruction.keyword << " is not in exec (JSON) form");
  const YAML::Node node = YAML::Load(instruction.arguments);
  REQUIRE(node.IsSequence());
  std::vector<std::string> values;
  for (const YAML::Node& item : node) {
    values.push_back(item.as<std::string>());
  }
  return values;
}

std::string single(const Stage& stage, const std::string& keyword) {
  const std::vector<Instruction> found = stage.all(keyword);
  REQUIRE_MESSAGE(found.size() == 1, "expected one " << keyword << " in stage " << stage.name << ", found "
                                                      << found.size());
  return found[0].arguments;
}

}  // namespace

TEST_SUITE("dockerfile") {

TEST_CASE("The Dockerfile has a Debian 12 build stage, a Debian 12 stage gathering the runtime's files, and a runtime stage from scratch") {
  CHECK(dockerfile().preamble.empty());
  REQUIRE(dockerfile().stages.size() == 3);
  CHECK(build_stage().image == "debian:12");
  CHECK(build_stage().name == "build");
  CHECK(runtime_files_stage().image == "debian:12");
  CHECK(runtime_files_stage().name == "runtime-files");
  CHECK(runtime_stage().image == "scratch");
  CHECK(runtime_stage().name == "runtime");
  CHECK(runtime_stage().all("RUN").empty());  // nothing to run it with: no shell, no package manager
}

TEST_CASE("The build stage installs exactly the build dependencies without recommends") {
  const std::multiset<std::string> expected{"cmake",           "g++",          "make",           "libboost-dev",
                                            "libssl-dev",      "nlohmann-json3-dev", "libsimdjson-dev", "libjemalloc-dev", "libyaml-cpp-dev", "libjq-dev",
                                            "libonig-dev",     "libre2-dev",    "libspdlog-dev", "libcli11-dev",  "doctest-dev",
                                            "libbenchmark-dev"};  // bench_admission: the profile's training run
  CHECK(apt_installed(build_stage()) == expected);
  const std::string runs = all_run_text(build_stage());
  CHECK(runs.find("apt-get update") != std::string::npos);
  CHECK(runs.find("apt-get install -y --no-install-recommends") != std::string::npos);
  CHECK(runs.find("rm -rf /var/lib/apt/lists/*") != std::string::npos);
}

TEST_CASE("The build stage builds the release binary without tests from the whole source tree, optimized from a profile and at link time") {
  CHECK(single(build_stage(), "WORKDIR") == "/src");
  CHECK(single(build_stage(), "COPY") == ". .");
  const std::string runs = all_run_text(build_stage());
  CHECK(runs.find("KARTA_CMAKE_ARGS=-DKARTA_BUILD_TESTS=OFF scripts/build-release.sh build") != std::string::npos);
  CHECK(runs.find("strip build/karta-webhook") != std::string::npos);
  // The script builds Release in three steps: instrumented, the training run, optimized from its profile.
  const std::string script = read_text(dockerfile_source_dir / "scripts/build-release.sh");
  CHECK(script.find("-DCMAKE_BUILD_TYPE=Release -DCMAKE_INTERPROCEDURAL_OPTIMIZATION=ON \"${extra[@]}\"") != std::string::npos);
  CHECK(script.find("configure -DKARTA_PGO=generate") != std::string::npos);
  CHECK(script.find("\"$dir/bench/bench_admission\" --benchmark_filter='^handle/'") != std::string::npos);
  CHECK(script.find("configure -DKARTA_PGO=use") != std::string::npos);
  CHECK(script.find("--target karta-webhook") != std::string::npos);
  // The options it sets are the project's own, and the training's inputs are in the build context
  // (.dockerignore leaves tests/corpus in).
  const std::string cmake_lists = read_text(dockerfile_source_dir / "CMakeLists.txt");
  CHECK(cmake_lists.find("option(KARTA_BUILD_TESTS") != std::string::npos);
  CHECK(cmake_lists.find("option(KARTA_BUILD_BENCHMARKS") != std::string::npos);
  CHECK(cmake_lists.find("set(KARTA_PGO \"\" CACHE STRING") != std::string::npos);
  CHECK(cmake_lists.find("add_executable(karta-webhook") != std::string::npos);
  // The commit --version names comes from the build argument (the context has no .git), set before the build.
  const auto& instructions = build_stage().instructions;
  const auto arg = std::find_if(instructions.begin(), instructions.end(), [](const Instruction& instruction) {
    return instruction.keyword == "ARG" && instruction.arguments.rfind("KARTA_COMMIT", 0) == 0;
  });
  const auto build = std::find_if(instructions.begin(), instructions.end(), [](const Instruction& instruction) {
    return instruction.keyword == "RUN" && instruction.arguments.find("build-release.sh") != std::string::npos;
  });
  CHECK(arg < build);
}

TEST_CASE("The build context holds what the build stage reads and leaves out the test suite, VCS data and build trees") {
  // What CMake configures and compiles with tests off, and what the profile's training reads
  // (bench/bench_admission.cpp: the demo JobSet, the policy, the corpus samples).
  for (const char* needed : {"CMakeLists.txt", "cmake/build_commit.cmake", "cmake/embed_catalog.cmake", "cli/main.cpp",
                             "server/https_server.cpp", "admission/admission_review.cpp", "definitions/catalog/jobset.x-k8s.io-jobset-v1alpha2.yaml",
                             "definitions/api/pod-v1.json", "third_party/spdlog_library.cpp", "bench/CMakeLists.txt",
                             "bench/bench_admission.cpp", "bench/paced-load.cmake", "scripts/build-release.sh",
                             "examples/jobset-demo.yaml", "examples/policy.yaml"}) {
    CHECK_MESSAGE(!ignored_by_dockerignore(needed), ".dockerignore drops " << needed);
  }
  std::size_t samples = 0;
  for (const auto& entry : fs::directory_iterator(dockerfile_source_dir / "tests/corpus/samples")) {
    const std::string path = "tests/corpus/samples/" + entry.path().filename().string();
    CHECK_MESSAGE(!ignored_by_dockerignore(path), ".dockerignore drops " << path);
    ++samples;
  }
  CHECK(samples > 0);
  for (const char* left_out : {".git", "build/karta-webhook", "build-asan/CMakeCache.txt", "certs/out/tls.key",
                               "tests/corpus/crds/llminferenceservice.yaml", "tests/unit-dockerfile.cpp", "tests/data",
                               "fuzz/corpus", "docs/definitions.md", "manifests/base/deployment.yaml",
                               "definitions/.catalog.yaml.swp"}) {
    CHECK_MESSAGE(ignored_by_dockerignore(left_out), ".dockerignore keeps " << left_out);
  }
  // The matcher itself: a pattern takes a whole folder, a later exception takes part of it back.
  CHECK(ignored_by_dockerignore("tests/corpus/live/x.yaml"));
  CHECK_FALSE(ignored_by_dockerignore("tests/corpus/samples/x.yaml"));
  CHECK_FALSE(ignored_by_dockerignore("buildx/file"));
}

TEST_CASE("The runtime's files are unpacked from Debian's packages of the shared libraries, with the CA bundle") {
  // jemalloc, yaml-cpp and RE2 are linked from their static archives (CMakeLists.txt, KARTA_STATIC_SMALL_LIBS),
  // and spdlog is compiled in (third_party/spdlog_library.cpp).
  const std::multiset<std::string> expected{"libssl3", "libsimdjson14", "libjq1",     "libonig5",
                                            "libfmt9", "libstdc++6",    "libgcc-s1", "libc6"};
  const std::multiset<std::string> downloaded = apt_packages(runtime_files_stage(), "download");
  CHECK(downloaded == expected);
  for (const std::string& package : downloaded) {
    CHECK_MESSAGE(package.find("-dev") == std::string::npos, package << " is a development package");
  }
  // Installed in the gathering stage only, for the bundle its maintainer script makes.
  CHECK(apt_installed(runtime_files_stage()) == std::multiset<std::string>{"ca-certificates"});
  const std::string runs = all_run_text(runtime_files_stage());
  CHECK(runs.find("--no-install-recommends") != std::string::npos);
  CHECK(runs.find("dpkg-deb -x \"$deb\" /rootfs") != std::string::npos);
  CHECK(runs.find("cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/") != std::string::npos);
  CHECK(runs.find("rm -rf /debs /var/lib/apt/lists/*") != std::string::npos);
}

// The packages `package` depends on (Depends and Pre-Depends, first of each alternative), as dpkg knows them.
std::set<std::string> dependencies_of(const std::string& package) {
  int code = 0;
  const std::string out =
      karta::test::run_command("dpkg-query -W -f='${Pre-Depends}, ${Depends}' '" + package + ":amd64' 2>/dev/null || "
                               "dpkg-query -W -f='${Pre-Depends}, ${Depends}' '" + package + "'", &code);
  REQUIRE_MESSAGE(code == 0, "dpkg-query " << package << ": " << out);
  std::set<std::string> names;
  std::istringstream items(out);
  for (std::string item; std::getline(items, item, ',');) {
    item = strip(item.substr(0, item.find('|')));
    item = item.substr(0, item.find_first_of(" (:"));
    if (!item.empty()) names.insert(item);
  }
  return names;
}

TEST_CASE("Every library package of the runtime brings the library packages it depends on") {
  // dpkg-deb -x unpacks a package without its dependencies, so the list must be closed: dropping libonig5
  // (libjq1's) or libgcc-s1 (libstdc++6's) would leave a library its loader cannot find. gcc-12-base holds
  // only documentation.
  const std::multiset<std::string> downloaded = apt_packages(runtime_files_stage(), "download");
  for (const std::string& package : downloaded) {
    for (const std::string& dependency : dependencies_of(package)) {
      if (dependency == "gcc-12-base") continue;
      CHECK_MESSAGE(downloaded.count(dependency) == 1, package << " depends on " << dependency << ", which the image lacks");
    }
  }
  CHECK(dependencies_of("libjq1").count("libonig5") == 1);  // a sanity check of the reading
}

// The shared libraries the built binary names (its DT_NEEDED entries, as `readelf -d` prints them).
std::set<std::string> needed_libraries(const fs::path& binary) {
  int code = 0;
  const std::string out = karta::test::run_command("readelf -d '" + binary.string() + "'", &code);
  REQUIRE_MESSAGE(code == 0, "readelf -d " << binary << ": " << out);
  std::set<std::string> names;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    const auto open = line.find("(NEEDED)");
    const auto first = line.find('[', open), last = line.rfind(']');
    if (open != std::string::npos && first != std::string::npos && last > first) {
      names.insert(line.substr(first + 1, last - first - 1));
    }
  }
  return names;
}

// The Debian package that installed the library `soname` of this machine's architecture (`dpkg -S`).
std::string package_of(const std::string& soname) {
  static const std::string triplet = [] {
    const std::string machine = karta::test::run_command("gcc -dumpmachine");  // x86_64-linux-gnu
    return machine.substr(0, machine.find_first_of("\r\n"));
  }();
  int code = 0;
  const std::string out = karta::test::run_command("dpkg -S '*/" + triplet + "/" + soname + "'", &code);
  REQUIRE_MESSAGE(code == 0, "dpkg -S " << soname << ": " << out);
  return out.substr(0, out.find_first_of(":\n"));
}

TEST_CASE("The runtime holds the package of every shared library the built binary needs, and no other") {
  // What the build here links (the image's build stage runs the same CMakeLists.txt on Debian 12): a
  // library the binary needs and the image lacks would stop the container at start; one the image holds
  // and the binary does not need is dead weight. Not counted: the sanitizers' runtimes of the test builds.
  const std::set<std::string> sanitizers{"libasan8", "libubsan1", "libtsan2"};
  std::set<std::string> needed;
  for (const std::string& soname : needed_libraries(karta::test::binary_path())) {
    CAPTURE(soname);
    const std::string package = package_of(soname);
    if (sanitizers.count(package) == 0) needed.insert(package);
  }
  CHECK(needed.count("libssl3") == 1);  // a sanity check of the reading: the binary links OpenSSL
  // libonig5 is libjq1's own dependency, and libgcc-s1 libstdc++6's (the binary may not name them).
  std::set<std::string> downloaded;
  for (const std::string& package : apt_packages(runtime_files_stage(), "download")) {
    if (package != "libonig5" && (package != "libgcc-s1" || needed.count("libgcc-s1") == 1)) downloaded.insert(package);
  }
  auto listed = [](const std::set<std::string>& packages) {
    std::string text;
    for (const auto& package : packages) text += (text.empty() ? "" : " ") + package;
    return text;
  };
  CHECK(listed(downloaded) == listed(needed));
}

TEST_CASE("The runtime stage copies the binary from the build stage and the catalog from the sources") {
  const std::vector<Instruction> copies = runtime_stage().all("COPY");
  std::vector<std::string> arguments;
  for (const Instruction& copy : copies) {
    arguments.push_back(copy.arguments);
  }
  CHECK(arguments == std::vector<std::string>{
                         "--from=runtime-files /rootfs/ /",
                         "--from=build /src/build/karta-webhook /usr/local/bin/karta-webhook",
                         "definitions/catalog/ /usr/share/karta-webhook/definitions/",
                     });
  CHECK(fs::is_directory(dockerfile_source_dir / "definitions" / "catalog"));
  // kubectl runs kubectl-karta from the PATH for `kubectl karta`: a link beside the binary.
  CHECK(all_run_text(runtime_files_stage()).find("ln -s karta-webhook /rootfs/usr/local/bin/kubectl-karta") != std::string::npos);
  CHECK(single(runtime_stage(), "ENV") == "PATH=/usr/local/bin:/usr/bin:/bin");
}

TEST_CASE("The runtime stage runs as the numeric non-root user the Deployment uses") {
  const std::vector<Instruction> users = runtime_stage().all("USER");
  REQUIRE(users.size() == 1);
  CHECK(users[0].arguments == "65532:65532");
  // USER comes after every RUN, so nothing in the final image is set up as root after it.
  const auto& instructions = runtime_stage().instructions;
  const auto user_at = std::find_if(instructions.begin(), instructions.end(),
                                    [](const Instruction& instruction) { return instruction.keyword == "USER"; });
  CHECK(std::none_of(user_at, instructions.end(),
                     [](const Instruction& instruction) { return instruction.keyword == "RUN"; }));

  const std::string uid = users[0].arguments.substr(0, users[0].arguments.find(':'));
  REQUIRE(!uid.empty());
  REQUIRE(std::all_of(uid.begin(), uid.end(), [](unsigned char c) { return std::isdigit(c); }));
  CHECK(std::stoi(uid) != 0);
  // The image's /etc/passwd and /etc/group name it, as distroless images do.
  const std::string files = all_run_text(runtime_files_stage());
  CHECK(files.find("nonroot:x:" + uid + ":" + uid + ":nonroot:/home/nonroot:/sbin/nologin") != std::string::npos);
  CHECK(files.find("nonroot:x:" + uid + ":") != std::string::npos);

  YAML::Node deployment;
  for (const YAML::Node& document : YAML::LoadAllFromFile((dockerfile_source_dir / "manifests" / "base" /
                                                           "deployment.yaml").string())) {
    if (document["kind"].IsDefined() && document["kind"].as<std::string>() == "Deployment") {
      deployment = document;
    }
  }
  REQUIRE(deployment.IsMap());
  CHECK(deployment["spec"]["template"]["spec"]["securityContext"]["runAsUser"].as<int>() == std::stoi(uid));
}

TEST_CASE("The image exposes 8443 and runs serve with the mounted certificate by default") {
  CHECK(single(runtime_stage(), "EXPOSE") == "8443");
  const std::vector<Instruction> entrypoints = runtime_stage().all("ENTRYPOINT");
  REQUIRE(entrypoints.size() == 1);
  CHECK(exec_form(entrypoints[0]) == std::vector<std::string>{"/usr/local/bin/karta-webhook"});
  const std::vector<Instruction> commands = runtime_stage().all("CMD");
  REQUIRE(commands.size() == 1);
  CHECK(exec_form(commands[0]) == std::vector<std::string>{"serve", "--tls-cert-file",
                                                           "/etc/karta-webhook/tls/tls.crt",
                                                           "--tls-private-key-file",
                                                           "/etc/karta-webhook/tls/tls.key", "--port", "8443"});
}

TEST_CASE("The build context leaves out VCS data, build trees and generated keys") {
  std::set<std::string> ignored;
  std::istringstream in(read_text(dockerfile_source_dir / ".dockerignore"));
  std::string line;
  while (std::getline(in, line)) {
    line = strip(line);
    if (!line.empty() && line.front() != '#') {
      ignored.insert(line);
    }
  }
  for (const char* pattern : {".git", "build", "certs"}) {
    CHECK_MESSAGE(ignored.count(pattern) == 1, ".dockerignore lacks " << pattern);
  }
  // The sources the build needs stay in the context.
  for (const char* needed : {"definitions", "CMakeLists.txt", "cmake", "cli", "server", "admission"}) {
    CHECK_MESSAGE(ignored.count(needed) == 0, ".dockerignore drops " << needed);
  }
}

}  // TEST_SUITE

}  // namespace unit_dockerfile
