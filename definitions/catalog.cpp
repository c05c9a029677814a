#include "definitions/catalog.h"

#include <algorithm>

#include "definitions/api/published_api.h"
#include "definitions/builtin_catalog.h"
#include "json/documents.h"
#include "k8s/terminal_text.h"

namespace karta {

void Catalog::add(std::shared_ptr<const CompiledDefinition> definition) {
  // The key before the move: safe either way with shared_ptr, whose move assignment takes a reference,
  // but `map[key(x)] = std::move(x)` reads a moved-from x when the assignment takes its argument by value
  // (json's does; cli/live_inspect.cpp lost every cluster Karta but one that way).
  std::string key(lookup_key(definition->root_kind()));
  // The versions it declares equivalent replace those of the definition it replaces.
  std::erase_if(equivalents_, [&](const auto& entry) { return entry.second == key; });
  GroupVersionKind served = definition->root_kind();
  for (const std::string& version : definition->definition().equivalent_versions) {
    served.version = version;
    equivalents_[lookup_key(served)] = key;
  }
  by_kind_[std::move(key)] = std::move(definition);
}

// The key of `kind`, written into a per-thread buffer: a lookup on every admission allocates nothing.
const std::string& Catalog::lookup_key(const GroupVersionKind& kind) {
  thread_local std::string buffer;
  buffer.assign(kind.group).append("/").append(kind.version).append("/").append(kind.kind);
  return buffer;
}

void Catalog::add_equivalent(const GroupVersionKind& served, const GroupVersionKind& defined) {
  std::string key(lookup_key(served));
  equivalents_[std::move(key)] = lookup_key(defined);
}

void Catalog::remove_equivalent(const GroupVersionKind& served) { equivalents_.erase(lookup_key(served)); }

// The definition of `kind`, else of the version `kind` is equivalent to: one lookup path for every find.
Catalog::ByKind::const_iterator Catalog::locate(const GroupVersionKind& kind) const {
  auto it = by_kind_.find(lookup_key(kind));
  if (it == by_kind_.end() && !equivalents_.empty()) {
    if (auto equivalent = equivalents_.find(lookup_key(kind)); equivalent != equivalents_.end()) {
      it = by_kind_.find(equivalent->second);
    }
  }
  return it;
}

Catalog::Entry Catalog::find_entry(const GroupVersionKind& kind) const {
  auto it = locate(kind);
  return it == by_kind_.end() ? Entry{} : Entry{&it->first, it->second.get()};
}

const CompiledDefinition* Catalog::find(const GroupVersionKind& kind) const { return find_entry(kind).definition; }

const std::string* Catalog::find_key(const GroupVersionKind& kind) const { return find_entry(kind).key; }

std::shared_ptr<const CompiledDefinition> Catalog::find_shared(const GroupVersionKind& kind) const {
  auto it = locate(kind);
  return it == by_kind_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<const CompiledDefinition>> Catalog::definitions() const {
  std::vector<std::shared_ptr<const CompiledDefinition>> all;
  for (const auto& [unused, definition] : by_kind_) all.push_back(definition);
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a->root_kind() < b->root_kind(); });
  return all;
}

std::vector<KartaDefinition> parse_definitions(
    std::string_view text, const std::string& source_name,
    const std::function<std::vector<std::string>(const json& document)>& check) {
  std::vector<KartaDefinition> definitions;
  std::string problems;
  for (auto& document : parse_documents(text, source_name)) {
    if (!is_definition_object(document.value)) continue;
    if (check) {
      auto faults = check(document.value);
      for (const auto& fault : faults) problems += "\n  " + terminal_text(document.source + ": " + fault);
      if (!faults.empty()) continue;
    }
    auto parsed = parse_karta_definition(document.value, document.source);
    for (const auto& fault : parsed.faults) problems += "\n  " + terminal_text(document.source + ": " + fault.to_string());
    if (parsed.definition) definitions.push_back(std::move(*parsed.definition));
  }
  if (!problems.empty()) throw InputLinesError("invalid Karta definition:" + problems);
  return definitions;
}

std::shared_ptr<const CompiledDefinition> DefinitionCache::compile(KartaDefinition definition, JqCompilation when) {
  if (auto it = entries_.find(definition.text); it != entries_.end()) {
    used_.insert(it->first);
    return it->second;
  }
  auto compiled = CompiledDefinition::compile(std::move(definition), concurrency_, when);
  // The key is the compiled definition's own text, which the entry keeps alive: one copy, not two.
  std::string_view key = compiled->definition().text;
  entries_.emplace(key, compiled);
  used_.insert(key);
  return compiled;
}

void DefinitionCache::sweep() {
  for (auto it = entries_.begin(); it != entries_.end();) {
    it = used_.count(it->first) != 0 ? std::next(it) : entries_.erase(it);
  }
  used_.clear();
}

Catalog load_catalog(const CatalogSources& sources, DefinitionCache* cache) {
  PublishedSchemaHold schemas;  // parsed once for all the definitions, dropped after
  Catalog catalog;
  auto add_all = [&](std::vector<KartaDefinition> definitions, JqCompilation when) {
    for (auto& definition : definitions) {
      catalog.add(cache != nullptr ? cache->compile(std::move(definition), when)
                                   : CompiledDefinition::compile(std::move(definition), sources.concurrency, when));
    }
  };
  if (sources.builtin) {
    for (const auto& file : builtin_catalog_files()) {
      add_all(parse_definitions(file.text, "builtin:" + std::string(file.name)), JqCompilation::OnFirstUse);
    }
  }
  for (const auto& directory : sources.directories) {
    std::error_code ec;
    if (!std::filesystem::is_directory(directory, ec)) {
      throw InputError(directory.string() + ": not a directory of definitions");
    }
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(directory)) {
      auto extension = entry.path().extension();
      auto name = entry.path().filename().string();
      // Kubernetes mounts ConfigMaps with ..data and ..timestamp entries; skip hidden names.
      if (name.starts_with(".")) continue;
      if (extension == ".yaml" || extension == ".yml" || extension == ".json") files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      add_all(parse_definitions(read_text_file(file), file.string(), sources.check), JqCompilation::Now);
    }
  }
  return catalog;
}

}  // namespace karta
