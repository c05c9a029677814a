// Fuzz target: the definition loader. The input is the text of a definitions file (YAML or JSON, any
// number of documents), as --definitions DIR would read it.
//
// karta::parse_definitions, then CompiledDefinition::compile on each definition. The documented
// exceptions are InputError (parse_definitions, parse_documents) and DefinitionError (compile); any other
// exception, or a crash, is a finding. A compiled definition must also be findable in a Catalog under
// its root kind.

#include <cstdint>
#include <string>

#include "definitions/catalog.h"
#include "definitions/compiled_definition.h"
#include "fuzz/fuzz_support.h"
#include "json/documents.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  karta::fuzz::quiet_logs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  karta::fuzz::quiet_logs();
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<karta::KartaDefinition> definitions;
  try {
    definitions = karta::parse_definitions(text, "fuzz.yaml");
  } catch (const karta::InputError& e) {
    if (std::string(e.what()).empty()) karta::fuzz::finding("an InputError without a message");
    return 0;
  }  // any other exception escapes: every input error must be an InputError or a DefinitionError
  karta::Catalog catalog;
  for (auto& definition : definitions) {
    auto kind = definition.root_kind();
    try {
      auto compiled = karta::CompiledDefinition::compile(std::move(definition), 1);
      catalog.add(compiled);
      if (catalog.find(kind) != compiled.get()) karta::fuzz::finding("a compiled definition is not found by its kind");
    } catch (const karta::DefinitionError& e) {
      if (std::string(e.what()).empty()) karta::fuzz::finding("a DefinitionError without a message");
    }
  }
  return 0;
}
