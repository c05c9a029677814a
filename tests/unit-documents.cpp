#include <doctest/doctest.h>

#include "json/documents.h"

namespace unit_documents {  // this file's names, apart from other tests' in a unity build

using karta::json;
using karta::parse_documents;

TEST_CASE("YAML scalars are typed as Kubernetes expects and quoted ones stay strings") {
  auto docs = parse_documents(R"(
a: 1
b: "1"
c: true
d: "true"
e: ~
f: 1.5
g: 0x10
h: nvidia.com/gpu
i: ""
j: -3
k: 1e3
l: 1.2.3
)", "t.yaml");
  REQUIRE(docs.size() == 1);
  CHECK(docs[0].value == json::parse(R"({"a":1,"b":"1","c":true,"d":"true","e":null,"f":1.5,"g":16,
      "h":"nvidia.com/gpu","i":"","j":-3,"k":1000.0,"l":"1.2.3"})"));
}

TEST_CASE("several documents are numbered among the non-empty ones") {
  auto docs = parse_documents("---\n---\nkind: A\n---\n# only a comment\n---\nkind: B\n", "f.yaml");
  REQUIRE(docs.size() == 2);
  CHECK(docs[0].source == "f.yaml#0");
  CHECK(docs[0].value == json{{"kind", "A"}});
  CHECK(docs[1].source == "f.yaml#1");
  CHECK(docs[1].index == 1);
}

TEST_CASE("a JSON List is read item by item") {
  auto docs = parse_documents(R"({"kind":"List","items":[{"kind":"A"},{"kind":"B"}]})", "l.json");
  REQUIRE(docs.size() == 2);
  CHECK(docs[1].value == json{{"kind", "B"}});
}

TEST_CASE("broken YAML is an error that names the file and line") {
  try {
    parse_documents("a: 1\nb: [1, 2\n", "broken.yaml");
    FAIL("no error");
  } catch (const karta::InputError& e) {
    CHECK(std::string(e.what()).rfind("broken.yaml line ", 0) == 0);
  }
}

TEST_CASE("regression: deeply nested YAML is refused, not a stack overflow") {
  std::string text(300, '[');
  text += std::string(300, ']');
  CHECK_THROWS_WITH_AS(parse_documents(text + "\n", "deep.yaml"), "deep.yaml#0: nesting deeper than 256 levels",
                       karta::InputError);
}

}  // namespace unit_documents
