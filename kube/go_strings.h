#pragma once

// Go's strings.TrimSpace, which client-go applies to token files and Go's httpproxy to proxy variables:
// ASCII whitespace (space, \t, \n, \v, \f, \r) removed from both ends.

#include <string>
#include <string_view>

namespace karta::kube {

inline std::string trim_space(std::string_view text) {
  constexpr std::string_view kSpace = " \t\n\v\f\r";
  std::size_t first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return "";
  return std::string(text.substr(first, text.find_last_not_of(kSpace) - first + 1));
}

}  // namespace karta::kube
