#pragma once

// What the tests of text printed for terminals look for in an output: anything a terminal would act on.

#include <string>

namespace karta::test {

// What in `text` a terminal would act on: every C0 control but the newline, DEL, every C1 control
// (U+0080..U+009F) and every byte that is not UTF-8, each as "\xNN at OFFSET", joined by ", "; "" when
// there is none.
std::string terminal_controls(const std::string& text);

}  // namespace karta::test
