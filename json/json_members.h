#pragma once

// Small readers of an admitted object's members, shared by mutation and validation.

#include <optional>
#include <string>
#include <string_view>

#include "json/json_document.h"

namespace karta {

// The string at member `key` of `object` (when it is an object), or "": absent, or not a string.
inline std::string string_member(const std::optional<JsonElement>& object, std::string_view key) {
  auto value = object && object->is_object() ? member(*object, key) : std::nullopt;
  auto text = value ? string_of(*value) : std::nullopt;
  return text ? std::string(*text) : std::string();
}

}  // namespace karta
