#pragma once

// What the tests of the install manifests (tests/unit-manifests-*.cpp) share: renderings of manifests/
// with the real `kubectl kustomize` (each shared by every test that reads it), commands run in a shell,
// readers of YAML objects that fail the test naming the field, and the files of certs/generate.sh. In a
// namespace of their own: their names (base64, source_dir, run, find) are common ones.

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "json/documents.h"

namespace karta::test::manifest_fixtures {

namespace fs = std::filesystem;

extern const fs::path source_dir;  // KARTA_SOURCE_DIR

constexpr const char* install_namespace = "karta-system";
constexpr const char* app_name = "karta-webhook";

// ---------------------------------------------------------------------------------------------------
// Running commands

std::string shell_quote(const std::string& text);

// Fails the test when the file cannot be read.
std::string read_file(const fs::path& path);

// A directory under the system temporary directory, removed with everything in it.
class TemporaryDirectory {
 public:
  TemporaryDirectory() {
    std::string pattern = (fs::temp_directory_path() / "karta-manifests-test-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("mkdtemp failed for " + pattern);
    }
    path_ = pattern;
  }
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;
  ~TemporaryDirectory() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

CommandResult run(const std::string& command);

using Documents = std::vector<YAML::Node>;

// `kubectl kustomize DIRECTORY`; fails the test when kubectl is not on PATH.
CommandResult kustomize(const fs::path& directory);

// Renders `directory`; fails the test when kustomize fails or renders nothing.
Documents render_uncached(const fs::path& directory);

// The committed tree's renderings, each made once and shared by every test.
const Documents& base();
const Documents& cert_manager_overlay();
const Documents& cert_manager_existing_crd_overlay();

// The published Karta CRD, as kept in the test corpus (tests/corpus/SOURCES.md gives its origin).
extern const fs::path published_karta_crd;

// A rendering as typed JSON values (YAML 1.2 core schema, as the API server reads it), so that two
// renderings compare by value whatever their key order or scalar style.
std::vector<karta::json> render_json(const fs::path& directory);

// ---------------------------------------------------------------------------------------------------
// Reading objects: each fails the test, naming `what`, when the node is missing or of another shape.

std::string scalar(const YAML::Node& node, const std::string& what);
int integer(const YAML::Node& node, const std::string& what);
bool boolean(const YAML::Node& node, const std::string& what);
std::vector<std::string> strings(const YAML::Node& node, const std::string& what);
std::set<std::string> string_set(const YAML::Node& node, const std::string& what);
std::map<std::string, std::string> string_map(const YAML::Node& node, const std::string& what);

std::string kind_of(const YAML::Node& object);
std::string name_of(const YAML::Node& object);

std::vector<YAML::Node> all_of_kind(const Documents& documents, const std::string& kind);
// Fails the test when the rendering has no such object.
YAML::Node find(const Documents& documents, const std::string& kind, const std::string& name);

using ObjectId = std::pair<std::string, std::string>;  // kind, name

// The objects' ids, each once (a duplicate fails the test).
std::set<ObjectId> object_ids(const Documents& documents);
// The objects of the base install.
const std::set<ObjectId>& base_object_ids();

// The webhooks of both webhook configurations named app_name.
std::vector<YAML::Node> all_webhooks(const Documents& documents);

// The built-in catalog's files, definitions/catalog/*.yaml, sorted.
std::vector<fs::path> catalog_files();

// ---------------------------------------------------------------------------------------------------
// Certificates

std::string base64(const std::string& bytes);
std::string trim(std::string text);

extern const fs::path generate_script;  // certs/generate.sh

// Runs certs/generate.sh OUTDIR; fails the test when it fails.
void generate_certificates(const fs::path& outdir);

// The names the serving certificate is for: the Service's.
extern const std::vector<std::string> service_names;

}  // namespace karta::test::manifest_fixtures
