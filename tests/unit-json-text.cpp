// The JSON writer against nlohmann::json's own dump(), byte for byte.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "json/json_text.h"

namespace unit_json_text {  // this file's names, apart from other tests' in a unity build

using karta::json;

namespace {

std::string written(std::string_view text) {
  std::string out;
  karta::append_json_string(out, text);
  return out;
}

}  // namespace

TEST_CASE("strings are escaped as nlohmann::json escapes them, whatever the position of the escapes") {
  // Every special byte (and a multi-byte character) at every offset of strings up to 40 bytes long,
  // so that the sixteen- and eight-bytes-at-a-time scans meet them at each position of a block and in the tail.
  const std::vector<std::string> specials = {"\"", "\\", "\n", "\t", std::string(1, '\0'), "\x01", "\x1f",
                                             "\x7f", "é", "日", "😀"};
  std::size_t compared = 0;
  for (const auto& special : specials) {
    for (std::size_t length = 0; length <= 40; ++length) {
      for (std::size_t at = 0; at <= length; ++at) {
        std::string text = std::string(at, 'a') + special + std::string(length - at, 'b');
        CAPTURE(text);
        CHECK(written(text) == json(text).dump());
        ++compared;
      }
    }
  }
  CHECK(compared == 11 * 861);
  // Two escapes at every pair of positions: the scan of a tail reads the text's last sixteen bytes again,
  // which may hold an escape already written.
  compared = 0;
  for (std::size_t length = 2; length <= 40; ++length) {
    for (std::size_t first = 0; first < length; ++first) {
      for (std::size_t second = first + 1; second < length; ++second) {
        std::string text(length, 'c');
        text[first] = '"';
        text[second] = '\n';
        CAPTURE(text);
        CHECK(written(text) == json(text).dump());
        ++compared;
      }
    }
  }
  CHECK(compared == 10660);  // the sum over length of length * (length - 1) / 2
  CHECK(written("") == "\"\"");
  CHECK(written(std::string(64, 'x')) == "\"" + std::string(64, 'x') + "\"");
  // Appended after what the string holds already; an empty view may have no data at all.
  std::string out = "[";
  karta::append_json_string(out, "plain");
  out += ',';
  karta::append_json_string(out, std::string_view());
  out += ',';
  karta::append_json_string(out, "a\"b");
  CHECK(out == R"(["plain","","a\"b")");
}

TEST_CASE("invalid UTF-8 becomes U+FFFD, as nlohmann::json writes it with error_handler_t::replace") {
  for (const std::string text : {std::string("abc\xc3"), std::string("12345678\xff" "9"), std::string("\xed\xa0\x80"),
                                 std::string("0123456789abcdef\xc3\x28tail")}) {
    CAPTURE(text);
    CHECK(written(text) == json(text).dump(-1, ' ', false, json::error_handler_t::replace));
  }
}

TEST_CASE("values are written compact, members in key order, numbers as nlohmann::json writes them") {
  const json value = json::parse(R"({"z":[1,-2,3.5,1e300,true,false,null,{}],"a":{"b":"c","a":[]},"n":18446744073709551615})");
  std::string out;
  karta::append_json(out, value);
  CHECK(out == value.dump());
  CHECK(out == R"({"a":{"a":[],"b":"c"},"n":18446744073709551615,"z":[1,-2,3.5,1e+300,true,false,null,{}]})");
}

}  // namespace unit_json_text
