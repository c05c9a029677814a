// The JSON log: every line is one JSON object whatever the message holds.

#include <doctest/doctest.h>

#include <sstream>

#include <nlohmann/json.hpp>
#include <spdlog/logger.h>
#include <spdlog/sinks/ostream_sink.h>

#include "runtime/logging.h"

using json = nlohmann::json;

namespace {

// The lines `messages` make through the JSON formatter, each parsed.
std::vector<json> logged(const std::vector<std::string>& messages) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_st>(out);
  spdlog::logger logger("test", sink);
  logger.set_formatter(karta::json_log_formatter());
  for (const auto& message : messages) logger.warn("{}", message);
  logger.flush();
  std::vector<json> lines;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
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
