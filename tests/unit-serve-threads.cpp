// serve's default worker threads: one per available CPU (cgroup quota aware), and --help says so.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cli/commands.h"
#include "server/cpu_budget.h"
#include "support/test_support.h"

namespace unit_serve_threads {  // this file's names, apart from other tests' in a unity build

namespace {

std::string serve_help() {
  const karta::test::CliRun run = karta::test::run_cli({"karta-webhook", "serve", "--help"});
  return run.out + run.err;
}

}  // namespace

TEST_CASE("the default is one worker thread per available CPU, at most 256") {
  CHECK(karta::default_server_threads() == std::min<std::size_t>(256, karta::available_cpus()));
}

TEST_CASE("serve --help states the default and shows its value for this machine") {
  const std::string help = serve_help();
  INFO(help);
  CHECK(help.find("--threads UINT:INT in [1 - 256]=" + std::to_string(karta::default_server_threads()) + "\n") !=
        std::string::npos);
  CHECK(help.find("Worker threads (default: one per available CPU, capped by the cgroup CPU quota)\n") !=
        std::string::npos);
  CHECK(help.find("4 per available CPU") == std::string::npos);
}

}  // namespace unit_serve_threads
