#pragma once

// Validating a Karta definition before it is ever loaded: its structure, the label syntax of its
// componentTypeSelector.matchLabels, the safety of every jq expression, and every path against the target
// CRD's schema. Nothing of the definition is evaluated.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "definitions/karta_definition.h"
#include "validate/crd_schema.h"

namespace karta {

using json = nlohmann::json;

// Where CRD schemas come from: files offline (CrdSchemaSet), the API server in a cluster.
using CrdLookup = std::function<const CrdSchema*(const GroupVersionKind&)>;

// An expression longer than this is refused: definitions hold paths, not programs.
constexpr std::size_t kMaxExpressionLength = 4096;

struct DefinitionReport {
  std::vector<std::string> faults;    // each "field: what is wrong"; any fault refuses the definition
  std::vector<std::string> warnings;  // do not block
  // How many of `faults` are paths that are not in the schema of what they read (the target CRD, the
  // core Pod) or reach a place of the wrong shape. Such a path yields nothing, so a definition whose only
  // faults are these can still be loaded (definitionPolicy warn); any other fault (the published schema,
  // the structure, jq that is unsafe or does not compile) means it is never loaded.
  std::size_t path_faults = 0;
  // The index in `warnings` of the one that says no CRD schema of the root kind was known, so its paths
  // went unverified; a caller that knows why (/validate: it could not be read in time) says so there.
  std::optional<std::size_t> unknown_crd_warning;
  bool ok() const { return faults.empty(); }
  bool only_path_faults() const { return !faults.empty() && faults.size() == path_faults; }
};

// Every fault, not only the first: the jq and the paths of a definition that the published schema refuses
// are checked all the same, as far as it could be read. `crds` may return nullptr: the definition is then admitted with a
// warning that its paths were not verified.
// Without `compile`, the expressions are not compiled here (the caller compiles them next, as loading does).
DefinitionReport validate_definition(const json& document, const CrdLookup& crds, bool compile = true);

}  // namespace karta
