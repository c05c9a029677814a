// JqProgram's pool of jq states: a state is never lost, whatever the caller does, and nobody waits forever.

#include <doctest/doctest.h>

#include <future>
#include <stdexcept>
#include <thread>

#include "admission/metrics.h"
#include "definitions/jq_program.h"

namespace unit_jq_program {  // this file's names, apart from other tests' in a unity build

using karta::json;
using namespace std::chrono_literals;

TEST_CASE("an exception from the caller's sink passes through and the state goes back to the pool, finished") {
  karta::JqProgram program("path(..)", /*copies=*/1);
  karta::JqInput input(json::parse(R"({"a":{"b":[1,2,3]},"c":4})"));
  karta::JqOutcome outcome;
  int seen = 0;
  CHECK_THROWS_WITH_AS(program.run(input, 100, [&](json&&) { if (++seen == 2) throw std::runtime_error("sink full"); },
                                   outcome),
                       "sink full", std::runtime_error);
  CHECK(seen == 2);
  // With one state, a lost state would make this wait; a state left inside path() would assert on reset.
  auto again = program.run(input, 100);
  CHECK(again.error == std::nullopt);
  CHECK(again.outputs == std::vector<json>{json::array(), {"a"}, {"a", "b"}, {"a", "b", 0}, {"a", "b", 1},
                                           {"a", "b", 2}, {"c"}});
  CHECK(program.states() == 1);
}

TEST_CASE("with every state held longer than the wait limit, a run gets an error outcome, counted, and no wait") {
  karta::JqProgram program(".[]", /*copies=*/1, /*wait_limit=*/100ms);
  karta::JqInput held_input(json::parse("[1,2]"));
  std::promise<void> holding, release;
  auto released = release.get_future().share();
  std::thread holder([&] {
    karta::JqOutcome outcome;
    bool first = true;
    program.run(held_input, 10, [&](json&&) {
      if (!std::exchange(first, false)) return;
      holding.set_value();
      released.wait();
    }, outcome);
  });
  holding.get_future().wait();
  const auto before = karta::jq_pool_counters();
  karta::JqInput input(json::parse("[7]"));
  auto started = std::chrono::steady_clock::now();
  auto refused = program.run(input, 10);
  auto waited = std::chrono::steady_clock::now() - started;
  CHECK(refused.error == std::optional<std::string>("no jq state came free within 100 ms"));
  CHECK(refused.outputs.empty());
  CHECK(waited >= 100ms);
  CHECK(karta::jq_pool_counters().wait_timeouts == before.wait_timeouts + 1);
  CHECK(karta::Metrics().render().find("karta_jq_wait_timeouts_total " +
                                       std::to_string(before.wait_timeouts + 1) + "\n") != std::string::npos);
  release.set_value();
  holder.join();
  CHECK(program.run(input, 10).outputs == std::vector<json>{7});
}

TEST_CASE("a capped run inside path() is finished before the state is reused") {
  karta::JqProgram program("paths", /*copies=*/1);
  karta::JqInput input(json::parse(R"({"a":[1,2,3],"b":{"c":1}})"));
  auto capped = program.run(input, 2);
  CHECK(capped.capped);
  CHECK(capped.outputs == std::vector<json>{{"a"}, {"a", 0}});
  auto whole = program.run(input, 100);
  CHECK_FALSE(whole.capped);
  CHECK(whole.outputs.size() == 6);
}

}  // namespace unit_jq_program
