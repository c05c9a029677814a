#include "json/request_arena.h"

#include <cstring>
#include <memory>

namespace karta {
namespace {

struct ThreadBuffer {
  std::unique_ptr<std::byte[]> bytes;  // made on the thread's first request
  bool taken = false;
};
thread_local ThreadBuffer thread_buffer;

std::pmr::monotonic_buffer_resource make_resource(bool& owns) {
  ThreadBuffer& buffer = thread_buffer;
  if (buffer.taken) return std::pmr::monotonic_buffer_resource(std::pmr::new_delete_resource());
  if (!buffer.bytes) buffer.bytes = std::make_unique<std::byte[]>(RequestArena::kThreadBufferSize);
  buffer.taken = owns = true;
  return std::pmr::monotonic_buffer_resource(buffer.bytes.get(), RequestArena::kThreadBufferSize,
                                             std::pmr::new_delete_resource());
}

}  // namespace

RequestArena::RequestArena() : resource_(make_resource(owns_thread_buffer_)) {}

RequestArena::~RequestArena() {
  resource_.release();
  if (owns_thread_buffer_) thread_buffer.taken = false;
}

std::string_view RequestArena::keep(std::string_view text) {
  if (text.empty()) return {};
  auto* copy = static_cast<char*>(resource_.allocate(text.size(), 1));
  std::memcpy(copy, text.data(), text.size());
  return {copy, text.size()};
}

}  // namespace karta
