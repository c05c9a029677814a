#include "mutate/json_patch_builder.h"

// The patch written as text: the builder's tree (json_patch_builder.cpp builds it) as the JSON text
// nlohmann::json would write for it, byte for byte, straight into one string sized beforehand.

#include "json/json_text.h"

namespace karta {

void JsonPatchBuilder::write(std::string& out, const Node& node) {
  switch (node.kind) {
    case Node::Kind::String:
      append_json_string(out, node.text);
      return;
    case Node::Kind::Scalar:
      append_json(out, *node.scalar);
      return;
    case Node::Kind::Object: {
      out += '{';
      for (std::size_t i = 0; i < node.members.size(); ++i) {
        if (i != 0) out += ',';
        append_json_string(out, node.members[i].first);
        out += ':';
        write(out, *node.members[i].second);
      }
      out += '}';
      return;
    }
    case Node::Kind::Array: {
      out += '[';
      for (std::size_t i = 0; i < node.items.size(); ++i) {
        if (i != 0) out += ',';
        write(out, *node.items[i]);
      }
      out += ']';
      return;
    }
  }
}

void JsonPatchBuilder::write_patch(std::string& out) const {
  out += '[';
  for (std::size_t i = 0; i < operations_.size(); ++i) {
    const Operation& op = operations_[i];
    out += i == 0 ? R"({"op":"add","path":)" : R"(,{"op":"add","path":)";
    append_json_string(out, op.path);
    out += R"(,"value":)";
    if (op.borrowed != nullptr && !op.borrowed_text.empty()) {
      out.append(op.borrowed_text);  // the caller's text of it (the policy's tolerations, written when read)
    } else if (op.borrowed != nullptr) {
      append_json(out, *op.borrowed);
    } else if (op.value != nullptr) {
      write(out, *op.value);
    } else {
      append_json_string(out, op.text);
    }
    out += '}';
  }
  out += ']';
}

JsonPatch JsonPatchBuilder::patch() const {
  JsonPatch patch;
  patch.operations = operations_.size();
  patch.text.clear();
  patch.text.reserve(text_size_hint_);
  write_patch(patch.text);
  return patch;
}

}  // namespace karta
