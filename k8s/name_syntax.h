#pragma once

// The syntax of Kubernetes names, label keys, label values and annotation keys, as the API server checks
// them: the policy refuses a key, value or scheduler name that a patch could not carry, and the label
// policy reports invalid values.

#include <string>
#include <string_view>

namespace karta {

// Kubernetes' syntax rules (apimachinery's validation): the reason a key or value is invalid, or "".
std::string label_key_error(const std::string& key);
std::string label_value_error(const std::string& value);
std::string annotation_key_error(const std::string& key);
// A lowercase RFC 1123 subdomain of at most 253 characters (a label key's prefix, a scheduler name).
std::string dns_subdomain_error(const std::string& prefix);
// Whether `name` is a lowercase RFC 1123 label of at most 63 characters: a namespace's name.
bool is_dns_label(std::string_view name);

}  // namespace karta
