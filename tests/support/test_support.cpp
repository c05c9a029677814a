#include "support/test_support.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include <doctest/doctest.h>
#include <openssl/evp.h>

#include "cli/commands.h"

namespace karta::test {

namespace fs = std::filesystem;

fs::path source_dir() { return KARTA_SOURCE_DIR; }
fs::path binary_path() { return KARTA_BINARY; }

json yaml(const std::string& text) {
  auto docs = parse_documents(text, "test");
  REQUIRE(docs.size() == 1);
  return docs[0].value;
}

std::vector<SourceDocument> documents(const fs::path& file) { return read_documents(file); }

json document(const fs::path& file, std::size_t index) {
  auto docs = read_documents(file);
  REQUIRE(index < docs.size());
  return docs[index].value;
}

const Catalog& builtin_catalog() {
  static const Catalog catalog = load_catalog(CatalogSources{});
  return catalog;
}

Policy policy_from_yaml(const std::string& text) { return parse_policy(yaml(text), "test-policy"); }

std::string policy_error(const std::string& text) {
  try {
    parse_policy(yaml(text), "policy.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TempDir::TempDir() {
  std::random_device random;
  path = fs::temp_directory_path() / ("karta-test-" + std::to_string(random()) + std::to_string(random()));
  fs::create_directories(path);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path, ec);
}

CliRun run_cli(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  std::ostringstream out, err;
  int code = karta::run_command_line(static_cast<int>(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

std::string metric_sample(const std::string& scrape, const std::string& series) {
  std::istringstream in(scrape);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with(series + " ")) return line.substr(series.size() + 1);
  }
  return "";
}

std::string run_command(const std::string& command, int* exit_code) {
  std::string output;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  REQUIRE_MESSAGE(pipe != nullptr, "cannot run " << command);
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output.append(buffer.data(), n);
  int status = pclose(pipe);
  if (exit_code != nullptr) *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return output;
}

std::shared_ptr<const CompiledDefinition> compile_definition(const std::string& karta_yaml) {
  auto definitions = parse_definitions(karta_yaml, "test.yaml");
  REQUIRE(definitions.size() == 1);
  return CompiledDefinition::compile(definitions[0], 1);
}

std::string made_up_karta(const std::string& name, const std::string& kind) {
  return "apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata: {name: " + name + "}\nspec:\n  structureDefinition:\n"
         "    rootComponent:\n      name: " + name + "\n      kind: {group: example.com, version: v1, kind: " + kind + "}\n";
}

json kubectl_apply(const json& object, const json& patch) {
  TempDir dir;
  {
    std::ofstream(dir.path / "object.json") << object.dump();
    std::ofstream(dir.path / "patch.json") << patch.dump();
  }
  int code = 0;
  std::string out = run_command("kubectl patch --local --type=json --patch-file=" + (dir.path / "patch.json").string() +
                                    " -f " + (dir.path / "object.json").string() + " -o json",
                                &code);
  REQUIRE_MESSAGE(code == 0, "kubectl refused the patch " << patch.dump() << ": " << out);
  return json::parse(out);
}

json admission_review(const json& object, const std::string& operation, const std::string& uid) {
  std::string api_version = object.value("apiVersion", "");
  auto gvk = GroupVersionKind::from_api_version(api_version, object.value("kind", ""));
  json metadata = object.value("metadata", json::object());
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", uid},
            {"kind", {{"group", gvk.group}, {"version", gvk.version}, {"kind", gvk.kind}}},
            {"resource", {{"group", gvk.group}, {"version", gvk.version}, {"resource", "things"}}},
            {"requestKind", {{"group", gvk.group}, {"version", gvk.version}, {"kind", gvk.kind}}},
            {"name", metadata.value("name", "")},
            {"namespace", metadata.value("namespace", "default")},
            {"operation", operation},
            {"userInfo", {{"username", "alice"}, {"groups", {"system:authenticated"}}}},
            {"object", object},
            {"oldObject", nullptr},
            {"dryRun", false},
            {"options", {{"apiVersion", "meta.k8s.io/v1"}, {"kind", "CreateOptions"}}}}}};
}

json decoded_patch(const json& review) {
  const json& response = review.at("response");
  if (!response.contains("patch")) return nullptr;
  std::string encoded = response["patch"].get<std::string>();
  std::string decoded(encoded.size(), '\0');
  int length = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(decoded.data()),
                               reinterpret_cast<const unsigned char*>(encoded.data()), static_cast<int>(encoded.size()));
  REQUIRE(length >= 0);
  decoded.resize(static_cast<std::size_t>(length));
  while (!decoded.empty() && decoded.back() == '\0') decoded.pop_back();  // EVP_DecodeBlock pads
  return json::parse(decoded);
}

TestCertificates::TestCertificates(const fs::path& dir, const std::string& name) {
  ca = dir / "ca.crt";
  certificate = dir / (name + ".crt");
  key = dir / (name + ".key");
  fs::path ca_key = dir / "ca.key";
  int code = 0;
  std::string out;
  if (!fs::exists(ca)) {
    out = run_command("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=test-ca "
                      "-keyout " + ca_key.string() + " -out " + ca.string(), &code);
    REQUIRE_MESSAGE(code == 0, out);
  }
  fs::path csr = dir / (name + ".csr");
  fs::path ext = dir / (name + ".ext");
  std::ofstream(ext) << "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n";
  out = run_command("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=localhost -keyout " +
                    key.string() + " -out " + csr.string(), &code);
  REQUIRE_MESSAGE(code == 0, out);
  out = run_command("openssl x509 -req -in " + csr.string() + " -CA " + ca.string() + " -CAkey " + ca_key.string() +
                    " -CAcreateserial -days 2 -extfile " + ext.string() + " -out " + certificate.string(), &code);
  REQUIRE_MESSAGE(code == 0, out);
}

}  // namespace karta::test
