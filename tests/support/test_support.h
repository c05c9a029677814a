#pragma once

// Shared fixtures: files of the repository and the corpus, the built-in catalog (compiled once per
// process: jq compilation costs ~18 ms a program), kubectl, certificates and an HTTPS client.

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "definitions/catalog.h"
#include "json/documents.h"
#include "policy/policy.h"

namespace karta::test {

using json = nlohmann::json;

// Bounds on time are behaviour ("answered within a second"), not benchmarks; an unoptimised sanitizer
// build runs several times slower, so its bounds are scaled.
#if defined(NDEBUG) && !defined(KARTA_THREAD_SANITIZER)
inline constexpr int kSlowdown = 1;
#else
inline constexpr int kSlowdown = 10;
#endif

std::filesystem::path source_dir();
std::filesystem::path binary_path();

// The corpus, kept in the repository at tests/corpus/ (KARTA_CORPUS_DIR in the environment overrides it).
// When it is missing the test fails, naming the path, in CI or not; it is never skipped. The result is
// therefore always a path (the optional is kept for the callers' `if (!corpus) return;`).
std::optional<std::filesystem::path> corpus_dir();

// Every object of the corpus samples, then examples/jobset-demo.yaml; fails the test without a corpus.
std::vector<json> sample_objects();

json yaml(const std::string& text);                           // one document
std::vector<SourceDocument> documents(const std::filesystem::path& file);
json document(const std::filesystem::path& file, std::size_t index = 0);

const Catalog& builtin_catalog();

// The one definition of a Karta document (YAML), compiled; fails the test when it does not parse.
std::shared_ptr<const CompiledDefinition> compile_definition(const std::string& karta_yaml);
// The start of a Karta for a made-up root kind `example.com/v1 <Kind>`, down to the root component's
// kind: what follows adds its statusDefinition and the rest, indented for the root component.
std::string made_up_karta(const std::string& name, const std::string& kind);
Policy policy_from_yaml(const std::string& text);

// Applies `patch` to `object` with `kubectl patch --local --type=json`, the API server's own JSON patch
// library. Fails the test when kubectl refuses it.
json kubectl_apply(const json& object, const json& patch);

// An AdmissionReview as the API server sends it, for `object` (kind taken from the object).
json admission_review(const json& object, const std::string& operation = "CREATE", const std::string& uid = "uid-1");

// The patch of an encoded AdmissionReview response (decoded from base64), or null when it has none.
json decoded_patch(const json& review);

std::string run_command(const std::string& command, int* exit_code = nullptr);

struct TempDir {
  TempDir();
  ~TempDir();
  std::filesystem::path path;
};

// A CA and a server certificate for localhost/127.0.0.1, made fresh with openssl.
struct TestCertificates {
  explicit TestCertificates(const std::filesystem::path& dir, const std::string& name = "server");
  std::filesystem::path ca, certificate, key;
};

struct HttpReply {
  int status = 0;
  std::string body;
  std::string header_connection;
};

// A blocking HTTPS client that verifies the server against `ca` and keeps its connection alive.
class HttpsClient {
 public:
  HttpsClient(unsigned short port, const std::filesystem::path& ca, int tls_version = 0);  // 0: any >= 1.2
  ~HttpsClient();
  HttpReply request(const std::string& method, const std::string& target, const std::string& body = "",
                    const std::string& content_type = "application/json");
  // Writes raw bytes without reading anything back (the first part of a request).
  void send_partial(const std::string& bytes);
  // Writes raw bytes (a hand-made request) and reads one response; for a HEAD request, its headers only.
  HttpReply send_raw(const std::string& bytes, bool head_request = false);
  // Reads the next response (after send_partial wrote several requests at once).
  HttpReply receive(bool head_request = false);
  // Reads exactly `count` raw bytes (an interim `100 Continue`, say), waiting at most `limit`. Throws
  // boost::system::system_error: beast::error::timeout when they did not come in time (the connection is
  // then unusable), another code (eof) when the server closed the connection.
  std::string receive_bytes(std::size_t count, std::chrono::milliseconds limit);
  std::string peer_certificate_serial() const;
  bool connected() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace karta::test
