// The JSON log: every line is one JSON object whatever the message holds. The text log: every line is one
// line, with nothing in it a terminal would act on.

#include <doctest/doctest.h>

#include <sstream>

#include <nlohmann/json.hpp>
#include <spdlog/logger.h>
#include <spdlog/sinks/ostream_sink.h>

#include "runtime/logging.h"

namespace unit_logging {  // this file's names, apart from other tests' in a unity build

using json = nlohmann::json;

namespace {

// The lines `messages` make through `formatter`, as text.
std::vector<std::string> logged_lines(std::unique_ptr<spdlog::formatter> formatter, const std::vector<std::string>& messages) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_st>(out);
  spdlog::logger logger("test", sink);
  logger.set_formatter(std::move(formatter));
  for (const auto& message : messages) logger.warn("{}", message);
  logger.flush();
  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The lines `messages` make through the JSON formatter, each parsed.
std::vector<json> logged(const std::vector<std::string>& messages) {
  std::vector<json> lines;
  for (const auto& line : logged_lines(karta::json_log_formatter(), messages)) lines.push_back(json::parse(line));
  return lines;
}

}  // namespace

TEST_CASE("a message with quotes, backslashes, newlines and control characters is one JSON line, unchanged") {
  std::string hostile = "Karta \"x\" not loaded: .spec | \\(foo)\nline two\ttab\x01\x1f end";
  auto lines = logged({hostile, "plain"});
  REQUIRE(lines.size() == 2);
  CHECK(lines[0]["msg"] == hostile);
  CHECK(lines[0]["level"] == "warning");
  CHECK(lines[1]["msg"] == "plain");
  // time is UTC with microseconds: 2026-12-02T00:53:25.123456Z
  std::string time = lines[0]["time"];
  CHECK(time.size() == 27);
  CHECK(time[10] == 'T');
  CHECK(time.back() == 'Z');
  CHECK(lines[0].size() == 3);
}

TEST_CASE("bytes that are not UTF-8 in a message (a label value quoted back) become U+FFFD, and UTF-8 stays") {
  auto lines = logged({std::string("value \xff\xfe of caf\xc3\xa9")});
  REQUIRE(lines.size() == 1);
  CHECK(lines[0]["msg"] == "value \xEF\xBF\xBD\xEF\xBF\xBD of caf\xc3\xa9");
}

TEST_CASE("the text log writes a message's control characters and escape sequences escaped, one line per message") {
  auto lines = logged_lines(karta::text_log_formatter(),
                            {"Karta \"a\x1b]0;pwned\x07\" not loaded:\n\x1b[2Jline two\r\xc2\x9b" "31m \xff", "plain"});
  REQUIRE(lines.size() == 2);
  // 2026-12-02T00:53:25.123 warning ...: the time is the local one, with milliseconds.
  REQUIRE(lines[0].size() > 24);
  CHECK(lines[0][10] == 'T');
  CHECK(lines[0].substr(23) == " warning Karta \"a^[]0;pwned\\a\" not loaded:\\n^[[2Jline two\\r\\u009b31m \\xff");
  CHECK(lines[1].substr(23) == " warning plain");
}

}  // namespace unit_logging
