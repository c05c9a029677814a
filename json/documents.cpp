#include "json/documents.h"

#include "json/json_document.h"
#include "json/json_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include <yaml-cpp/yaml.h>

namespace karta {
namespace {

// Deeper documents are refused rather than risking the stack: no Kubernetes object comes close.
constexpr int kMaxDepth = 256;

bool is_one_of(const std::string& s, std::initializer_list<const char*> words) {
  for (const char* word : words) {
    if (s == word) return true;
  }
  return false;
}

json resolve_plain_scalar(const std::string& s) {
  if (s.empty() || is_one_of(s, {"~", "null", "Null", "NULL"})) return nullptr;
  if (is_one_of(s, {"true", "True", "TRUE"})) return true;
  if (is_one_of(s, {"false", "False", "FALSE"})) return false;

  const char* first = s.data();
  const char* last = s.data() + s.size();
  const char* digits = (*first == '-' || *first == '+') ? first + 1 : first;
  if (digits != last && std::all_of(digits, last, [](char c) { return c >= '0' && c <= '9'; })) {
    std::int64_t value = 0;
    auto [end, ec] = std::from_chars(*first == '+' ? first + 1 : first, last, value);
    if (ec == std::errc() && end == last) return value;
  }
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
    std::int64_t value = 0;
    auto [end, ec] = std::from_chars(first + 2, last, value, s[1] == 'x' ? 16 : 8);
    if (ec == std::errc() && end == last) return value;
  }
  if (is_one_of(s, {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"})) {
    return std::numeric_limits<double>::infinity();
  }
  if (is_one_of(s, {"-.inf", "-.Inf", "-.INF"})) return -std::numeric_limits<double>::infinity();
  // A float needs a digit and only float characters; "1.2.3" or "1e" stay strings.
  bool float_chars = std::all_of(first, last, [](char c) {
    return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+';
  });
  if (float_chars && std::any_of(first, last, [](char c) { return c >= '0' && c <= '9'; })) {
    std::istringstream in(s);
    double value = 0;
    in >> value;
    if (in && in.peek() == std::char_traits<char>::eof()) return value;
  }
  return s;
}

// Converting one YAML document: where messages say it is, where its lines start in the file, and the
// marks to record (null: none).
struct Conversion {
  const std::string& where;
  std::size_t line_offset = 0;
  SourceMarks* marks = nullptr;
  SourcePosition position(const YAML::Mark& mark) const {
    return {line_offset + static_cast<std::size_t>(mark.line) + 1, static_cast<std::size_t>(mark.column) + 1};
  }
  std::string at(const YAML::Mark& mark) const {
    SourcePosition p = position(mark);
    return "line " + std::to_string(p.line) + " column " + std::to_string(p.column);
  }
};

json to_json(const YAML::Node& node, int depth, const Conversion& c, const std::string& path) {
  if (depth > kMaxDepth) {
    throw InputError(c.where + ": nesting deeper than " + std::to_string(kMaxDepth) + " levels");
  }
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return nullptr;
    case YAML::NodeType::Scalar: {
      const std::string& tag = node.Tag();
      if (tag == "?") return resolve_plain_scalar(node.Scalar());
      if (tag == "tag:yaml.org,2002:int" || tag == "tag:yaml.org,2002:float" ||
          tag == "tag:yaml.org,2002:bool" || tag == "tag:yaml.org,2002:null") {
        return resolve_plain_scalar(node.Scalar());
      }
      return node.Scalar();  // quoted ("!") or tagged as a string
    }
    case YAML::NodeType::Sequence: {
      json array = json::array();
      std::size_t index = 0;
      for (const auto& item : node) {
        std::string item_path;
        if (c.marks != nullptr) {
          item_path = path + "[" + std::to_string(index) + "]";
          c.marks->emplace(item_path, c.position(item.Mark()));
        }
        array.push_back(to_json(item, depth + 1, c, item_path));
        ++index;
      }
      return array;
    }
    case YAML::NodeType::Map: {
      json object = json::object();
      for (const auto& entry : node) {
        if (!entry.first.IsScalar()) {
          throw InputError(c.where + " " + c.at(entry.first.Mark()) + ": a map key must be a scalar");
        }
        const std::string& key = entry.first.Scalar();
        if (object.contains(key)) {
          std::string first;
          for (const auto& earlier : node) {
            if (earlier.first.IsScalar() && earlier.first.Scalar() == key) {
              first = c.at(earlier.first.Mark());
              break;
            }
          }
          // The key quoted and escaped as JSON, cut to a bound: it is the file's text.
          const std::string shown = json(key.size() > 128 ? key.substr(0, 128) + "..." : key)
                                        .dump(-1, ' ', false, json::error_handler_t::replace);
          throw InputError(c.where + " " + c.at(entry.first.Mark()) + ": duplicate key " + shown + " (first at " +
                           first + "); YAML would keep only the last");
        }
        std::string key_path;
        if (c.marks != nullptr) {
          key_path = path.empty() ? key : path + "." + key;
          c.marks->emplace(key_path, c.position(entry.first.Mark()));
        }
        object[key] = to_json(entry.second, depth + 1, c, key_path);
      }
      return object;
    }
  }
  return nullptr;
}

bool looks_like_json(std::string_view text) {
  auto pos = text.find_first_not_of(" \t\r\n");
  return pos != std::string_view::npos && (text[pos] == '{' || text[pos] == '[');
}

// yaml-cpp 0.7's LoadAll can loop without consuming input on malformed flow collections (",[  1"),
// allocating without bound (fixed upstream after 0.7). So documents are split here, at "---" and "..."
// lines, and each is loaded on its own.
std::vector<std::string_view> split_yaml_documents(std::string_view text) {
  std::vector<std::string_view> documents;
  std::size_t start = 0;
  std::size_t line = 0;
  while (line <= text.size()) {
    std::size_t end = text.find('\n', line);
    if (end == std::string_view::npos) end = text.size();
    std::string_view content = text.substr(line, end - line);
    bool marker = (content.starts_with("---") || content.starts_with("...")) &&
                  (content.size() == 3 || content[3] == ' ' || content[3] == '\t' || content[3] == '\r');
    if (marker) {
      documents.push_back(text.substr(start, line - start));
      // "--- value" starts a document on the marker line itself.
      start = content.starts_with("---") ? line + 3 : end;
    }
    line = end + 1;
  }
  documents.push_back(text.substr(start));
  return documents;
}

}  // namespace

std::size_t utf8_error_offset(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t length = static_cast<unsigned char>(text[i]) < 0x80 ? 1 : utf8_sequence(text, i);
    if (length == 0) return i;
    i += length;
  }
  return std::string_view::npos;
}

int json_nesting_depth(std::string_view text, int limit) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return deepest;
}

std::vector<SourceDocument> parse_documents(std::string_view text, const std::string& source_name, bool keep_marks) {
  std::vector<SourceDocument> documents;
  if (auto bad = utf8_error_offset(text); bad != std::string_view::npos) {
    std::size_t line = 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + bad, '\n'));
    throw InputError(source_name + " line " + std::to_string(line) + ": not valid UTF-8 (byte " +
                     std::to_string(bad) + ")");
  }
  if (!keep_marks && looks_like_json(text)) {
    // nlohmann's parser is iterative and much faster than yaml-cpp on large JSON.
    // The same bounded parse as the API client's answers (json/json_document.h), at a lower depth.
    json value(json::value_t::discarded);
    try {
      value = parse_json_within(text, kMaxDepth);
    } catch (const JsonParseError& e) {
      if (e.too_deep()) {
        throw InputError(source_name + "#0: nesting deeper than " + std::to_string(kMaxDepth) + " levels");
      }
    }
    if (!value.is_discarded()) {
      if (value.is_object() && value.value("kind", "") == "List" && value.contains("items") &&
          value["items"].is_array()) {
        std::size_t index = 0;
        for (auto& item : value["items"]) {
          documents.push_back({source_name + "#" + std::to_string(index), index, std::move(item), nullptr});
          ++index;
        }
        return documents;
      }
      documents.push_back({source_name + "#0", 0, std::move(value), nullptr});
      return documents;
    }
    // Not valid JSON: fall through to YAML, which reports the position of the fault.
  }
  std::vector<std::pair<YAML::Node, std::size_t>> nodes;  // each with the line it starts after
  std::size_t line_offset = 0;
  for (std::string_view piece : split_yaml_documents(text)) {
    try {
      nodes.emplace_back(YAML::Load(std::string(piece)), line_offset);
    } catch (const YAML::Exception& e) {
      throw InputError(source_name + " line " + std::to_string(line_offset + e.mark.line + 1) + " column " +
                       std::to_string(e.mark.column + 1) + ": " + e.msg);
    }
    line_offset += static_cast<std::size_t>(std::count(piece.begin(), piece.end(), '\n'));
  }
  for (const auto& [node, offset] : nodes) {
    // Documents are numbered among the non-empty ones, as kubectl lists them.
    std::size_t index = documents.size();
    std::string where = source_name + "#" + std::to_string(index);
    auto marks = keep_marks ? std::make_shared<SourceMarks>() : nullptr;
    json value = to_json(node, 0, Conversion{where, offset, marks.get()}, "");
    if (!value.is_null()) documents.push_back({where, index, std::move(value), std::move(marks)});
  }
  return documents;
}

std::string read_text_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file.string() + ": cannot be read");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw InputError(file.string() + ": read failed");
  return std::move(buffer).str();
}

std::vector<SourceDocument> read_documents(const std::filesystem::path& file, bool keep_marks) {
  return parse_documents(read_text_file(file), file.string(), keep_marks);
}

std::vector<SourceDocument> read_all_documents(const std::vector<std::string>& files) {
  std::vector<SourceDocument> documents;
  for (const auto& file : files) {
    for (auto& document : read_documents(file)) documents.push_back(std::move(document));
  }
  return documents;
}

std::vector<std::string> expand_manifest_paths(const std::vector<std::string>& names) {
  std::vector<std::string> files;
  for (const auto& name : names) {
    if (!std::filesystem::is_directory(name)) {
      files.push_back(name);
      continue;
    }
    std::vector<std::string> inside;
    for (const auto& entry : std::filesystem::directory_iterator(name)) {
      auto extension = entry.path().extension();
      if (extension == ".yaml" || extension == ".yml" || extension == ".json") inside.push_back(entry.path().string());
    }
    std::sort(inside.begin(), inside.end());
    files.insert(files.end(), inside.begin(), inside.end());
  }
  return files;
}

}  // namespace karta
