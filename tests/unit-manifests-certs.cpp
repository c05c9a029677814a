// The certificate script certs/generate.sh: CA, serving certificate, Secret and caBundle, reruns and usage.

#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "support/manifests_fixtures.h"

namespace unit_manifests_certs {  // this file's names, apart from other tests' in a unity build

using namespace karta::test::manifest_fixtures;

namespace {

const std::vector<std::string> certificate_files{"ca.crt", "ca.key", "tls.crt", "tls.key",
                                                 "secret.yaml", "ca-bundle.b64", "kustomization.yaml"};

}  // namespace

// =====================================================================================================

TEST_SUITE("manifests") {

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

}  // TEST_SUITE

}  // namespace unit_manifests_certs
