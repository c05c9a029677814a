#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <spdlog/spdlog.h>

int main(int argc, char** argv) {
  // Admission logs are asserted where they matter; elsewhere they would drown the test output.
  spdlog::set_level(spdlog::level::off);
  doctest::Context context(argc, argv);
  return context.run();
}
