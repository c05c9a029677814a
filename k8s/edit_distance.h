#pragma once

// Levenshtein distance, for the did-you-mean of a field an object or a schema does not have: the
// structural-schema checker (k8s/openapi_schema.cpp), the definition parser's unknown fields
// (definitions/object_reader.h) and the paths checked against a CRD (validate/crd_schema.cpp) suggest
// alike. It sits with the schema checker, at the bottom of the graph, so that all three can use it.

#include <cstddef>
#include <string_view>

namespace karta {

// Levenshtein distance, for did-you-mean suggestions in messages.
std::size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace karta
