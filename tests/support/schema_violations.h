#pragma once

// Whole results of schema validation and pruning (k8s/openapi_schema.h) in assertions, printed one
// violation or field a line when they fail.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "k8s/openapi_schema.h"

// Whole results print one violation a line when an assertion fails.
template <>
struct doctest::StringMaker<std::vector<karta::SchemaViolation>> {
  static doctest::String convert(const std::vector<karta::SchemaViolation>& violations) {
    std::string text = "{";
    for (const auto& v : violations) text += "\n  {\"" + v.field + "\", \"" + v.message + "\"}";
    return (text + (violations.empty() ? "}" : "\n}")).c_str();
  }
};

namespace karta::test {

using Violations = std::vector<SchemaViolation>;
using Fields = std::vector<std::string>;

// Removed fields, one a line, for whole-result assertions that print when they fail.
inline std::string lines(const Fields& fields) {
  std::string text;
  for (const auto& field : fields) text += field + "\n";
  return text;
}

}  // namespace karta::test
