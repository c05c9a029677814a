// The release build's profile-guided optimization (CMakeLists.txt, KARTA_PGO; scripts/build-release.sh):
// a configure asked to use a profile that is not there, or given a mode it does not know, stops with an
// error that says what to do, rather than building a binary silently without the profile.
// (The whole three-step build takes minutes: it is run by the README's start command and the Dockerfile,
// and measured in bench/README.md, not here.)

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "support/test_support.h"

namespace unit_release_build {  // this file's names, apart from other tests' in a unity build

namespace fs = std::filesystem;

// `cmake -S <sources> -B <dir>/build <arguments>`: its output, and its exit code in `code`.
std::string configure(const fs::path& dir, const std::string& arguments, int& code) {
  return karta::test::run_command("cmake -S '" + std::string(KARTA_SOURCE_DIR) + "' -B '" + (dir / "build").string() +
                                      "' -DKARTA_BUILD_TESTS=OFF -DKARTA_BUILD_BENCHMARKS=OFF " + arguments + " 2>&1",
                                  &code);
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

TEST_CASE("KARTA_PGO=use without a recorded profile stops the configure, naming the directory and the fix") {
  karta::test::TempDir temp;
  const fs::path profile = temp.path / "no-profile-here";
  fs::create_directories(profile);
  int code = 0;
  const std::string out = configure(temp.path, "-DCMAKE_BUILD_TYPE=Release -DKARTA_PGO=use -DKARTA_PGO_DIR='" + profile.string() + "'", code);
  CHECK(code != 0);
  CHECK(squeezed(out).find("KARTA_PGO=use: no profile in " + profile.string() + "; build with KARTA_PGO=generate in this "
                 "build directory and run the training first (scripts/build-release.sh does both)") != std::string::npos);
  CHECK_FALSE(fs::exists(temp.path / "build" / "Makefile"));
}

TEST_CASE("An unknown KARTA_PGO mode stops the configure; none configures as before") {
  karta::test::TempDir temp;
  int code = 0;
  const std::string out = configure(temp.path, "-DKARTA_PGO=sometimes", code);
  CHECK(code != 0);
  CHECK(squeezed(out).find("KARTA_PGO=sometimes: expected empty, generate or use") != std::string::npos);

  karta::test::TempDir plain;
  const std::string plain_out = configure(plain.path, "-DCMAKE_BUILD_TYPE=Release", code);
  CHECK_MESSAGE(code == 0, plain_out);
  CHECK(fs::exists(plain.path / "build" / "Makefile"));
}

}  // namespace unit_release_build
