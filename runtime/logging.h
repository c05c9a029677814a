#pragma once

// The process's log: one line per event on stderr, as JSON objects (for log collectors) or as text.

#include <memory>
#include <string>

#include <spdlog/formatter.h>

namespace karta {

// {"time":"2026-12-02T00:53:25.123456Z","level":"info","msg":"..."}: the message is a JSON string,
// escaped (quotes, backslashes, control characters; bytes that are not UTF-8 become U+FFFD), so a
// message quoting a hostile label value or a multi-line jq error is still one parseable line.
std::unique_ptr<spdlog::formatter> json_log_formatter();

// 2026-12-02T00:53:25.123 warning MESSAGE: the message escaped for the terminal the log is read on
// (k8s/terminal_text.h), so that a quoted hostile value neither acts on it nor starts a line of its own.
std::unique_ptr<spdlog::formatter> text_log_formatter();

// Installs the default logger on stderr. `format` is "json" or "text"; `level` is spdlog's name
// (trace, debug, info, warn, error).
void configure_logging(const std::string& format, const std::string& level);

}  // namespace karta
