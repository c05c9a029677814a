#pragma once

// What a validating decision comes to: allowed or not, the message that says why, warnings, and the label
// policy's findings. The label policy and the admission service share it.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace karta {

using json = nlohmann::json;

struct ValidationOutcome {
  bool allowed = true;
  std::string message;                // why it is denied: every fault, each with its place
  std::vector<std::string> warnings;  // findings that do not block
  // The label policy's findings, each with its place, in either mode (what audit reports).
  std::vector<std::string> violations;
};

}  // namespace karta
