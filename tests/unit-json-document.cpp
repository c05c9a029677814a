#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "json/json_document.h"
#include "json/json_pointer.h"

namespace unit_json_document {  // this file's names, apart from other tests' in a unity build

using karta::json;
using karta::JsonDocument;
using karta::JsonParseError;

namespace {

std::string parse_error(std::string_view text, std::size_t max_depth = 1000) {
  try {
    JsonDocument::parse(text, max_depth);
  } catch (const JsonParseError& e) {
    return e.what();
  }
  return "(parsed)";
}

}  // namespace

TEST_CASE("a document parses into elements that read like the JSON they came from") {
  auto document = JsonDocument::parse(R"({"b":[1,-2,3.5,"x",true,null],"a":{"k":"v"},"u":18446744073709551615})");
  CHECK(karta::to_json(document.root()) ==
        json::parse(R"({"a":{"k":"v"},"b":[1,-2,3.5,"x",true,null],"u":18446744073709551615})"));
  CHECK(karta::dump(document.root()) == R"({"b":[1,-2,3.5,"x",true,null],"a":{"k":"v"},"u":18446744073709551615})");
  CHECK(std::string(karta::type_name(document.root())) == "object");
  auto b = karta::member(document.root(), "b");
  REQUIRE(b.has_value());
  CHECK(std::string(karta::type_name(*b)) == "array");
  CHECK_FALSE(karta::member(*b, "a").has_value());  // not an object
  CHECK(karta::string_of(*karta::find_at(document.root(), karta::JsonPointer("/a/k"))) == std::string_view("v"));
  CHECK(karta::to_json(*karta::find_at(document.root(), karta::JsonPointer("/b/3"))) == "x");
  CHECK_FALSE(karta::find_at(document.root(), karta::JsonPointer("/b/6")).has_value());
  CHECK_FALSE(karta::find_at(document.root(), karta::JsonPointer("/b/01x")).has_value());
  CHECK_FALSE(karta::find_at(document.root(), karta::JsonPointer("/a/k/deeper")).has_value());
}

TEST_CASE("members come in key order, a repeated key once, the first one as member() reads it") {
  auto document = JsonDocument::parse(R"({"worker":1,"decode":2,"frontend":3,"decode":4})");
  std::vector<std::string> keys;
  std::vector<json> values;
  for (const auto& [key, value] : karta::sorted_members(document.root())) {
    keys.emplace_back(key);
    values.push_back(karta::to_json(value));
  }
  CHECK(keys == std::vector<std::string>{"decode", "frontend", "worker"});
  CHECK(values == std::vector<json>{2, 3, 1});
  CHECK(karta::to_json(*karta::member(document.root(), "decode")) == 2);
}

TEST_CASE("same_bytes tells apart texts that differ in any one byte, at every length the inline compare reads") {
  // Lengths 0 to 40 cover each way it compares: three bytes, two four-byte words, two eight-byte words
  // (overlapping below 16), and memcmp past 16.
  for (std::size_t n = 0; n <= 40; ++n) {
    std::string a(n, 'k');
    for (std::size_t i = 0; i < n; ++i) a[i] = static_cast<char>('a' + i % 26);
    std::string b = a;
    CHECK(karta::same_bytes(a.data(), b.data(), n));
    for (std::size_t i = 0; i < n; ++i) {
      b[i] = static_cast<char>(a[i] ^ 0x20);
      CHECK_MESSAGE(!karta::same_bytes(a.data(), b.data(), n), "length " << n << ", byte " << i);
      b[i] = a[i];
    }
  }
}

TEST_CASE("member() finds a key among keys of its length that differ from it in one byte, and nothing else") {
  // Keys of 1 to 20 bytes, each beside its neighbours that differ in the first, middle or last byte.
  for (std::size_t n = 1; n <= 20; ++n) {
    std::string key(n, 'x');
    for (std::size_t i = 0; i < n; ++i) key[i] = static_cast<char>('a' + (i * 7) % 26);
    json object = json::object();
    for (std::size_t i : {std::size_t{0}, n / 2, n - 1}) {
      std::string near = key;
      near[i] = near[i] == 'z' ? 'y' : static_cast<char>(near[i] + 1);
      object[near] = "near " + std::to_string(i);
    }
    object[key] = "the key";
    object[key + "s"] = "longer";
    object[key.substr(0, n - 1)] = "shorter";
    const JsonDocument document = JsonDocument::from(object);
    const auto found = karta::member(document.root(), key);
    REQUIRE_MESSAGE(found.has_value(), "length " << n);
    CHECK(karta::to_json(*found) == "the key");
    std::string absent = key;
    absent[n - 1] = '~';
    CHECK_FALSE(karta::member(document.root(), absent).has_value());
  }
}

TEST_CASE("object_member: a member that is an object, of a value that is one; anything else is none") {
  JsonDocument d = JsonDocument::parse(R"({"m":{"labels":{"a":"1"},"none":null,"text":"x","list":[]},"s":"x"})");
  const auto m = karta::object_member(d.root(), "m");
  REQUIRE(m.has_value());
  const auto labels = karta::object_member(m, "labels");
  REQUIRE(labels.has_value());
  CHECK(karta::to_json(*labels) == json::parse(R"({"a":"1"})"));
  CHECK_FALSE(karta::object_member(m, "none").has_value());     // null
  CHECK_FALSE(karta::object_member(m, "text").has_value());     // a string
  CHECK_FALSE(karta::object_member(m, "list").has_value());     // a list
  CHECK_FALSE(karta::object_member(m, "absent").has_value());
  CHECK_FALSE(karta::object_member(karta::object_member(d.root(), "s"), "x").has_value());  // of no object
  CHECK_FALSE(karta::object_member(std::nullopt, "m").has_value());
}

TEST_CASE("equality with a built value compares numbers by value and objects regardless of order") {
  auto document = JsonDocument::parse(R"({"n":1,"f":1.0,"big":18446744073709551615,"neg":-3,"o":{"y":[1,{"z":null}],"x":"s"}})");
  auto at = [&](const char* key) { return *karta::member(document.root(), key); };
  CHECK(karta::equals(at("n"), json(1)));
  CHECK(karta::equals(at("n"), json(1.0)));
  CHECK(karta::equals(at("f"), json(1)));
  CHECK(karta::equals(at("big"), json(18446744073709551615ULL)));
  CHECK_FALSE(karta::equals(at("big"), json(-1)));
  CHECK(karta::equals(at("neg"), json(-3)));
  CHECK_FALSE(karta::equals(at("neg"), json(3U)));
  CHECK_FALSE(karta::equals(at("n"), json("1")));
  CHECK(karta::equals(at("o"), json::parse(R"({"x":"s","y":[1,{"z":null}]})")));
  CHECK_FALSE(karta::equals(at("o"), json::parse(R"({"x":"s","y":[1,{"z":false}]})")));
  CHECK_FALSE(karta::equals(at("o"), json::parse(R"({"x":"s"})")));
  CHECK_FALSE(karta::equals(at("o"), json::parse(R"({"x":"s","y":[1]})")));
}

TEST_CASE("bad bytes are refused with what is wrong") {
  CHECK(parse_error("") == "empty");
  CHECK(parse_error("{\"a\":\"\xc3\x28\"}") == "not valid UTF-8");
  CHECK(parse_error(R"({"a":1e400})") == "a number is malformed or out of range");
  CHECK(parse_error(R"({"a":"x)") == "a string is malformed (unclosed, a bad escape, or a raw control character)");
  CHECK(parse_error(std::string(1001, '[') + std::string(1001, ']')) == "nested deeper than 1000 levels");
  CHECK(parse_error(std::string(1000, '[') + std::string(1000, ']')) == "(parsed)");
  try {
    JsonDocument::parse(std::string(5000, '[') + std::string(5000, ']'), 1000);
    FAIL("parsed");
  } catch (const JsonParseError& e) {
    CHECK(e.too_deep());
  }
  CHECK(parse_error("[1,2") != "(parsed)");
  CHECK(parse_error("{} {}") != "(parsed)");
}

TEST_CASE("a document made from a built value is that value") {
  json value = json::parse(R"({"kind":"JobSet","spec":{"replicatedJobs":[{"name":"w","replicas":2}]}})");
  auto document = JsonDocument::from(value);
  CHECK(karta::to_json(document.root()) == value);
  // Moving the document keeps its elements valid: they point into storage it owns.
  auto element = document.root();
  JsonDocument moved = std::move(document);
  CHECK(karta::to_json(element) == value);
  CHECK(karta::to_json(moved.root()) == value);
}

TEST_CASE("documents parsed one after another on a thread stay whole: a released one's buffers serve the next") {
  std::string big = R"({"a":[1,2,3],"s":")" + std::string(500, 'x') + R"("})";
  std::optional<JsonDocument> first(JsonDocument::parse(big));
  JsonDocument second = JsonDocument::parse(R"({"b":"two"})");  // while the first is alive: its own buffers
  CHECK(karta::to_json(first->root()) == json::parse(big));
  first.reset();  // its buffers become the thread's spare
  JsonDocument third = JsonDocument::parse(R"({"c":[true,null,"three"]})");
  JsonDocument fourth = JsonDocument::parse(R"({"d":4})");
  CHECK(karta::to_json(second.root()) == json::parse(R"({"b":"two"})"));
  CHECK(karta::to_json(third.root()) == json::parse(R"({"c":[true,null,"three"]})"));
  CHECK(karta::to_json(fourth.root()) == json::parse(R"({"d":4})"));

  // Parsed on a thread that then ends, read and released on this one.
  std::optional<JsonDocument> moved;
  std::thread([&moved] { moved.emplace(JsonDocument::parse(R"({"e":[5,6]})")); }).join();
  CHECK(karta::to_json(moved->root()) == json::parse(R"({"e":[5,6]})"));
  moved.reset();
  CHECK(karta::to_json(JsonDocument::parse(R"({"f":"six"})").root()) == json::parse(R"({"f":"six"})"));
}

TEST_CASE("a reference token is escaped the same into every kind of text, whatever its specials and where") {
  // ~ becomes ~0 and / becomes ~1 (RFC 6901, section 3), written here character by character.
  auto escaped = [](std::string_view token) {
    std::string out;
    for (char c : token) out += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
    return out;
  };
  std::string many;  // specials far apart and side by side, past the inline buffer
  for (int i = 0; i < 40; ++i) many += i % 7 == 0 ? "/~" : i % 5 == 0 ? "~" : i % 3 == 0 ? "/" : "ab";
  const std::vector<std::string> tokens{"", "plain", "/", "~", "~/", "/~", "//", "~~", "a/b", "a~b", "/a", "a/",
                                        "~1", "~0", "a//b~~c/", "platform.example.com/role", many};
  for (const std::string& token : tokens) {
    CAPTURE(token);
    std::string text = "/x";
    karta::append_escaped_pointer_token(text, token);
    CHECK(text == "/x" + escaped(token));
    std::pmr::string pmr_text = "/x";
    karta::append_escaped_pointer_token(pmr_text, token);
    CHECK(std::string(pmr_text) == "/x" + escaped(token));
    karta::JsonPointer pointer;
    pointer /= "x";
    pointer /= token;
    CHECK(pointer.text() == "/x/" + escaped(token));
    CHECK(pointer.back() == token);
    // Sized, then written in place (the patch builder's paths): exactly the escaped bytes, no more.
    const std::size_t size = karta::escaped_pointer_token_size(token);
    CHECK(size == escaped(token).size());
    std::string buffer(size + 1, '#');
    char* end = karta::write_escaped_pointer_token(buffer.data(), token);
    CHECK(end == buffer.data() + size);
    CHECK(buffer == escaped(token) + "#");
  }
}

TEST_CASE("pointers are extended token by token, escaped as RFC 6901 says, past their inline buffer too") {
  karta::JsonPointer pointer;
  pointer /= "spec";
  pointer /= std::string_view("");  // an empty key is a token too
  pointer /= "a/b~c";
  pointer /= std::size_t{12};
  CHECK(pointer.text() == "/spec//a~1b~0c/12");
  CHECK(karta::escaped_token_count(pointer.text()) == 4);  // an escaped '/' is no separator
  CHECK(karta::escaped_token_count("") == 0);
  CHECK(karta::escaped_token_count("/") == 1);
  CHECK(pointer.back() == "12");
  CHECK(pointer.parent_pointer().back() == "a/b~c");
  // Past the 88 bytes kept inline, the text moves to the heap and goes on growing.
  std::string expected = pointer.to_string();
  for (int i = 0; i < 20; ++i) {
    const std::string token = i % 3 == 0 ? "x~" + std::to_string(i) : "key-" + std::to_string(i);
    pointer /= token;
    expected += "/" + (i % 3 == 0 ? "x~0" + std::to_string(i) : token);
  }
  CHECK(expected.size() > karta::JsonPointer::kInlineSize);
  CHECK(pointer.text() == expected);
  CHECK((karta::JsonPointer("/metadata") / "labels" / "kai.scheduler/queue").text() ==
        "/metadata/labels/kai.scheduler~1queue");
}

TEST_CASE("tokens escaped beforehand are appended as they are, past the inline buffer too") {
  karta::JsonPointer pointer("/spec/template");
  pointer.append_escaped("/metadata/labels");
  CHECK(pointer.text() == "/spec/template/metadata/labels");
  pointer.append_escaped("");
  CHECK(pointer.text() == "/spec/template/metadata/labels");
  pointer.append_escaped("/kai.scheduler~1queue");  // left escaped: not escaped twice
  CHECK(pointer.text() == "/spec/template/metadata/labels/kai.scheduler~1queue");
  CHECK(pointer.back() == "kai.scheduler/queue");
  const std::string long_tokens = "/" + std::string(100, 'x') + "/y~0z";
  pointer.append_escaped(long_tokens);
  CHECK(pointer.text() == "/spec/template/metadata/labels/kai.scheduler~1queue" + long_tokens);
  CHECK(pointer.back() == "y~z");
}

}  // namespace unit_json_document
