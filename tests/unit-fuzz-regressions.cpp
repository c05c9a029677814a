// Regressions for what the fuzzers found (fuzz/README.md, reproducers in fuzz/findings/).

#include <doctest/doctest.h>

#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "admission/admission_review.h"
#include "definitions/jq_program.h"
#include "definitions/native_expression.h"
#include "definitions/simple_path.h"
#include "policy/policy.h"
#include "support/test_support.h"

namespace unit_fuzz_regressions {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

TEST_CASE("regression F1: a number beyond a double is a malformed body (400), not an internal error (500)") {
  auto decoding = karta::decode_admission_review(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","n":1e400})");
  CHECK_FALSE(decoding.review.has_value());
  CHECK(decoding.error.rfind("body is not JSON: ", 0) == 0);
}

TEST_CASE("regression F2: a jq run stopped at its output cap leaves a state that runs again") {
  karta::JqProgram program("path(.a[])", 1);
  karta::JqInput input(json::parse(R"({"a":[1,2,3]})"));
  auto first = program.run(input, 1);
  CHECK(first.capped);
  CHECK(first.outputs == std::vector<json>{json::array({"a", 0})});
  auto second = program.run(input, 10);
  CHECK(second.outputs.size() == 3);
}

TEST_CASE("regression F3 and F4: the native grammar takes only jq's white space and UTF-8 names") {
  CHECK_FALSE(karta::SimplePath::parse("\v.a").has_value());
  CHECK_FALSE(karta::SimplePath::parse(".a\r").has_value());
  CHECK(karta::SimplePath::parse(" .a\n").has_value());
  CHECK_FALSE(karta::SimplePath::parse(".\"\xff\"").has_value());
}

TEST_CASE("regression F5: malformed YAML flow collections end at once, not in unbounded allocation") {
  // yaml-cpp's LoadAll looped on these without consuming input; each document is now loaded on its own.
  auto bounded = [](const std::function<std::vector<karta::SourceDocument>()>& parse) {
    try {
      return parse().size() <= 2;
    } catch (const karta::InputError&) {
      return true;
    }
  };
  CHECK(bounded([] { return karta::parse_documents(",[  1", "f5.yaml"); }));
  for (const char* name : {"F5-yaml-cpp-loadall-5-bytes.yaml", "F5-yaml-cpp-flow-blowup.yaml"}) {
    CAPTURE(name);
    CHECK(bounded([&] { return karta::read_documents(test::source_dir() / "fuzz/findings" / name); }));
  }
  // Splitting documents ourselves keeps what LoadAll did: markers, a value on the marker line, "...".
  auto documents = karta::parse_documents("a: 1\n---\nb: 2\n--- {c: 3}\n...\n", "ok.yaml");
  REQUIRE(documents.size() == 3);
  CHECK(documents[1].value == json{{"b", 2}});
  CHECK(documents[2].value == json{{"c", 3}});
}

TEST_CASE("regression F6 and F7: text that is not UTF-8 is refused where it is read, naming the line") {
  CHECK_THROWS_WITH_AS(karta::parse_documents("a: 1\nb: \"\xc3\x28\"\n", "bad.yaml"),
                       "bad.yaml line 2: not valid UTF-8 (byte 9)", karta::InputError);
  CHECK_THROWS_WITH_AS(karta::parse_policy(test::yaml("scheduling: {schedulerName: Kai_Scheduler}"), "p.yaml"),
                       "p.yaml: scheduling.schedulerName: \"Kai_Scheduler\" is not a DNS subdomain", karta::InputError);
  for (const char* name : {"F6-policy-invalid-utf8-500.yaml", "F7-definition-invalid-utf8-type-error.yaml"}) {
    CAPTURE(name);
    CHECK_THROWS_AS(karta::read_documents(test::source_dir() / "fuzz/findings" / name), karta::InputError);
  }
}

TEST_CASE("regression F8: `[]?//` is jq's destructuring token, not `[]?` then `//`") {
  // jq 1.6 does not compile `.s[]?// 0`; the native grammar must not accept it either.
  CHECK_FALSE(karta::NativeExpression::parse(".s[]?// 0").has_value());
  CHECK_FALSE(karta::jq_compile_error(".s[]? // 0").has_value());
  CHECK(karta::NativeExpression::parse(".s[]? // 0").has_value());
  CHECK(karta::jq_compile_error(".s[]?// 0").has_value());
}

TEST_CASE("regression F9: jq 1.6 lexes `.e3` and `.e+3` as numbers, so neither native grammar takes them as fields") {
  // What jq itself compiles decides; the native grammars must refuse exactly what it refuses.
  for (const char* refused : {".e3", ".E10", ".a.e3", ".e3[]", ".e0 | .x", ".e+3", ".a.E-1"}) {
    CAPTURE(refused);
    CHECK(karta::jq_compile_error(refused).has_value());
    CHECK_FALSE(karta::SimplePath::parse(refused).has_value());
    CHECK_FALSE(karta::NativeExpression::parse(refused).has_value());
  }
  for (const char* field : {".e", ".e3x", ".ex3", ".E", ".ee3", ".e + 3", ".e3_"}) {
    CAPTURE(field);
    CHECK_FALSE(karta::jq_compile_error(field).has_value());
    CHECK(karta::NativeExpression::parse(field).has_value());
  }
  CHECK(karta::SimplePath::parse(".e3x").has_value());
  // The input the fuzzer found: ".e3" and a tab.
  std::ifstream in(test::source_dir() / "fuzz/findings/F9-field-lexed-as-number.txt", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(text == ".e3\t");
  CHECK_FALSE(karta::SimplePath::parse(text).has_value());
  CHECK(karta::jq_compile_error(text).has_value());
}

TEST_CASE("regression F10: a native string literal holds printable ASCII only, since jq replaces bytes that are not UTF-8") {
  // The input the fuzzer found: a literal holding byte 0x8F, which native evaluation gave back as it was
  // while jq gave U+FFFD.
  std::ifstream in(test::source_dir() / "fuzz/findings/F10-native-string-not-utf8.txt", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(text.size() == 103);
  REQUIRE(text.find('\x8f') != std::string::npos);
  CHECK_FALSE(karta::NativeExpression::parse(text).has_value());
  karta::JqProgram program(text, 1);
  auto document = karta::JsonDocument::parse("null");
  karta::JqInput input(document.root());
  auto outcome = program.run(input, 10);
  REQUIRE(outcome.outputs.size() == 1);
  CHECK(outcome.outputs[0].get<std::string>().find("\xef\xbf\xbd") != std::string::npos);  // U+FFFD
  // Valid UTF-8 beyond ASCII is jq's too, and so is a control character.
  for (const char* refused : {"\"\xc3\xa9\"", "\"a\x7f\"", "\"\x01\""}) {
    CAPTURE(refused);
    CHECK_FALSE(karta::NativeExpression::parse(refused).has_value());
  }
  CHECK(karta::NativeExpression::parse("\" !#$%&'()*+,-./09:;<=>?@AZ[]^_`az{|}~\"").has_value());
}

TEST_CASE("regression F11: native expressions nested past 32 levels are left to jq, not parsed into a stack overflow") {
  // The input the fuzzer found: 2,320 opening parentheses, then bytes that are not jq.
  std::ifstream in(test::source_dir() / "fuzz/findings/F11-native-deep-parentheses.txt", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(text.size() == 2320);
  REQUIRE(text.substr(0, 2000) == std::string(2000, '('));
  CHECK_FALSE(karta::NativeExpression::parse(text).has_value());
  // Deeper than any definition may be (validation allows 4,096 characters), and valid jq: given up.
  const std::string deep = std::string(100'000, '(') + ".a" + std::string(100'000, ')');
  CHECK_FALSE(karta::NativeExpression::parse(deep).has_value());
  const std::string lists = "[" + std::string(50'000, '[') + ".a" + std::string(50'000, ']') + "] | max";
  CHECK_FALSE(karta::NativeExpression::parse(lists).has_value());
  std::string ifs;
  for (int i = 0; i < 20'000; ++i) ifs += "if .a then 1 else ";
  CHECK_FALSE(karta::NativeExpression::parse(ifs + "2" + std::string(20'000 * 4, ' ')).has_value());
  std::string elifs = "if .a then 1";
  for (int i = 0; i < 20'000; ++i) elifs += " elif .a then 1";
  CHECK_FALSE(karta::NativeExpression::parse(elifs + " else 2 end").has_value());
  // 31 levels are native; 32 are not.
  auto nested = [](int levels) { return std::string(levels, '(') + ".a // 1" + std::string(levels, ')'); };
  CHECK(karta::NativeExpression::parse(nested(31)).has_value());
  CHECK_FALSE(karta::NativeExpression::parse(nested(32)).has_value());
  CHECK(karta::NativeExpression::parse(elifs.substr(0, 12 + 15 * 30) + " else 2 end").has_value());
}

TEST_CASE("regression F12: an unclosed bracket or string at the end never moves the native parser past it") {
  // The input the fuzzer found (twelfth round of issue 24): `if .a then 1 else .["...` with a string
  // closed inside a bracket never closed. The bracket's loop stepped one byte past the end after the
  // string, and reading the `end` keyword there threw std::out_of_range out of NativeExpression::parse.
  std::ifstream in(test::source_dir() / "fuzz/findings/F12-native-unclosed-bracket-past-end.txt", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(text.size() == 149);
  REQUIRE(text.starts_with("if .a then 1 else.[\""));
  std::optional<karta::NativeExpression> parsed;
  CHECK_NOTHROW(parsed = karta::NativeExpression::parse(text));
  CHECK_FALSE(parsed.has_value());
  // The shapes of it, and a backslash ending a string (which stepped two bytes, past the end).
  for (const char* shape : {R"(if .a then 1 else .["x")", R"(.["x")", R"(.["x\)", R"(.["x"]["y)", R"(if .a then 1 else .["a\)"}) {
    CAPTURE(shape);
    CHECK_NOTHROW(parsed = karta::NativeExpression::parse(shape));
    CHECK_FALSE(parsed.has_value());
  }
  // Every prefix of an expression with brackets, strings and escapes: parsed or refused, never thrown,
  // and refused wherever jq refuses it.
  const std::string full = R"(if .a then .b["x"] else .["y\"z"] // .c["\\"] end)";
  REQUIRE(karta::NativeExpression::parse(full).has_value());
  for (std::size_t n = 0; n < full.size(); ++n) {
    const std::string prefix = full.substr(0, n);
    CAPTURE(prefix);
    CHECK_NOTHROW(parsed = karta::NativeExpression::parse(prefix));
    if (karta::jq_compile_error(prefix).has_value()) CHECK_FALSE(parsed.has_value());
  }
}

}  // namespace unit_fuzz_regressions
