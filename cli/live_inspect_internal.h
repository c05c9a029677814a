#pragma once

// What the two files of the live commands share: cli/live_inspect.cpp reads the cluster and runs
// `inspect` and `list`; cli/live_inspect_view.cpp builds and lays out what they show, and `list` prints
// its rows with the same phase, column layout and age. Internal to those two files.

#include <chrono>
#include <string>
#include <vector>

#include "definitions/compiled_definition.h"

namespace karta::live_inspect {

// The workload's phase as kli prints it: every status that matched, in the published order, joined by
// commas ("Undefined" when none did).
std::string workload_phase(DefinitionEvaluation& evaluation);

// Rows laid out as kubectl's tab writer lays them out (printers.GetNewTabWriter: minimum width 6,
// padding 3): every cell but the last of a row padded to its column's width; trailing blanks trimmed.
// The cells are text already escaped for the terminal; a cell is as wide as its terminal_width.
std::string align(const std::vector<std::vector<std::string>>& rows);

// The age of an object created at `created` (RFC 3339, UTC), as human_duration prints it; "<unknown>"
// when the time does not parse.
std::string age_of(const std::string& created, std::chrono::system_clock::time_point now);

}  // namespace karta::live_inspect
