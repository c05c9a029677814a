// The install manifests (manifests/), as kustomize renders them, and the certificate script (certs/).
// Each test renders with the real `kubectl kustomize` and checks the objects one field at a time, with the
// exact values the server and the cluster depend on.
#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include "json/documents.h"

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#ifndef KARTA_SOURCE_DIR
#error "KARTA_SOURCE_DIR (the repository root, as a string literal) must be defined"
#endif

namespace {

namespace fs = std::filesystem;

const fs::path source_dir{KARTA_SOURCE_DIR};

constexpr const char* install_namespace = "karta-system";
constexpr const char* app_name = "karta-webhook";
// base64 of "karta-webhook caBundle placeholder: set by manifests/overlays/*\n"
constexpr const char* ca_bundle_placeholder =
    "a2FydGEtd2ViaG9vayBjYUJ1bmRsZSBwbGFjZWhvbGRlcjogc2V0IGJ5IG1hbmlmZXN0cy9vdmVybGF5cy8qCg==";

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

void require_kubectl() {
  if (std::system("command -v kubectl >/dev/null 2>&1") != 0) {
    FAIL("kubectl is not on PATH: the manifest tests render manifests/ with `kubectl kustomize` "
         "(kubectl 1.27 or later, which embeds kustomize v5). Install kubectl and run the tests again.");
  }
}

using Documents = std::vector<YAML::Node>;

Documents parse_documents(const std::string& yaml_text) {
  Documents documents;
  for (const YAML::Node& document : YAML::LoadAll(yaml_text)) {
    if (document.IsDefined() && !document.IsNull()) {
      documents.push_back(document);
    }
  }
  return documents;
}

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

const Documents& base() { return render(source_dir / "manifests"); }
const Documents& cert_manager_overlay() { return render(source_dir / "manifests" / "overlays" / "cert-manager"); }
const Documents& cert_manager_existing_crd_overlay() {
  return render(source_dir / "manifests" / "overlays" / "existing-crd" / "cert-manager");
}

// The published Karta CRD, as kept in the test corpus (tests/corpus/SOURCES.md gives its origin).
const fs::path published_karta_crd = source_dir / "tests" / "corpus" / "karta" / "run.ai_kartas.yaml";

// A rendering as typed JSON values (YAML 1.2 core schema, as the API server reads it), so that two
// renderings compare by value whatever their key order or scalar style.
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

// The objects of a JSON rendering by kind and name, each once.
std::map<std::pair<std::string, std::string>, karta::json> by_id(const std::vector<karta::json>& objects) {
  std::map<std::pair<std::string, std::string>, karta::json> found;
  for (const karta::json& object : objects) {
    const std::pair<std::string, std::string> id{object.at("kind").get<std::string>(),
                                                 object.at("metadata").at("name").get<std::string>()};
    CHECK_MESSAGE(found.emplace(id, object).second, "duplicate " << id.first << " " << id.second);
  }
  return found;
}

// Checks that `variant` renders exactly the objects of `full`, object for object and field for field,
// except the kartas.run.ai CRD, and no CRD at all.
void check_same_without_karta_crd(const std::vector<karta::json>& full, const std::vector<karta::json>& variant) {
  auto expected = by_id(full);
  REQUIRE(expected.erase({"CustomResourceDefinition", "kartas.run.ai"}) == 1);
  const auto actual = by_id(variant);
  for (const auto& [id, object] : actual) {
    CHECK_MESSAGE(id.first != "CustomResourceDefinition", "the variant without the CRD renders CRD " << id.second);
  }
  std::set<std::pair<std::string, std::string>> expected_ids, actual_ids;
  for (const auto& entry : expected) expected_ids.insert(entry.first);
  for (const auto& entry : actual) actual_ids.insert(entry.first);
  CHECK(actual_ids == expected_ids);
  for (const auto& [id, object] : expected) {
    auto found = actual.find(id);
    if (found == actual.end()) continue;  // reported above
    CHECK_MESSAGE(found->second == object, id.first << " " << id.second << " differs from the full install");
  }
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

using ObjectId = std::pair<std::string, std::string>;  // kind, name

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

YAML::Node pod_spec() { return find(base(), "Deployment", app_name)["spec"]["template"]["spec"]; }

YAML::Node webhook_container() {
  const YAML::Node containers = pod_spec()["containers"];
  REQUIRE(containers.IsSequence());
  REQUIRE(containers.size() == 1);
  return containers[0];
}

const std::map<std::string, std::string>& pod_labels() {
  static const std::map<std::string, std::string> labels{
      {"app.kubernetes.io/name", "karta-webhook"},
      {"app.kubernetes.io/component", "webhook"},
  };
  return labels;
}

YAML::Node webhook_named(const YAML::Node& configuration, const std::string& name) {
  for (const YAML::Node& webhook : configuration["webhooks"]) {
    if (scalar(webhook["name"], "webhooks[].name") == name) {
      return webhook;
    }
  }
  FAIL(kind_of(configuration) << " has no webhook named " << name);
  return {};
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

// The resources every built-in catalog kind is admitted as: group, version, plural.
struct Resource {
  std::string group;
  std::string version;
  std::string plural;
};

const std::vector<Resource>& built_in_resources() {
  static const std::vector<Resource> resources{
      {"jobset.x-k8s.io", "v1alpha2", "jobsets"},
      {"leaderworkerset.x-k8s.io", "v1", "leaderworkersets"},
      {"kubeflow.org", "v1", "pytorchjobs"},
      {"kubeflow.org", "v1", "mpijobs"},
      {"kubeflow.org", "v2beta1", "mpijobs"},
      {"ray.io", "v1", "rayclusters"},
      {"ray.io", "v1", "rayjobs"},
      {"ray.io", "v1", "rayservices"},
      {"serving.kserve.io", "v1beta1", "inferenceservices"},
      {"serving.knative.dev", "v1", "services"},
      {"apps.nvidia.com", "v1alpha1", "nimservices"},
      {"milvus.io", "v1beta1", "milvuses"},
      {"grove.io", "v1alpha1", "podcliquesets"},
      {"nvidia.com", "v1alpha1", "dynamographdeployments"},
      {"nvidia.com", "v1beta1", "dynamographdeployments"},
      {"", "v1", "pods"},
      {"apps", "v1", "deployments"},
      {"apps", "v1", "statefulsets"},
      {"apps", "v1", "daemonsets"},
      {"apps", "v1", "replicasets"},
      {"batch", "v1", "jobs"},
      {"batch", "v1", "cronjobs"},
  };
  return resources;
}

bool contains_or_star(const std::set<std::string>& values, const std::string& value) {
  return values.count(value) > 0 || values.count("*") > 0;
}

// Whether some rule of the webhook matches the resource for the operation (as the API server decides).
bool covers(const YAML::Node& webhook, const Resource& resource, const std::string& operation) {
  for (const YAML::Node& rule : webhook["rules"]) {
    if (contains_or_star(string_set(rule["apiGroups"], "apiGroups"), resource.group) &&
        contains_or_star(string_set(rule["apiVersions"], "apiVersions"), resource.version) &&
        contains_or_star(string_set(rule["resources"], "resources"), resource.plural) &&
        contains_or_star(string_set(rule["operations"], "operations"), operation)) {
      return true;
    }
  }
  return false;
}

std::string describe(const Resource& resource) {
  return (resource.group.empty() ? std::string("core") : resource.group) + "/" + resource.version + " " +
         resource.plural;
}

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// Kubernetes' default plural of a kind, which every catalog CRD follows (Milvus -> milvuses).
std::string plural_of(const std::string& kind) {
  const std::string lower = lowercase(kind);
  return lower + (lower.back() == 's' ? "es" : "s");
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
// Checking a document against a CRD schema, enough to catch unknown or missing fields and wrong shapes

void check_structural(const YAML::Node& schema, const std::string& where, std::vector<std::string>& problems) {
  const bool preserves = schema["x-kubernetes-preserve-unknown-fields"].IsDefined() &&
                         schema["x-kubernetes-preserve-unknown-fields"].as<bool>();
  const bool int_or_string =
      schema["x-kubernetes-int-or-string"].IsDefined() && schema["x-kubernetes-int-or-string"].as<bool>();
  if (!schema["type"].IsDefined() && !preserves && !int_or_string) {
    problems.push_back(where + " has no type");
  }
  std::set<std::string> properties;
  if (schema["properties"].IsDefined()) {
    for (const auto& property : schema["properties"]) {
      const std::string name = property.first.as<std::string>();
      properties.insert(name);
      check_structural(property.second, where + "." + name, problems);
    }
  }
  if (schema["items"].IsDefined()) {
    check_structural(schema["items"], where + "[]", problems);
  }
  if (schema["required"].IsDefined()) {
    for (const YAML::Node& required : schema["required"]) {
      if (properties.count(required.as<std::string>()) == 0) {
        problems.push_back(where + " requires " + required.as<std::string>() + ", which it does not define");
      }
    }
  }
  for (const char* forbidden : {"allOf", "anyOf", "oneOf", "not", "additionalProperties"}) {
    if (schema[forbidden].IsDefined() && schema["properties"].IsDefined()) {
      problems.push_back(where + " mixes properties with " + forbidden);
    }
  }
}

void check_against_schema(const YAML::Node& value, const YAML::Node& schema, const std::string& where,
                          std::vector<std::string>& problems) {
  const bool preserves = schema["x-kubernetes-preserve-unknown-fields"].IsDefined() &&
                         schema["x-kubernetes-preserve-unknown-fields"].as<bool>();
  if (!schema["type"].IsDefined()) {
    return;  // any value
  }
  const std::string type = schema["type"].as<std::string>();
  if (type == "object") {
    if (!value.IsMap()) {
      problems.push_back(where + " should be a map");
      return;
    }
    if (schema["required"].IsDefined()) {
      for (const YAML::Node& required : schema["required"]) {
        if (!value[required.as<std::string>()].IsDefined()) {
          problems.push_back(where + " misses " + required.as<std::string>());
        }
      }
    }
    if (!schema["properties"].IsDefined()) {
      return;
    }
    for (const auto& field : value) {
      const std::string name = field.first.as<std::string>();
      const YAML::Node property = schema["properties"][name];
      if (!property.IsDefined()) {
        if (!preserves) {
          problems.push_back(where + "." + name + " is not in the schema");
        }
        continue;
      }
      check_against_schema(field.second, property, where + "." + name, problems);
    }
  } else if (type == "array") {
    if (!value.IsSequence()) {
      problems.push_back(where + " should be a list");
      return;
    }
    for (std::size_t i = 0; i < value.size(); ++i) {
      check_against_schema(value[i], schema["items"], where + "[" + std::to_string(i) + "]", problems);
    }
  } else if (type == "string" || type == "integer" || type == "number" || type == "boolean") {
    if (!value.IsScalar()) {
      problems.push_back(where + " should be a " + type);
    }
  } else {
    problems.push_back(where + " has the unexpected schema type " + type);
  }
}

std::string join(const std::vector<std::string>& lines) {
  std::string joined;
  for (const std::string& line : lines) {
    joined += line + "\n";
  }
  return joined;
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

const std::vector<std::string> certificate_files{"ca.crt", "ca.key", "tls.crt", "tls.key",
                                                 "secret.yaml", "ca-bundle.b64", "kustomization.yaml"};

const std::vector<std::string> service_names{"karta-webhook", "karta-webhook.karta-system",
                                             "karta-webhook.karta-system.svc",
                                             "karta-webhook.karta-system.svc.cluster.local"};

// A copy of manifests/ with certs/out made by certs/generate.sh beside it, as in a checkout.
struct PlainOverlayCheckout {
  TemporaryDirectory root;
  fs::path overlay() const { return root.path() / "manifests" / "overlays" / "plain"; }
  fs::path existing_crd_overlay() const { return root.path() / "manifests" / "overlays" / "existing-crd" / "plain"; }
  fs::path certs() const { return root.path() / "certs" / "out"; }
  explicit PlainOverlayCheckout(bool with_certificates) {
    fs::copy(source_dir / "manifests", root.path() / "manifests", fs::copy_options::recursive);
    if (with_certificates) {
      generate_certificates(certs());
    }
  }
};

}  // namespace

// =====================================================================================================

TEST_SUITE("manifests") {

TEST_CASE("The base renders exactly the objects of the install") {
  CHECK(object_ids(base()) == base_object_ids());
}

TEST_CASE("Every namespaced object of the base is in karta-system and cluster objects have no namespace") {
  const std::set<std::string> cluster_scoped{"Namespace", "CustomResourceDefinition", "ClusterRole",
                                             "ClusterRoleBinding", "MutatingWebhookConfiguration",
                                             "ValidatingWebhookConfiguration"};
  for (const YAML::Node& object : base()) {
    INFO(kind_of(object), " ", name_of(object));
    if (cluster_scoped.count(kind_of(object)) > 0) {
      CHECK_FALSE(object["metadata"]["namespace"].IsDefined());
    } else {
      CHECK(scalar(object["metadata"]["namespace"], "metadata.namespace") == install_namespace);
    }
  }
}

TEST_CASE("The namespace enforces the restricted pod security profile") {
  const YAML::Node ns = find(base(), "Namespace", install_namespace);
  CHECK(scalar(ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"], "enforce label") == "restricted");
}

TEST_CASE("The cluster role only reads kartas, resourceinterfaces and CRDs") {
  const YAML::Node role = find(base(), "ClusterRole", app_name);
  std::set<std::tuple<std::string, std::string>> granted;
  for (const YAML::Node& rule : role["rules"]) {
    CHECK(strings(rule["verbs"], "verbs") == std::vector<std::string>{"get", "list", "watch"});
    for (const std::string& group : strings(rule["apiGroups"], "apiGroups")) {
      for (const std::string& resource : strings(rule["resources"], "resources")) {
        granted.emplace(group, resource);
      }
    }
  }
  CHECK(granted == std::set<std::tuple<std::string, std::string>>{
                       {"run.ai", "kartas"},
                       {"optimization.nvidia.com", "resourceinterfaces"},
                       {"apiextensions.k8s.io", "customresourcedefinitions"},
                   });
}

TEST_CASE("The cluster role is bound to the webhook's service account") {
  const YAML::Node binding = find(base(), "ClusterRoleBinding", app_name);
  CHECK(scalar(binding["roleRef"]["apiGroup"], "roleRef.apiGroup") == "rbac.authorization.k8s.io");
  CHECK(scalar(binding["roleRef"]["kind"], "roleRef.kind") == "ClusterRole");
  CHECK(scalar(binding["roleRef"]["name"], "roleRef.name") == app_name);
  REQUIRE(binding["subjects"].size() == 1);
  CHECK(scalar(binding["subjects"][0]["kind"], "subject kind") == "ServiceAccount");
  CHECK(scalar(binding["subjects"][0]["name"], "subject name") == app_name);
  CHECK(scalar(binding["subjects"][0]["namespace"], "subject namespace") == install_namespace);
  CHECK(scalar(pod_spec()["serviceAccountName"], "serviceAccountName") == app_name);
}

TEST_CASE("The install carries exactly one CRD, the published kartas.run.ai, with its whole spec unchanged") {
  const std::vector<karta::json> published = [] {
    std::vector<karta::json> values;
    for (karta::SourceDocument& document : karta::read_documents(published_karta_crd)) {
      values.push_back(std::move(document.value));
    }
    return values;
  }();
  REQUIRE(published.size() == 1);
  REQUIRE(published[0].at("kind") == "CustomResourceDefinition");
  REQUIRE(published[0].at("metadata").at("name") == "kartas.run.ai");

  const fs::path manifests = source_dir / "manifests";
  for (const fs::path& directory : {manifests, manifests / "overlays" / "cert-manager"}) {
    INFO("kubectl kustomize ", directory.string());
    std::vector<karta::json> crds;
    for (const karta::json& object : render_json(directory)) {
      if (object.at("kind") == "CustomResourceDefinition") crds.push_back(object);
    }
    REQUIRE(crds.size() == 1);
    CHECK(crds[0].at("apiVersion") == published[0].at("apiVersion"));
    CHECK(crds[0].at("metadata").at("name") == "kartas.run.ai");
    // The whole spec, descriptions included: the file is the published one, verbatim.
    CHECK_MESSAGE(crds[0].at("spec") == published[0].at("spec"),
                  "the rendered kartas.run.ai spec is not the published one (tests/corpus/karta/run.ai_kartas.yaml)");
    // kustomize adds its label to the metadata; the published annotations stay.
    CHECK(crds[0].at("metadata").at("labels") == karta::json{{"app.kubernetes.io/part-of", "karta-webhook"}});
    CHECK(crds[0].at("metadata").at("annotations") == published[0].at("metadata").at("annotations"));
  }
}

TEST_CASE("The CRD file of the manifests is the published Karta CRD, byte for byte") {
  const fs::path manifest = source_dir / "manifests" / "base" / "crd-kartas.yaml";
  const std::string ours = read_file(manifest);
  const std::string published = read_file(published_karta_crd);
  CHECK_FALSE(published.empty());
  CHECK_MESSAGE(ours == published, manifest.string() << " differs from " << published_karta_crd.string()
                                                     << ": copy the published file verbatim, never edit it");
  CHECK(fs::is_regular_file(source_dir / "manifests" / "LICENSE-Apache-2.0"));
}

TEST_CASE("No rendering installs the ResourceInterface CRD") {
  for (const Documents* rendered : {&base(), &cert_manager_overlay(), &cert_manager_existing_crd_overlay()}) {
    for (const YAML::Node& crd : all_of_kind(*rendered, "CustomResourceDefinition")) {
      CHECK(name_of(crd) == "kartas.run.ai");
      CHECK(name_of(crd) != "resourceinterfaces.optimization.nvidia.com");
    }
  }
}

TEST_CASE("The Karta CRD is cluster-scoped run.ai v1alpha1 with a structural schema") {
  const YAML::Node crd = find(base(), "CustomResourceDefinition", "kartas.run.ai");
  const YAML::Node spec = crd["spec"];
  CHECK(scalar(crd["apiVersion"], "apiVersion") == "apiextensions.k8s.io/v1");
  CHECK(scalar(spec["group"], "group") == "run.ai");
  CHECK(scalar(spec["scope"], "scope") == "Cluster");
  CHECK(scalar(spec["names"]["kind"], "names.kind") == "Karta");
  CHECK(scalar(spec["names"]["listKind"], "names.listKind") == "KartaList");
  CHECK(scalar(spec["names"]["plural"], "names.plural") == "kartas");
  CHECK(scalar(spec["names"]["singular"], "names.singular") == "karta");
  CHECK(strings(spec["names"]["shortNames"], "names.shortNames") == std::vector<std::string>{"krt"});
  REQUIRE(spec["versions"].size() == 1);
  const YAML::Node version = spec["versions"][0];
  CHECK(scalar(version["name"], "version name") == "v1alpha1");
  CHECK(boolean(version["served"], "served"));
  CHECK(boolean(version["storage"], "storage"));
  CHECK(version["subresources"]["status"].IsMap());

  const YAML::Node schema = version["schema"]["openAPIV3Schema"];
  REQUIRE(schema.IsMap());
  CHECK(scalar(schema["type"], "schema type") == "object");
  // The fields the webhook reads are declared (so the API server does not prune them).
  const YAML::Node structure = schema["properties"]["spec"]["properties"]["structureDefinition"];
  CHECK(string_set(schema["properties"]["spec"]["required"], "spec required") ==
        std::set<std::string>{"structureDefinition"});
  CHECK(string_set(structure["required"], "structureDefinition required") == std::set<std::string>{"rootComponent"});
  const YAML::Node root = structure["properties"]["rootComponent"];
  CHECK(string_set(root["required"], "rootComponent required") == std::set<std::string>{"name"});
  CHECK(string_set(root["properties"]["kind"]["required"], "kind required") ==
        std::set<std::string>{"group", "version", "kind"});
  for (const char* field : {"name", "kind", "ownerRef", "specDefinition", "instanceIdPath", "podSelector",
                            "scaleDefinition", "statusDefinition", "suspendDefinition"}) {
    CHECK_MESSAGE(root["properties"][field].IsDefined(), "rootComponent lacks " << field);
  }
  const YAML::Node child = structure["properties"]["childComponents"]["items"];
  for (const char* field : {"name", "kind", "ownerRef", "specDefinition", "instanceIdPath", "podSelector",
                            "scaleDefinition"}) {
    CHECK_MESSAGE(child["properties"][field].IsDefined(), "childComponents[] lacks " << field);
  }
  CHECK(structure["properties"]["additionalChildKinds"].IsDefined());
  const YAML::Node spec_definition = child["properties"]["specDefinition"]["properties"];
  for (const char* field : {"podTemplateSpecPath", "podSpecPath", "metadataPath", "fragmentedPodSpecDefinition"}) {
    CHECK_MESSAGE(spec_definition[field].IsDefined(), "specDefinition lacks " << field);
  }
  const YAML::Node pod_selector = child["properties"]["podSelector"]["properties"];
  for (const char* field : {"componentTypeSelector", "componentInstanceSelector", "replicaSelector"}) {
    CHECK_MESSAGE(pod_selector[field].IsDefined(), "podSelector lacks " << field);
  }
  const YAML::Node gang = schema["properties"]["spec"]["properties"]["optimizationInstructions"]["properties"]
                                ["gangScheduling"]["properties"];
  CHECK(gang["podGroup"]["properties"]["subGroups"].IsDefined());
  CHECK(gang["podGroups"]["items"]["properties"]["members"].IsDefined());
  CHECK(schema["properties"]["status"]["properties"]["conditions"].IsDefined());

  std::vector<std::string> problems;
  check_structural(schema, "openAPIV3Schema", problems);
  CHECK_MESSAGE(problems.empty(), "the schema is not structural:\n" << join(problems));
}

TEST_CASE("The Karta CRD prints the published columns: framework kind, root component and age") {
  const YAML::Node columns =
      find(base(), "CustomResourceDefinition", "kartas.run.ai")["spec"]["versions"][0]["additionalPrinterColumns"];
  std::vector<std::pair<std::string, std::string>> paths;
  for (const YAML::Node& column : columns) {
    paths.emplace_back(scalar(column["name"], "column name"), scalar(column["jsonPath"], "column jsonPath"));
  }
  CHECK(paths == std::vector<std::pair<std::string, std::string>>{
                     {"Framework", ".spec.structureDefinition.rootComponent.kind.kind"},
                     {"Root Component", ".spec.structureDefinition.rootComponent.name"},
                     {"Age", ".metadata.creationTimestamp"},
                 });
}

TEST_CASE("The Karta CRD schema accepts every definition of the built-in catalog") {
  const YAML::Node schema = find(base(), "CustomResourceDefinition", "kartas.run.ai")["spec"]["versions"][0]["schema"]
                                ["openAPIV3Schema"];
  const std::vector<fs::path> files = catalog_files();
  REQUIRE_FALSE(files.empty());
  for (const fs::path& file : files) {
    INFO(file.string());
    const YAML::Node definition = YAML::LoadFile(file.string());
    CHECK(scalar(definition["apiVersion"], "apiVersion") == "run.ai/v1alpha1");
    CHECK(scalar(definition["kind"], "kind") == "Karta");
    // A field the published schema does not declare would be pruned by the API server, silently, when
    // the definition is applied as a Karta object.
    std::vector<std::string> problems;
    check_against_schema(definition, schema, file.filename().string(), problems);
    CHECK_MESSAGE(problems.empty(), "not accepted by the published Karta CRD:\n" << join(problems));
  }
}

TEST_CASE("The policy ConfigMap holds a policy.yaml and the definitions ConfigMap exists") {
  const YAML::Node policy = find(base(), "ConfigMap", "karta-webhook-policy");
  const std::string text = scalar(policy["data"]["policy.yaml"], "data.policy.yaml");
  CHECK_NOTHROW(YAML::Load(text));
  CHECK(policy["data"].size() == 1);
  CHECK(find(base(), "ConfigMap", "karta-webhook-definitions")["data"].IsDefined());
}

TEST_CASE("The Deployment runs two replicas spread across nodes") {
  const YAML::Node deployment = find(base(), "Deployment", app_name);
  CHECK(integer(deployment["spec"]["replicas"], "replicas") == 2);
  CHECK(string_map(deployment["spec"]["selector"]["matchLabels"], "selector") == pod_labels());
  const auto template_labels = string_map(deployment["spec"]["template"]["metadata"]["labels"], "template labels");
  for (const auto& [key, value] : pod_labels()) {
    CHECK(template_labels.at(key) == value);
  }
  CHECK(integer(deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], "maxUnavailable") == 0);

  bool spread_by_hostname = false;
  for (const YAML::Node& constraint : pod_spec()["topologySpreadConstraints"]) {
    if (scalar(constraint["topologyKey"], "topologyKey") == "kubernetes.io/hostname") {
      spread_by_hostname = true;
      CHECK(integer(constraint["maxSkew"], "maxSkew") == 1);
      CHECK(scalar(constraint["whenUnsatisfiable"], "whenUnsatisfiable") == "DoNotSchedule");
      CHECK(string_map(constraint["labelSelector"]["matchLabels"], "labelSelector") == pod_labels());
    }
  }
  CHECK(spread_by_hostname);

  const YAML::Node preferred = pod_spec()["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"];
  REQUIRE(preferred.size() == 1);
  CHECK(scalar(preferred[0]["podAffinityTerm"]["topologyKey"], "anti-affinity topologyKey") == "kubernetes.io/hostname");
  CHECK(string_map(preferred[0]["podAffinityTerm"]["labelSelector"]["matchLabels"], "anti-affinity selector") ==
        pod_labels());
}

TEST_CASE("The webhook container runs serve with the mounted certificate, policy and definitions") {
  const YAML::Node container = webhook_container();
  CHECK(scalar(container["image"], "image") == "karta-webhook:0.1.0");
  CHECK(strings(container["args"], "args") == std::vector<std::string>{
                                                  "serve",
                                                  "--tls-cert-file=/etc/karta-webhook/tls/tls.crt",
                                                  "--tls-private-key-file=/etc/karta-webhook/tls/tls.key",
                                                  "--port=8443",
                                                  "--bind-address=0.0.0.0",
                                                  "--definitions=/etc/karta-webhook/definitions",
                                                  "--policy=/etc/karta-webhook/policy/policy.yaml",
                                                  "--log-format=json",
                                                  "--log-level=info",
                                                  "--in-cluster",
                                                  "--shutdown-delay-ms=5000",
                                              });
  CHECK_FALSE(container["command"].IsDefined());
  REQUIRE(container["ports"].size() == 1);
  CHECK(integer(container["ports"][0]["containerPort"], "containerPort") == 8443);
  CHECK(scalar(container["ports"][0]["name"], "port name") == "https");

  std::map<std::string, std::pair<std::string, bool>> mounts;  // volume -> path, read-only
  for (const YAML::Node& mount : container["volumeMounts"]) {
    mounts[scalar(mount["name"], "mount name")] = {
        scalar(mount["mountPath"], "mountPath"),
        mount["readOnly"].IsDefined() && mount["readOnly"].as<bool>()};
  }
  CHECK(mounts["tls"] == std::make_pair(std::string("/etc/karta-webhook/tls"), true));
  CHECK(mounts["policy"] == std::make_pair(std::string("/etc/karta-webhook/policy"), true));
  CHECK(mounts["definitions"] == std::make_pair(std::string("/etc/karta-webhook/definitions"), true));

  std::map<std::string, YAML::Node> volumes;
  for (const YAML::Node& volume : pod_spec()["volumes"]) {
    volumes[scalar(volume["name"], "volume name")] = volume;
  }
  CHECK(scalar(volumes["tls"]["secret"]["secretName"], "tls secretName") == "karta-webhook-tls");
  CHECK(scalar(volumes["policy"]["configMap"]["name"], "policy configMap") == "karta-webhook-policy");
  CHECK(scalar(volumes["definitions"]["configMap"]["name"], "definitions configMap") == "karta-webhook-definitions");
  // A directory mount (not subPath) so that ConfigMap and Secret updates reach the running pod.
  for (const YAML::Node& mount : container["volumeMounts"]) {
    CHECK_FALSE(mount["subPath"].IsDefined());
  }
}

TEST_CASE("The probes ask /readyz and /healthz over HTTPS on 8443") {
  const YAML::Node container = webhook_container();
  const YAML::Node readiness = container["readinessProbe"]["httpGet"];
  CHECK(scalar(readiness["path"], "readiness path") == "/readyz");
  CHECK(integer(readiness["port"], "readiness port") == 8443);
  CHECK(scalar(readiness["scheme"], "readiness scheme") == "HTTPS");
  const YAML::Node liveness = container["livenessProbe"]["httpGet"];
  CHECK(scalar(liveness["path"], "liveness path") == "/healthz");
  CHECK(integer(liveness["port"], "liveness port") == 8443);
  CHECK(scalar(liveness["scheme"], "liveness scheme") == "HTTPS");
}

TEST_CASE("The webhook container has small resource requests and limits") {
  const YAML::Node resources = webhook_container()["resources"];
  CHECK(scalar(resources["requests"]["cpu"], "requests.cpu") == "100m");
  CHECK(scalar(resources["requests"]["memory"], "requests.memory") == "64Mi");
  CHECK(scalar(resources["limits"]["cpu"], "limits.cpu") == "1");
  CHECK(scalar(resources["limits"]["memory"], "limits.memory") == "256Mi");
}

TEST_CASE("The webhook pod runs as a numeric non-root user with a locked-down security context") {
  const YAML::Node pod = pod_spec()["securityContext"];
  CHECK(boolean(pod["runAsNonRoot"], "pod runAsNonRoot"));
  CHECK(integer(pod["runAsUser"], "pod runAsUser") == 65532);
  CHECK(integer(pod["runAsGroup"], "pod runAsGroup") == 65532);
  CHECK(scalar(pod["seccompProfile"]["type"], "pod seccompProfile") == "RuntimeDefault");

  const YAML::Node container = webhook_container()["securityContext"];
  CHECK(boolean(container["runAsNonRoot"], "runAsNonRoot"));
  CHECK(integer(container["runAsUser"], "runAsUser") == 65532);
  CHECK(boolean(container["readOnlyRootFilesystem"], "readOnlyRootFilesystem"));
  CHECK_FALSE(boolean(container["allowPrivilegeEscalation"], "allowPrivilegeEscalation"));
  CHECK_FALSE(boolean(container["privileged"], "privileged"));
  CHECK(strings(container["capabilities"]["drop"], "capabilities.drop") == std::vector<std::string>{"ALL"});
  CHECK_FALSE(container["capabilities"]["add"].IsDefined());
  CHECK(scalar(container["seccompProfile"]["type"], "seccompProfile") == "RuntimeDefault");
}

TEST_CASE("The grace period outlasts the server's drain") {
  CHECK(integer(pod_spec()["terminationGracePeriodSeconds"], "terminationGracePeriodSeconds") == 60);
}

TEST_CASE("The PodDisruptionBudget keeps one webhook pod available") {
  const YAML::Node pdb = find(base(), "PodDisruptionBudget", app_name);
  CHECK(scalar(pdb["apiVersion"], "apiVersion") == "policy/v1");
  CHECK(integer(pdb["spec"]["minAvailable"], "minAvailable") == 1);
  CHECK_FALSE(pdb["spec"]["maxUnavailable"].IsDefined());
  CHECK(string_map(pdb["spec"]["selector"]["matchLabels"], "selector") == pod_labels());
}

TEST_CASE("The Service sends port 443 to 8443 on the webhook pods") {
  const YAML::Node service = find(base(), "Service", app_name);
  CHECK(scalar(service["spec"]["type"], "type") == "ClusterIP");
  CHECK(string_map(service["spec"]["selector"], "selector") == pod_labels());
  REQUIRE(service["spec"]["ports"].size() == 1);
  const YAML::Node port = service["spec"]["ports"][0];
  CHECK(integer(port["port"], "port") == 443);
  CHECK(integer(port["targetPort"], "targetPort") == 8443);
  CHECK(scalar(port["protocol"], "protocol") == "TCP");
}

TEST_CASE("Every webhook calls the Service over admission v1 without side effects within 5 seconds") {
  for (const char* kind : {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}) {
    const YAML::Node configuration = find(base(), kind, app_name);
    CHECK(scalar(configuration["apiVersion"], "apiVersion") == "admissionregistration.k8s.io/v1");
    const std::string path = std::string(kind) == "MutatingWebhookConfiguration" ? "/mutate" : "/validate";
    for (const YAML::Node& webhook : configuration["webhooks"]) {
      INFO(kind, " ", scalar(webhook["name"], "name"));
      CHECK(strings(webhook["admissionReviewVersions"], "admissionReviewVersions") == std::vector<std::string>{"v1"});
      CHECK(scalar(webhook["sideEffects"], "sideEffects") == "None");
      const int timeout = integer(webhook["timeoutSeconds"], "timeoutSeconds");
      CHECK(timeout == 5);
      CHECK(timeout <= 10);
      CHECK(scalar(webhook["matchPolicy"], "matchPolicy") == "Equivalent");
      const YAML::Node service = webhook["clientConfig"]["service"];
      CHECK(scalar(service["name"], "service.name") == app_name);
      CHECK(scalar(service["namespace"], "service.namespace") == install_namespace);
      CHECK(integer(service["port"], "service.port") == 443);
      CHECK(scalar(service["path"], "service.path") == path);
      CHECK_FALSE(webhook["clientConfig"]["url"].IsDefined());
    }
  }
}

TEST_CASE("The base carries a caBundle placeholder that the overlays replace") {
  for (const YAML::Node& webhook : all_webhooks(base())) {
    CHECK(scalar(webhook["clientConfig"]["caBundle"], "caBundle") == ca_bundle_placeholder);
  }
}

TEST_CASE("Mutation fails open and runs again when a later webhook changes the object") {
  const YAML::Node configuration = find(base(), "MutatingWebhookConfiguration", app_name);
  REQUIRE(configuration["webhooks"].size() == 2);
  const YAML::Node webhook = configuration["webhooks"][0];
  CHECK(scalar(webhook["name"], "name") == "mutate.karta.run.ai");
  CHECK(scalar(webhook["failurePolicy"], "failurePolicy") == "Ignore");
  CHECK(scalar(webhook["reinvocationPolicy"], "reinvocationPolicy") == "IfNeeded");
  CHECK_FALSE(covers(webhook, {"run.ai", "v1alpha1", "kartas"}, "CREATE"));
}

TEST_CASE("Kartas are sent to /mutate, which stamps the labels KAI looks them up by, and fail closed there") {
  const YAML::Node configuration = find(base(), "MutatingWebhookConfiguration", app_name);
  const YAML::Node kartas = webhook_named(configuration, "kartas.mutate.karta.run.ai");
  CHECK(scalar(kartas["clientConfig"]["service"]["path"], "path") == "/mutate");
  CHECK(scalar(kartas["failurePolicy"], "failurePolicy") == "Fail");
  CHECK(covers(kartas, {"run.ai", "v1alpha1", "kartas"}, "CREATE"));
  CHECK(covers(kartas, {"run.ai", "v1alpha1", "kartas"}, "UPDATE"));
  CHECK_FALSE(covers(kartas, {"run.ai", "v1alpha1", "kartas"}, "DELETE"));
  CHECK_FALSE(kartas["objectSelector"].IsDefined());
  for (const Resource& resource : built_in_resources()) {
    CHECK_MESSAGE(!covers(kartas, resource, "CREATE"), "the fail-closed webhook must not see " << describe(resource));
  }
  CHECK(scalar(kartas["rules"][0]["scope"], "kartas rule scope") == "Cluster");
}

TEST_CASE("The workload webhooks skip, before the call, objects whose controller has a built-in definition") {
  // The kinds of the built-in catalog, as an ownerReference names them (apiVersion/kind).
  std::set<std::string> catalog_kinds;
  for (const auto& entry : fs::directory_iterator(source_dir / "definitions/catalog")) {
    if (entry.path().extension() != ".yaml") continue;
    const YAML::Node kind = YAML::LoadFile(entry.path().string())["spec"]["structureDefinition"]["rootComponent"]["kind"];
    const std::string group = scalar(kind["group"], "group");
    catalog_kinds.insert((group.empty() ? "" : group + "/") + scalar(kind["version"], "version") + "/" +
                         scalar(kind["kind"], "kind"));
  }
  REQUIRE(catalog_kinds.size() == 22);
  for (const YAML::Node& webhook :
       {webhook_named(find(base(), "MutatingWebhookConfiguration", app_name), "mutate.karta.run.ai"),
        webhook_named(find(base(), "ValidatingWebhookConfiguration", app_name), "workloads.validate.karta.run.ai")}) {
    INFO(scalar(webhook["name"], "name"));
    REQUIRE(webhook["matchConditions"].size() == 1);
    const YAML::Node condition = webhook["matchConditions"][0];
    CHECK(scalar(condition["name"], "matchConditions[0].name") == "not-owned-by-a-defined-kind");
    const std::string expression = scalar(condition["expression"], "matchConditions[0].expression");
    const std::string prefix =
        "object == null || !has(object.metadata.ownerReferences) || "
        "!object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller && "
        "(r.apiVersion + '/' + r.kind) in [";
    REQUIRE(expression.rfind(prefix, 0) == 0);
    REQUIRE(expression.size() > prefix.size() + 2);
    CHECK(expression.substr(expression.size() - 2) == "])");
    std::set<std::string> listed;
    std::stringstream list(expression.substr(prefix.size(), expression.size() - prefix.size() - 2));
    for (std::string item; std::getline(list, item, ',');) {
      auto first = item.find('\'');
      auto last = item.rfind('\'');
      REQUIRE(first != std::string::npos);
      REQUIRE(last > first);
      listed.insert(item.substr(first + 1, last - first - 1));
    }
    CHECK(listed == catalog_kinds);
  }
  // The Karta webhooks have none: every definition is seen.
  for (const char* name : {"kartas.mutate.karta.run.ai"}) {
    CHECK_FALSE(webhook_named(find(base(), "MutatingWebhookConfiguration", app_name), name)["matchConditions"].IsDefined());
  }
  CHECK_FALSE(webhook_named(find(base(), "ValidatingWebhookConfiguration", app_name), "kartas.validate.karta.run.ai")
                  ["matchConditions"].IsDefined());
}

TEST_CASE("Karta validation fails closed and workload validation fails open") {
  const YAML::Node configuration = find(base(), "ValidatingWebhookConfiguration", app_name);
  REQUIRE(configuration["webhooks"].size() == 2);

  const YAML::Node kartas = webhook_named(configuration, "kartas.validate.karta.run.ai");
  CHECK(scalar(kartas["failurePolicy"], "failurePolicy") == "Fail");
  // A label must not be able to skip the check of a definition.
  CHECK_FALSE(kartas["objectSelector"].IsDefined());
  CHECK(covers(kartas, {"run.ai", "v1alpha1", "kartas"}, "CREATE"));
  CHECK(covers(kartas, {"run.ai", "v1alpha1", "kartas"}, "UPDATE"));
  CHECK(covers(kartas, {"optimization.nvidia.com", "v1alpha1", "resourceinterfaces"}, "CREATE"));
  CHECK(covers(kartas, {"optimization.nvidia.com", "v1alpha1", "resourceinterfaces"}, "UPDATE"));
  CHECK_FALSE(covers(kartas, {"run.ai", "v1alpha1", "kartas"}, "DELETE"));
  for (const Resource& resource : built_in_resources()) {
    CHECK_MESSAGE(!covers(kartas, resource, "CREATE"), "the fail-closed webhook must not see " << describe(resource));
  }
  CHECK(scalar(kartas["rules"][0]["scope"], "kartas rule scope") == "Cluster");

  const YAML::Node workloads = webhook_named(configuration, "workloads.validate.karta.run.ai");
  CHECK(scalar(workloads["failurePolicy"], "failurePolicy") == "Ignore");
  CHECK_FALSE(covers(workloads, {"run.ai", "v1alpha1", "kartas"}, "CREATE"));
}

TEST_CASE("Every webhook skips kube-system, karta-system and namespaces that opt out") {
  for (const YAML::Node& webhook : all_webhooks(base())) {
    INFO(scalar(webhook["name"], "name"));
    const YAML::Node selector = webhook["namespaceSelector"];
    CHECK_FALSE(selector["matchLabels"].IsDefined());
    std::map<std::string, std::pair<std::string, std::set<std::string>>> expressions;
    for (const YAML::Node& expression : selector["matchExpressions"]) {
      expressions[scalar(expression["key"], "key")] = {scalar(expression["operator"], "operator"),
                                                       string_set(expression["values"], "values")};
    }
    CHECK(expressions.size() == 2);
    CHECK(expressions["kubernetes.io/metadata.name"] ==
          std::make_pair(std::string("NotIn"), std::set<std::string>{"kube-system", "karta-system"}));
    CHECK(expressions["karta.run.ai/webhook"] == std::make_pair(std::string("NotIn"), std::set<std::string>{"disabled"}));
  }
}

TEST_CASE("Workloads opt out of mutation and label policy with karta.run.ai/webhook=disabled") {
  for (const YAML::Node& webhook :
       {find(base(), "MutatingWebhookConfiguration", app_name)["webhooks"][0],
        webhook_named(find(base(), "ValidatingWebhookConfiguration", app_name), "workloads.validate.karta.run.ai")}) {
    INFO(scalar(webhook["name"], "name"));
    const YAML::Node expressions = webhook["objectSelector"]["matchExpressions"];
    REQUIRE(expressions.size() == 1);
    CHECK(scalar(expressions[0]["key"], "key") == "karta.run.ai/webhook");
    CHECK(scalar(expressions[0]["operator"], "operator") == "NotIn");
    CHECK(strings(expressions[0]["values"], "values") == std::vector<std::string>{"disabled"});
  }
}

TEST_CASE("The workload webhooks see every built-in kind on CREATE and UPDATE") {
  const YAML::Node mutate = find(base(), "MutatingWebhookConfiguration", app_name)["webhooks"][0];
  const YAML::Node validate =
      webhook_named(find(base(), "ValidatingWebhookConfiguration", app_name), "workloads.validate.karta.run.ai");
  for (const Resource& resource : built_in_resources()) {
    INFO(describe(resource));
    CHECK(covers(mutate, resource, "CREATE"));
    CHECK(covers(validate, resource, "CREATE"));
    CHECK(covers(validate, resource, "UPDATE"));
    CHECK_FALSE(covers(mutate, resource, "DELETE"));
    CHECK_FALSE(covers(validate, resource, "DELETE"));
    if (resource.plural == "pods") {
      // A pod's spec is immutable: mutating one on UPDATE could only turn an update into a rejection.
      CHECK_FALSE(covers(mutate, resource, "UPDATE"));
    } else {
      CHECK(covers(mutate, resource, "UPDATE"));
    }
  }
  for (const YAML::Node& webhook : {mutate, validate}) {
    for (const YAML::Node& rule : webhook["rules"]) {
      CHECK(scalar(rule["scope"], "scope") == "Namespaced");
      CHECK_FALSE(string_set(rule["resources"], "resources").count("*"));
    }
  }
}

TEST_CASE("Every kind of the built-in catalog is seen by the workload webhooks") {
  const YAML::Node mutate = find(base(), "MutatingWebhookConfiguration", app_name)["webhooks"][0];
  const YAML::Node validate =
      webhook_named(find(base(), "ValidatingWebhookConfiguration", app_name), "workloads.validate.karta.run.ai");
  for (const fs::path& file : catalog_files()) {
    const YAML::Node kind = YAML::LoadFile(file.string())["spec"]["structureDefinition"]["rootComponent"]["kind"];
    const Resource resource{scalar(kind["group"], "group"), scalar(kind["version"], "version"),
                            plural_of(scalar(kind["kind"], "kind"))};
    INFO(file.filename().string(), ": ", describe(resource));
    CHECK(covers(mutate, resource, "CREATE"));
    CHECK(covers(validate, resource, "CREATE"));
  }
}

TEST_CASE("The cert-manager overlay adds a CA chain issuing karta-webhook-tls for the Service") {
  const Documents& rendered = cert_manager_overlay();
  std::set<ObjectId> expected = base_object_ids();
  expected.insert({{"Issuer", "karta-webhook-selfsigned"},
                   {"Certificate", "karta-webhook-ca"},
                   {"Issuer", "karta-webhook-ca"},
                   {"Certificate", "karta-webhook"}});
  CHECK(object_ids(rendered) == expected);
  for (const char* kind : {"Issuer", "Certificate"}) {
    for (const YAML::Node& object : all_of_kind(rendered, kind)) {
      CHECK(scalar(object["apiVersion"], "apiVersion") == "cert-manager.io/v1");
      CHECK(scalar(object["metadata"]["namespace"], "namespace") == install_namespace);
    }
  }

  CHECK(find(rendered, "Issuer", "karta-webhook-selfsigned")["spec"]["selfSigned"].IsMap());
  const YAML::Node ca = find(rendered, "Certificate", "karta-webhook-ca")["spec"];
  CHECK(boolean(ca["isCA"], "isCA"));
  CHECK(scalar(ca["issuerRef"]["name"], "CA issuer") == "karta-webhook-selfsigned");
  CHECK(scalar(find(rendered, "Issuer", "karta-webhook-ca")["spec"]["ca"]["secretName"], "CA secret") ==
        scalar(ca["secretName"], "CA certificate secret"));

  const YAML::Node serving = find(rendered, "Certificate", "karta-webhook")["spec"];
  CHECK(scalar(serving["secretName"], "secretName") == "karta-webhook-tls");
  CHECK(scalar(serving["issuerRef"]["kind"], "issuerRef.kind") == "Issuer");
  CHECK(scalar(serving["issuerRef"]["name"], "issuerRef.name") == "karta-webhook-ca");
  CHECK(strings(serving["dnsNames"], "dnsNames") == service_names);
  CHECK(scalar(serving["privateKey"]["algorithm"], "algorithm") == "ECDSA");
  CHECK(integer(serving["privateKey"]["size"], "size") == 256);
}

TEST_CASE("The cert-manager overlay lets the cainjector own both caBundles") {
  const Documents& rendered = cert_manager_overlay();
  for (const char* kind : {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}) {
    const YAML::Node configuration = find(rendered, kind, app_name);
    CHECK(scalar(configuration["metadata"]["annotations"]["cert-manager.io/inject-ca-from"], "inject-ca-from") ==
          "karta-system/karta-webhook");
  }
  for (const YAML::Node& webhook : all_webhooks(rendered)) {
    INFO(scalar(webhook["name"], "name"));
    CHECK_FALSE(webhook["clientConfig"]["caBundle"].IsDefined());
    CHECK(scalar(webhook["clientConfig"]["service"]["name"], "service") == app_name);
  }
  CHECK(all_webhooks(rendered).size() == all_webhooks(base()).size());
  // Everything but the webhook configurations is the base, unchanged.
  for (const char* kind : {"Deployment", "Service", "PodDisruptionBudget", "CustomResourceDefinition"}) {
    for (const YAML::Node& object : all_of_kind(base(), kind)) {
      CHECK(YAML::Dump(find(rendered, kind, name_of(object))) == YAML::Dump(object));
    }
  }
}

TEST_CASE("The certs script makes a CA and a P-256 serving certificate for the Service and localhost") {
  TemporaryDirectory directory;
  const fs::path out = directory.path() / "out";
  generate_certificates(out);
  for (const std::string& file : certificate_files) {
    CHECK_MESSAGE(fs::is_regular_file(out / file), file << " was not written");
  }
  const std::string tls_crt = (out / "tls.crt").string();
  const std::string ca_crt = (out / "ca.crt").string();

  const CommandResult verify = run("openssl verify -CAfile " + shell_quote(ca_crt) + " " + shell_quote(tls_crt));
  CHECK_MESSAGE(verify.exit_code == 0, verify.out << verify.err);

  const CommandResult sans = run("openssl x509 -noout -ext subjectAltName -in " + shell_quote(tls_crt));
  REQUIRE(sans.exit_code == 0);
  for (const std::string& name : service_names) {
    CHECK_MESSAGE(sans.out.find("DNS:" + name + ",") != std::string::npos, sans.out);
  }
  CHECK(sans.out.find("DNS:localhost") != std::string::npos);
  CHECK(sans.out.find("IP Address:127.0.0.1") != std::string::npos);

  const CommandResult text = run("openssl x509 -noout -text -in " + shell_quote(tls_crt));
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("NIST CURVE: P-256") != std::string::npos);
  CHECK(text.out.find("TLS Web Server Authentication") != std::string::npos);
  CHECK(text.out.find("CA:FALSE") != std::string::npos);

  const CommandResult ca_text = run("openssl x509 -noout -text -in " + shell_quote(ca_crt));
  REQUIRE(ca_text.exit_code == 0);
  CHECK(ca_text.out.find("CA:TRUE") != std::string::npos);

  // Private keys are readable by their owner only.
  for (const char* key : {"ca.key", "tls.key", "secret.yaml"}) {
    const fs::perms permissions = fs::status(out / key).permissions();
    CHECK_MESSAGE((permissions & (fs::perms::group_all | fs::perms::others_all)) == fs::perms::none, key);
  }
}

TEST_CASE("The certs script writes the TLS Secret and the caBundle from its certificate files") {
  TemporaryDirectory directory;
  const fs::path out = directory.path() / "out";
  generate_certificates(out);
  const YAML::Node secret = YAML::LoadFile((out / "secret.yaml").string());
  CHECK(scalar(secret["apiVersion"], "apiVersion") == "v1");
  CHECK(scalar(secret["kind"], "kind") == "Secret");
  CHECK(scalar(secret["metadata"]["name"], "name") == "karta-webhook-tls");
  CHECK(scalar(secret["metadata"]["namespace"], "namespace") == install_namespace);
  CHECK(scalar(secret["type"], "type") == "kubernetes.io/tls");
  CHECK(secret["data"].size() == 3);
  for (const char* file : {"tls.crt", "tls.key", "ca.crt"}) {
    CHECK_MESSAGE(scalar(secret["data"][file], file) == base64(read_file(out / file)), file);
  }
  CHECK(trim(read_file(out / "ca-bundle.b64")) == base64(read_file(out / "ca.crt")));
  const YAML::Node component = YAML::LoadFile((out / "kustomization.yaml").string());
  CHECK(scalar(component["kind"], "kind") == "Component");
  CHECK(strings(component["resources"], "resources") == std::vector<std::string>{"secret.yaml"});
}

TEST_CASE("Running the certs script again changes nothing") {
  TemporaryDirectory directory;
  const fs::path out = directory.path() / "out";
  generate_certificates(out);
  std::map<std::string, std::string> first;
  for (const std::string& file : certificate_files) {
    first[file] = read_file(out / file);
  }
  generate_certificates(out);
  for (const std::string& file : certificate_files) {
    CHECK_MESSAGE(read_file(out / file) == first[file], file << " changed on the second run");
  }
}

TEST_CASE("The certs script replaces a serving certificate its CA did not sign") {
  TemporaryDirectory directory;
  const fs::path out = directory.path() / "out";
  generate_certificates(out);
  const std::string old_ca = read_file(out / "ca.crt");
  fs::remove(out / "ca.key");
  generate_certificates(out);
  CHECK(read_file(out / "ca.crt") != old_ca);
  const CommandResult verify = run("openssl verify -CAfile " + shell_quote((out / "ca.crt").string()) + " " +
                                   shell_quote((out / "tls.crt").string()));
  CHECK_MESSAGE(verify.exit_code == 0, verify.out << verify.err);
}

TEST_CASE("The certs script defaults to certs/out and explains itself") {
  const CommandResult help = run("bash " + shell_quote(generate_script.string()) + " --help");
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("certs/out") != std::string::npos);
  const CommandResult wrong = run("bash " + shell_quote(generate_script.string()) + " --no-such-option");
  CHECK(wrong.exit_code == 2);
}

TEST_CASE("The plain overlay installs the generated Secret and trusts its CA in every caBundle") {
  const PlainOverlayCheckout checkout(true);
  const Documents rendered = render_uncached(checkout.overlay());

  std::set<ObjectId> expected = base_object_ids();
  expected.insert({"Secret", "karta-webhook-tls"});
  CHECK(object_ids(rendered) == expected);

  const YAML::Node secret = find(rendered, "Secret", "karta-webhook-tls");
  CHECK(scalar(secret["metadata"]["namespace"], "namespace") == install_namespace);
  CHECK(scalar(secret["type"], "type") == "kubernetes.io/tls");
  for (const char* file : {"tls.crt", "tls.key", "ca.crt"}) {
    CHECK_MESSAGE(scalar(secret["data"][file], file) == base64(read_file(checkout.certs() / file)), file);
  }

  const std::string ca_bundle = base64(read_file(checkout.certs() / "ca.crt"));
  CHECK(trim(read_file(checkout.certs() / "ca-bundle.b64")) == ca_bundle);
  const std::vector<YAML::Node> webhooks = all_webhooks(rendered);
  CHECK(webhooks.size() == 4);
  for (const YAML::Node& webhook : webhooks) {
    INFO(scalar(webhook["name"], "name"));
    CHECK(scalar(webhook["clientConfig"]["caBundle"], "caBundle") == ca_bundle);
  }
  CHECK(YAML::Dump(find(rendered, "Deployment", app_name)) == YAML::Dump(find(base(), "Deployment", app_name)));
}

TEST_CASE("The existing-crd cert-manager overlay renders the cert-manager install less the Karta CRD") {
  const fs::path overlays = source_dir / "manifests" / "overlays";
  check_same_without_karta_crd(render_json(overlays / "cert-manager"), render_json(overlays / "existing-crd" / "cert-manager"));

  const Documents& rendered = cert_manager_existing_crd_overlay();
  CHECK(all_of_kind(rendered, "CustomResourceDefinition").empty());
  std::set<ObjectId> expected = object_ids(cert_manager_overlay());
  expected.erase({"CustomResourceDefinition", "kartas.run.ai"});
  CHECK(object_ids(rendered) == expected);
  for (const char* kind : {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}) {
    CHECK(scalar(find(rendered, kind, app_name)["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
                 "inject-ca-from") == "karta-system/karta-webhook");
  }
  CHECK(all_webhooks(rendered).size() == 4);
  for (const YAML::Node& webhook : all_webhooks(rendered)) {
    INFO(scalar(webhook["name"], "name"));
    CHECK_FALSE(webhook["clientConfig"]["caBundle"].IsDefined());
  }
  CHECK(find(rendered, "Certificate", app_name)["spec"]["secretName"].as<std::string>() == "karta-webhook-tls");
}

TEST_CASE("The existing-crd plain overlay renders the plain install less the Karta CRD") {
  const PlainOverlayCheckout checkout(true);
  check_same_without_karta_crd(render_json(checkout.overlay()), render_json(checkout.existing_crd_overlay()));

  const Documents rendered = render_uncached(checkout.existing_crd_overlay());
  std::set<ObjectId> expected = base_object_ids();
  expected.erase({"CustomResourceDefinition", "kartas.run.ai"});
  expected.insert({"Secret", "karta-webhook-tls"});
  CHECK(object_ids(rendered) == expected);
  const std::string ca_bundle = base64(read_file(checkout.certs() / "ca.crt"));
  const std::vector<YAML::Node> webhooks = all_webhooks(rendered);
  CHECK(webhooks.size() == 4);
  for (const YAML::Node& webhook : webhooks) {
    INFO(scalar(webhook["name"], "name"));
    CHECK(scalar(webhook["clientConfig"]["caBundle"], "caBundle") == ca_bundle);
  }
}

TEST_CASE("Without the CRD the webhook may still read and watch Kartas") {
  const PlainOverlayCheckout checkout(true);
  const Documents plain = render_uncached(checkout.existing_crd_overlay());
  for (const Documents* rendered : {&cert_manager_existing_crd_overlay(), &plain}) {
    bool kartas = false;
    for (const YAML::Node& rule : find(*rendered, "ClusterRole", app_name)["rules"]) {
      if (string_set(rule["apiGroups"], "apiGroups").count("run.ai") > 0 &&
          string_set(rule["resources"], "resources").count("kartas") > 0) {
        kartas = true;
        CHECK(string_set(rule["verbs"], "verbs") == std::set<std::string>{"get", "list", "watch"});
      }
    }
    CHECK(kartas);
    const YAML::Node binding = find(*rendered, "ClusterRoleBinding", app_name);
    CHECK(scalar(binding["subjects"][0]["name"], "subject name") == app_name);
  }
}

TEST_CASE("The existing-crd plain overlay does not render before the certs script has run either") {
  const PlainOverlayCheckout checkout(false);
  const CommandResult result = kustomize(checkout.existing_crd_overlay());
  CHECK(result.exit_code != 0);
  CHECK_MESSAGE(result.err.find("certs/out") != std::string::npos, result.err);
}

TEST_CASE("The plain overlay does not render before the certs script has run, and says where it looked") {
  const PlainOverlayCheckout checkout(false);
  const CommandResult result = kustomize(checkout.overlay());
  CHECK(result.exit_code != 0);
  CHECK_MESSAGE(result.err.find("certs/out") != std::string::npos, result.err);
}

}  // TEST_SUITE
