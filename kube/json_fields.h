#pragma once

// Strings read leniently out of API objects, as the client meets them: "" when absent or not a string.

#include <string>

#include <nlohmann/json.hpp>

namespace karta::kube {

inline std::string string_at(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return "";
  auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : "";
}

// metadata.<key>: "name", "namespace", "resourceVersion", "continue", ...
inline std::string metadata_string(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return "";
  auto metadata = object.find("metadata");
  return metadata == object.end() ? "" : string_at(*metadata, key);
}

}  // namespace karta::kube
