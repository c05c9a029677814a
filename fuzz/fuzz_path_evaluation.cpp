// Fuzz target: native path evaluation, with libjq as the oracle.
//
// The input is a jq expression on its first line and a JSON document after it (no newline: the document
// is null; a document that is not JSON is skipped). When SimplePath::parse accepts the expression, its
// evaluate() must agree with libjq 1.6 on the same document, as definitions/simple_path.h promises:
//   - path(EXPR): the same paths, in the same order, an error in both or in neither, capped in both or
//     in neither;
//   - EXPR: the values at those paths (a missing member or index is null), numbers compared as jq holds
//     them (doubles).
// When NativeExpression::parse accepts the expression and its evaluate() answers (it may give up), jq
// must give the same values and no error (definitions/native_expression.h).
// jq refusing to compile an expression either accepted is a difference too. Any difference aborts.

#include <cctype>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "admission/admission_review.h"
#include "definitions/jq_program.h"
#include "definitions/native_expression.h"
#include "definitions/simple_path.h"
#include "fuzz/fuzz_support.h"
#include "json/documents.h"

namespace {

using karta::json;
using karta::fuzz::finding;

constexpr std::size_t kCap = 64;

struct Programs {
  std::unique_ptr<karta::JqProgram> paths, values;
};

// jq compiles slowly (~18 ms): keep the programs of recent expressions.
const Programs& programs_for(const std::string& expression) {
  static std::unordered_map<std::string, Programs> cache;
  if (auto it = cache.find(expression); it != cache.end()) return it->second;
  if (cache.size() >= 512) cache.clear();
  Programs programs;
  // limit() bounds the outputs inside jq, as the webhook's bundles do: JqProgram::run stopping a path()
  // program early trips an assertion in jq 1.6 (fuzz/findings/F2-*).
  const std::string limit = "limit(" + std::to_string(kCap + 1) + "; ";
  try {
    programs.paths = std::make_unique<karta::JqProgram>(limit + "path(" + expression + "\n))", 1);
    programs.values = std::make_unique<karta::JqProgram>(limit + expression + "\n)", 1);
  } catch (const karta::JqCompileError& e) {
    finding("the native grammar accepts an expression jq does not compile: [" + expression + "]: " + e.what());
  }
  return cache.emplace(expression, std::move(programs)).first->second;
}

// As jq compares: every number is a double.
bool same_value(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
  if (a.type() != b.type()) return false;
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!same_value(a[i], b[i])) return false;
    }
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(); it != a.end(); ++it) {
      auto other = b.find(it.key());
      if (other == b.end() || !same_value(it.value(), *other)) return false;
    }
    return true;
  }
  return a == b;
}

std::string describe(const std::string& expression, const json& document) {
  return "expression [" + expression + "] on document " + document.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 500);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  karta::fuzz::quiet_logs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto newline = input.find('\n');
  std::string expression(input.substr(0, newline));
  std::string_view document_text = newline == std::string_view::npos ? "null" : input.substr(newline + 1);

  auto path = karta::SimplePath::parse(expression);
  auto native_expression = path ? std::nullopt : karta::NativeExpression::parse(expression);
  if (!path && !native_expression) return 0;
  // As the webhook reads admitted objects: its parser refuses documents deeper than kMaxReviewDepth.
  std::optional<karta::JsonDocument> parsed;
  try {
    parsed.emplace(karta::JsonDocument::parse(document_text, karta::kMaxReviewDepth));
  } catch (const karta::JsonParseError&) {
    return 0;
  }
  const json document = karta::to_json(parsed->root());
  const Programs& programs = programs_for(expression);
  if (!programs.values) return 0;

  if (native_expression) {
    auto answered = native_expression->evaluate(parsed->root(), kCap);
    if (!answered) return 0;  // gave up: jq decides
    karta::JqInput input_value(parsed->root());
    auto by_jq = programs.values->run(input_value, kCap + 2);
    if (by_jq.error) {
      finding("native evaluation answered where jq fails with " + *by_jq.error + " for " + describe(expression, document));
    }
    bool same = by_jq.outputs.size() == answered->size();
    for (std::size_t i = 0; same && i < answered->size(); ++i) same = same_value((*answered)[i], by_jq.outputs[i]);
    if (!same) {
      // Replacing what is not UTF-8: a native string may hold bytes jq replaced (F10).
      const auto replace = json::error_handler_t::replace;
      finding("native values " + json(*answered).dump(-1, ' ', false, replace) + " differ from jq's " +
              json(by_jq.outputs).dump(-1, ' ', false, replace) + " for " + describe(expression, document));
    }
    return 0;
  }

  auto native = path->evaluate(parsed->root(), kCap);
  karta::JqInput input_value(parsed->root());
  auto jq_paths = programs.paths->run(input_value, kCap + 2);
  auto jq_values = programs.values->run(input_value, kCap + 2);
  for (auto* outcome : {&jq_paths, &jq_values}) {
    if (outcome->outputs.size() > kCap) {
      outcome->outputs.resize(kCap);
      outcome->capped = true;
    }
  }

  std::vector<std::string> jq_pointers;
  for (const auto& p : jq_paths.outputs) {
    if (!p.is_array()) finding("jq's path() gave a non-array " + p.dump() + " for " + describe(expression, document));
    json::json_pointer pointer;
    for (const auto& token : p) {
      if (token.is_string()) pointer /= token.get<std::string>();
      else if (token.is_number_integer() && token.get<std::int64_t>() >= 0) pointer /= token.get<std::size_t>();
      else finding("jq's path() gave the component " + token.dump() + " for " + describe(expression, document));
    }
    jq_pointers.push_back(pointer.to_string());
  }
  std::vector<std::string> native_pointers;
  for (const auto& match : native.matches) native_pointers.push_back(match.pointer.to_string());

  auto list = [](const std::vector<std::string>& items) {
    std::string text = "[";
    for (const auto& item : items) text += "\"" + item + "\" ";
    return text + "]";
  };
  if (native_pointers != jq_pointers) {
    finding("paths differ: native " + list(native_pointers) + " jq " + list(jq_pointers) + " for " +
            describe(expression, document));
  }
  if (native.error.has_value() != jq_paths.error.has_value()) {
    finding("errors differ: native " + native.error.value_or("(none)") + ", jq " + jq_paths.error.value_or("(none)") +
            " for " + describe(expression, document));
  }
  if (native.capped != jq_paths.capped) finding("caps differ for " + describe(expression, document));

  // Values: jq's EXPR gives the value at each path (null where missing); it stops at the same error.
  if (jq_values.outputs.size() != native.matches.size() || jq_values.error.has_value() != native.error.has_value()) {
    finding("jq's EXPR gave " + std::to_string(jq_values.outputs.size()) + " values and error " +
            jq_values.error.value_or("(none)") + ", native " + std::to_string(native.matches.size()) + " for " +
            describe(expression, document));
  }
  for (std::size_t i = 0; i < native.matches.size(); ++i) {
    const json native_value = native.matches[i].value ? karta::to_json(*native.matches[i].value) : json(nullptr);
    if (!same_value(native_value, jq_values.outputs[i])) {
      finding("values differ at " + native_pointers[i] + ": native " + native_value.dump() + " jq " +
              jq_values.outputs[i].dump() + " for " + describe(expression, document));
    }
  }
  return 0;
}
