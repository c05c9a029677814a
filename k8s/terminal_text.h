#pragma once

// Text from the cluster or from a manifest (names, instance ids, a pod's reason, a condition's message,
// the notes and errors that quote them) printed for people on a terminal. Anyone who may create a pod or
// a workload writes such text, and a control character in it is an instruction to the terminal of whoever
// runs `inspect`, `list` or `audit`: "\x1b]0;...\x07" retitles the window, "\x1b[2J" clears the screen.
// kubectl escapes such text since 1.26 (k8s.io/cli-runtime/pkg/printers/terminal.go, EscapeTerminal);
// every human-readable output of ours goes through terminal_text. JSON output does not: it carries the
// exact value, escaped by the JSON writer.

#include <cstddef>
#include <exception>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace karta {

// `text` with nothing a terminal would act on, every character still visible:
// - ESC as "^[" and CR as "\r", as kubectl's EscapeTerminal writes them;
// - the characters kubectl leaves as they are, as Go's strconv.Quote writes them: the other C0 controls
//   as "\a", "\b", "\t", "\n", "\v", "\f" or "\xNN" (so that a value stays on its line and in its table
//   cell), DEL as "\x7f", and the C1 controls U+0080..U+009F (the 8-bit CSI U+009B among them) as
//   "\u0080".."\u009f";
// - each byte that is not part of valid UTF-8 as "\xNN".
// Everything else, other characters beyond ASCII included, is kept. The escapes are not undone: a
// backslash or caret already in the text stays as it is, as kubectl's does ("human readable (but
// non-reversible)").
std::string terminal_text(std::string_view text);

// Text a request or the cluster sent, quoted in a log line, an admission warning or a message: the first
// `limit` bytes of `text` (cut at a character), escaped as terminal_text escapes it, with
// "... (N bytes)" when it was cut. One namespace or label of a megabyte must not make a megabyte of log
// or of answer, nor reach another reader's terminal as instructions.
std::string bounded_text(std::string_view text, std::size_t limit = 128);

// `value` with every string in it, object keys included, as terminal_text writes it: a report or view
// made ready to be laid out as text in one step, whatever field of it a renderer prints.
nlohmann::json terminal_strings(const nlohmann::json& value);

// An error's text for a terminal: an InputLinesError's lines as they are (each escaped when it was
// made), any other error's text escaped whole by terminal_text.
std::string error_text(const std::exception& error);

// The columns text takes on a terminal once terminal_text has escaped it: one per character (code
// point), as a table lays out its cells.
std::size_t terminal_width(std::string_view escaped);

}  // namespace karta
