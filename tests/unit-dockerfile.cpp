// The container image recipe (Dockerfile): no Docker engine is needed, the file is parsed the way the
// builder reads it (continuations joined, comments dropped, one instruction per logical line) and each
// stage is checked against what the binary and the manifests expect.
#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
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

const Stage& build_stage() {
  REQUIRE(dockerfile().stages.size() == 2);
  return dockerfile().stages[0];
}

const Stage& runtime_stage() {
  REQUIRE(dockerfile().stages.size() == 2);
  return dockerfile().stages[1];
}

// The packages of every `apt-get install` in the stage's RUN instructions.
std::multiset<std::string> apt_installed(const Stage& stage) {
  std::multiset<std::string> packages;
  for (const Instruction& run : stage.all("RUN")) {
    const std::vector<std::string> tokens = words(run.arguments);
    for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
      if (tokens[i] != "apt-get" || std::find(tokens.begin() + i, tokens.end(), "install") == tokens.end()) {
        continue;
      }
      std::size_t j = i + 1;
      while (j < tokens.size() && tokens[j] != "install" && tokens[j] != "&&") {
        ++j;
      }
      if (j == tokens.size() || tokens[j] != "install") {
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

TEST_CASE("The Dockerfile has a Debian 12 build stage and a Debian 12 slim runtime stage") {
  CHECK(dockerfile().preamble.empty());
  REQUIRE(dockerfile().stages.size() == 2);
  CHECK(build_stage().image == "debian:12");
  CHECK(build_stage().name == "build");
  CHECK(runtime_stage().image == "debian:12-slim");
  CHECK(runtime_stage().name == "runtime");
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
  CHECK(read_text(dockerfile_source_dir / ".dockerignore").find("tests") == std::string::npos);
}

TEST_CASE("The runtime stage installs only the shared libraries the binary links") {
  // jemalloc, yaml-cpp and RE2 are linked from their static archives (CMakeLists.txt, KARTA_STATIC_SMALL_LIBS),
  // and spdlog is compiled in (third_party/spdlog_library.cpp).
  const std::multiset<std::string> expected{"ca-certificates", "libssl3", "libsimdjson14", "libjq1", "libonig5",
                                            "libfmt9"};
  const std::multiset<std::string> installed = apt_installed(runtime_stage());
  CHECK(installed == expected);
  for (const std::string& package : installed) {
    CHECK_MESSAGE(package.find("-dev") == std::string::npos, package << " is a development package");
  }
  const std::string runs = all_run_text(runtime_stage());
  CHECK(runs.find("--no-install-recommends") != std::string::npos);
  CHECK(runs.find("rm -rf /var/lib/apt/lists/*") != std::string::npos);
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

TEST_CASE("The runtime stage installs the package of every shared library the built binary needs") {
  // What the build here links (the image's build stage runs the same CMakeLists.txt on Debian 12): a
  // library the binary needs and the image lacks would stop the container at start; one the image
  // installs and the binary does not need is dead weight. Not listed in the image: the base image's own
  // (libc, libstdc++, libgcc), and the sanitizers' runtimes of the test builds.
  const std::set<std::string> in_base_or_sanitizer{"libc6", "libstdc++6", "libgcc-s1", "libasan8", "libubsan1",
                                                   "libtsan2"};
  std::set<std::string> needed;
  for (const std::string& soname : needed_libraries(karta::test::binary_path())) {
    CAPTURE(soname);
    const std::string package = package_of(soname);
    if (in_base_or_sanitizer.count(package) == 0) needed.insert(package);
  }
  CHECK(needed.count("libssl3") == 1);  // a sanity check of the reading: the binary links OpenSSL
  // libonig5 is libjq1's own dependency, listed in the image for the reader; ca-certificates is no library.
  std::set<std::string> installed;
  for (const std::string& package : apt_installed(runtime_stage())) {
    if (package != "ca-certificates" && package != "libonig5") installed.insert(package);
  }
  auto listed = [](const std::set<std::string>& packages) {
    std::string text;
    for (const auto& package : packages) text += (text.empty() ? "" : " ") + package;
    return text;
  };
  CHECK(listed(installed) == listed(needed));
}

TEST_CASE("The runtime stage copies the binary from the build stage and the catalog from the sources") {
  const std::vector<Instruction> copies = runtime_stage().all("COPY");
  std::vector<std::string> arguments;
  for (const Instruction& copy : copies) {
    arguments.push_back(copy.arguments);
  }
  CHECK(arguments == std::vector<std::string>{
                         "--from=build /src/build/karta-webhook /usr/local/bin/karta-webhook",
                         "definitions/catalog/ /usr/share/karta-webhook/definitions/",
                     });
  CHECK(fs::is_directory(dockerfile_source_dir / "definitions" / "catalog"));
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
  for (const char* pattern : {".git", "build", "certs/out"}) {
    CHECK_MESSAGE(ignored.count(pattern) == 1, ".dockerignore lacks " << pattern);
  }
  // The sources the build needs stay in the context.
  for (const char* needed : {"definitions", "CMakeLists.txt", "cmake", "cli", "server", "admission"}) {
    CHECK_MESSAGE(ignored.count(needed) == 0, ".dockerignore drops " << needed);
  }
}

}  // TEST_SUITE

}  // namespace unit_dockerfile
