#include "runtime/allocator.h"

#include <link.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdint>

// jemalloc's control interface, declared weak so that a process without jemalloc (the sanitizer builds)
// links and finds it null. jemalloc.h is not included: it would declare it strong.
extern "C" int mallctl(const char* name, void* oldp, std::size_t* oldlenp, void* newp, std::size_t newlen)
    __attribute__((weak));

// jemalloc reads this symbol of the executable before its first allocation (MALLOC_CONF overrides it).
// Each setting, measured on `serve` with the built-in catalog (bench/README.md, "Memory"):
// - narenas:1. jemalloc's default is 4 arenas per CPU of the machine (not of the container's quota), and
//   gives each new thread the next one: the loader, the jq compiler, the reload thread and each worker
//   kept half-filled slabs of their own. One arena saved 0.25-0.65 MiB idle. Its cost is contention on the
//   arena's lock when a thread's cache fills or empties (once per 20-200 allocations of a size class), with
//   two or more worker threads: not resolved on a shared machine (bench/README.md says how to measure it).
// - abort_conf:true: a setting jemalloc does not know aborts the process at start instead of being ignored
//   with a warning (unit-allocator checks the settings in effect).
// Kept at jemalloc's defaults, measured idle: dirty_decay_ms (10 s; 0 saved 1.3 MiB alone but purges on
// every free under load: release_free_memory() after start-up gets that idle figure), tcache (on; off saved
// 0.4 MiB more and sends every allocation to the arena), background_thread (off: one more thread).
namespace {
// A constant: both pointers below are constant-initialized, set before jemalloc's first allocation
// (which comes before any dynamic initializer runs).
constexpr char kConfiguration[] = "narenas:1,abort_conf:true";
}  // namespace

extern "C" {
__attribute__((used, visibility("default"))) const char* malloc_conf = kConfiguration;
}

namespace karta {

const char* const kJemallocConfiguration = kConfiguration;

namespace {

template <typename T>
bool read_control(const char* name, T& value) {
  std::size_t size = sizeof(T);
  return mallctl(name, &value, &size, nullptr, 0) == 0 && size == sizeof(T);
}

// "4096" is MALLCTL_ARENAS_ALL: every arena at once (jemalloc.h, not included above).
constexpr const char* kAllArenasPurge = "arena.4096.purge";
constexpr const char* kAllArenasDirtyPages = "stats.arenas.4096.pdirty";
constexpr const char* kAllArenasTcacheBytes = "stats.arenas.4096.tcache_bytes";

}  // namespace

std::optional<AllocatorSettings> allocator_settings() {
  if (mallctl == nullptr) return std::nullopt;
  AllocatorSettings settings;
  const char* version = nullptr;
  ssize_t dirty = 0, muzzy = 0;
  if (!read_control("version", version) || !read_control("opt.narenas", settings.arenas) ||
      !read_control("opt.dirty_decay_ms", dirty) || !read_control("opt.muzzy_decay_ms", muzzy) ||
      !read_control("opt.tcache_max", settings.tcache_max) ||
      !read_control("opt.background_thread", settings.background_thread) ||
      !read_control("opt.abort_conf", settings.abort_conf)) {
    return std::nullopt;
  }
  settings.version = version != nullptr ? version : "";
  settings.dirty_decay_ms = static_cast<long>(dirty);
  settings.muzzy_decay_ms = static_cast<long>(muzzy);
  return settings;
}

std::optional<AllocatorStats> allocator_stats() {
  if (mallctl == nullptr) return std::nullopt;
  // Statistics are a snapshot taken when the epoch advances.
  std::uint64_t epoch = 1;
  std::size_t size = sizeof(epoch);
  if (mallctl("epoch", &epoch, &size, &epoch, size) != 0) return std::nullopt;
  AllocatorStats stats;
  std::size_t page = 0, dirty_pages = 0;
  if (!read_control("stats.allocated", stats.allocated) || !read_control("stats.active", stats.active) ||
      !read_control("stats.resident", stats.resident) || !read_control("arenas.page", page) ||
      !read_control(kAllArenasDirtyPages, dirty_pages) || !read_control(kAllArenasTcacheBytes, stats.thread_cached)) {
    return std::nullopt;
  }
  stats.dirty = dirty_pages * page;
  return stats;
}

void release_free_memory() {
  if (mallctl == nullptr) return;
  mallctl("thread.tcache.flush", nullptr, nullptr, nullptr, 0);
  mallctl(kAllArenasPurge, nullptr, nullptr, nullptr, 0);
}

namespace {

// Whether [first, last) lies in a loaded segment of the program or a library that is readable and neither
// writable nor executable (MADV_DONTNEED on anything else, the heap above all, would lose its contents).
bool in_read_only_segment(std::uintptr_t first, std::uintptr_t last) {
  struct Range {
    std::uintptr_t first, last;
    bool found;
  } range{first, last, false};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto* range = static_cast<Range*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& segment = info->dlpi_phdr[i];
          if (segment.p_type != PT_LOAD || segment.p_flags != PF_R) continue;
          const std::uintptr_t begin = info->dlpi_addr + segment.p_vaddr;
          if (range->first >= begin && range->last <= begin + segment.p_filesz) range->found = true;
        }
        return range->found ? 1 : 0;
      },
      &range);
  return range.found;
}

}  // namespace

std::size_t release_read_only_pages(std::string_view bytes) {
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(bytes.data());
  const std::uintptr_t first = (begin + page - 1) / page * page;
  const std::uintptr_t last = (begin + bytes.size()) / page * page;
  if (last <= first || !in_read_only_segment(first, last)) return 0;
  // For a private mapping of a file, MADV_DONTNEED drops the pages from this process's page tables; pages
  // never written (read-only data is never copied on write) come back from the file when touched.
  if (madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) != 0) return 0;
  return last - first;
}

}  // namespace karta
