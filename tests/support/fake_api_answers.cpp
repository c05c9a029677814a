// What the fake API server (support/fake_api_server.h) answers: discovery, GET, LIST pages, WATCH, RBAC denials.
#include "support/fake_api_server_impl.h"

#include <algorithm>
#include <stdexcept>

namespace karta::test {

namespace {

constexpr const char* kKartas = "/apis/run.ai/v1alpha1/kartas";

// An object as a client that asked for metadata only gets it.
json partial_metadata(const json& object) {
  return {{"apiVersion", "meta.k8s.io/v1"}, {"kind", "PartialObjectMetadata"}, {"metadata", object.value("metadata", json::object())}};
}

bool asks_metadata_list(const std::string& accept) { return accept.find("as=PartialObjectMetadataList") != std::string::npos; }
bool asks_metadata(const std::string& accept) { return accept.find("as=PartialObjectMetadata;") != std::string::npos; }

}  // namespace

std::string group_version_path(const FakeResource& resource) {
  return resource.group.empty() ? "/api/" + resource.version : "/apis/" + resource.group + "/" + resource.version;
}

void FakeApiServer::Impl::serve_resource(const std::shared_ptr<Session>& session, const Target& target,
                                         const std::string& path, std::map<std::string, std::string>& query) {
  const FakeResource& resource = target.served->resource;
  bool watching = query["watch"] == "1" || query["watch"] == "true";
  std::string verb = !target.name.empty() ? "get" : watching ? "watch" : "list";
  if (forbidden(*target.served, target.namespace_name)) {
    return session->respond(403, forbidden_status(resource, verb, target.namespace_name, target.name));
  }
  if (!target.name.empty()) {
    std::string key = target.namespace_name.empty() ? target.name : target.namespace_name + "/" + target.name;
    auto found = target.served->objects->find(key);
    if (found != target.served->objects->end()) {
      json object = in_version(found->second, resource);
      return session->respond(200, asks_metadata(received_.back().accept) ? partial_metadata(object) : object);
    }
    json body = status_object(404, "NotFound", resource.group_resource() + " \"" + target.name + "\" not found");
    body["details"] = {{"name", target.name}, {"kind", resource.plural}};
    if (!resource.group.empty()) body["details"]["group"] = resource.group;
    return session->respond(404, body);
  }
  if (watching) {
    if (path == kKartas || (!resource.namespaced && target.namespace_name.empty())) {
      session->set_watched(path, asks_metadata(received_.back().accept));
      return watch(session, *target.served, path, query);
    }
    json body = status_object(405, "MethodNotAllowed", "this fake API server watches only cluster-scoped resources");
    return session->respond(405, body);
  }
  std::optional<LabelSelector> selector;
  if (!query["labelSelector"].empty()) {
    try {
      selector.emplace(query["labelSelector"]);
    } catch (const std::invalid_argument& e) {
      return session->respond(400, status_object(400, "BadRequest", e.what()));
    }
  }
  list(session, *target.served, target.namespace_name, selector, query);
}

bool FakeApiServer::Impl::forbidden(const Served& served, const std::string& namespace_name) const {
  if (served.forbidden.empty()) return false;
  // A request across namespaces needs the right in all of them (a ClusterRole).
  return namespace_name.empty() || served.forbidden.count("") > 0 || served.forbidden.count(namespace_name) > 0;
}

// RBAC's denial: k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go (forbiddenMessage)
// wrapped by apierrors.NewForbidden.
json FakeApiServer::Impl::forbidden_status(const FakeResource& resource, const std::string& verb,
                                           const std::string& namespace_name, const std::string& name) const {
  std::string message = resource.group_resource() + (name.empty() ? "" : " \"" + name + "\"") +
                        " is forbidden: User \"" + options_.user + "\" cannot " + verb + " resource \"" +
                        resource.plural + "\" in API group \"" + resource.group + "\"";
  message += namespace_name.empty() ? " at the cluster scope" : " in the namespace \"" + namespace_name + "\"";
  json body = status_object(403, "Forbidden", message);
  body["details"] = {{"kind", resource.plural}};
  if (!resource.group.empty()) body["details"]["group"] = resource.group;
  if (!name.empty()) body["details"]["name"] = name;
  return body;
}

// GET /api, /api/v1, /apis, /apis/GROUP and /apis/GROUP/VERSION.
std::optional<json> FakeApiServer::Impl::discovery(const std::string& path) const {
  std::vector<std::string> segments = path_segments(path);
  if (segments == std::vector<std::string>{"api"}) {
    return json{{"kind", "APIVersions"},
                {"versions", {"v1"}},
                {"serverAddressByClientCIDRs",
                 {{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", "127.0.0.1:" + std::to_string(port_)}}}}};
  }
  if (segments.size() == 2 && segments[0] == "api") return resource_list("", segments[1]);
  if (segments == std::vector<std::string>{"apis"}) {
    json groups = json::array();
    for (const std::string& group : group_names()) groups.push_back(api_group(group));
    return json{{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", groups}};
  }
  if (segments.size() == 2 && segments[0] == "apis") {
    if (group_versions(segments[1]).empty()) return std::nullopt;
    json group = api_group(segments[1]);
    group["kind"] = "APIGroup";
    group["apiVersion"] = "v1";
    return group;
  }
  if (segments.size() == 3 && segments[0] == "apis") return resource_list(segments[1], segments[2]);
  return std::nullopt;
}

std::optional<json> FakeApiServer::Impl::resource_list(const std::string& group, const std::string& version) const {
  json resources = json::array();
  for (const Served& served : served_) {
    const FakeResource& r = served.resource;
    if (r.group != group || r.version != version) continue;
    json entry = {{"name", r.plural}, {"singularName", r.singular}, {"namespaced", r.namespaced},
                  {"kind", r.kind},   {"verbs", r.verbs}};
    if (!r.short_names.empty()) entry["shortNames"] = r.short_names;
    resources.push_back(entry);
    for (const std::string& sub : r.subresources) {
      resources.push_back({{"name", r.plural + "/" + sub}, {"singularName", ""}, {"namespaced", r.namespaced},
                           {"kind", r.kind}, {"verbs", {"get", "patch", "update"}}});
    }
  }
  // The core group's v1 is always there; another group version only while something is served in it.
  if (resources.empty() && !(group.empty() && version == "v1")) return std::nullopt;
  json list = {{"kind", "APIResourceList"}, {"groupVersion", group.empty() ? version : group + "/" + version},
               {"resources", resources}};
  // /apis/GROUP/VERSION carries apiVersion v1; the core group's /api/v1 does not.
  if (!group.empty()) list["apiVersion"] = "v1";
  return list;
}

std::vector<std::string> FakeApiServer::Impl::group_names() const {
  std::vector<std::string> names;
  for (const Served& served : served_) {
    const std::string& group = served.resource.group;
    if (!group.empty() && std::find(names.begin(), names.end(), group) == names.end()) names.push_back(group);
  }
  return names;
}

// Preferred first, by Kubernetes' version priority.
std::vector<std::string> FakeApiServer::Impl::group_versions(const std::string& group) const {
  std::vector<std::string> versions;
  for (const Served& served : served_) {
    const FakeResource& r = served.resource;
    if (r.group == group && std::find(versions.begin(), versions.end(), r.version) == versions.end()) {
      versions.push_back(r.version);
    }
  }
  std::sort(versions.begin(), versions.end(), higher_priority);
  return versions;
}

json FakeApiServer::Impl::api_group(const std::string& group) const {
  json versions = json::array();
  for (const std::string& version : group_versions(group)) {
    versions.push_back({{"groupVersion", group + "/" + version}, {"version", version}});
  }
  return {{"name", group}, {"versions", versions}, {"preferredVersion", versions.at(0)}};
}

void FakeApiServer::Impl::list(const std::shared_ptr<Session>& session, const Served& served,
                               const std::string& namespace_name, const std::optional<LabelSelector>& selector,
                               std::map<std::string, std::string>& query) {
  const FakeResource& resource = served.resource;
  std::size_t limit = query["limit"].empty() ? 0 : std::stoul(query["limit"]);
  int version = resource_version_;
  std::string start;
  if (!query["continue"].empty()) {
    json token = json::parse(from_raw_url_base64(query["continue"]));
    version = token.at("rv").get<int>();
    start = token.at("start").get<std::string>();
    // etcd3's store, when the snapshot the token reads from has been compacted away.
    if (version < oldest_watchable_) {
      return session->respond(
          410, status_object(410, "Expired",
                             "The provided continue parameter is too old to display a consistent list result. You "
                             "can start a new list without the continue parameter, or use the continue token in "
                             "this response to retrieve the remainder of the results. Continuing with the provided "
                             "token results in an inconsistent list - objects that were created, modified, or "
                             "deleted between the time the first chunk was returned and now may show up in the "
                             "list."));
    }
  }
  json items = json::array();
  std::string last;
  std::size_t remaining = 0;
  // In key order, as etcd returns them: namespace, then name.
  for (const auto& [name, object] : *served.objects) {
    if (name < start) continue;
    if (!namespace_name.empty() && !name.starts_with(namespace_name + "/")) continue;
    if (selector && !selector->matches(object)) continue;
    if (limit != 0 && items.size() == limit) {
      ++remaining;
      continue;
    }
    items.push_back(in_version(object, resource));
    if (asks_metadata_list(received_.back().accept)) items.back() = partial_metadata(items.back());
    if (options_.list_items_without_type) {
      items.back().erase("apiVersion");
      items.back().erase("kind");
    }
    last = name;
  }
  json metadata = {{"resourceVersion", std::to_string(version)}};
  if (remaining > 0) {
    // The next page starts just after the last key sent: "<key>\0".
    metadata["continue"] =
        raw_url_base64(json{{"v", "meta.k8s.io/v1"}, {"rv", version}, {"start", last + '\0'}}.dump());
    // The API server counts the rest only when it need not filter them (no label or field selector).
    if (!selector) metadata["remainingItemCount"] = remaining;
  }
  if (options_.repeat_continue_token && !query["continue"].empty()) metadata["continue"] = query["continue"];
  const bool metadata_only = asks_metadata_list(received_.back().accept);
  session->respond(200, {{"apiVersion", metadata_only ? "meta.k8s.io/v1" : resource.api_version()},
                         {"kind", metadata_only ? "PartialObjectMetadataList" : resource.kind + "List"},
                         {"metadata", metadata},
                         {"items", items}});
}

void FakeApiServer::Impl::watch(const std::shared_ptr<Session>& session, Served& served, const std::string& collection,
                                std::map<std::string, std::string>& query) {
  const std::string& version_text = query["resourceVersion"];
  int from = version_text.empty() || version_text == "0" ? -1 : std::stoi(version_text);
  int timeout_seconds = query["timeoutSeconds"].empty() ? 1800 : std::stoi(query["timeoutSeconds"]);
  bool bookmarks = query["allowWatchBookmarks"] == "true";
  if ((from >= 0 && from < oldest_watchable_) || options_.every_watch_expires) {
    json status = status_object(
        410, "Expired", "too old resource version: " + version_text + " (" + std::to_string(oldest_watchable_) + ")");
    if (options_.gone_as_http_status) return session->respond(410, status);
    session->begin_watch(std::chrono::seconds(timeout_seconds), bookmarks);
    session->send_event({{"type", "ERROR"}, {"object", status}});
    session->end_watch();
    return;
  }
  session->begin_watch(std::chrono::seconds(timeout_seconds), bookmarks);
  watches_.push_back(session);
  if (from < 0) {
    for (const auto& [name, object] : *served.objects) session->send_event({{"type", "ADDED"}, {"object", object}});
    return;
  }
  for (const Change& change : history_) {
    if (change.version > from && change.collection == collection) session->send_event(change.event);
  }
}

}  // namespace karta::test
