#include "kube/api_path.h"

namespace karta::kube {

namespace {

constexpr const char* kHex = "0123456789ABCDEF";

// RFC 3986's unreserved characters (§2.3): all a query value keeps.
bool unreserved(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

// net/url's shouldEscape(c, encodePathSegment): the unreserved characters, and the reserved ones a
// segment may hold (§3.3) but for / ; , which give a path its segments' meaning, and ? which ends it.
bool kept_in_segment(unsigned char c) {
  switch (c) {
    case '$': case '&': case '+': case ':': case '=': case '@':
      return true;
    default:
      return unreserved(c);
  }
}

// Every byte `kept` refuses as %XX, in upper-case hex.
std::string percent_escape(std::string_view text, bool (*kept)(unsigned char)) {
  std::string escaped;
  escaped.reserve(text.size());
  for (unsigned char c : text) {
    if (kept(c)) {
      escaped.push_back(static_cast<char>(c));
    } else {
      escaped += '%';
      escaped += kHex[c >> 4];
      escaped += kHex[c & 15];
    }
  }
  return escaped;
}

}  // namespace

std::string path_escape(std::string_view segment) { return percent_escape(segment, kept_in_segment); }

std::string query_escape(std::string_view value) { return percent_escape(value, unreserved); }

std::string group_version_path(const std::string& group, const std::string& version) {
  return group.empty() ? "/api/" + path_escape(version) : "/apis/" + path_escape(group) + "/" + path_escape(version);
}

std::string resource_path(const std::string& group, const std::string& version, const std::string& plural,
                          const std::string& namespace_name, const std::string& name) {
  std::string path = group_version_path(group, version);
  if (!namespace_name.empty()) path += "/namespaces/" + path_escape(namespace_name);
  path += "/" + path_escape(plural);
  if (!name.empty()) path += "/" + path_escape(name);
  return path;
}

std::string target_fault(std::string_view target) {
  for (unsigned char c : target) {
    if (c < 0x20 || c == 0x7f) return "it holds a control character";
  }
  if (target.find(' ') != std::string_view::npos) return "it holds a space";
  if (target.find('#') != std::string_view::npos) return "it holds '#', which would start a fragment";
  std::size_t question = target.find('?');
  if (question != std::string_view::npos && target.find('?', question + 1) != std::string_view::npos) {
    return "it holds a second '?': a name went in unescaped";
  }
  std::string_view path = target.substr(0, question);
  for (std::size_t start = 0; start < path.size();) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view segment = path.substr(start, end - start);
    if (segment == "." || segment == "..") return "it has a \"" + std::string(segment) + "\" segment, which names another path";
    start = end + 1;
  }
  return "";
}

std::string printable(std::string_view text) {
  std::string shown;
  for (unsigned char c : text) {
    if (c == '\r') {
      shown += "\\r";
    } else if (c == '\n') {
      shown += "\\n";
    } else if (c == '\t') {
      shown += "\\t";
    } else if (c == '\\') {
      shown += "\\\\";
    } else if (c < 0x20 || c >= 0x7f) {
      shown += "\\x";
      shown += kHex[c >> 4];
      shown += kHex[c & 15];
    } else {
      shown.push_back(static_cast<char>(c));
    }
  }
  return shown;
}

}  // namespace karta::kube
