#pragma once

// Where an admission learns the labels of the workload's namespace, which tenant rules
// (namespaceSelector) and scheduling.queue.namespaceLabel read: `serve` keeps them from a watch of the
// cluster's Namespaces (runtime/namespace_watch.h), the offline commands read them from --namespaces FILE.

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace karta {

using json = nlohmann::json;
using LabelMap = std::map<std::string, std::string>;

struct NamespaceLookup {
  std::optional<LabelMap> labels;  // none: unknown
  std::string why_unknown;         // when unknown: why, for the warning ("not in FILE", "no such namespace")
  // Unknown for now, but await() can learn them (serve's store has not heard of the namespace yet).
  bool pending = false;
};

class NamespaceLabels {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~NamespaceLabels() = default;
  // What is known now, without waiting for anything.
  virtual NamespaceLookup find(const std::string& namespace_name) const = 0;
  // Calls `done` once with the labels, known (or known to be unknown) by `deadline`: at once, on this
  // thread, when find() is not pending; else later, from a thread of the store's, as soon as they are
  // learnt or the deadline passes. Never with a pending lookup.
  virtual void await(const std::string& namespace_name, Clock::time_point deadline,
                     std::function<void(NamespaceLookup)> done) const {
    (void)deadline;
    NamespaceLookup lookup = find(namespace_name);
    lookup.pending = false;
    done(std::move(lookup));
  }
};

// Namespaces given as objects: the documents of a file, as `kubectl get ns -o yaml` prints them (a v1
// List's items) or a stream of Namespace documents.
class NamespaceFile : public NamespaceLabels {
 public:
  // Throws InputError naming the file and document for anything but a Namespace (or a List of them), or a
  // namespace without a name.
  static NamespaceFile load(const std::filesystem::path& file);
  static NamespaceFile from_objects(const std::vector<json>& objects, const std::string& source);
  NamespaceLookup find(const std::string& namespace_name) const override;
  // The namespaces of the file with their labels, by name.
  const std::map<std::string, LabelMap>& namespaces() const { return labels_; }

 private:
  std::string source_;
  std::map<std::string, LabelMap> labels_;
};

// The labels of a Namespace object's metadata (string values only).
LabelMap namespace_labels_of(const json& object);

}  // namespace karta
