#pragma once

// Levenshtein distance for the did-you-mean suggestions of messages. The definition parser's unknown
// fields (definitions/object_reader.h) and the schema checks of validate/ (openapi_schema.cpp,
// crd_schema.cpp) suggest alike; it is apart from the definition model because it knows nothing of it.

#include <cstddef>
#include <string_view>

namespace karta {

// Levenshtein distance, for did-you-mean suggestions in messages.
std::size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace karta
