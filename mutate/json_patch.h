#pragma once

// A finished RFC 6902 JSON Patch: the JSON text sent to the API server (base64 in the response) and its
// number of operations. Built as text by JsonPatchBuilder, so answering costs no json tree.

#include <cstddef>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

namespace karta {

struct JsonPatch {
  std::string text = "[]";     // compact JSON: an array of operations
  std::size_t operations = 0;  // how many

  bool empty() const { return operations == 0; }
  std::size_t size() const { return operations; }
  // The operations as a json array (tests, the offline commands, the fuzzers).
  nlohmann::json value() const { return nlohmann::json::parse(text); }
  // A patch given as a json array of operations (tests).
  static JsonPatch from(const nlohmann::json& operations) {
    return {operations.dump(), operations.is_array() ? operations.size() : 0};
  }

  friend bool operator==(const JsonPatch& a, const JsonPatch& b) { return a.text == b.text; }
  friend std::ostream& operator<<(std::ostream& out, const JsonPatch& patch) { return out << patch.text; }
};

}  // namespace karta
