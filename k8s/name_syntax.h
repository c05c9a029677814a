#pragma once

// The syntax of Kubernetes names, label keys, label values and annotation keys, as the API server checks
// them: the policy refuses a key, value or scheduler name that a patch could not carry, and the label
// policy reports invalid values.

#include <string>

namespace karta {

// Kubernetes' syntax rules (apimachinery's validation): the reason a key or value is invalid, or "".
std::string label_key_error(const std::string& key);
std::string label_value_error(const std::string& value);
std::string annotation_key_error(const std::string& key);
// A lowercase RFC 1123 subdomain of at most 253 characters (a label key's prefix, a scheduler name).
std::string dns_subdomain_error(const std::string& prefix);

}  // namespace karta
