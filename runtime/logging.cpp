#include "runtime/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "json/json_text.h"
#include "k8s/terminal_text.h"

namespace karta {
namespace {

// %j in a pattern: the message as a JSON string, quotes included.
class JsonMessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& message, const std::tm&, spdlog::memory_buf_t& out) override {
    scratch_.clear();
    append_json_string(scratch_, std::string_view(message.payload.data(), message.payload.size()));
    out.append(scratch_.data(), scratch_.data() + scratch_.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<JsonMessageFlag>(); }

 private:
  std::string scratch_;
};

// %q in a pattern: the message as terminal_text writes it (quoted for the terminal).
class TerminalMessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& message, const std::tm&, spdlog::memory_buf_t& out) override {
    std::string text = terminal_text(std::string_view(message.payload.data(), message.payload.size()));
    out.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<TerminalMessageFlag>(); }
};

}  // namespace

std::unique_ptr<spdlog::formatter> json_log_formatter() {
  auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  formatter->add_flag<JsonMessageFlag>('j').set_pattern(R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","msg":%j})");
  return formatter;
}

std::unique_ptr<spdlog::formatter> text_log_formatter() {
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<TerminalMessageFlag>('q').set_pattern("%Y-%m-%dT%H:%M:%S.%e %l %q");
  return formatter;
}

void configure_logging(const std::string& format, const std::string& level) {
  auto logger = spdlog::stderr_logger_mt("karta-webhook");
  logger->set_formatter(format == "json" ? json_log_formatter() : text_log_formatter());
  logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(logger);
}

}  // namespace karta
