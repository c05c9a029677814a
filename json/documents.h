#pragma once

// Reading Kubernetes-style YAML or JSON files into JSON values, several documents per file.

#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace karta {

using json = nlohmann::json;

// Bad input from a user: the message says what is wrong and where (file, document, line).
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An InputError of several lines, a fault each, every line already escaped for a terminal
// (k8s/terminal_text.h, terminal_text) and joined with '\n': printed as lines (error_text), where any
// other error's text is escaped whole, so that a line break in it stays on its line.
class InputLinesError : public InputError {
 public:
  using InputError::InputError;
};

// Where a field of a YAML document starts, 1-based.
struct SourcePosition {
  std::size_t line = 0, column = 0;
};
// Each field of a document by its path as messages name it (`tenants[0].namespaceSelector.matchLabels`:
// map keys joined with '.', list items as [i]): the position of its key, or of the list item.
using SourceMarks = std::map<std::string, SourcePosition>;

struct SourceDocument {
  std::string source;  // "file.yaml#2": the file and the position among its non-empty documents
  std::size_t index = 0;
  json value;
  std::shared_ptr<const SourceMarks> marks;  // with keep_marks only
};

// Parses YAML (or JSON) text holding one or more documents; empty documents are skipped.
// Plain scalars are typed as YAML 1.2's core schema does (null, booleans, integers, floats); quoted
// scalars stay strings, so `"true"` in a label map stays the string "true". A map that holds a key twice
// is refused, naming the key and both lines (YAML would keep the last silently). With `keep_marks`, each
// document also records where each of its fields is (JSON text is read as YAML then).
std::vector<SourceDocument> parse_documents(std::string_view text, const std::string& source_name,
                                            bool keep_marks = false);

// Reads a file and parses it as parse_documents does. Throws InputError naming the file.
std::vector<SourceDocument> read_documents(const std::filesystem::path& file, bool keep_marks = false);

// The documents of each file in turn, as read_documents reads them: each named by its file and place.
std::vector<SourceDocument> read_all_documents(const std::vector<std::string>& files);

// The files named, a directory standing for its *.yaml, *.yml and *.json files in name order.
std::vector<std::string> expand_manifest_paths(const std::vector<std::string>& names);

// The offset of the first byte that is not valid UTF-8, or npos.
std::size_t utf8_error_offset(std::string_view text);

// The deepest nesting of arrays and objects in JSON text, stopping early past `limit`.
int json_nesting_depth(std::string_view text, int limit);

// Reads a whole file. Throws InputError naming the file.
std::string read_text_file(const std::filesystem::path& file);

}  // namespace karta
