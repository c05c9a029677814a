#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>

#include <spdlog/spdlog.h>

int main(int argc, char** argv) {
  // Admission logs are asserted where they matter; elsewhere they would drown the test output.
  // KARTA_TEST_LOG=debug shows them when a test needs explaining.
  const char* level = std::getenv("KARTA_TEST_LOG");
  spdlog::set_level(level != nullptr ? spdlog::level::from_str(level) : spdlog::level::off);
  doctest::Context context(argc, argv);
  return context.run();
}
