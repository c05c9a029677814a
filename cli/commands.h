#pragma once

// The karta-webhook command line: `serve`, and the offline commands that run the same code paths.

#include <iosfwd>
#include <string>
#include <vector>

namespace karta {

// Runs the command line; returns the process exit code. Output goes to `out`, errors to `err`.
int run_command_line(int argc, char** argv, std::ostream& out, std::ostream& err);

}  // namespace karta
