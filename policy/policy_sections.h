#pragma once

// Reading the sections a policy is made of into a resolved Policy (policy/policy_sections.cpp).

#include <optional>

#include "policy/policy.h"

namespace karta {

class Section;

// Reads every section of the global policy but `tenants` into `policy`; `top` refuses unknown fields.
void parse_sections(Section& top, Policy& policy);

// Reads `namespaceLabels` of the global policy (a tenant rule has none): its whenUnknown, when given.
std::optional<UnknownLabelsAction> read_when_unknown(Section& top);

}  // namespace karta
