#include "k8s/name_syntax.h"

namespace karta {
namespace {

// ASCII only, whatever the locale: Kubernetes names and label values are ASCII (std::isalnum follows the
// locale, and is a function call per character).
bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

// [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])? of at most 63 characters.
std::string qualified_name_error(const std::string& name) {
  if (name.empty()) return "must not be empty";
  if (name.size() > 63) return "must be no more than 63 characters";
  if (!is_alnum(name.front()) || !is_alnum(name.back())) return "must begin and end with an alphanumeric character";
  for (char c : name) {
    if (!is_alnum(c) && c != '-' && c != '_' && c != '.') {
      return "may contain only alphanumerics, '-', '_' and '.'";
    }
  }
  return "";
}

}  // namespace

// A lowercase RFC 1123 subdomain of at most 253 characters.
std::string dns_subdomain_error(const std::string& prefix) {
  if (prefix.empty() || prefix.size() > 253) return "prefix must be 1 to 253 characters";
  for (char c : prefix) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
    if (!ok) return "prefix must be a lowercase DNS subdomain";
  }
  if (!is_alnum(prefix.front()) || !is_alnum(prefix.back())) return "prefix must begin and end with an alphanumeric";
  return "";
}

bool is_dns_label(std::string_view name) {
  if (name.empty() || name.size() > 63 || name.front() == '-' || name.back() == '-') return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

std::string label_key_error(const std::string& key) {
  auto slash = key.find('/');
  if (slash == std::string::npos) return qualified_name_error(key);
  if (auto error = dns_subdomain_error(key.substr(0, slash)); !error.empty()) return error;
  if (auto error = qualified_name_error(key.substr(slash + 1)); !error.empty()) return "name part " + error;
  return "";
}

std::string annotation_key_error(const std::string& key) { return label_key_error(key); }

std::string label_value_error(const std::string& value) {
  if (value.empty()) return "";
  return qualified_name_error(value);
}

}  // namespace karta
