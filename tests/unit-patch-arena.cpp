// The patch builder keeps what it writes in a per-request arena (json/request_arena.h) whose first block
// is the thread's buffer. These pin that the patch comes out whole and exact however the arena is fed:
// past the thread's buffer, with two builders alive at once on one thread (the second starts on the
// heap), and one after another (the buffer taken again).

#include <doctest/doctest.h>

#include <string>

#include "json/request_arena.h"
#include "mutate/json_patch_builder.h"

namespace unit_patch_arena {  // this file's names, apart from other tests' in a unity build

using karta::json;
using karta::JsonPatch;
using karta::JsonPatchBuilder;
using karta::JsonPointer;
using karta::RequestArena;

namespace {

// The patch nlohmann::json writes for `operations`: what the builder's text must equal, byte for byte.
std::string expected(const json& operations) { return operations.dump(); }

}  // namespace

TEST_CASE("text kept by an arena is a copy, and a second arena on the thread works beside the first") {
  std::string source = "spec/replicatedJobs/0/template/spec/template/metadata/labels";
  RequestArena first;
  std::string_view kept = first.keep(source);
  {
    RequestArena second;  // the thread's buffer is taken: this one starts on the heap
    std::string_view other = second.keep("a value of the second arena, longer than a short string");
    CHECK(other == "a value of the second arena, longer than a short string");
  }
  source.assign(source.size(), 'x');
  CHECK(kept == "spec/replicatedJobs/0/template/spec/template/metadata/labels");
  CHECK(first.keep("").empty());
}

TEST_CASE("a patch bigger than the thread's buffer is written whole") {
  // 400 labels of 100 bytes into a missing map (one add holding them all, about 45 KB of arena), and
  // 400 more into a present map (400 adds): past the 16 KiB buffer, on the heap, in order.
  json object = json::parse(R"({"metadata":{"labels":{"team":"vision"}},"spec":{"template":{"spec":{}}}})");
  JsonPatchBuilder builder(object);
  json created = json::object();
  json adds = json::array();
  for (int i = 0; i < 400; ++i) {
    std::string key = "platform.example.com/key-" + std::to_string(i);
    std::string value = std::string(100 - std::to_string(i).size(), 'v') + std::to_string(i);
    CHECK(builder.set_member(JsonPointer("/spec/template/metadata/labels"), key, value, false) == karta::PatchChange::Added);
    created[key] = value;
  }
  for (int i = 0; i < 400; ++i) {
    std::string key = "example.com/k~" + std::to_string(i);
    std::string value = "w/" + std::to_string(i) + std::string(90, 'w');
    CHECK(builder.set_member(JsonPointer("/metadata/labels"), key, value, false) == karta::PatchChange::Added);
    adds.push_back({{"op", "add"}, {"path", "/metadata/labels/example.com~1k~0" + std::to_string(i)}, {"value", value}});
  }
  json operations = json::array();
  operations.push_back({{"op", "add"}, {"path", "/spec/template/metadata"}, {"value", {{"labels", created}}}});
  for (auto& add : adds) operations.push_back(add);
  JsonPatch patch = builder.patch();
  CHECK(patch.operations == 401);
  CHECK(patch.text == expected(operations));
}

TEST_CASE("two builders alive at once on one thread, and one after them, each give their own whole patch") {
  json object = json::parse(R"({"metadata":{},"spec":{"a":{"spec":{}},"b":{"spec":{"tolerations":[]}}}})");
  const json tolerations = json::parse(R"([{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}])");
  std::string first_text, second_text;
  {
    JsonPatchBuilder first(object);
    JsonPatchBuilder second(object);  // the thread's buffer is the first one's
    first.set_member(JsonPointer("/spec/a/metadata/labels"), "x", "1", false);
    second.set_member(JsonPointer("/spec/a/spec"), "schedulerName", "kai-scheduler", true);
    first.append_all_unique(JsonPointer("/spec/a/spec/tolerations"), tolerations);
    second.append_all_unique(JsonPointer("/spec/b/spec/tolerations"), tolerations);
    first.set_member(JsonPointer("/spec/a/metadata/labels"), "y", "2", false);  // folded into the first add
    second.set_member(JsonPointer("/metadata/annotations"), "n", json{{"count", 3}, {"ok", true}}, false);
    first_text = first.patch().text;
    second_text = second.patch().text;
  }
  CHECK(first_text ==
        R"([{"op":"add","path":"/spec/a/metadata","value":{"labels":{"x":"1","y":"2"}}},)"
        R"({"op":"add","path":"/spec/a/spec/tolerations","value":[{"effect":"NoSchedule","key":"nvidia.com/gpu","operator":"Exists"}]}])");
  CHECK(second_text ==
        R"([{"op":"add","path":"/spec/a/spec/schedulerName","value":"kai-scheduler"},)"
        R"({"op":"add","path":"/spec/b/spec/tolerations/-","value":{"effect":"NoSchedule","key":"nvidia.com/gpu","operator":"Exists"}},)"
        R"({"op":"add","path":"/metadata/annotations","value":{"n":{"count":3,"ok":true}}}])");
  JsonPatchBuilder third(object);  // takes the thread's buffer again
  third.set_member(JsonPointer("/spec/b/metadata/labels"), "z", "3", false);
  CHECK(third.patch() == JsonPatch{R"([{"op":"add","path":"/spec/b/metadata","value":{"labels":{"z":"3"}}}])", 1});
}

}  // namespace unit_patch_arena
