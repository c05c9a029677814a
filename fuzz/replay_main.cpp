// A plain main for the fuzz targets, so that a normal (GCC) build compiles them and CTest replays the
// committed corpus through them. libFuzzer builds (KARTA_BUILD_FUZZERS=ON) do not link this file.
//
//   fuzz_admission_review [FILE|DIR]...   runs LLVMFuzzerTestOneInput on every file, recursively
//
// Exits 1 when a path does not exist or no input was found (a corpus that went missing is a failure, not
// a pass); a crash or an uncaught exception in a target ends the process as it would under libFuzzer.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

std::vector<std::filesystem::path> inputs_of(const std::filesystem::path& path) {
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(path)) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(path)) {
      if (entry.is_regular_file() && entry.path().filename().string().front() != '.') files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(path);
  }
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  std::size_t replayed = 0;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-v" || arg == "--verbose") {
      verbose = true;
      continue;
    }
    if (!std::filesystem::exists(arg)) {
      std::fprintf(stderr, "%s: no such file or directory\n", arg.c_str());
      return 1;
    }
    for (const auto& file : inputs_of(arg)) {
      std::ifstream in(file, std::ios::binary);
      if (!in) {
        std::fprintf(stderr, "%s: cannot read\n", file.c_str());
        return 1;
      }
      // An exact-size heap copy, so a sanitizer build sees any read past the end.
      std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      auto* data = new std::uint8_t[bytes.size()];
      std::copy(bytes.begin(), bytes.end(), data);
      if (verbose) std::fprintf(stderr, "replaying %s (%zu bytes)\n", file.c_str(), bytes.size());
      LLVMFuzzerTestOneInput(data, bytes.size());
      delete[] data;
      ++replayed;
    }
  }
  std::printf("replayed %zu inputs\n", replayed);
  if (replayed == 0) {
    std::fprintf(stderr, "no inputs given: usage: %s [-v] FILE|DIR...\n", argv[0]);
    return 1;
  }
  return 0;
}
