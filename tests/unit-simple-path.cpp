#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "definitions/jq_program.h"
#include "definitions/simple_path.h"

namespace unit_simple_path {  // this file's names, apart from other tests' in a unity build

using karta::json;
using karta::JqInput;
using karta::JqProgram;
using karta::SimplePath;

namespace {

std::vector<std::string> native_paths(const std::string& expression, const json& document, bool* error = nullptr) {
  auto path = SimplePath::parse(expression);
  REQUIRE_MESSAGE(path.has_value(), expression);
  auto parsed = karta::JsonDocument::from(document);
  auto result = path->evaluate(parsed.root(), 1000);
  if (error != nullptr) *error = result.error.has_value();
  std::vector<std::string> out;
  for (const auto& m : result.matches) out.push_back(m.pointer.to_string());
  return out;
}

// The same through libjq: the pointers of path(EXPR), stopping at an error as jq does.
std::vector<std::string> jq_paths(const std::string& expression, const json& document, bool* error = nullptr) {
  JqProgram program("path(" + expression + ")", 1);
  JqInput input(document);
  auto outcome = program.run(input, 1000);
  if (error != nullptr) *error = outcome.error.has_value();
  std::vector<std::string> out;
  for (const auto& p : outcome.outputs) {
    json::json_pointer pointer;
    for (const auto& token : p) {
      if (token.is_string()) pointer /= token.get<std::string>();
      else pointer /= token.get<std::size_t>();
    }
    out.push_back(pointer.to_string());
  }
  return out;
}

}  // namespace

TEST_CASE("the simple grammar takes fields, quoted fields, indexes and iteration, and nothing else") {
  CHECK(SimplePath::parse(".spec.replicatedJobs[].template.spec.template").has_value());
  CHECK(SimplePath::parse(".spec[\"pytorchReplicaSpecs\"][].template").has_value());
  CHECK(SimplePath::parse(".metadata.\"kai.scheduler/queue\"").has_value());
  CHECK(SimplePath::parse(".spec.workerGroupSpecs[0]").has_value());
  CHECK(SimplePath::parse(".").has_value());
  CHECK(SimplePath::parse(".[0]").has_value());
  CHECK(SimplePath::parse(".spec.a[]?").has_value());
  CHECK(SimplePath::parse(".spec.workerGroupSpecs[]?.template").has_value());
  CHECK_FALSE(SimplePath::parse(".spec.a?").has_value());
  CHECK_FALSE(SimplePath::parse(".spec.a[]??").has_value());
  CHECK_FALSE(SimplePath::parse(".spec.a[0]?").has_value());
  CHECK_FALSE(SimplePath::parse(".spec | .a").has_value());
  CHECK_FALSE(SimplePath::parse(".a[-1]").has_value());
  CHECK_FALSE(SimplePath::parse(".a.[0]").has_value());  // jq 1.6 refuses it
  CHECK_FALSE(SimplePath::parse("spec").has_value());
  CHECK_FALSE(SimplePath::parse(".a[\"x\\n\"]").has_value());
  CHECK_FALSE(SimplePath::parse(".a, .b").has_value());
}

TEST_CASE("a simple path reaches the places jq's path() lists, in jq's order") {
  json doc = json::parse(R"({"spec":{"jobs":[{"t":{"x":1}},{"t":null},{"u":2}],
      "map":{"b":{"t":1},"a":{"t":2}}, "s":"text", "n":null}})");
  const char* expressions[] = {".spec.jobs[].t", ".spec.map[].t", ".spec.jobs[5]", ".spec.missing.deeper",
                               ".spec.n.x", ".spec.map[\"a\"].t", ".", ".spec.jobs[1].t.y"};
  for (const char* e : expressions) {
    CAPTURE(e);
    bool native_error = false, jq_error = false;
    CHECK(native_paths(e, doc, &native_error) == jq_paths(e, doc, &jq_error));
    CHECK(native_error == jq_error);
  }
  CHECK(native_paths(".spec.jobs[].t", doc) ==
        std::vector<std::string>{"/spec/jobs/0/t", "/spec/jobs/1/t", "/spec/jobs/2/t"});
  CHECK(native_paths(".spec.map[].t", doc) == std::vector<std::string>{"/spec/map/a/t", "/spec/map/b/t"});
}

TEST_CASE("errors end the stream after the outputs before them, in both evaluators") {
  json doc = json::parse(R"({"a":[{"b":[1]},{"b":null},{"b":[2]}], "s":"x", "arr":[1]})");
  for (const char* e : {".a[].b[]", ".s.x", ".s[]", ".arr.x", ".a[\"k\"]", ".missing[]"}) {
    CAPTURE(e);
    bool native_error = false, jq_error = false;
    auto native = native_paths(e, doc, &native_error);
    CHECK(native == jq_paths(e, doc, &jq_error));
    CHECK(native_error);
    CHECK(jq_error);
  }
  CHECK(native_paths(".a[].b[]", doc) == std::vector<std::string>{"/a/0/b/0"});
}

TEST_CASE("[]? iterates what it can and gives nothing, not an error, on anything else, as jq does") {
  for (const char* text : {R"({"a":[{"b":1},{"b":2}]})", R"({"a":{"y":{"b":1},"x":{"b":2}}})", R"({"a":null})", R"({})",
                           R"({"a":"text"})", R"({"a":7})", R"({"a":[1,{"b":3}]})", R"("top")"}) {
    json doc = json::parse(text);
    for (const char* expression : {".a[]?", ".a[]?.b", ".[]?", ".a[]?[]?"}) {
      CAPTURE(text);
      CAPTURE(expression);
      bool native_error = false, jq_error = false;
      CHECK(native_paths(expression, doc, &native_error) == jq_paths(expression, doc, &jq_error));
      CHECK(native_error == jq_error);
    }
  }
}

TEST_CASE("a key with a slash or a tilde is escaped in the pointer") {
  json doc = json::parse(R"({"m":{"kai.scheduler/queue":{"a~b":1}}})");
  CHECK(native_paths(".m[\"kai.scheduler/queue\"][\"a~b\"]", doc) ==
        std::vector<std::string>{"/m/kai.scheduler~1queue/a~0b"});
}

TEST_CASE("outputs past the cap are not produced") {
  json doc = {{"a", json::array()}};
  for (int i = 0; i < 1500; ++i) doc["a"].push_back(i);
  auto parsed = karta::JsonDocument::from(doc);
  auto result = SimplePath::parse(".a[]")->evaluate(parsed.root(), 1000);
  CHECK(result.matches.size() == 1000);
  CHECK(result.capped);
}

TEST_CASE("an object's members are iterated in key order, whatever order the bytes give them in") {
  // The API server sends members in its own order; jq gets them in key order too (JqInput sorts), so
  // the native path and jq agree, and a Dynamo's services are patched in the same order every time.
  auto parsed = karta::JsonDocument::parse(R"({"s":{"worker":{"n":1},"frontend":{"n":2},"decode":{"n":3}}})");
  auto result = SimplePath::parse(".s[].n")->evaluate(parsed.root(), 1000);
  std::vector<std::string> pointers;
  for (const auto& m : result.matches) pointers.push_back(m.pointer.to_string());
  CHECK(pointers == std::vector<std::string>{"/s/decode/n", "/s/frontend/n", "/s/worker/n"});
  JqProgram program("[.s[].n]", 1);
  JqInput input(parsed.root());
  CHECK(program.run(input, 10).outputs == std::vector<json>{json::array({3, 2, 1})});
}

TEST_CASE("read for its values alone, a path gives the same values, errors and cap, and no pointers") {
  const json document = json::parse(R"({"spec":{"jobs":[{"name":"a"},{"name":"b/c"},{}],"m":{"y":{"name":1},"x":{"name":2}}}})");
  auto parsed = karta::JsonDocument::from(document);
  for (const char* expression : {".spec.jobs[].name", ".spec.m[].name", ".spec.jobs[1]", ".spec.jobs[].name[]", "."}) {
    CAPTURE(expression);
    auto path = SimplePath::parse(expression);
    REQUIRE(path.has_value());
    for (std::size_t cap : {std::size_t{1}, std::size_t{1000}}) {
      auto with = path->evaluate(parsed.root(), cap);
      auto without = path->evaluate(parsed.root(), cap, /*pointers=*/false);
      CHECK(without.error == with.error);
      CHECK(without.capped == with.capped);
      REQUIRE(without.matches.size() == with.matches.size());
      for (std::size_t i = 0; i < with.matches.size(); ++i) {
        CHECK(without.matches[i].pointer.empty());
        CHECK(without.matches[i].value.has_value() == with.matches[i].value.has_value());
        if (with.matches[i].value) CHECK(karta::equals(*without.matches[i].value, karta::to_json(*with.matches[i].value)));
      }
    }
  }
  auto names = SimplePath::parse(".spec.m[].name")->evaluate(parsed.root(), 1000, false);
  REQUIRE(names.matches.size() == 2);
  CHECK(karta::to_json(*names.matches[0].value) == 2);  // x before y: key order
  CHECK(karta::to_json(*names.matches[1].value) == 1);
}

TEST_CASE("a program with one jq state serves four threads at once by waiting, never compiling another") {
  const JqProgram program("[.s[].n] | add", 1);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        JqInput input(json{{"s", json::array({{{"n", t}}, {{"n", i}}})}});
        auto outcome = program.run(input, 10);
        if (outcome.outputs != std::vector<json>{json(t + i)} || outcome.error) ++wrong;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(wrong == 0);
  CHECK(program.states() == 1);
}

}  // namespace unit_simple_path
