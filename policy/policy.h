#pragma once

// The platform's policy file (--policy): what the webhook injects into pod templates and workloads.
// One YAML document; README.md documents every field.

#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace karta {

using json = nlohmann::json;

struct PodTemplatePolicy {
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  bool overwrite = false;  // existing keys keep their values unless true
};

struct Policy {
  std::string source = "(none)";
  PodTemplatePolicy pod_templates;
};

// Reads a policy document strictly: an unknown field, a bad label key or value is an InputError naming
// the field.
Policy parse_policy(const json& document, const std::string& source);
Policy load_policy(const std::filesystem::path& file);

// Kubernetes' syntax rules (apimachinery's validation): the reason a key or value is invalid, or "".
std::string label_key_error(const std::string& key);
std::string label_value_error(const std::string& value);
std::string annotation_key_error(const std::string& key);

}  // namespace karta
