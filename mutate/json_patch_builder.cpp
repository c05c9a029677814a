#include "mutate/json_patch_builder.h"

#include "json/json_text.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>

namespace karta {
namespace {

// "an array", "a string": for messages.
std::string described(JsonElement value) {
  std::string name = type_name(value);
  bool vowel = !name.empty() && std::string("aeiou").find(name[0]) != std::string::npos;
  return (value.is_null() ? "" : vowel ? "an " : "a ") + name;
}

bool parse_index(const std::string& token, std::size_t& index) {
  if (token.empty() || (token.size() > 1 && token[0] == '0')) return false;
  auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), index);
  return ec == std::errc() && end == token.data() + token.size();
}

bool contains_equal(JsonElement array, const json& value) {
  for (auto item : array_of(array)) {
    if (equals(item, value)) return true;
  }
  return false;
}

}  // namespace

JsonPatchBuilder::JsonPatchBuilder(JsonElement original)
    : original_(original),
      operations_(arena_.resource()),
      created_(arena_.resource()),
      created_roots_(arena_.resource()),
      added_(arena_.resource()),
      last_found_text_(arena_.resource()),
      remembered_text_(arena_.resource()) {
  operations_.reserve(16);
}

JsonPatchBuilder::JsonPatchBuilder(const json& original) : JsonPatchBuilder(JsonElement()) {
  owned_ = std::make_shared<const JsonDocument>(JsonDocument::from(original));
  original_ = owned_->root();
}

// The arena's memory goes with it: nothing in it needs destroying (its vectors and maps allocate from it).
JsonPatchBuilder::~JsonPatchBuilder() = default;

JsonPatchBuilder::Node* JsonPatchBuilder::string_node(std::string_view text) {
  Node* node = make(Node::Kind::String);
  node->text = arena_.keep(text);
  return node;
}

JsonPatchBuilder::Node* JsonPatchBuilder::node_of(const json& value) {
  switch (value.type()) {
    case json::value_t::string:
      return string_node(value.get_ref<const std::string&>());
    case json::value_t::object: {
      Node* node = make(Node::Kind::Object);
      node->members.reserve(value.size());
      for (const auto& [key, item] : value.items()) node->members.emplace_back(arena_.keep(key), node_of(item));
      return node;  // a json object iterates in key order
    }
    case json::value_t::array: {
      Node* node = make(Node::Kind::Array);
      node->items.reserve(value.size());
      for (const auto& item : value) node->items.push_back(node_of(item));
      return node;
    }
    default: {
      Node* node = make(Node::Kind::Scalar);
      node->scalar = &scalars_.emplace_front(value);
      return node;
    }
  }
}

bool JsonPatchBuilder::same(const Node& node, const json& value) {
  switch (node.kind) {
    case Node::Kind::String:
      return value.is_string() && node.text == value.get_ref<const std::string&>();
    case Node::Kind::Scalar:
      return *node.scalar == value;
    case Node::Kind::Object: {
      if (!value.is_object() || value.size() != node.members.size()) return false;
      auto member = node.members.begin();
      for (const auto& [key, item] : value.items()) {  // both in key order
        if (member->first != key || !same(*member->second, item)) return false;
        ++member;
      }
      return true;
    }
    case Node::Kind::Array: {
      if (!value.is_array() || value.size() != node.items.size()) return false;
      for (std::size_t i = 0; i < node.items.size(); ++i) {
        if (!same(*node.items[i], value[i])) return false;
      }
      return true;
    }
  }
  return false;
}

namespace {

// The first of an object node's members (kept in key order) whose key is not less than `key`.
template <typename Members>
auto first_member_from(Members& members, std::string_view key) {
  return std::lower_bound(members.begin(), members.end(), key,
                          [](const auto& member, std::string_view k) { return member.first < k; });
}

}  // namespace

JsonPatchBuilder::Node** JsonPatchBuilder::find_member(Node& object, std::string_view key) {
  auto it = first_member_from(object.members, key);
  return it != object.members.end() && it->first == key ? &it->second : nullptr;
}

void JsonPatchBuilder::put_member(Node& object, std::string_view key, Node* value) {
  auto it = first_member_from(object.members, key);
  if (it != object.members.end() && it->first == key) {
    it->second = value;
  } else {
    object.members.emplace(it, arena_.keep(key), value);
  }
}

void JsonPatchBuilder::add_operation(std::string_view path, Node* value, const json* borrowed) {
  push_operation(arena_.keep(path), value, borrowed);
}

void JsonPatchBuilder::push_operation(std::string_view kept_path, Node* value, const json* borrowed) {
  operations_.push_back({kept_path, value, borrowed, {}, {}});
  text_size_hint_ += 32 + kept_path.size() + 8;
}

std::string_view JsonPatchBuilder::member_path(std::string_view map, std::string_view key) {
  const std::size_t escaped = escaped_pointer_token_size(key);
  const std::size_t size = map.size() + 1 + escaped;
  char* out = static_cast<char*>(arena_.resource()->allocate(size, 1));
  std::memcpy(out, map.data(), map.size());
  out[map.size()] = '/';
  if (escaped == key.size()) key.copy(out + map.size() + 1, key.size());  // nothing to escape
  else write_escaped_pointer_token(out + map.size() + 1, key);
  return {out, size};
}

PatchChange JsonPatchBuilder::blocked(std::string reason) {
  blocked_reason_ = std::move(reason);
  return PatchChange::Blocked;
}

const boost::container::small_vector<std::string_view, 16>& JsonPatchBuilder::Pointer::tokens() const {
  if (split_) return tokens_;
  split_ = true;
  for_each_escaped_token(text, [&](std::string_view token) {
    tokens_.push_back(token);
    return true;
  });
  return tokens_;
}

std::string_view JsonPatchBuilder::Pointer::prefix(std::size_t n) const {
  if (n == 0) return {};
  const std::string_view& last = tokens()[n - 1];
  return text.substr(0, static_cast<std::size_t>(last.data() - text.data()) + last.size());
}

namespace {

// A reference token as a key: unescaped, copied only when it has an escape.
class TokenKey {
 public:
  TokenKey(const TokenKey&) = delete;  // view_ may point into owned_
  TokenKey& operator=(const TokenKey&) = delete;
  explicit TokenKey(std::string_view escaped) : view_(escaped) {
    if (escaped.find('~') == std::string_view::npos) return;
    owned_ = unescape_pointer_token(escaped);
    view_ = owned_;
  }
  std::string_view view() const { return view_; }

 private:
  std::string owned_;
  std::string_view view_;
};

}  // namespace

void JsonPatchBuilder::own_borrowed_under(std::string_view pointer) {
  for (auto& op : operations_) {
    if (op.borrowed == nullptr || !at_or_under(pointer, op.path)) continue;
    op.value = node_of(*op.borrowed);
    op.borrowed = nullptr;
    op.borrowed_text = {};
    --borrowed_;
    created_.emplace(op.path, op.value);
    created_roots_.push_back(op.path);
  }
}

JsonPatchBuilder::Place JsonPatchBuilder::find_container(const Pointer& pointer, bool leaf_is_array) {
  if (borrowed_ != 0) own_borrowed_under(pointer.text);
  Place place;
  // Inside something this patch already creates?
  const bool maybe_created = std::any_of(created_roots_.begin(), created_roots_.end(),
                                         [&](std::string_view root) { return at_or_under(pointer.text, root); });
  if (maybe_created) {  // most often a map this patch creates, asked for again: found without splitting
    if (Node** found = created_.find(pointer.text)) {
      place.created = *found;
      return place;
    }
  }
  for (std::size_t length = maybe_created ? pointer.tokens().size() : 0; length >= 1; --length) {
    const auto& tokens = pointer.tokens();
    Node** found = created_.find(pointer.prefix(length));
    if (found == nullptr) continue;
    Node* node = *found;
    for (std::size_t i = length; i < tokens.size(); ++i) {
      if (node->kind != Node::Kind::Object) {
        place.blocked = true;
        blocked_reason_ = std::string(pointer.prefix(i)) + " is not an object";
        return place;
      }
      bool last = i + 1 == tokens.size();
      TokenKey key(tokens[i]);
      if (Node** member = find_member(*node, key.view())) {
        node = *member;
      } else {
        Node* made = make(last && leaf_is_array ? Node::Kind::Array : Node::Kind::Object);
        put_member(*node, key.view(), made);
        node = made;
        created_.emplace(arena_.keep(pointer.prefix(i + 1)), node);
      }
    }
    place.created = node;
    return place;
  }
  // In the original object? The last container found there is remembered: a template's labels,
  // annotations and spec are each asked for several times in a row. (A pointer found in the original
  // cannot lie under a container this patch creates: those are absent from the original.)
  if (last_found_ && last_found_text_ == pointer.text) {
    place.original = last_found_;
    return place;
  }
  // Walked token by token from the text, without splitting it: from a remembered template, a container
  // is a token or two away.
  const std::string_view text = pointer.text;
  JsonElement node = original_;
  std::size_t first = 0;  // where the tokens still to walk start in text
  std::size_t i = 0;      // the index of the next token
  if (remembered_ && at_or_under(text, remembered_text_)) {
    node = *remembered_;
    first = remembered_text_.size();
    i = remembered_tokens_;
  }
  const bool walked = for_each_escaped_token(text.substr(first), [&](std::string_view token) {
    const auto start = static_cast<std::size_t>(token.data() - text.data());  // past the token's '/'
    if (node.is_object()) {
      auto found = member(node, TokenKey(token).view());
      if (!found || found->is_null()) {
        place.missing_from = i;
        place.missing_offset = start - 1;
        return false;
      }
      node = *found;
    } else if (node.is_array()) {
      std::size_t index = 0;
      auto item = array_of(node).at(parse_index(std::string(token), index) ? index : SIZE_MAX);
      if (item.error()) {
        place.blocked = true;
        blocked_reason_ = std::string(text.substr(0, start + token.size())) + " is past the end of a list";
        return false;
      }
      node = item.value_unsafe();
    } else {
      place.blocked = true;
      blocked_reason_ = std::string(text.substr(0, start - 1)) + " is " + described(node) + ", not an object";
      return false;
    }
    ++i;
    return true;
  });
  if (!walked) return place;
  place.original = node;
  last_found_text_.assign(pointer.text);  // reuses its buffer
  last_found_ = node;
  return place;
}

void JsonPatchBuilder::remember(const JsonPointer& pointer, JsonElement element) {
  remembered_text_.assign(pointer.text());  // reuses its buffer
  remembered_ = element;
  remembered_tokens_ = escaped_token_count(remembered_text_);
}

namespace {

bool equal_value(JsonElement element, std::string_view text) {
  auto held = string_of(element);
  return held && *held == text;
}
bool equal_value(JsonElement element, const json& value) { return equals(element, value); }

}  // namespace

PatchChange JsonPatchBuilder::set_member(const JsonPointer& map, std::string_view key, std::string_view value,
                                         bool overwrite) {
  return set_member_value<std::string_view>(map, key, value, overwrite);
}

PatchChange JsonPatchBuilder::set_member(const JsonPointer& map, std::string_view key, const json& value, bool overwrite) {
  return set_member_value<const json&>(map, key, value, overwrite);
}

PatchChange JsonPatchBuilder::set_member(const JsonPointer& map, const std::optional<JsonElement>& found,
                                         std::string_view key, std::string_view value, bool overwrite) {
  return set_member_value<std::string_view>(map, key, value, overwrite, found && found->is_object() ? found : std::nullopt);
}

template <typename Value>
PatchChange JsonPatchBuilder::set_member_value(const JsonPointer& map, std::string_view key, Value value,
                                               bool overwrite, const std::optional<JsonElement>& found) {
  const Pointer pointer(map.text());
  Place place;
  if (found) place.original = found;  // an object of the original: see set_member's comment
  else place = find_container(pointer, /*leaf_is_array=*/false);
  if (place.blocked) return PatchChange::Blocked;
  if (place.created != nullptr) {
    Node& container = *place.created;
    if (container.kind != Node::Kind::Object) return blocked(std::string(pointer.text) + " is not an object");
    Node** found = find_member(container, key);
    if (found == nullptr) {
      put_member(container, key, node_for(value));
      text_size_hint_ += key.size() + value_size_hint(value) + 4;
      return PatchChange::Added;
    }
    if (same(**found, value)) return PatchChange::Unchanged;
    if (!overwrite) return PatchChange::Kept;
    *found = node_for(value);
    return PatchChange::Replaced;
  }
  if (place.original) {
    JsonElement container = *place.original;
    if (!container.is_object()) {
      return blocked(std::string(pointer.text) + " is " + described(container) + ", not an object");
    }
    // The operation's path, written once into the arena (left there unused when no operation is added).
    const std::string_view path = member_path(pointer.text, key);
    const std::size_t hash = PathTable<std::size_t>::hash_of(path);
    if (const std::size_t* again = added_.find(path, hash)) {
      Operation& op = operations_[*again];
      if (same(op, value)) return PatchChange::Unchanged;
      if (!overwrite) return PatchChange::Kept;
      set_value(op, value);
      return PatchChange::Replaced;
    }
    auto found = member(container, key);
    PatchChange change = PatchChange::Added;
    if (found) {
      if (equal_value(*found, value)) return PatchChange::Unchanged;
      if (!overwrite) return PatchChange::Kept;
      change = PatchChange::Replaced;  // "add" on an existing member replaces it (RFC 6902 4.1)
    }
    push_operation(path, nullptr, nullptr);
    set_value(operations_.back(), value);
    text_size_hint_ += value_size_hint(value);
    added_.emplace(path, hash, operations_.size() - 1);
    return change;
  }
  // Missing from tokens[missing_from] on: one add creates the first missing map with everything below.
  Node* leaf = make(Node::Kind::Object);
  put_member(*leaf, key, node_for(value));
  text_size_hint_ += key.size() + value_size_hint(value) + 4;
  add_created(pointer, place, leaf);
  return PatchChange::Added;
}

void JsonPatchBuilder::add_created(const Pointer& pointer, const Place& place, Node* leaf) {
  // The path of the add, and of every container it creates, is a prefix of the pointer: kept once, and
  // only the missing tokens (from place.missing_offset on) are split, not the whole pointer.
  const std::string_view text = arena_.keep(pointer.text);
  boost::container::small_vector<std::size_t, 8> ends;  // where each missing token ends in text
  for_each_escaped_token(text.substr(place.missing_offset), [&](std::string_view token) {
    ends.push_back(static_cast<std::size_t>(token.data() - text.data()) + token.size());
    return true;
  });
  // Every container the add creates is remembered, so later changes beneath it fold into this one add.
  created_.emplace(text, leaf);
  Node* created = leaf;
  for (std::size_t j = ends.size() - 1; j > 0; --j) {
    Node* parent = make(Node::Kind::Object);
    const std::size_t start = ends[j - 1] + 1;  // past the token's '/'
    TokenKey key(text.substr(start, ends[j] - start));
    put_member(*parent, key.view(), created);
    text_size_hint_ += key.view().size() + 4;
    created = parent;
    created_.emplace(text.substr(0, ends[j - 1]), created);
  }
  push_operation(text.substr(0, ends[0]), created, nullptr);
  created_roots_.push_back(operations_.back().path);
}

PatchChange JsonPatchBuilder::append_unique(const JsonPointer& array, const json& value) {
  const Pointer pointer(array.text());
  if (pointer.tokens().empty()) return blocked("cannot append to the document itself");
  Place place = find_container(pointer, /*leaf_is_array=*/true);
  if (place.blocked) return PatchChange::Blocked;
  if (place.created != nullptr) {
    Node& container = *place.created;
    if (container.kind != Node::Kind::Array) return blocked(std::string(pointer.text) + " is not a list");
    for (const Node* item : container.items) {
      if (same(*item, value)) return PatchChange::Unchanged;
    }
    container.items.push_back(node_of(value));
    text_size_hint_ += 64;
    return PatchChange::Added;
  }
  if (place.original) {
    JsonElement container = *place.original;
    if (!container.is_array()) return blocked(std::string(pointer.text) + " is " + described(container) + ", not a list");
    if (contains_equal(container, value)) return PatchChange::Unchanged;
    const std::string_view path = member_path(pointer.text, "-");
    for (const auto& op : operations_) {
      if (op.path == path && op.value != nullptr && same(*op.value, value)) return PatchChange::Unchanged;
    }
    push_operation(path, node_of(value), nullptr);
    text_size_hint_ += 64;
    return PatchChange::Added;
  }
  Node* list = make(Node::Kind::Array);
  list->items.push_back(node_of(value));
  text_size_hint_ += 64;
  add_created(pointer, place, list);
  return PatchChange::Added;
}

PatchChange JsonPatchBuilder::append_all_unique(const JsonPointer& array, const json& values,
                                                std::string_view values_text) {
  if (!values.is_array() || values.empty()) return PatchChange::Unchanged;
  // Borrowed whole only where appending one by one would add every element as it is: the list and
  // nothing else missing, and no element equal to another.
  const Pointer pointer(array.text());
  bool distinct = true;
  for (std::size_t i = 0; i < values.size() && distinct; ++i) {
    for (std::size_t j = i + 1; j < values.size() && distinct; ++j) distinct = values[i] != values[j];
  }
  const std::size_t tokens = escaped_token_count(pointer.text);  // counted, not split
  if (distinct && tokens != 0) {
    Place place = find_container(pointer, /*leaf_is_array=*/true);
    if (place.blocked) return PatchChange::Blocked;
    if (!place.created && !place.original && place.missing_from + 1 == tokens) {
      add_operation(pointer.text, nullptr, &values);
      operations_.back().borrowed_text = values_text;
      text_size_hint_ += values_text.empty() ? 64 * values.size() : values_text.size();
      ++borrowed_;
      return PatchChange::Added;
    }
  }
  PatchChange result = PatchChange::Unchanged;
  for (const auto& value : values) {
    PatchChange change = append_unique(array, value);
    if (change == PatchChange::Blocked) return change;
    if (change == PatchChange::Added) result = change;
  }
  return result;
}

}  // namespace karta
