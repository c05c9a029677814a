#pragma once

// Builds an RFC 6902 JSON Patch of `add` operations at exact places of an object, never by pasting
// strings. A missing map (and its missing parents) is created by a single `add`; later changes under a
// map this patch creates are folded into that one operation.

#include <deque>
#include <map>
#include <string>
#include <vector>

#include <memory>
#include <optional>
#include <string_view>

#include <boost/container/small_vector.hpp>
#include <nlohmann/json.hpp>

#include "json/json_document.h"
#include "mutate/json_patch.h"

namespace karta {

enum class PatchChange {
  Added,      // the key (or element) was absent and is added
  Replaced,   // it held another value and overwrite was asked for
  Unchanged,  // it already holds the value
  Kept,       // it holds another value and overwrite was not asked for
  Blocked,    // the object's shape does not allow it (a parent is a string, say); see blocked_reason()
};

class JsonPatchBuilder {
 public:
  // `original` must outlive the builder.
  explicit JsonPatchBuilder(JsonElement original) : original_(original) {}
  // Keeps its own read-only copy of `original` (tests and offline commands).
  explicit JsonPatchBuilder(const json& original);

  // Sets member `key` of the object at `map` to `value`.
  PatchChange set_member(const JsonPointer& map, const std::string& key, json value, bool overwrite);

  // Appends `value` to the array at `array` unless an equal element is already there.
  PatchChange append_unique(const JsonPointer& array, const json& value);

  // The same for each element of the array `values`, in order. Where the array at `array` is missing
  // under a present parent, one add creates it holding `values` itself, without copying it: `values`
  // must then outlive the builder (a policy's tolerations do). Blocked if any append is.
  PatchChange append_all_unique(const JsonPointer& array, const json& values);

  // Tells the builder what `pointer` reaches in the original object (a pod template the locator found):
  // containers under it are then looked up from there, not from the root. One is remembered at a time.
  void remember(const JsonPointer& pointer, JsonElement element);

  // The patch, its operations in the order they were made, written as JSON text.
  JsonPatch patch() const;
  // The same as a json array (tests).
  json operations() const { return patch().value(); }
  bool empty() const { return operations_.empty(); }
  std::size_t size() const { return operations_.size(); }
  const std::string& blocked_reason() const { return blocked_reason_; }

 private:
  struct Operation {
    std::string path;
    json value;
    const json* borrowed = nullptr;  // when set, the value written instead of `value`
  };
  // A borrowed list is copied into its operation before anything is added under it.
  void own_borrowed_under(std::string_view pointer);

  // A JSON Pointer as its escaped text and views of its escaped reference tokens, so that the pointer to
  // the first n tokens, prefix(n), costs no copy, nor does splitting it (up to 16 tokens).
  struct Pointer {
    std::string_view text;  // the caller's JsonPointer text: it outlives the call
    boost::container::small_vector<std::string_view, 16> tokens;
    explicit Pointer(std::string_view escaped);
    Pointer(const Pointer&) = delete;
    Pointer& operator=(const Pointer&) = delete;
    std::string_view prefix(std::size_t n) const;
  };
  // Where a container is: in the original object, inside a value this patch creates, or nowhere yet.
  struct Place {
    std::optional<JsonElement> original;  // found in the original object
    json* created = nullptr;              // found (or made) inside a created value
    std::size_t missing_from = 0;         // otherwise: tokens from this index on are absent from the original
    bool blocked = false;
  };
  Place find_container(const Pointer& pointer, bool leaf_is_array);
  // One add creating tokens[missing_from..] with `leaf` at the end (a map holding the key, or a list).
  void add_created(const Pointer& pointer, std::size_t missing_from, json leaf);
  PatchChange blocked(std::string reason);

  std::shared_ptr<const JsonDocument> owned_;  // when built from a json
  JsonElement original_;
  std::deque<Operation> operations_;      // deque: references into values stay valid as it grows
  std::map<std::string, json*, std::less<>> created_;  // pointer -> container created by this patch
  std::map<std::string_view, json*> added_;  // operation path (its text, in operations_) -> its value
  std::string blocked_reason_;
  std::size_t borrowed_ = 0;               // operations holding a borrowed value
  std::string path_buffer_;                // set_member's operation path, before it is kept
  std::string last_found_text_;            // the pointer last found in original_,
  std::optional<JsonElement> last_found_;  // and what it found
  std::string remembered_text_;            // remember(): the pointer,
  std::optional<JsonElement> remembered_;  // what it reaches,
  std::size_t remembered_tokens_ = 0;      // and its number of tokens
};

}  // namespace karta
