#pragma once
// The commit this binary was built from, as CMake found it when it configured the build
// (cmake/build_commit.cmake: the KARTA_COMMIT cache variable, `git rev-parse HEAD`, or the environment's
// KARTA_COMMIT, as the image's build stage passes it), or "unknown". `karta-webhook --version` prints it.
#include <string_view>

namespace karta {

std::string_view build_commit();

}  // namespace karta
