// The built-in catalog's jq is compiled on first use (or by the webhook's reload thread), not while the
// catalog loads: loading must not pay libjq 1.6's 20-50 ms a compile, and nothing of it may be lost.

#include <doctest/doctest.h>

#include <future>
#include <thread>
#include <vector>

#include "definitions/catalog.h"
#include "definitions/jq_program.h"

namespace unit_catalog_compile {  // this file's names, apart from other tests' in a unity build

using karta::ExpressionGroup;
using karta::json;
using namespace std::chrono_literals;

TEST_CASE("loading the built-in catalog compiles no jq state") {
  karta::CatalogSources sources;
  sources.concurrency = 2;
  karta::Catalog catalog = karta::load_catalog(sources);
  REQUIRE(catalog.size() >= 25);
  std::size_t programs = 0;
  for (const auto& definition : catalog.definitions()) {
    for (auto group : {ExpressionGroup::Structure, ExpressionGroup::Status, ExpressionGroup::Pod}) {
      if (const karta::JqProgram* program = definition->bundle(group)) {
        ++programs;
        CHECK_MESSAGE(program->states() == 0, definition->definition().source);
      }
    }
  }
  CHECK(programs > 40);  // 25 definitions, most with structure and status programs
}

TEST_CASE("every jq program of the built-in catalog compiles, and prepare_admission compiles one state until runs wait for it") {
  karta::CatalogSources sources;
  sources.concurrency = 2;
  karta::Catalog catalog = karta::load_catalog(sources);
  for (const auto& definition : catalog.definitions()) {
    const std::string& source = definition->definition().source;
    for (auto group : {ExpressionGroup::Structure, ExpressionGroup::Status, ExpressionGroup::Pod}) {
      const karta::JqProgram* program = definition->bundle(group);
      if (program == nullptr) continue;
      INFO(source << " group " << static_cast<int>(group));
      CHECK(karta::jq_compile_error(program->text()) == std::nullopt);
    }
    const karta::JqProgram* structure = definition->bundle(ExpressionGroup::Structure);
    if (structure == nullptr) {
      CHECK_FALSE(definition->prepare_admission());
      continue;
    }
    INFO(source);
    CHECK(definition->prepare_admission());
    CHECK(structure->states() == 1);
    CHECK_FALSE(definition->prepare_admission());  // no run has waited for it: one state, not one per CPU
    CHECK(structure->states() == 1);
  }
}

TEST_CASE("a program compiled on first use compiles one state at its first run and answers as one compiled at once") {
  karta::JqProgram lazy(".spec.replicas // 1 | tonumber", /*copies=*/2, 5'000ms, karta::JqCompilation::OnFirstUse);
  karta::JqProgram eager(".spec.replicas // 1 | tonumber", /*copies=*/2);
  CHECK(lazy.states() == 0);
  CHECK(eager.states() == 1);  // compiled once to check it; the second copy only when runs contend
  karta::JqInput input(json::parse(R"({"spec":{"replicas":"3"}})"));
  auto first = lazy.run(input, 10);
  CHECK(first.outputs == std::vector<json>{3});
  CHECK(first.error == std::nullopt);
  CHECK(lazy.states() == 1);
  CHECK(eager.run(input, 10).outputs == first.outputs);
  CHECK_FALSE(lazy.prepare());
  CHECK(lazy.states() == 1);
}

TEST_CASE("prepare adds a state only after a run had to wait for one, and never more than the copies allowed") {
  karta::JqProgram program(".a", /*copies=*/2, /*wait_limit=*/50ms);
  REQUIRE(program.states() == 1);
  CHECK_FALSE(program.prepare());

  // Holds the only state inside a run's sink until told to let go.
  auto hold_state = [&program](std::promise<void>& inside, std::shared_future<void> leave) {
    return std::thread([&program, &inside, leave] {
      karta::JqInput input(json{{"a", 1}});
      karta::JqOutcome outcome;
      program.run(input, 10, [&](json&&) { inside.set_value(); leave.wait(); }, outcome);
    });
  };
  std::promise<void> inside, leave;
  std::thread holder = hold_state(inside, leave.get_future().share());
  inside.get_future().wait();
  karta::JqInput input(json{{"a", 2}});
  auto refused = program.run(input, 10);  // waits out the 50 ms: the one state is held
  REQUIRE(refused.error.has_value());
  CHECK(refused.error->starts_with("no jq state came free within 50 ms"));
  leave.set_value();
  holder.join();

  CHECK(program.states() == 1);
  CHECK(program.prepare());  // a run waited: a second state
  CHECK(program.states() == 2);
  CHECK_FALSE(program.prepare());  // no wait since
  CHECK(program.states() == 2);
  CHECK(program.run(input, 10).outputs == std::vector<json>{2});

  // Both held, a third run waits: the pool is at its copies and stays there.
  std::promise<void> inside_a, inside_b, leave_both;
  std::shared_future<void> leave_shared = leave_both.get_future().share();
  std::thread a = hold_state(inside_a, leave_shared);
  std::thread b = hold_state(inside_b, leave_shared);
  inside_a.get_future().wait();
  inside_b.get_future().wait();
  CHECK(program.run(input, 10).error.has_value());
  leave_both.set_value();
  a.join();
  b.join();
  CHECK_FALSE(program.prepare());
  CHECK(program.states() == 2);
}

TEST_CASE("four threads on a program compiled on first use with room for one state compile it once and all get answers") {
  karta::JqProgram lazy(".a", /*copies=*/1, 5'000ms, karta::JqCompilation::OnFirstUse);
  std::vector<std::thread> threads;
  std::vector<std::vector<json>> outputs(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      karta::JqInput input(json{{"a", t}});
      for (int i = 0; i < 50; ++i) {
        auto outcome = lazy.run(input, 10);
        if (outcome.error || outcome.outputs != std::vector<json>{t}) return;
      }
      outputs[t] = {t};
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) CHECK(outputs[t] == std::vector<json>{t});
  CHECK(lazy.states() == 1);
}

TEST_CASE("a program compiled on first use whose text does not compile answers each run with jq's error, never a wait") {
  karta::JqProgram broken(".a | ", /*copies=*/1, 5'000ms, karta::JqCompilation::OnFirstUse);
  karta::JqInput input(json::parse("{}"));
  auto outcome = broken.run(input, 10);
  REQUIRE(outcome.error.has_value());
  CHECK(outcome.error->starts_with("jq program does not compile: "));
  CHECK(broken.states() == 0);
  CHECK_FALSE(broken.prepare());
  CHECK(broken.states() == 0);
}

}  // namespace unit_catalog_compile
