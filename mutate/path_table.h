#pragma once

// Escaped JSON Pointer texts to values, for the patch builder's lookups by path: the containers a patch
// creates, and the operations on members of the original's maps. An open-addressing table (linear
// probing, at most half full) of indexes into a vector of entries, all in the request's arena.
//
// A lookup hashes the path once and compares it only with paths in its probe run. The std::map it
// replaces compared the path with a path at every level of the tree, and the paths a patch holds share
// long prefixes (a template's "/spec/replicatedJobs/0/template/spec/template/..."): measured on the demo
// JobSet, the admission took 5.5 us instead of 5.8 (bench/README.md, issue 24, eleventh round).

#include <cstdint>
#include <memory_resource>
#include <string_view>
#include <utility>
#include <vector>

#include "json/json_pointer.h"

namespace karta {

template <typename Value>
class PathTable {
 public:
  // `arena` must outlive the table. The paths given are not copied: they must live as long.
  explicit PathTable(std::pmr::memory_resource* arena) : entries_(arena), slots_(kFirstSlots, 0, arena) {}

  // The value kept for `path`, or null.
  Value* find(std::string_view path) { return find(path, hash_of(path)); }
  Value* find(std::string_view path, std::size_t hash) {
    const std::uint32_t index = *slot(path, hash);
    return index == 0 ? nullptr : &entries_[index - 1].second;
  }
  // Keeps `value` for `path` unless a value is kept for it already (as std::map::emplace).
  void emplace(std::string_view path, Value value) { emplace(path, hash_of(path), std::move(value)); }
  void emplace(std::string_view path, std::size_t hash, Value value) {
    if (*slot(path, hash) != 0) return;
    if (2 * (entries_.size() + 1) > slots_.size()) grow();
    entries_.emplace_back(path, std::move(value));
    *slot(path, hash) = static_cast<std::uint32_t>(entries_.size());
  }
  std::size_t size() const { return entries_.size(); }

  static std::size_t hash_of(std::string_view path) { return hash_pointer_text(path); }

 private:
  static constexpr std::size_t kFirstSlots = 32;  // a power of two

  // The slot holding `path`'s entry (its index plus one), or the empty slot (0) where it would go.
  std::uint32_t* slot(std::string_view path, std::size_t hash) {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
      std::uint32_t& s = slots_[i];
      if (s == 0 || entries_[s - 1].first == path) return &s;
    }
  }
  void grow() {
    std::pmr::vector<std::uint32_t> bigger(2 * slots_.size(), 0, slots_.get_allocator());
    slots_.swap(bigger);
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      *slot(entries_[i].first, hash_of(entries_[i].first)) = static_cast<std::uint32_t>(i + 1);
    }
  }

  std::pmr::vector<std::pair<std::string_view, Value>> entries_;
  std::pmr::vector<std::uint32_t> slots_;
};

}  // namespace karta
