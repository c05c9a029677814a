#pragma once

// The process's allocator, jemalloc (linked into the server, the tests and the benchmark; not into the
// sanitizer builds, which bring their own). Its configuration is compiled in (`malloc_conf`, defined in
// allocator.cpp: kJemallocConfiguration) and read back through mallctl; MALLOC_CONF in the environment
// still overrides it, for experiments. An idle webhook keeps what start-up freed unless told otherwise:
// jemalloc returns dirty pages only as it allocates again, so release_free_memory() is called once loading
// and compiling are done.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace karta {

// The configuration compiled into the binary, in MALLOC_CONF's syntax.
extern const char* const kJemallocConfiguration;

// What jemalloc runs with (its opt.* values), or nothing when the process does not use jemalloc.
struct AllocatorSettings {
  std::string version;
  unsigned arenas = 0;
  long dirty_decay_ms = 0;
  long muzzy_decay_ms = 0;
  std::size_t tcache_max = 0;  // the largest size a thread caches, bytes
  bool background_thread = false;
  bool abort_conf = false;  // a configuration jemalloc does not understand aborts the process at start
};
std::optional<AllocatorSettings> allocator_settings();

// jemalloc's counters (stats.*, refreshed), bytes; nothing without jemalloc.
struct AllocatorStats {
  std::size_t allocated = 0;      // in use by the program
  std::size_t active = 0;         // in pages holding something in use
  std::size_t resident = 0;       // resident pages jemalloc maps, metadata included (an upper bound)
  std::size_t dirty = 0;          // freed pages not yet returned to the kernel, every arena
  std::size_t thread_cached = 0;  // free objects the threads keep in their caches
};
std::optional<AllocatorStats> allocator_stats();

// Empties the calling thread's cache into its arena, then returns every arena's dirty pages to the kernel
// (madvise). Takes a few milliseconds after start-up; off the admission threads. Does nothing without
// jemalloc.
void release_free_memory();

// Unmaps from the process the whole pages inside `bytes`, which must be read-only data of the binary
// (the embedded catalog and CRDs, parsed into the definitions at load): they stay in the page cache, and
// the kernel maps them again from the file if they are read again (at a reload). Returns the bytes
// released (whole pages), or 0 for bytes outside a read-only segment of a loaded file (nothing done).
std::size_t release_read_only_pages(std::string_view bytes);

}  // namespace karta
