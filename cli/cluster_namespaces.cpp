#include "cli/cluster_namespaces.h"

#include <exception>
#include <utility>
#include <vector>

#include "kube/api_path.h"
#include "kube/list_pages.h"

namespace karta {

namespace {

// Namespaces the server would not give: every lookup is unknown, for the same reason.
class UnreadNamespaces : public NamespaceLabels {
 public:
  explicit UnreadNamespaces(std::string why) : why_(std::move(why)) {}
  NamespaceLookup find(const std::string&) const override { return {std::nullopt, why_}; }

 private:
  std::string why_;
};

// The API server leaves apiVersion and kind out of a built-in kind's list items.
json as_namespace(json object) {
  object["apiVersion"] = "v1";
  object["kind"] = "Namespace";
  return object;
}

}  // namespace

NamespacesRead read_cluster_namespaces(kube::ApiClient& client, const std::string& namespace_name, std::size_t page_size) {
  std::vector<json> namespaces;
  const std::string what = namespace_name.empty() ? "list namespaces" : "get namespace \"" + namespace_name + "\"";
  try {
    if (namespace_name.empty()) {
      kube::list_all(client, kube::resource_path("", "v1", "namespaces"), {.label_selector = "", .page_size = page_size},
                     [&](kube::ListPage& page) {
                       for (json& item : page.items) namespaces.push_back(as_namespace(std::move(item)));
                     });
    } else {
      namespaces.push_back(as_namespace(client.get(kube::resource_path("", "v1", "namespaces", "", namespace_name))));
    }
    return {std::make_shared<NamespaceFile>(NamespaceFile::from_objects(namespaces, "the cluster's namespaces")), ""};
  } catch (const kube::ApiError& e) {  // the server's refusal: its status and message, as kubectl prints them
    std::string error = "could not " + what + ": " +
                        (e.status() > 0 ? std::to_string(e.status()) + " " + e.message() : std::string(e.what()));
    return {std::make_shared<UnreadNamespaces>(error), error};
  } catch (const std::exception& e) {  // no answer, or an answer that is not Namespaces
    std::string error = "could not " + what + ": " + e.what();
    return {std::make_shared<UnreadNamespaces>(error), error};
  }
}

}  // namespace karta
