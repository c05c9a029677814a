#pragma once

// The request targets the client sends, built in one place. Every path segment (group, version,
// namespace, resource, name) is escaped as client-go escapes it (Go's url.PathEscape), so nothing taken
// from the cluster or the user can end the request line, add a header, start a query or name another
// path: an ownerReference's name may hold any bytes but "" (the API server checks nothing else).
// ApiClient checks every target with target_fault() before sending it.

#include <string>
#include <string_view>

namespace karta::kube {

// Go's url.PathEscape: letters, digits and - _ . ~ $ & + : = @ stay; every other byte (/ ; , ? % space,
// controls, each byte of UTF-8) becomes %XX in upper-case hex.
std::string path_escape(std::string_view segment);

// Percent-encodes a query value: every byte but letters, digits and - . _ ~ (continue tokens are base64
// and hold '+', '/' and '='; selectors hold '=', '!', ',' and spaces).
std::string query_escape(std::string_view value);

// "/api/VERSION" for the core group (""), else "/apis/GROUP/VERSION".
std::string group_version_path(const std::string& group, const std::string& version);

// A collection, or one object of it when `name` is given: the group version's path, then
// "/namespaces/NS" when `namespace_name` is given, "/PLURAL" and "/NAME". Every segment escaped.
std::string resource_path(const std::string& group, const std::string& version, const std::string& plural,
                          const std::string& namespace_name = "", const std::string& name = "");

// Why `target` (a path and query as built above) must not be sent, or "" when it may be: a control
// character (below 0x20, or 0x7f) or a space would end the request line or start a header; '#' would
// start a fragment; a second '?', or a "." or ".." segment (which servers resolve to another path), means
// a name went in unescaped.
std::string target_fault(std::string_view target);

// Text as an error message or warning may show it (a refused target, a server's answer): control
// characters as \r, \n, \t or \xHH, bytes from 0x80 as \xHH and '\' as "\\", so that it cannot write
// to the terminal that reads the message.
std::string printable(std::string_view text);

}  // namespace karta::kube
