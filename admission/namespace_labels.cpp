#include "admission/namespace_labels.h"

#include "json/documents.h"
#include "json/json_document.h"

namespace karta {

LabelMap namespace_labels_of(const json& object) {
  LabelMap labels;
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return labels;
  auto found = metadata->find("labels");
  if (found == metadata->end() || !found->is_object()) return labels;
  for (const auto& [key, value] : found->items()) {
    if (value.is_string()) labels.emplace(key, value.get<std::string>());
  }
  return labels;
}

NamespaceFile NamespaceFile::from_objects(const std::vector<json>& objects, const std::string& source) {
  NamespaceFile file;
  file.source_ = source;
  for (std::size_t i = 0; i < objects.size(); ++i) {
    const json& object = objects[i];
    const std::string where = source + "#" + std::to_string(i);
    auto kind = object.is_object() && object.contains("kind") && object["kind"].is_string() ? object["kind"].get<std::string>() : "";
    if (kind == "List" || kind == "NamespaceList") {
      if (!object.contains("items") || !object["items"].is_array()) throw InputError(where + ": a " + kind + " without items");
      NamespaceFile items = from_objects(object["items"].get<std::vector<json>>(), where + " items");
      file.labels_.merge(items.labels_);
      continue;
    }
    if (kind != "Namespace" || object.value("apiVersion", json()) != "v1") {
      throw InputError(where + ": not a v1 Namespace (or a List of them, as kubectl get ns -o yaml prints): " +
                       (kind.empty() ? "no kind" : "kind " + kind));
    }
    const json* name = find_json_at(object, json::json_pointer("/metadata/name"));
    if (name == nullptr || !name->is_string() || name->get<std::string>().empty()) {
      throw InputError(where + ": a Namespace without metadata.name");
    }
    file.labels_[name->get<std::string>()] = namespace_labels_of(object);
  }
  return file;
}

NamespaceFile NamespaceFile::load(const std::filesystem::path& path) {
  std::vector<json> objects;
  for (auto& document : read_documents(path)) objects.push_back(std::move(document.value));
  return from_objects(objects, path.string());
}

NamespaceLookup NamespaceFile::find(const std::string& namespace_name) const {
  auto it = labels_.find(namespace_name);
  if (it == labels_.end()) return {std::nullopt, "not in " + source_};
  return {it->second, ""};
}

}  // namespace karta
