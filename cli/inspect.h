#pragma once

// `karta-webhook inspect`: a workload as its definition sees it, as a tree with a resources table, or
// as JSON for scripts.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "definitions/compiled_definition.h"

namespace karta {

using json = nlohmann::json;

// The report: root kind/name and phase, each component's instances with replicas and requests per pod
// and in all, and the workload's totals.
json inspect_workload(const json& object, const CompiledDefinition& definition,
                      const std::vector<std::string>& gpu_names);

// The report as text: a tree, then a resources table; every string of the report escaped for the
// terminal (k8s/terminal_text.h).
std::string render_inspection(const json& report);

// Rows as aligned columns two spaces apart, trailing spaces trimmed, one line each. The cells are text
// already escaped for the terminal, and a column is as wide as its widest cell's terminal_width.
std::string render_columns(const std::vector<std::vector<std::string>>& rows);

}  // namespace karta
