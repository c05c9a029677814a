#pragma once

// Shared fixtures: files of the repository, the built-in catalog (compiled once per process: jq
// compilation costs ~18 ms a program), kubectl, certificates; and, through the headers it includes, the
// corpus (corpus.h) and an HTTPS client (https_client.h).

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
#include "support/corpus.h"
#include "support/https_client.h"

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
// The loader's refusal of a policy read from `text` as the file policy.yaml, or "(no error)".
std::string policy_error(const std::string& text);

// Applies `patch` to `object` with `kubectl patch --local --type=json`, the API server's own JSON patch
// library. Fails the test when kubectl refuses it.
json kubectl_apply(const json& object, const json& patch);

// An AdmissionReview as the API server sends it, for `object` (kind taken from the object).
json admission_review(const json& object, const std::string& operation = "CREATE", const std::string& uid = "uid-1");

// The patch of an encoded AdmissionReview response (decoded from base64), or null when it has none.
json decoded_patch(const json& review);

std::string run_command(const std::string& command, int* exit_code = nullptr);
// The value of the sample `series` (a metric's name and its labels, as rendered) in a /metrics scrape; ""
// when it is not there.
std::string metric_sample(const std::string& scrape, const std::string& series);

// The command line run in this process, as `karta-webhook ARGS...` would run (args[0] is the program's
// name): its exit code and what it printed on each stream.
struct CliRun {
  int code;
  std::string out, err;
};
CliRun run_cli(std::vector<std::string> args);

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

}  // namespace karta::test
