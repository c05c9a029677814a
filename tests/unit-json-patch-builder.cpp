#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "json/json_text.h"
#include "mutate/json_patch_builder.h"
#include "support/test_support.h"

namespace unit_json_patch_builder {  // this file's names, apart from other tests' in a unity build

using karta::JsonPatch;
using karta::JsonPatchBuilder;
using karta::JsonPointer;
using karta::PatchChange;
using karta::json;
using ptr = karta::JsonPointer;

TEST_CASE("a missing metadata map is created by one add holding labels and annotations") {
  json object = json::parse(R"({"apiVersion":"example.com/v1","kind":"Thing","spec":{"template":{"spec":{}}}})");
  JsonPatchBuilder patch(object);
  CHECK(patch.set_member(ptr("/spec/template/metadata/labels"), "a/b", "1", false) == PatchChange::Added);
  CHECK(patch.set_member(ptr("/spec/template/metadata/labels"), "c", "2", false) == PatchChange::Added);
  CHECK(patch.set_member(ptr("/spec/template/metadata/annotations"), "n", "v", false) == PatchChange::Added);
  CHECK(patch.operations() == json::parse(R"([{"op":"add","path":"/spec/template/metadata",
      "value":{"labels":{"a/b":"1","c":"2"},"annotations":{"n":"v"}}}])"));
  CHECK(karta::test::kubectl_apply(object, patch.operations()) ==
        json::parse(R"({"apiVersion":"example.com/v1","kind":"Thing",
            "spec":{"template":{"metadata":{"labels":{"a/b":"1","c":"2"},"annotations":{"n":"v"}},"spec":{}}}})"));
}

TEST_CASE("keys of an existing map are added one by one, escaped, and existing values are kept") {
  json object = json::parse(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"labels":{"keep":"mine","same":"x"}}})");
  JsonPatchBuilder patch(object);
  CHECK(patch.set_member(ptr("/metadata/labels"), "kai.scheduler/queue", "q", false) == PatchChange::Added);
  CHECK(patch.set_member(ptr("/metadata/labels"), "a~b", "t", false) == PatchChange::Added);
  CHECK(patch.set_member(ptr("/metadata/labels"), "keep", "theirs", false) == PatchChange::Kept);
  CHECK(patch.set_member(ptr("/metadata/labels"), "same", "x", true) == PatchChange::Unchanged);
  CHECK(patch.operations() == json::parse(R"([
      {"op":"add","path":"/metadata/labels/kai.scheduler~1queue","value":"q"},
      {"op":"add","path":"/metadata/labels/a~0b","value":"t"}])"));
  CHECK(karta::test::kubectl_apply(object, patch.operations())["metadata"]["labels"] ==
        json::parse(R"({"keep":"mine","same":"x","kai.scheduler/queue":"q","a~b":"t"})"));
}

TEST_CASE("overwrite replaces a differing value with an add on the existing member") {
  json object = json::parse(R"({"metadata":{"labels":{"team":"old"}}})");
  JsonPatchBuilder patch(object);
  CHECK(patch.set_member(ptr("/metadata/labels"), "team", "new", true) == PatchChange::Replaced);
  CHECK(patch.operations() == json::parse(R"([{"op":"add","path":"/metadata/labels/team","value":"new"}])"));
}

TEST_CASE("a null map is replaced as if absent") {
  json object = json::parse(R"({"metadata":{"labels":null}})");
  JsonPatchBuilder patch(object);
  patch.set_member(ptr("/metadata/labels"), "a", "1", false);
  CHECK(patch.operations() == json::parse(R"([{"op":"add","path":"/metadata/labels","value":{"a":"1"}}])"));
}

TEST_CASE("an odd shape blocks the change with a reason instead of producing a bad patch") {
  json object = json::parse(R"({"metadata":{"labels":["not","a","map"]},"spec":"text"})");
  JsonPatchBuilder patch(object);
  CHECK(patch.set_member(ptr("/metadata/labels"), "a", "1", false) == PatchChange::Blocked);
  CHECK(patch.blocked_reason() == "/metadata/labels is an array, not an object");
  CHECK(patch.set_member(ptr("/spec/template/metadata/labels"), "a", "1", false) == PatchChange::Blocked);
  CHECK(patch.blocked_reason() == "/spec is a string, not an object");
  CHECK(patch.operations() == json::array());
}

TEST_CASE("appending to a list adds to its end once, or creates the list") {
  json object = json::parse(R"({"apiVersion":"example.com/v1","kind":"Thing",
      "a":{"spec":{"tolerations":[{"key":"x"}]}},"b":{"spec":{}}})");
  JsonPatchBuilder patch(object);
  json toleration = {{"key", "nvidia.com/gpu"}, {"operator", "Exists"}};
  CHECK(patch.append_unique(ptr("/a/spec/tolerations"), toleration) == PatchChange::Added);
  CHECK(patch.append_unique(ptr("/a/spec/tolerations"), toleration) == PatchChange::Unchanged);
  CHECK(patch.append_unique(ptr("/a/spec/tolerations"), json{{"key", "x"}}) == PatchChange::Unchanged);
  CHECK(patch.append_unique(ptr("/b/spec/tolerations"), toleration) == PatchChange::Added);
  CHECK(patch.operations() == json::parse(R"([
      {"op":"add","path":"/a/spec/tolerations/-","value":{"key":"nvidia.com/gpu","operator":"Exists"}},
      {"op":"add","path":"/b/spec/tolerations","value":[{"key":"nvidia.com/gpu","operator":"Exists"}]}])"));
  auto patched = karta::test::kubectl_apply(object, patch.operations());
  CHECK(patched["a"]["spec"]["tolerations"].size() == 2);
}

TEST_CASE("the patch text is byte for byte what nlohmann::json writes for the same operations") {
  JsonPatchBuilder builder(json::parse(R"({"metadata":{"labels":{}},"spec":{"list":[1]}})"));
  builder.set_member(JsonPointer("/metadata/labels"), "a/b~c", "quote \" backslash \\ tab \t nul \u0001 é 日本", false);
  builder.set_member(JsonPointer("/metadata/annotations"), "n", json{{"int", -7}, {"uint", 18446744073709551615u},
                                                                     {"float", 0.1}, {"yes", true}, {"none", nullptr}},
                     false);
  builder.append_unique(JsonPointer("/spec/list"), json::array({json::object(), "x"}));
  JsonPatch patch = builder.patch();
  CHECK(patch.operations == 3);
  CHECK(patch.text == patch.value().dump());
  CHECK(patch.text == R"([{"op":"add","path":"/metadata/labels/a~1b~0c","value":"quote \" backslash \\ tab \t nul \u0001 é 日本"},)"
                      R"({"op":"add","path":"/metadata/annotations","value":{"n":{"float":0.1,"int":-7,"none":null,)"
                      R"("uint":18446744073709551615,"yes":true}}},{"op":"add","path":"/spec/list/-","value":[{},"x"]}])");
  CHECK(JsonPatchBuilder(json::object()).patch() == JsonPatch{"[]", 0});
}

TEST_CASE("append_all_unique gives the patch that appending one element at a time gives, with the list's text or not") {
  const json tolerations = json::parse(R"([{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"},
                                           {"key":"dedicated","operator":"Equal","value":"gpu","effect":"NoSchedule"}])");
  // The caller's text of a list (a policy's tolerations_text): 0 appends one by one, 1 the whole list, 2
  // the whole list with its text.
  std::map<const json*, std::string> texts;
  auto text_of = [&](const json& values) -> const std::string& {
    auto [it, added] = texts.try_emplace(&values);
    if (added) karta::append_json(it->second, values);
    return it->second;
  };
  struct Case {
    const char* name;
    json object;
    std::function<void(JsonPatchBuilder&, int all)> steps;
  };
  auto append = [&](JsonPatchBuilder& b, int all, const char* at, const json& values) {
    if (all == 2) return b.append_all_unique(JsonPointer(at), values, text_of(values));
    if (all == 1) return b.append_all_unique(JsonPointer(at), values);
    karta::PatchChange last = karta::PatchChange::Unchanged;
    for (const auto& v : values) {
      auto change = b.append_unique(JsonPointer(at), v);
      if (change == karta::PatchChange::Blocked) return change;
      if (change == karta::PatchChange::Added) last = change;
    }
    return last;
  };
  const std::vector<Case> cases = {
      {"the list is missing under a present spec: one add holding the whole list", json::parse(R"({"spec":{}})"),
       [&](JsonPatchBuilder& b, int all) { append(b, all, "/spec/tolerations", tolerations); }},
      {"then one more element appended to the list the patch creates",
       json::parse(R"({"spec":{}})"),
       [&](JsonPatchBuilder& b, int all) {
         append(b, all, "/spec/tolerations", tolerations);
         b.append_unique(JsonPointer("/spec/tolerations"), json{{"key", "extra"}});
         b.append_unique(JsonPointer("/spec/tolerations"), tolerations[0]);  // already there
       }},
      {"then a member set inside the created list", json::parse(R"({"spec":{}})"),
       [&](JsonPatchBuilder& b, int all) {
         append(b, all, "/spec/tolerations", tolerations);
         b.set_member(JsonPointer("/spec/tolerations/0"), "tolerationSeconds", 5, false);
       }},
      {"the list exists with one of them: only the other is appended",
       json{{"spec", {{"tolerations", json::array({tolerations[1]})}}}},
       [&](JsonPatchBuilder& b, int all) { append(b, all, "/spec/tolerations", tolerations); }},
      {"the spec is missing too: created with the list inside", json::parse(R"({"metadata":{}})"),
       [&](JsonPatchBuilder& b, int all) { append(b, all, "/spec/tolerations", tolerations); }},
      {"the same list twice: the second adds nothing", json::parse(R"({"spec":{}})"),
       [&](JsonPatchBuilder& b, int all) {
         append(b, all, "/spec/tolerations", tolerations);
         append(b, all, "/spec/tolerations", tolerations);
       }},
      {"equal elements in the list: appended once", json::parse(R"({"spec":{}})"),
       [&](JsonPatchBuilder& b, int all) {
         append(b, all, "/spec/tolerations", json::array({tolerations[0], tolerations[0]}));
       }},
      {"the spec is a string: blocked", json::parse(R"({"spec":"x"})"),
       [&](JsonPatchBuilder& b, int all) { append(b, all, "/spec/tolerations", tolerations); }},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    JsonPatchBuilder one_by_one(c.object), whole(c.object), whole_text(c.object);
    c.steps(one_by_one, 0);
    c.steps(whole, 1);
    c.steps(whole_text, 2);
    CHECK(whole.patch() == one_by_one.patch());
    CHECK(whole_text.patch() == one_by_one.patch());  // the same bytes, the text copied
    CHECK(whole.blocked_reason() == one_by_one.blocked_reason());
    CHECK(whole_text.blocked_reason() == one_by_one.blocked_reason());
    if (!whole.empty()) {  // and it applies, with the API server's JSON-patch library
      json object = c.object;
      object["apiVersion"] = "example.com/v1";
      object["kind"] = "Gizmo";
      object["metadata"]["name"] = "g";
      json applied = karta::test::kubectl_apply(object, whole.operations());
      CHECK(applied == karta::test::kubectl_apply(object, one_by_one.operations()));
      CHECK(applied["spec"]["tolerations"].is_array());
    }
  }
  // The whole list in one add, in the order given.
  JsonPatchBuilder builder(json::parse(R"({"spec":{}})"));
  CHECK(builder.append_all_unique(JsonPointer("/spec/tolerations"), tolerations) == karta::PatchChange::Added);
  CHECK(builder.operations() == json::array({{{"op", "add"}, {"path", "/spec/tolerations"}, {"value", tolerations}}}));
  CHECK(builder.append_all_unique(JsonPointer("/spec/tolerations"), json::array()) == karta::PatchChange::Unchanged);
  CHECK(JsonPatchBuilder(json::parse(R"({"spec":"x"})")).append_all_unique(JsonPointer("/spec/tolerations"), tolerations) ==
        karta::PatchChange::Blocked);
}

TEST_CASE("remember(): containers under the remembered pointer are looked up from its element, others from the root") {
  json object = json::parse(R"({"spec":{"a":{"metadata":{"labels":{}},"spec":{}},
                                        "ab":{"metadata":{"labels":{"x":"1"}}},
                                        "b":{"metadata":{"labels":{"x":"1"}}}}})");
  karta::JsonDocument document = karta::JsonDocument::from(object);
  const karta::JsonElement a = *karta::find_at(document.root(), ptr("/spec/a"));
  const karta::JsonElement b = *karta::find_at(document.root(), ptr("/spec/b"));

  SUBCASE("lookups under the pointer start at the element it was given") {
    JsonPatchBuilder patch(document.root());
    patch.remember(ptr("/spec/a"), b);  // deliberately b's element: what follows can only come from it
    CHECK(patch.set_member(ptr("/spec/a/metadata/labels"), "x", "1", false) == PatchChange::Unchanged);
    CHECK(patch.set_member(ptr("/spec/a"), "y", "2", false) == PatchChange::Added);  // the pointer itself
    // "/spec/ab" starts with the text "/spec/a" but is another token: looked up from the root.
    CHECK(patch.set_member(ptr("/spec/ab/metadata/labels"), "x", "2", false) == PatchChange::Kept);
    CHECK(patch.set_member(ptr("/spec/b/metadata/labels"), "z", "3", false) == PatchChange::Added);
    CHECK(patch.operations() == json::parse(R"([{"op":"add","path":"/spec/a/y","value":"2"},
        {"op":"add","path":"/spec/b/metadata/labels/z","value":"3"}])"));
  }

  SUBCASE("given the right element, the patch is the one built without it") {
    auto build = [&](bool remembering) {
      JsonPatchBuilder patch(document.root());
      if (remembering) patch.remember(ptr("/spec/a"), a);
      patch.set_member(ptr("/spec/a/metadata/labels"), "x", "1", false);
      patch.set_member(ptr("/spec/a/metadata/annotations"), "n", "v", false);  // a missing map under it
      patch.set_member(ptr("/spec/a/metadata/annotations"), "m", "w", false);  // folded into that add
      patch.set_member(ptr("/spec/a/spec"), "schedulerName", "kai-scheduler", false);
      patch.append_unique(ptr("/spec/a/spec/tolerations"), json::parse(R"({"key":"nvidia.com/gpu"})"));
      patch.set_member(ptr("/spec/ab/metadata/labels"), "x", "2", true);
      patch.set_member(ptr("/metadata/labels"), "team", "t", false);  // outside it, and missing
      return patch.operations();
    };
    json expected = json::parse(R"([
        {"op":"add","path":"/spec/a/metadata/labels/x","value":"1"},
        {"op":"add","path":"/spec/a/metadata/annotations","value":{"m":"w","n":"v"}},
        {"op":"add","path":"/spec/a/spec/schedulerName","value":"kai-scheduler"},
        {"op":"add","path":"/spec/a/spec/tolerations","value":[{"key":"nvidia.com/gpu"}]},
        {"op":"add","path":"/spec/ab/metadata/labels/x","value":"2"},
        {"op":"add","path":"/metadata","value":{"labels":{"team":"t"}}}])");
    CHECK(build(false) == expected);
    CHECK(build(true) == expected);
  }
}

TEST_CASE("set_member with the map it reaches: the map is not walked again, and the patch is the one built without it") {
  json object = json::parse(R"({"metadata":{"labels":{"team":"a"},"annotations":null},
                                "spec":{"t":{"metadata":{"labels":{"x":"2"}}},"u":{"metadata":{"labels":{"x":"1"}}}}})");
  karta::JsonDocument document = karta::JsonDocument::from(object);
  auto at = [&](const char* pointer) { return karta::find_at(document.root(), ptr(pointer)); };

  SUBCASE("the element given is where the member is looked for") {
    JsonPatchBuilder patch(document.root());
    // Deliberately /spec/u's labels for /spec/t's pointer: x is "1" there and "2" under /spec/t, so what
    // follows can only come from the element.
    const auto u_labels = at("/spec/u/metadata/labels");
    CHECK(patch.set_member(ptr("/spec/t/metadata/labels"), u_labels, "x", "1", false) == PatchChange::Unchanged);
    CHECK(patch.set_member(ptr("/spec/t/metadata/labels"), u_labels, "y", "2", false) == PatchChange::Added);
    CHECK(patch.operations() == json::parse(R"([{"op":"add","path":"/spec/t/metadata/labels/y","value":"2"}])"));
  }

  SUBCASE("given the right element, or none, or one that is not an object, the patch is the same") {
    enum class Given { Right, None, NotObject };
    auto build = [&](Given given) {
      JsonPatchBuilder patch(document.root());
      auto found = [&](const char* pointer) -> std::optional<karta::JsonElement> {
        if (given == Given::None) return std::nullopt;
        if (given == Given::NotObject) return at("/metadata/labels/team");  // a string: ignored
        return at(pointer);
      };
      std::vector<PatchChange> changes;
      changes.push_back(patch.set_member(ptr("/metadata/labels"), found("/metadata/labels"), "q", "1", false));
      changes.push_back(patch.set_member(ptr("/metadata/labels"), found("/metadata/labels"), "q", "2", false));
      changes.push_back(patch.set_member(ptr("/metadata/labels"), found("/metadata/labels"), "q", "3", true));
      changes.push_back(patch.set_member(ptr("/metadata/labels"), found("/metadata/labels"), "team", "b", false));
      changes.push_back(patch.set_member(ptr("/metadata/labels"), found("/metadata/labels"), "team", "b", true));
      // A null map holds nothing: created by one add, and a later set folds into it.
      changes.push_back(patch.set_member(ptr("/metadata/annotations"), std::nullopt, "n", "v", false));
      changes.push_back(patch.set_member(ptr("/metadata/annotations"), std::nullopt, "m", "w", false));
      changes.push_back(patch.set_member(ptr("/spec/t/metadata/labels"), found("/spec/t/metadata/labels"), "x", "9", true));
      return std::make_pair(changes, patch.operations());
    };
    const std::vector<PatchChange> changes = {PatchChange::Added, PatchChange::Kept,  PatchChange::Replaced,
                                              PatchChange::Kept,  PatchChange::Replaced, PatchChange::Added,
                                              PatchChange::Added, PatchChange::Replaced};
    const json operations = json::parse(R"([
        {"op":"add","path":"/metadata/labels/q","value":"3"},
        {"op":"add","path":"/metadata/labels/team","value":"b"},
        {"op":"add","path":"/metadata/annotations","value":{"m":"w","n":"v"}},
        {"op":"add","path":"/spec/t/metadata/labels/x","value":"9"}])");
    for (Given given : {Given::Right, Given::None, Given::NotObject}) {
      CAPTURE(static_cast<int>(given));
      auto [got_changes, got_operations] = build(given);
      CHECK(got_changes == changes);
      CHECK(got_operations == operations);
    }
  }
}

TEST_CASE("members set again are found among many operations: past the growth of the builder's table of paths") {
  // 40 maps of the original, each given a member (more operations than the table of paths first holds),
  // then each member set again: the same value is unchanged, another kept or, with overwrite, replaced in
  // its operation; none is added twice. Keys with '/' and '~' are escaped in the paths.
  json object = json::parse(R"({"spec":{"groups":[]}})");
  for (int i = 0; i < 40; ++i) object["spec"]["groups"].push_back(json::parse(R"({"labels":{}})"));
  JsonPatchBuilder patch(object);
  auto labels = [](int i) { return ptr("/spec/groups/" + std::to_string(i) + "/labels"); };
  json expected = json::array();
  for (int i = 0; i < 40; ++i) {
    CHECK(patch.set_member(labels(i), "a/b~c", "v" + std::to_string(i), false) == PatchChange::Added);
  }
  for (int i = 0; i < 40; ++i) {
    CAPTURE(i);
    const std::string same = "v" + std::to_string(i);
    CHECK(patch.set_member(labels(i), "a/b~c", same, false) == PatchChange::Unchanged);
    CHECK(patch.set_member(labels(i), "a/b~c", "other", false) == PatchChange::Kept);
    if (i % 2 == 0) CHECK(patch.set_member(labels(i), "a/b~c", "w" + std::to_string(i), true) == PatchChange::Replaced);
    expected.push_back({{"op", "add"},
                        {"path", "/spec/groups/" + std::to_string(i) + "/labels/a~1b~0c"},
                        {"value", (i % 2 == 0 ? "w" : "v") + std::to_string(i)}});
  }
  CHECK(patch.size() == 40);
  CHECK(patch.operations() == expected);
}

}  // namespace unit_json_patch_builder
