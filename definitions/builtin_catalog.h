#pragma once

#include <span>
#include <string_view>

namespace karta {

// One YAML file of definitions/catalog/, compiled into the binary by cmake/embed_catalog.cmake.
struct EmbeddedDefinitionFile {
  std::string_view name;
  std::string_view text;
};

std::span<const EmbeddedDefinitionFile> builtin_catalog_files();

}  // namespace karta
