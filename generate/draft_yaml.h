#pragma once

// Writing the YAML of a drafted Karta (generate/karta_draft.h), line by line, because every inferred value
// carries a comment and no YAML library here writes comments. Internal to generate/.

#include <sstream>
#include <string>

namespace karta::draft_yaml {

std::string lower(std::string text);
// A JSON string, which YAML reads as a double-quoted scalar.
std::string quoted(const std::string& text);
// A YAML scalar: plain when it cannot be read as anything but that string, else double-quoted.
std::string scalar(const std::string& text);
// A place or name in a comment, in backquotes, escaped as terminals show others' text (no line break can
// end the comment early).
std::string code(const std::string& text);

class Yaml {
 public:
  void line(int indent, const std::string& text) {
    out_ << std::string(static_cast<std::size_t>(indent), ' ') << text << "\n";
  }
  void comment(int indent, const std::string& text) { line(indent, "# " + text); }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

}  // namespace karta::draft_yaml
