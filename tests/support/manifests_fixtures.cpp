#include "support/manifests_fixtures.h"

#include <doctest/doctest.h>

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>

#ifndef KARTA_SOURCE_DIR
#error "KARTA_SOURCE_DIR (the repository root, as a string literal) must be defined"
#endif

namespace karta::test::manifest_fixtures {

const fs::path source_dir{KARTA_SOURCE_DIR};

// ---------------------------------------------------------------------------------------------------
// Running commands

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

CommandResult run(const std::string& command) {
  TemporaryDirectory scratch;
  const fs::path err_file = scratch.path() / "stderr";
  const std::string full = command + " 2>" + shell_quote(err_file.string()) + " </dev/null";
  FILE* pipe = popen(full.c_str(), "r");
  REQUIRE_MESSAGE(pipe != nullptr, "cannot start: " << command);
  CommandResult result;
  std::array<char, 8192> buffer{};
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    result.out.append(buffer.data(), n);
  }
  const int status = pclose(pipe);
  result.exit_code = (status != -1 && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
  if (fs::exists(err_file)) {
    result.err = read_file(err_file);
  }
  return result;
}

namespace {

void require_kubectl() {
  if (std::system("command -v kubectl >/dev/null 2>&1") != 0) {
    FAIL("kubectl is not on PATH: the manifest tests render manifests/ with `kubectl kustomize` "
         "(kubectl 1.27 or later, which embeds kustomize v5). Install kubectl and run the tests again.");
  }
}

Documents parse_documents(const std::string& yaml_text) {
  Documents documents;
  for (const YAML::Node& document : YAML::LoadAll(yaml_text)) {
    if (document.IsDefined() && !document.IsNull()) {
      documents.push_back(document);
    }
  }
  return documents;
}

// Rendering takes a few hundred milliseconds; every test of the committed tree shares one rendering.
const Documents& render(const fs::path& directory) {
  static std::map<std::string, Documents> cache;
  const std::string key = directory.string();
  auto found = cache.find(key);
  if (found == cache.end()) {
    found = cache.emplace(key, render_uncached(directory)).first;
  }
  return found->second;
}

}  // namespace

CommandResult kustomize(const fs::path& directory) {
  require_kubectl();
  return run("kubectl kustomize " + shell_quote(directory.string()));
}

Documents render_uncached(const fs::path& directory) {
  const CommandResult result = kustomize(directory);
  INFO("kubectl kustomize ", directory.string(), " said: ", result.err);
  REQUIRE(result.exit_code == 0);
  Documents documents = parse_documents(result.out);
  REQUIRE_FALSE(documents.empty());
  return documents;
}

const Documents& base() { return render(source_dir / "manifests"); }
const Documents& cert_manager_overlay() { return render(source_dir / "manifests" / "overlays" / "cert-manager"); }
const Documents& cert_manager_existing_crd_overlay() {
  return render(source_dir / "manifests" / "overlays" / "existing-crd" / "cert-manager");
}

const fs::path published_karta_crd = source_dir / "tests" / "corpus" / "karta" / "run.ai_kartas.yaml";

std::vector<karta::json> render_json(const fs::path& directory) {
  const CommandResult result = kustomize(directory);
  INFO("kubectl kustomize ", directory.string(), " said: ", result.err);
  REQUIRE(result.exit_code == 0);
  std::vector<karta::json> objects;
  for (karta::SourceDocument& document : karta::parse_documents(result.out, directory.string())) {
    objects.push_back(std::move(document.value));
  }
  REQUIRE_FALSE(objects.empty());
  return objects;
}

// ---------------------------------------------------------------------------------------------------
// Reading objects

std::string scalar(const YAML::Node& node, const std::string& what) {
  REQUIRE_MESSAGE(node.IsDefined(), what << " is missing");
  REQUIRE_MESSAGE(node.IsScalar(), what << " is not a scalar");
  return node.as<std::string>();
}

int integer(const YAML::Node& node, const std::string& what) {
  REQUIRE_MESSAGE(node.IsDefined(), what << " is missing");
  REQUIRE_MESSAGE(node.IsScalar(), what << " is not a scalar");
  return node.as<int>();
}

bool boolean(const YAML::Node& node, const std::string& what) {
  REQUIRE_MESSAGE(node.IsDefined(), what << " is missing");
  REQUIRE_MESSAGE(node.IsScalar(), what << " is not a scalar");
  return node.as<bool>();
}

std::vector<std::string> strings(const YAML::Node& node, const std::string& what) {
  REQUIRE_MESSAGE(node.IsDefined(), what << " is missing");
  REQUIRE_MESSAGE(node.IsSequence(), what << " is not a list");
  std::vector<std::string> values;
  for (const YAML::Node& item : node) {
    values.push_back(scalar(item, what + "[]"));
  }
  return values;
}

std::set<std::string> string_set(const YAML::Node& node, const std::string& what) {
  const std::vector<std::string> values = strings(node, what);
  return {values.begin(), values.end()};
}

std::map<std::string, std::string> string_map(const YAML::Node& node, const std::string& what) {
  REQUIRE_MESSAGE(node.IsDefined(), what << " is missing");
  REQUIRE_MESSAGE(node.IsMap(), what << " is not a map");
  std::map<std::string, std::string> values;
  for (const auto& entry : node) {
    values[entry.first.as<std::string>()] = scalar(entry.second, what + "." + entry.first.as<std::string>());
  }
  return values;
}

std::string kind_of(const YAML::Node& object) { return scalar(object["kind"], "kind"); }
std::string name_of(const YAML::Node& object) { return scalar(object["metadata"]["name"], "metadata.name"); }

std::vector<YAML::Node> all_of_kind(const Documents& documents, const std::string& kind) {
  std::vector<YAML::Node> found;
  for (const YAML::Node& object : documents) {
    if (kind_of(object) == kind) {
      found.push_back(object);
    }
  }
  return found;
}

YAML::Node find(const Documents& documents, const std::string& kind, const std::string& name) {
  for (const YAML::Node& object : documents) {
    if (kind_of(object) == kind && name_of(object) == name) {
      return object;
    }
  }
  FAIL("the rendering has no " << kind << " named " << name);
  return {};
}

std::set<ObjectId> object_ids(const Documents& documents) {
  std::set<ObjectId> ids;
  for (const YAML::Node& object : documents) {
    const bool inserted = ids.emplace(kind_of(object), name_of(object)).second;
    CHECK_MESSAGE(inserted, "duplicate " << kind_of(object) << " " << name_of(object));
  }
  return ids;
}

const std::set<ObjectId>& base_object_ids() {
  static const std::set<ObjectId> ids{
      {"Namespace", "karta-system"},
      {"CustomResourceDefinition", "kartas.run.ai"},
      {"ServiceAccount", "karta-webhook"},
      {"ClusterRole", "karta-webhook"},
      {"ClusterRoleBinding", "karta-webhook"},
      {"ConfigMap", "karta-webhook-policy"},
      {"ConfigMap", "karta-webhook-definitions"},
      {"Deployment", "karta-webhook"},
      {"PodDisruptionBudget", "karta-webhook"},
      {"Service", "karta-webhook"},
      {"MutatingWebhookConfiguration", "karta-webhook"},
      {"ValidatingWebhookConfiguration", "karta-webhook"},
  };
  return ids;
}

std::vector<YAML::Node> all_webhooks(const Documents& documents) {
  std::vector<YAML::Node> webhooks;
  for (const char* kind : {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}) {
    for (const YAML::Node& webhook : find(documents, kind, app_name)["webhooks"]) {
      webhooks.push_back(webhook);
    }
  }
  return webhooks;
}

std::vector<fs::path> catalog_files() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(source_dir / "definitions" / "catalog")) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// ---------------------------------------------------------------------------------------------------
// Certificates

std::string base64(const std::string& bytes) {
  static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string encoded;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) |
                       (static_cast<unsigned char>(bytes[i + 1]) << 8) | static_cast<unsigned char>(bytes[i + 2]);
    encoded += alphabet[(v >> 18) & 63];
    encoded += alphabet[(v >> 12) & 63];
    encoded += alphabet[(v >> 6) & 63];
    encoded += alphabet[v & 63];
  }
  if (i + 1 == bytes.size()) {
    const unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    encoded += alphabet[(v >> 18) & 63];
    encoded += alphabet[(v >> 12) & 63];
    encoded += "==";
  } else if (i + 2 == bytes.size()) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8);
    encoded += alphabet[(v >> 18) & 63];
    encoded += alphabet[(v >> 12) & 63];
    encoded += alphabet[(v >> 6) & 63];
    encoded += '=';
  }
  return encoded;
}

std::string trim(std::string text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.pop_back();
  }
  return text;
}

const fs::path generate_script = source_dir / "certs" / "generate.sh";

void generate_certificates(const fs::path& outdir) {
  const CommandResult result = run("bash " + shell_quote(generate_script.string()) + " " + shell_quote(outdir.string()));
  INFO("certs/generate.sh said: ", result.err);
  REQUIRE(result.exit_code == 0);
}

const std::vector<std::string> service_names{"karta-webhook", "karta-webhook.karta-system",
                                             "karta-webhook.karta-system.svc",
                                             "karta-webhook.karta-system.svc.cluster.local"};

}  // namespace karta::test::manifest_fixtures
