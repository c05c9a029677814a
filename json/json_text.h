#pragma once

// Writing JSON text directly, byte for byte what nlohmann::json's dump() writes for valid text (compact,
// object members in key order), without building a json tree first. The admission response and the
// JSON Patch are written with these.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace karta {

using json = nlohmann::json;

// The length of the valid UTF-8 sequence starting at text[i] (a byte >= 0x80), or 0 (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF, nothing cut short).
std::size_t utf8_sequence(std::string_view text, std::size_t i);

// `text` as a quoted JSON string. Invalid UTF-8 (a message cut short inside a character, say) becomes
// U+FFFD, as nlohmann::json's error_handler_t::replace writes it, instead of failing.
void append_json_string(std::string& out, std::string_view text);

// `value` as compact JSON text.
void append_json(std::string& out, const json& value);

}  // namespace karta
