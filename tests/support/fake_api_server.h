#pragma once

// A local HTTPS API server that speaks the real protocol, for the Kubernetes client's tests: LISTs in
// pages with continue tokens, WATCH streams of JSON lines sent as one chunk each, bookmarks, 410 ERROR
// events after compaction, Status bodies for errors, bearer tokens and client certificates.

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
std::string percent_decode(const std::string& text);

// A Status as the API server writes it in error answers and ERROR events.
json status_object(int code, const std::string& reason, const std::string& message);

struct ClientCertificate {
  std::filesystem::path certificate, key;
};

// A client certificate (clientAuth) for `common_name`, signed by the CA TestCertificates made in `dir`.
ClientCertificate make_client_certificate(const std::filesystem::path& dir, const std::string& common_name);

// One request as the test API server received it.
struct Received {
  std::string target;
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
  // Send LIST items without apiVersion and kind, as the API server does for built-in kinds (CRDs).
  bool list_items_without_type = false;
  // Close each connection right after its answer, as a server whose idle timeout has passed does, while
  // the client believes it kept alive.
  bool close_after_answer = false;
};

// An API server serving one cluster-scoped collection, /apis/run.ai/v1alpha1/kartas, over HTTPS on
// 127.0.0.1. It keeps the objects, a resourceVersion that grows with every write, and the events since
// the last compaction, and answers as kube-apiserver does:
// - LIST ?limit=N pages in name order with a continue token (base64url JSON of the snapshot's
//   resourceVersion and the next key, as the API server's) and remainingItemCount;
// - WATCH ?watch=1&resourceVersion=RV replays the events after RV and then streams new ones, each event
//   a JSON line in a chunk of its own; BOOKMARKs only with allowWatchBookmarks=true; the stream ends
//   after timeoutSeconds; a resourceVersion older than the last compaction gets a 410 Expired Status;
// - no valid token (and no client certificate) gets 401 with a Status body.
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

  void add(json object);
  void modify(json object);
  void remove(const std::string& name);
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

  std::vector<Received> received() const;
  std::vector<std::string> targets() const;
  std::size_t connections() const;
  std::size_t open_watches() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace karta::test
