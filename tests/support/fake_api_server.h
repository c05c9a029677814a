#pragma once

// A local HTTPS API server for the tests of our Kubernetes client and of what uses it. It imitates
// kube-apiserver, because none can be installed here: the paths, documents, pages, tokens and Status
// bodies are the real server's (each checked against its source or reference; see the comments), so a
// client that works against it works against a cluster. It serves discovery, LIST (pages, label
// selectors) and GET for any resources registered, WATCH for the kartas, bearer tokens and client
// certificates, and RBAC denials.

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/kube_connection.h"
#include "support/test_support.h"

namespace karta::test {

std::string read_text(const std::filesystem::path& file);  // fails the test when it cannot be read
void write_text(const std::filesystem::path& file, const std::string& text);

std::string base64(const std::string& bytes);
// Go's base64.RawURLEncoding: the API server's continue tokens are written with it.
std::string raw_url_base64(const std::string& bytes);
std::string from_raw_url_base64(std::string encoded);
std::string percent_decode(const std::string& text);  // a query's: '+' is a space
std::string path_unescape(const std::string& text);   // a path's: '+' is itself

// A Status as the API server writes it in error answers and ERROR events.
json status_object(int code, const std::string& reason, const std::string& message);

struct ClientCertificate {
  std::filesystem::path certificate, key;
};

// A client certificate (clientAuth) for `common_name`, signed by the CA TestCertificates made in `dir`.
ClientCertificate make_client_certificate(const std::filesystem::path& dir, const std::string& common_name);
// A certificate for `common_name` with `extensions` (openssl -extfile lines), signed by that CA.
ClientCertificate make_certificate(const std::filesystem::path& dir, const std::string& common_name,
                                   const std::string& extensions);

// One request as the test API server received it.
struct Received {
  std::string method;   // "GET"
  std::string target;
  std::string version;  // "HTTP/1.1"
  std::string authorization;
  std::string accept;
  std::string client_name;  // the CN of the client certificate, "" without one
  std::chrono::steady_clock::time_point at;
};

struct FakeApiServerOptions {
  std::string token = "sesame";  // the bearer token it accepts
  bool require_client_certificate = false;
  // Answer a watch from a compacted resourceVersion with HTTP 410, as the API server does when it reads
  // from etcd, rather than with 200 and an ERROR event, as its watch cache does.
  bool gone_as_http_status = false;
  // Answer every watch of the kartas with 410 Expired, however fresh its resourceVersion: an API server
  // whose LISTs keep giving a resourceVersion its watch cannot serve (issue 26's LIST loop).
  bool every_watch_expires = false;
  // Send LIST items without apiVersion and kind, as the API server does for built-in kinds (CRDs).
  bool list_items_without_type = false;
  // Close each connection right after its answer, as a server whose idle timeout has passed does, while
  // the client believes it kept alive.
  bool close_after_answer = false;
  // Serve a certificate that names localhost only in its Common Name, with no subjectAltName.
  bool common_name_only = false;
  // Who the token belongs to, as RBAC denials name it.
  std::string user = "system:serviceaccount:karta-system:karta-webhook";
  // Give every LIST page after the first the continue token it was asked with, as a broken (or hostile)
  // server might: a client that follows tokens blindly never ends.
  bool repeat_continue_token = false;
  // After the first answer on each connection, in the same write, an answer to nothing: a 403 Status,
  // as a hostile (or broken) server or proxy may send to desynchronise a kept-alive connection.
  bool unsolicited_403_after_first_answer = false;
  // When a connection has been idle this long after an answer, send what Go's net/http server (and
  // front proxies) send then: "408 Request Timeout" with Connection: close, and close. 0: never.
  std::chrono::milliseconds idle_408_after{0};
};

// A resource as an API server serves it (a built-in kind or a CRD's), named as its APIResourceList
// names it.
struct FakeResource {
  std::string group;  // "" for the core group
  std::string version;
  std::string kind;
  std::string plural;  // the resource: "pods"
  std::string singular;
  std::vector<std::string> short_names;
  bool namespaced = true;
  std::vector<std::string> verbs = {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"};
  std::vector<std::string> subresources;  // listed in discovery as "PLURAL/NAME": "status", "scale"

  std::string api_version() const;     // "v1", "apps/v1"
  std::string group_resource() const;  // "pods", "jobsets.jobset.x-k8s.io"
};

// The API server's own CustomResourceDefinitions (apiextensions.k8s.io/v1, cluster-scoped, short names
// crd and crds), for tests that serve CRDs to `serve`, `audit` and `generate`.
FakeResource crd_resource();

// The API server, on 127.0.0.1, over HTTPS with certificates of its own. It always serves the
// cluster-scoped run.ai/v1alpha1 kartas, with the objects given to the constructor; serve() adds others.
// It keeps the objects, a resourceVersion that grows with every write, and the kartas' events since the
// last compaction, and answers as kube-apiserver does:
// - discovery: GET /api (APIVersions), /apis (APIGroupList, each group with its preferredVersion: the
//   highest by Kubernetes' version priority), /apis/GROUP (APIGroup), /api/v1 and /apis/GROUP/VERSION
//   (APIResourceList: name, singularName, namespaced, kind, verbs, shortNames; subresources as
//   "PLURAL/SUB"; apiVersion v1 on the groups' lists, none on /api/v1's);
// - LIST /api/v1/PLURAL, /api/v1/namespaces/NS/PLURAL, /apis/G/V/PLURAL and /apis/G/V/namespaces/NS/PLURAL
//   (all namespaces without one) ?limit=N pages in key order (namespace, then name) with a continue
//   token (base64url JSON of the snapshot's resourceVersion and the next key, as the API server's) and
//   remainingItemCount (not with a selector, as etcd3's store); ?labelSelector= with =, ==, !=, in,
//   notin, key, !key joined by commas, percent-decoded; a selector that does not parse gets 400
//   BadRequest with the parser's message;
// - GET .../PLURAL/NAME: the object, or 404 NotFound `PLURAL.GROUP "NAME" not found` with details; the
//   path is percent-decoded before it is split, as the API server reads URL.Path;
// - WATCH ?watch=1&resourceVersion=RV of any served collection replays its events after RV and then
//   streams new ones, each event a JSON line in a chunk of its own; BOOKMARKs only with
//   allowWatchBookmarks=true; the stream ends after timeoutSeconds; a resourceVersion older than the last
//   compaction gets a 410 Expired Status;
// - metadata only, as for client-go's metadata client: an Accept of
//   application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1 gets a LIST as a
//   PartialObjectMetadataList, and ...;as=PartialObjectMetadata;... a GET or each watch event as a
//   PartialObjectMetadata; an Accept it cannot serve gets 406 (the first servable type of the list wins);
// - a resource (or one of its namespaces) forbidden gets RBAC's 403: `PLURAL.GROUP is forbidden: User
//   "..." cannot list resource "PLURAL" in API group "GROUP" in the namespace "NS"`;
// - no valid token (and no client certificate) gets 401 with a Status body; any other path 404.
// Everything runs on one I/O thread; the test's calls are posted to it and wait for their result.
class FakeApiServer {
 public:
  FakeApiServer(const std::filesystem::path& dir, std::vector<json> objects, FakeApiServerOptions options = {});
  ~FakeApiServer();
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  unsigned short port() const;
  const TestCertificates& certificates() const;

  // A connection to this server with `token`.
  kube::KubeConnection connection(const std::string& token = "sesame") const;
  // A kubeconfig file's text for connection(), its context's namespace `namespace_name`.
  std::string kubeconfig(const std::string& namespace_name) const;

  void add(json object);
  void modify(json object);
  void remove(const std::string& name);
  // The same for an object of another served resource (a CRD, a Namespace): its watchers get the event.
  void add_to(const std::string& group, const std::string& plural, json object);
  void modify_in(const std::string& group, const std::string& plural, json object);
  void remove_from(const std::string& group, const std::string& plural, const std::string& key);
  // One of the three by `type`: "ADDED", "MODIFIED" or "DELETED" (of the object's key).
  void change_object(const std::string& group, const std::string& plural, const std::string& type, json object);
  // Writes elsewhere in the cluster moved the resourceVersion to `version`; watches that asked for
  // bookmarks are told.
  void bookmark(int version);
  // Writes elsewhere moved the resourceVersion to `version` and etcd was compacted there: older
  // resourceVersions can no longer be watched from. Open watches end, as they do when the API server's
  // watch cache is re-initialized.
  void compact(int version);
  // Ends every open watch normally, as when its timeoutSeconds has passed.
  void end_watches();
  // The next `count` requests get `status` with a Status body.
  void fail_next(int count, int status);
  // From now on only `token` is accepted: a request with another gets 401 Unauthorized, as when a
  // cloud's short-lived token has been revoked or has expired on the server's side.
  void set_token(const std::string& token);
  // Every request for the group version (discovery and its resources) gets 503 with the plain-text body
  // "service unavailable", as kube-aggregator answers for an APIService whose backend is down (a
  // metrics-server that is not running). /apis still lists the group.
  void make_unavailable(const std::string& group, const std::string& version);

  // Serves `resource` (again: the objects are added to those it has), with `objects`. Objects get
  // apiVersion and kind when they have none, the namespace "default" when a namespaced one has none, a
  // resourceVersion and a uid.
  void serve(FakeResource resource, std::vector<json> objects = {});
  void add_objects(const std::string& group, const std::string& plural, std::vector<json> objects);
  // Denies every request for the resource in `namespace_name`, or everywhere when it is "". A request
  // across all namespaces is denied once any namespace is, as it needs a ClusterRole.
  void forbid(const std::string& group, const std::string& plural, const std::string& namespace_name = "");

  // A GET of `path` (without its query) gets `status` and `body` as given, as a hostile server might
  // answer: a CRD nested 60,000 levels deep, an answer of 40 MiB.
  void answer_raw(const std::string& path, int status, std::string body);

  // From now on, the answer to a GET whose target (path and query) starts with `target_prefix` is made
  // when the request arrives and sent `delay` later, as from a slow API server; other requests are
  // answered meanwhile. A later call for the same prefix replaces its delay; a zero delay removes it.
  // Watches are not delayed.
  void delay_gets(const std::string& target_prefix, std::chrono::milliseconds delay);
  // How many requests came for `path` (the target without its query).
  std::size_t requests_for(const std::string& path) const;

  // Every request head (request line and headers, up to the blank line) exactly as its bytes arrived,
  // before any parsing: what a header injected with CR/LF or a smuggled second request would show in.
  std::vector<std::string> raw_heads() const;

  std::vector<Received> received() const;
  std::vector<std::string> targets() const;
  // Each request as its request line: "GET /api/v1/pods?limit=500 HTTP/1.1". Every request the server
  // parsed is there, smuggled ones too.
  std::vector<std::string> request_lines() const;
  std::size_t connections() const;
  std::size_t open_watches() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace karta::test
