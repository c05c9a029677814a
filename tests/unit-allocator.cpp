// The allocator the server runs on (runtime/allocator.h): jemalloc with the configuration compiled into
// the binary, read back through mallctl, and the memory start-up freed returned to the kernel. The tests
// link jemalloc as the server does (tests/CMakeLists.txt); the sanitizer builds do not.

#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "definitions/builtin_catalog.h"
#include "runtime/allocator.h"

namespace unit_allocator {  // this file's names, apart from other tests' in a unity build

#ifdef KARTA_WITH_JEMALLOC

TEST_CASE("the jemalloc configuration compiled into the binary is the one in effect") {
  REQUIRE_MESSAGE(std::getenv("MALLOC_CONF") == nullptr, "MALLOC_CONF in the environment overrides the binary's");
  CHECK(std::string(karta::kJemallocConfiguration) == "narenas:1,abort_conf:true");
  auto settings = karta::allocator_settings();
  REQUIRE(settings.has_value());
  CHECK(settings->version.starts_with("5."));
  CHECK(settings->arenas == 1);  // jemalloc's default would be 4 per CPU
  CHECK(settings->abort_conf);
  // jemalloc's defaults, kept (allocator.cpp says why).
  CHECK(settings->dirty_decay_ms == 10'000);
  CHECK(settings->muzzy_decay_ms == 0);
  CHECK(settings->tcache_max == 32 * 1024);
  CHECK_FALSE(settings->background_thread);
}

TEST_CASE("release_free_memory returns the freed pages to the kernel and empties this thread's cache") {
  constexpr std::size_t kBlock = 64 * 1024;  // past the thread cache's largest size: freed into the arena
  constexpr std::size_t kBlocks = 256;       // 16 MiB
  constexpr std::size_t kMiB = 1024 * 1024;
  {
    std::vector<std::unique_ptr<char[]>> blocks;
    for (std::size_t i = 0; i < kBlocks; ++i) {
      blocks.emplace_back(new char[kBlock]);
      std::memset(blocks.back().get(), 1, kBlock);  // resident
    }
    std::vector<std::unique_ptr<std::array<char, 48>>> small;
    for (int i = 0; i < 1000; ++i) small.push_back(std::make_unique<std::array<char, 48>>());
  }  // all freed: the large blocks' pages stay dirty (decay takes 10 s, and only as jemalloc allocates)
  auto before = karta::allocator_stats();
  REQUIRE(before.has_value());
  CHECK(before->dirty >= 8 * kMiB);
  CHECK(before->thread_cached >= 48 * 20);  // at least the small bin's minimum of 20 objects

  karta::release_free_memory();
  auto after = karta::allocator_stats();
  REQUIRE(after.has_value());
  CHECK(after->dirty == 0);
  CHECK(after->resident + 8 * kMiB <= before->resident);
  CHECK(after->thread_cached == 0);  // this test's thread is the process's only one
  CHECK(after->allocated <= before->allocated);
}

#else

TEST_CASE("without jemalloc (the sanitizer builds) there are no settings or counters, and releasing does nothing") {
  CHECK_FALSE(karta::allocator_settings().has_value());
  CHECK_FALSE(karta::allocator_stats().has_value());
  karta::release_free_memory();
}

#endif

namespace {

// How many of the whole pages inside `bytes` are mapped in this process (/proc/self/pagemap, bit 63).
std::size_t mapped_pages(std::string_view bytes, std::size_t& whole_pages) {
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(bytes.data());
  const std::uintptr_t first = (begin + page - 1) / page, last = (begin + bytes.size()) / page;
  whole_pages = last > first ? last - first : 0;
  const int pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  REQUIRE(pagemap >= 0);
  std::size_t mapped = 0;
  for (std::uintptr_t number = first; number < last; ++number) {
    std::uint64_t entry = 0;
    const auto offset = static_cast<off_t>(number * sizeof(entry));
    const bool read_whole = pread(pagemap, &entry, sizeof(entry), offset) == static_cast<ssize_t>(sizeof(entry));
    if (!read_whole) close(pagemap);
    REQUIRE(read_whole);
    if ((entry >> 63) != 0) ++mapped;
  }
  close(pagemap);
  return mapped;
}

std::uint64_t checksum(std::string_view bytes) {
  std::uint64_t sum = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : bytes) sum = (sum ^ c) * 1099511628211ull;
  return sum;
}

}  // namespace

TEST_CASE("the embedded catalog's pages are dropped from the process once read, and read back unchanged") {
  std::string_view text;
  for (const auto& file : karta::builtin_catalog_files()) {
    if (file.text.size() > text.size()) text = file.text;
  }
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  REQUIRE(text.size() >= 3 * page);
  const std::uint64_t sum = checksum(text);  // reads every byte: every page mapped
  std::size_t whole = 0;
  REQUIRE(mapped_pages(text, whole) == whole);
  REQUIRE(whole >= 2);

  CHECK(karta::release_read_only_pages(text) == whole * page);
  CHECK(mapped_pages(text, whole) == 0);
  CHECK(checksum(text) == sum);  // mapped again from the binary's file
  CHECK(mapped_pages(text, whole) == whole);
}

TEST_CASE("release_read_only_pages leaves memory that is not read-only data of a loaded file alone") {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  std::string heap(16 * page, 'k');
  CHECK(karta::release_read_only_pages(heap) == 0);
  CHECK(heap == std::string(16 * page, 'k'));
  static char writable[8 * 4096];
  std::memset(writable, 'w', sizeof writable);
  CHECK(karta::release_read_only_pages(std::string_view(writable, sizeof writable)) == 0);
  CHECK(std::string_view(writable, sizeof writable) == std::string(sizeof writable, 'w'));
  CHECK(karta::release_read_only_pages(std::string_view(heap.data(), 10)) == 0);  // no whole page
}

}  // namespace unit_allocator
