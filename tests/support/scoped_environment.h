#pragma once

// Environment variables and the working directory changed for one scope and restored after it: PATH for
// the credential plugin's lookup, HTTPS_PROXY and NO_PROXY for the proxy's. The tests of one process run
// one at a time, so nothing else sees the change.

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace karta::test {

struct ScopedEnvironment {
  std::vector<std::pair<std::string, std::optional<std::string>>> saved;
  std::optional<std::filesystem::path> saved_directory;

  ScopedEnvironment& set(const std::string& name, const std::string& value) {
    const char* old = std::getenv(name.c_str());
    saved.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    ::setenv(name.c_str(), value.c_str(), 1);
    return *this;
  }
  ScopedEnvironment& change_directory(const std::filesystem::path& directory) {
    if (!saved_directory) saved_directory = std::filesystem::current_path();
    std::filesystem::current_path(directory);
    return *this;
  }
  ~ScopedEnvironment() {
    for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
      if (it->second)
        ::setenv(it->first.c_str(), it->second->c_str(), 1);
      else
        ::unsetenv(it->first.c_str());
    }
    std::error_code ignored;
    if (saved_directory) std::filesystem::current_path(*saved_directory, ignored);
  }
};

}  // namespace karta::test
