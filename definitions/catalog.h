#pragma once

// The set of compiled definitions the webhook serves, indexed by the root kind's group, version and
// kind (so Knative's serving.knative.dev/v1 Service never matches the core v1 Service).

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "definitions/compiled_definition.h"

namespace karta {

class Catalog {
 public:
  // Adds a definition; one for a kind already present replaces it (later sources override earlier).
  void add(std::shared_ptr<const CompiledDefinition> definition);

  // The definition for a root kind, or nullptr.
  const CompiledDefinition* find(const GroupVersionKind& kind) const;
  // "group/version/kind" of the definition for `kind` (as metrics name it), or nullptr.
  const std::string* find_key(const GroupVersionKind& kind) const;
  // Both at once (an admission needs the definition, then the key for its metric).
  struct Entry {
    const std::string* key = nullptr;
    const CompiledDefinition* definition = nullptr;
  };
  Entry find_entry(const GroupVersionKind& kind) const;
  std::shared_ptr<const CompiledDefinition> find_shared(const GroupVersionKind& kind) const;

  // A served version of a defined kind whose schema is the defined version's (a CustomResourceDefinition
  // serving v1beta1 as v1, with no conversion): found as the definition of `defined`, as the API server's
  // matchPolicy: Equivalent sends such an object to the webhook in the defined version. A definition's
  // `equivalentVersions` (its extensions annotation) are added with it; offline, --crds adds the rest. A
  // lookup of `served` gives the definition and the key of `defined`; a definition of `served` itself wins.
  void add_equivalent(const GroupVersionKind& served, const GroupVersionKind& defined);
  void remove_equivalent(const GroupVersionKind& served);

  std::size_t size() const { return by_kind_.size(); }
  // Every definition, ordered by kind.
  std::vector<std::shared_ptr<const CompiledDefinition>> definitions() const;

 private:
  // "group/version/kind", written into a per-thread buffer (valid until the thread's next call).
  static const std::string& lookup_key(const GroupVersionKind& kind);
  using ByKind = std::unordered_map<std::string, std::shared_ptr<const CompiledDefinition>>;
  ByKind::const_iterator locate(const GroupVersionKind& kind) const;
  ByKind by_kind_;
  std::unordered_map<std::string, std::string> equivalents_;  // served "group/version/kind" -> defined one
};

// Compiled definitions kept by their text, so a reload recompiles only what changed (compiling costs
// ~18 ms per jq program).
class DefinitionCache {
 public:
  explicit DefinitionCache(std::size_t concurrency) : concurrency_(concurrency) {}
  std::shared_ptr<const CompiledDefinition> compile(KartaDefinition definition,
                                                    JqCompilation when = JqCompilation::Now);
  // Forgets every entry not used since the last call.
  void sweep();
  std::size_t size() const { return entries_.size(); }

 private:
  std::size_t concurrency_;
  // Keyed by each definition's text (KartaDefinition::text), viewed in the compiled definition it maps to.
  std::unordered_map<std::string_view, std::shared_ptr<const CompiledDefinition>> entries_;
  std::unordered_set<std::string_view> used_;  // keys of entries_
};

struct CatalogSources {
  bool builtin = true;                             // the catalog compiled into the binary
  std::vector<std::filesystem::path> directories;  // *.yaml, *.yml and *.json files, added in order
  std::size_t concurrency = 1;                     // threads that may evaluate at once
  // Checks each definition read from a directory before it is used (validate/definition_validation.h:
  // jq safety, paths against CRDs), as the cluster's Karta objects are checked; its faults refuse the load.
  std::function<std::vector<std::string>(const json& document)> check;
};

// Definitions of one text (all Karta/ResourceInterface documents in it; other documents are skipped).
// Throws InputError listing every fault, with the source and field of each.
// With `check`, every document's faults from it are listed too.
std::vector<KartaDefinition> parse_definitions(
    std::string_view text, const std::string& source_name,
    const std::function<std::vector<std::string>(const json& document)>& check = {});

// Loads and compiles every source. Throws InputError or DefinitionError: a broken definition at start-up
// is a broken environment. The built-in catalog's jq is compiled on first use (JqCompilation::OnFirstUse;
// tests/unit-catalog-compile.cpp compiles all of it), a directory's at once, so that its faults refuse the
// load.
// With a cache, unchanged definitions are reused rather than compiled again.
Catalog load_catalog(const CatalogSources& sources, DefinitionCache* cache = nullptr);

}  // namespace karta
