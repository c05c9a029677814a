#pragma once

// Reading karta-webhook's extensions annotation (kExtensionsAnnotation) into a parsed definition. It is
// the part of the parser that is ours rather than the published API's (docs/definitions.md), so it is
// kept apart from the reading of `spec`. Internal to the parser: parse_karta_definition calls it.

#include <vector>

#include "definitions/karta_definition.h"

namespace karta::definition_reading {

// Sets the extension fields of the components `metadata.annotations[kExtensionsAnnotation]` names;
// what is wrong with it goes to `faults`.
void read_extensions(const json& metadata, KartaDefinition& d, std::vector<DefinitionFault>& faults);

}  // namespace karta::definition_reading
