// The built-in catalog's jq is compiled on first use (or by the webhook's reload thread), not while the
// catalog loads: loading must not pay libjq 1.6's 20-50 ms a compile, and nothing of it may be lost.

#include <doctest/doctest.h>

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

TEST_CASE("every jq program of the built-in catalog compiles, and prepare_admission compiles one state per CPU") {
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
    CHECK(definition->prepare_admission());
    CHECK(structure->states() == 2);
    CHECK_FALSE(definition->prepare_admission());  // one state per CPU that may run it, no more
    CHECK(structure->states() == 2);
  }
}

TEST_CASE("a program compiled on first use compiles one state at its first run and answers as one compiled at once") {
  karta::JqProgram lazy(".spec.replicas // 1 | tonumber", /*copies=*/2, 5'000ms, karta::JqCompilation::OnFirstUse);
  karta::JqProgram eager(".spec.replicas // 1 | tonumber", /*copies=*/2);
  CHECK(lazy.states() == 0);
  CHECK(eager.states() == 2);
  karta::JqInput input(json::parse(R"({"spec":{"replicas":"3"}})"));
  auto first = lazy.run(input, 10);
  CHECK(first.outputs == std::vector<json>{3});
  CHECK(first.error == std::nullopt);
  CHECK(lazy.states() == 1);
  CHECK(eager.run(input, 10).outputs == first.outputs);
  CHECK(lazy.prepare());
  CHECK(lazy.states() == 2);
  CHECK_FALSE(lazy.prepare());
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
