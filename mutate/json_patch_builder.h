#pragma once

// Builds an RFC 6902 JSON Patch of `add` operations at exact places of an object, never by pasting
// strings. A missing map (and its missing parents) is created by a single `add`; later changes under a
// map this patch creates are folded into that one operation.
//
// What the patch will write (its paths, and the values, maps and lists it creates) lives in a
// per-request arena (json/request_arena.h) as a small tree of its own, not as nlohmann::json: a string
// value of a json costs two allocations, a map one per member. patch() writes the tree as the JSON text
// nlohmann::json would write for it, byte for byte (members in key order).

#include <forward_list>
#include <memory>
#include <memory_resource>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/container/small_vector.hpp>
#include <nlohmann/json.hpp>

#include "json/json_document.h"
#include "json/request_arena.h"
#include "mutate/json_patch.h"
#include "mutate/path_table.h"

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
  explicit JsonPatchBuilder(JsonElement original);
  // Keeps its own read-only copy of `original` (tests and offline commands).
  explicit JsonPatchBuilder(const json& original);
  ~JsonPatchBuilder();
  JsonPatchBuilder(const JsonPatchBuilder&) = delete;
  JsonPatchBuilder& operator=(const JsonPatchBuilder&) = delete;

  // Sets member `key` of the object at `map` to the string `value` (copied into the patch).
  PatchChange set_member(const JsonPointer& map, std::string_view key, std::string_view value, bool overwrite);
  PatchChange set_member(const JsonPointer& map, std::string_view key, const char* value, bool overwrite) {
    return set_member(map, key, std::string_view(value), overwrite);
  }
  PatchChange set_member(const JsonPointer& map, std::string_view key, const std::string& value, bool overwrite) {
    return set_member(map, key, std::string_view(value), overwrite);
  }
  // The same with any JSON value.
  PatchChange set_member(const JsonPointer& map, std::string_view key, const json& value, bool overwrite);
  // set_member where the caller holds what `map` reaches in the original object, `found`, when it is an
  // object (the locator's pod template maps): the builder starts there instead of walking `map`. Nothing
  // this patch creates can hold such a map (the patch creates only what the original lacks, or holds as
  // null), so the result is set_member's. Without `found`, set_member itself.
  PatchChange set_member(const JsonPointer& map, const std::optional<JsonElement>& found, std::string_view key,
                         std::string_view value, bool overwrite);

  // Appends `value` to the array at `array` unless an equal element is already there.
  PatchChange append_unique(const JsonPointer& array, const json& value);

  // The same for each element of the array `values`, in order. Where the array at `array` is missing
  // under a present parent, one add creates it holding `values` itself, without copying it: `values`
  // must then outlive the builder (a policy's tolerations do). `values_text`, when given, is `values` as
  // compact JSON text (append_json's bytes), kept as long: such an add is then written by copying it.
  // Blocked if any append is.
  PatchChange append_all_unique(const JsonPointer& array, const json& values, std::string_view values_text = {});

  // Tells the builder what `pointer` reaches in the original object (a pod template the locator found):
  // containers under it are then looked up from there, not from the root. One is remembered at a time.
  void remember(const JsonPointer& pointer, JsonElement element);

  // The patch, its operations in the order they were made, written as JSON text (once: sized from what
  // the operations hold, then written straight from them).
  JsonPatch patch() const;
  // The same as a json array (tests).
  json operations() const { return patch().value(); }
  bool empty() const { return operations_.empty(); }
  std::size_t size() const { return operations_.size(); }
  const std::string& blocked_reason() const { return blocked_reason_; }

 private:
  // A value the patch writes, in the arena. Strings are kept unescaped; numbers, booleans and null as
  // the json given (owned by the builder).
  struct Node {
    enum class Kind { String, Object, Array, Scalar };
    explicit Node(Kind k, std::pmr::memory_resource* arena) : kind(k), members(arena), items(arena) {}
    Kind kind;
    std::string_view text;                                         // String
    std::pmr::vector<std::pair<std::string_view, Node*>> members;  // Object, in key order
    std::pmr::vector<Node*> items;                                 // Array
    const json* scalar = nullptr;                                  // Scalar
  };
  struct Operation {
    std::string_view path;           // escaped, in the arena
    Node* value = nullptr;           // in the arena,
    const json* borrowed = nullptr;  // or, when set, this value of the caller's, written as it is,
    std::string_view text;           // or, when neither is set, this string (unescaped, in the arena): a
                                     // member set in a map of the original costs no node
    std::string_view borrowed_text;  // the borrowed value's text, when the caller gave it
  };

  Node* make(Node::Kind kind) { return new (arena_.resource()->allocate(sizeof(Node), alignof(Node))) Node(kind, arena_.resource()); }
  Node* string_node(std::string_view text);
  Node* node_of(const json& value);  // a deep copy into the arena
  static bool same(const Node& node, const json& value);
  static bool same(const Node& node, std::string_view text) { return node.kind == Node::Kind::String && node.text == text; }
  // An operation's value (not a borrowed one) against a given one, and set to one: a string is kept as
  // the operation's text.
  static bool same(const Operation& op, std::string_view text) {
    return op.value == nullptr ? op.text == text : same(*op.value, text);
  }
  static bool same(const Operation& op, const json& value) {
    return op.value == nullptr ? value.is_string() && op.text == value.get_ref<const std::string&>() : same(*op.value, value);
  }
  void set_value(Operation& op, std::string_view text) {
    op.value = nullptr;
    op.text = arena_.keep(text);
  }
  void set_value(Operation& op, const json& value) { op.value = node_of(value); }
  static Node** find_member(Node& object, std::string_view key);
  void put_member(Node& object, std::string_view key, Node* value);  // adds or replaces
  static void write(std::string& out, const Node& node);
  void write_patch(std::string& out) const;
  // set_member for a value given either way: Value is std::string_view or const json&.
  template <typename Value>
  PatchChange set_member_value(const JsonPointer& map, std::string_view key, Value value, bool overwrite,
                               const std::optional<JsonElement>& found = std::nullopt);
  Node* node_for(std::string_view text) { return string_node(text); }
  Node* node_for(const json& value) { return node_of(value); }
  std::size_t value_size_hint(std::string_view text) const { return text.size() + 2; }
  std::size_t value_size_hint(const json&) const { return 64; }
  void add_operation(std::string_view path, Node* value, const json* borrowed = nullptr);
  void push_operation(std::string_view kept_path, Node* value, const json* borrowed);  // path already in the arena

  // A borrowed list is copied into its operation before anything is added under it.
  void own_borrowed_under(std::string_view pointer);

  // A JSON Pointer as its escaped text and views of its escaped reference tokens, so that the pointer to
  // the first n tokens, prefix(n), costs no copy, nor does splitting it (up to 16 tokens). Split on first
  // use: a container found as the last one was, or a member added there, needs only the text.
  class Pointer {
   public:
    std::string_view text;  // the caller's JsonPointer text: it outlives the call
    explicit Pointer(std::string_view escaped) : text(escaped) {}
    Pointer(const Pointer&) = delete;
    Pointer& operator=(const Pointer&) = delete;
    const boost::container::small_vector<std::string_view, 16>& tokens() const;
    std::string_view prefix(std::size_t n) const;

   private:
    mutable boost::container::small_vector<std::string_view, 16> tokens_;
    mutable bool split_ = false;
  };
  // Where a container is: in the original object, inside a value this patch creates, or nowhere yet.
  struct Place {
    std::optional<JsonElement> original;  // found in the original object
    Node* created = nullptr;              // found (or made) inside a created value
    std::size_t missing_from = 0;         // otherwise: tokens from this index on are absent from the original,
    std::size_t missing_offset = 0;       // the first of them starting at this offset of the text (its '/')
    bool blocked = false;
  };
  Place find_container(const Pointer& pointer, bool leaf_is_array);
  // One add creating the tokens missing from `place` on, with `leaf` at the end (a map holding the key, or
  // a list).
  void add_created(const Pointer& pointer, const Place& place, Node* leaf);
  PatchChange blocked(std::string reason);
  // `map`/`key` (a key unescaped) as an operation's path, written once into the arena.
  std::string_view member_path(std::string_view map, std::string_view key);

  RequestArena arena_;
  std::shared_ptr<const JsonDocument> owned_;  // when built from a json
  JsonElement original_;
  std::pmr::vector<Operation> operations_;
  // Containers created by this patch, by pointer.
  PathTable<Node*> created_;
  // The paths of the operations that create containers: every key of created_ is at or under one of them,
  // so a pointer under none of them is looked up in the original without trying created_.
  std::pmr::vector<std::string_view> created_roots_;
  // Operations on members of the original's maps, by path: their index in operations_.
  PathTable<std::size_t> added_;
  std::forward_list<json> scalars_;  // the numbers, booleans and nulls given as json (not on the admission path)
  std::string blocked_reason_;
  std::size_t borrowed_ = 0;               // operations holding a borrowed value
  std::size_t text_size_hint_ = 2;         // about the length of the patch text
  std::pmr::string last_found_text_;       // the pointer last found in original_,
  std::optional<JsonElement> last_found_;  // and what it found
  std::pmr::string remembered_text_;       // remember(): the pointer,
  std::optional<JsonElement> remembered_;  // what it reaches,
  std::size_t remembered_tokens_ = 0;      // and its number of tokens
};

}  // namespace karta
