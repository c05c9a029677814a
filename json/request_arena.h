#pragma once

// Memory for what one admission builds and drops when it is answered: a monotonic arena
// (std::pmr::monotonic_buffer_resource) whose first block is a buffer kept by the thread, so that a
// request of ordinary size allocates nothing from the heap for it. Nothing is freed until the arena goes;
// anything larger than the thread's buffer continues on the heap, in blocks that grow geometrically.
//
// One arena per thread takes the thread's buffer at a time; another made while it is taken (offline
// commands nest nothing, but nothing stops them) starts on the heap, and is as correct, only slower.

#include <cstddef>
#include <memory_resource>
#include <string_view>

namespace karta {

class RequestArena {
 public:
  // The thread's buffer: enough for the patch of a demo-sized review many times over.
  static constexpr std::size_t kThreadBufferSize = 16 * 1024;

  RequestArena();
  ~RequestArena();
  RequestArena(const RequestArena&) = delete;
  RequestArena& operator=(const RequestArena&) = delete;

  std::pmr::memory_resource* resource() { return &resource_; }
  // A copy of `text` that lives as long as the arena.
  std::string_view keep(std::string_view text);

 private:
  bool owns_thread_buffer_ = false;
  std::pmr::monotonic_buffer_resource resource_;
};

}  // namespace karta
