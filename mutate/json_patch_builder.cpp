#include "mutate/json_patch_builder.h"

#include "json/json_text.h"

#include <algorithm>
#include <charconv>
#include <cstdint>

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

JsonPatchBuilder::JsonPatchBuilder(const json& original)
    : owned_(std::make_shared<const JsonDocument>(JsonDocument::from(original))), original_(owned_->root()) {}

PatchChange JsonPatchBuilder::blocked(std::string reason) {
  blocked_reason_ = std::move(reason);
  return PatchChange::Blocked;
}

JsonPatchBuilder::Pointer::Pointer(std::string_view escaped) : text(escaped) {
  std::string_view rest(text);
  while (!rest.empty()) {  // text starts with '/' when not empty
    rest.remove_prefix(1);
    std::size_t end = rest.find('/');
    tokens.push_back(rest.substr(0, end));
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end);
  }
}

std::string_view JsonPatchBuilder::Pointer::prefix(std::size_t n) const {
  if (n == 0) return {};
  const std::string_view& last = tokens[n - 1];
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
  std::string str() const { return std::string(view_); }

 private:
  std::string owned_;
  std::string_view view_;
};

}  // namespace

void JsonPatchBuilder::own_borrowed_under(std::string_view pointer) {
  for (auto& op : operations_) {
    if (op.borrowed == nullptr || !at_or_under(pointer, op.path)) continue;
    op.value = *op.borrowed;
    op.borrowed = nullptr;
    --borrowed_;
    created_.emplace(op.path, &op.value);
  }
}

JsonPatchBuilder::Place JsonPatchBuilder::find_container(const Pointer& pointer, bool leaf_is_array) {
  if (borrowed_ != 0) own_borrowed_under(pointer.text);
  Place place;
  const auto& tokens = pointer.tokens;
  // Inside something this patch already creates?
  for (std::size_t length = tokens.size(); length >= 1 && !created_.empty(); --length) {
    auto it = created_.find(pointer.prefix(length));
    if (it == created_.end()) continue;
    json* node = it->second;
    for (std::size_t i = length; i < tokens.size(); ++i) {
      if (!node->is_object()) {
        place.blocked = true;
        blocked_reason_ = std::string(pointer.prefix(i)) + " is not an object";
        return place;
      }
      bool last = i + 1 == tokens.size();
      TokenKey key(tokens[i]);
      auto found = node->find(key.view());
      if (found == node->end()) {
        node = &((*node)[key.str()] = (last && leaf_is_array) ? json::array() : json::object());
        created_.emplace(std::string(pointer.prefix(i + 1)), node);
      } else {
        node = &*found;
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
  JsonElement node = original_;
  std::size_t first = 0;
  if (remembered_ && at_or_under(pointer.text, remembered_text_)) {
    node = *remembered_;
    first = remembered_tokens_;
  }
  for (std::size_t i = first; i < tokens.size(); ++i) {
    if (node.is_object()) {
      auto found = member(node, TokenKey(tokens[i]).view());
      if (!found || found->is_null()) {
        place.missing_from = i;
        return place;
      }
      node = *found;
    } else if (node.is_array()) {
      std::size_t index = 0;
      auto item = array_of(node).at(parse_index(std::string(tokens[i]), index) ? index : SIZE_MAX);
      if (item.error()) {
        place.blocked = true;
        blocked_reason_ = std::string(pointer.prefix(i + 1)) + " is past the end of a list";
        return place;
      }
      node = item.value_unsafe();
    } else {
      place.blocked = true;
      blocked_reason_ = std::string(pointer.prefix(i)) + " is " + described(node) + ", not an object";
      return place;
    }
  }
  place.original = node;
  last_found_text_.assign(pointer.text);  // reuses its buffer
  last_found_ = node;
  return place;
}

void JsonPatchBuilder::remember(const JsonPointer& pointer, JsonElement element) {
  remembered_text_.assign(pointer.to_string());  // reuses its buffer
  remembered_ = element;
  remembered_tokens_ = static_cast<std::size_t>(std::count(remembered_text_.begin(), remembered_text_.end(), '/'));
}

PatchChange JsonPatchBuilder::set_member(const JsonPointer& map, const std::string& key, json value,
                                         bool overwrite) {
  const Pointer pointer(map.to_string());
  Place place = find_container(pointer, /*leaf_is_array=*/false);
  if (place.blocked) return PatchChange::Blocked;
  if (place.created != nullptr) {
    json& container = *place.created;
    if (!container.is_object()) return blocked(std::string(pointer.text) + " is not an object");
    auto found = container.find(key);
    if (found == container.end()) {
      container[key] = std::move(value);
      return PatchChange::Added;
    }
    if (*found == value) return PatchChange::Unchanged;
    if (!overwrite) return PatchChange::Kept;
    *found = std::move(value);
    return PatchChange::Replaced;
  }
  if (place.original) {
    JsonElement container = *place.original;
    if (!container.is_object()) {
      return blocked(std::string(pointer.text) + " is " + described(container) + ", not an object");
    }
    // The operation's path, in a buffer kept across calls: copied only when an operation is added.
    std::string& path = path_buffer_;
    path.assign(pointer.text).append("/");
    append_escaped_pointer_token(path, key);
    if (auto again = added_.find(path); again != added_.end()) {
      if (*again->second == value) return PatchChange::Unchanged;
      if (!overwrite) return PatchChange::Kept;
      *again->second = std::move(value);
      return PatchChange::Replaced;
    }
    auto found = member(container, key);
    PatchChange change = PatchChange::Added;
    if (found) {
      if (equals(*found, value)) return PatchChange::Unchanged;
      if (!overwrite) return PatchChange::Kept;
      change = PatchChange::Replaced;  // "add" on an existing member replaces it (RFC 6902 4.1)
    }
    operations_.push_back({path, std::move(value)});
    added_.emplace(operations_.back().path, &operations_.back().value);  // a deque: neither moves again
    return change;
  }
  // Missing from tokens[missing_from] on: one add creates the first missing map with everything below.
  json leaf = json::object();
  leaf[key] = std::move(value);
  add_created(pointer, place.missing_from, std::move(leaf));
  return PatchChange::Added;
}

void JsonPatchBuilder::add_created(const Pointer& pointer, std::size_t missing_from, json leaf) {
  const auto& tokens = pointer.tokens;
  json created = std::move(leaf);
  for (std::size_t i = tokens.size() - 1; i > missing_from; --i) {
    // Built member by member: nlohmann's initializer lists copy their elements, a deep copy per level.
    json parent = json::object();
    parent[TokenKey(tokens[i]).str()] = std::move(created);
    created = std::move(parent);
  }
  operations_.push_back({std::string(pointer.prefix(missing_from + 1)), std::move(created)});
  // Remember every container the add creates, so later changes beneath it fold into this one add.
  json* node = &operations_.back().value;
  created_.emplace(std::string(pointer.prefix(missing_from + 1)), node);
  for (std::size_t i = missing_from + 1; i < tokens.size(); ++i) {
    node = &(*node)[TokenKey(tokens[i]).str()];
    created_.emplace(std::string(pointer.prefix(i + 1)), node);
  }
}

PatchChange JsonPatchBuilder::append_unique(const JsonPointer& array, const json& value) {
  const Pointer pointer(array.to_string());
  if (pointer.tokens.empty()) return blocked("cannot append to the document itself");
  Place place = find_container(pointer, /*leaf_is_array=*/true);
  if (place.blocked) return PatchChange::Blocked;
  if (place.created != nullptr) {
    json& container = *place.created;
    if (!container.is_array()) return blocked(std::string(pointer.text) + " is not a list");
    if (std::find(container.begin(), container.end(), value) != container.end()) return PatchChange::Unchanged;
    container.push_back(value);
    return PatchChange::Added;
  }
  if (place.original) {
    JsonElement container = *place.original;
    if (!container.is_array()) return blocked(std::string(pointer.text) + " is " + described(container) + ", not a list");
    if (contains_equal(container, value)) return PatchChange::Unchanged;
    std::string path = std::string(pointer.text) + "/-";
    for (const auto& op : operations_) {
      if (op.path == path && op.value == value) return PatchChange::Unchanged;
    }
    operations_.push_back({std::move(path), value});
    return PatchChange::Added;
  }
  json list = json::array();
  list.push_back(value);  // one copy (an initializer list would make two)
  add_created(pointer, place.missing_from, std::move(list));
  return PatchChange::Added;
}

PatchChange JsonPatchBuilder::append_all_unique(const JsonPointer& array, const json& values) {
  if (!values.is_array() || values.empty()) return PatchChange::Unchanged;
  // Borrowed whole only where appending one by one would add every element as it is: the list and
  // nothing else missing, and no element equal to another.
  const Pointer pointer(array.to_string());
  bool distinct = true;
  for (std::size_t i = 0; i < values.size() && distinct; ++i) {
    for (std::size_t j = i + 1; j < values.size() && distinct; ++j) distinct = values[i] != values[j];
  }
  if (distinct && !pointer.tokens.empty()) {
    Place place = find_container(pointer, /*leaf_is_array=*/true);
    if (place.blocked) return PatchChange::Blocked;
    if (!place.created && !place.original && place.missing_from + 1 == pointer.tokens.size()) {
      operations_.push_back({std::string(pointer.text), json(), &values});
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

JsonPatch JsonPatchBuilder::patch() const {
  JsonPatch patch;
  patch.operations = operations_.size();
  patch.text.clear();
  patch.text.reserve(2 + operations_.size() * 128);
  patch.text += '[';
  for (const auto& op : operations_) {
    if (patch.text.size() > 1) patch.text += ',';
    patch.text += R"({"op":"add","path":)";
    append_json_string(patch.text, op.path);
    patch.text += R"(,"value":)";
    append_json(patch.text, op.borrowed != nullptr ? *op.borrowed : op.value);
    patch.text += '}';
  }
  patch.text += ']';
  return patch;
}

}  // namespace karta
