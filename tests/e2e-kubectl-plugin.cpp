// The binary as a kubectl plugin: a directory with a `kubectl-karta` link to it on PATH, then
// `kubectl plugin list`, `kubectl karta inspect jobset/demo -n research` and `kubectl karta list -A` run
// by kubectl itself against the local API server, their output compared whole with karta-webhook's.

#include <doctest/doctest.h>

#include <string>

#include "support/demo_cluster.h"
#include "support/fake_api_server.h"
#include "support/test_support.h"

namespace e2e_kubectl_plugin {  // this file's names, apart from other tests' in a unity build

namespace test = karta::test;
namespace fs = std::filesystem;

namespace {

struct PluginSetup {
  test::TempDir dir;
  test::FakeApiServer server{dir.path, {}};
  fs::path bin = dir.path / "bin";
  fs::path kubeconfig = dir.path / "config";

  PluginSetup() {
    test::demo_cluster::serve_demo(server);
    test::write_text(kubeconfig, server.kubeconfig("default"));
    fs::create_directories(bin);
    fs::create_symlink(test::binary_path(), bin / "kubectl-karta");
  }

  // `command` with the plugin's directory first on PATH and the kubeconfig in $KUBECONFIG.
  std::string run(const std::string& command, int* code) const {
    return test::run_command(
        "env PATH=" + bin.string() + ":/usr/bin:/bin KUBECONFIG=" + kubeconfig.string() + " " + command + " 2>&1",
        code);
  }
};

}  // namespace

TEST_CASE("kubectl lists kubectl-karta as a plugin and runs it: inspect and list print what karta-webhook prints") {
  PluginSetup setup;
  int code = -1;
  CHECK(setup.run("kubectl plugin list", &code) ==
        "The following compatible plugins are available:\n\n" + (setup.bin / "kubectl-karta").string() + "\n");
  CHECK(code == 0);

  const std::string binary = test::binary_path().string();
  int karta_code = -1;
  std::string through_kubectl = setup.run("kubectl karta inspect jobset/demo -n research", &code);
  std::string direct = setup.run(binary + " inspect jobset/demo -n research", &karta_code);
  CHECK(code == 0);
  CHECK(karta_code == 0);
  CHECK(through_kubectl == direct);
  CHECK(
      through_kubectl.starts_with("JobSet/demo   namespace: research   definition: jobset-v1alpha2 (catalog)   age: "));
  CHECK(through_kubectl.substr(through_kubectl.find('\n')) == std::string(test::demo_cluster::kDescribeAfterHeader));

  through_kubectl = setup.run("kubectl karta list -A", &code);
  direct = setup.run(binary + " list -A", &karta_code);
  CHECK(code == 0);
  CHECK(through_kubectl == direct);
  CHECK(
      through_kubectl.starts_with("NAMESPACE   NAME   KIND     PHASE     COMPONENTS             GPU   AGE\n"
                                  "research    demo   JobSet   Running   leader(1), worker(2)   12    "));

  // audit too, and every request reached the local API server with the kubeconfig's token.
  through_kubectl = setup.run("kubectl karta audit -o json", &code);
  direct = setup.run(binary + " audit -o json", &karta_code);
  CHECK(code == 0);
  CHECK(through_kubectl == direct);
  for (const auto& request : setup.server.received()) CHECK(request.authorization == "Bearer sesame");
}

TEST_CASE("run as kubectl-karta, the help says `kubectl karta`") {
  PluginSetup setup;
  int code = -1;
  std::string help = setup.run("kubectl karta --help", &code);
  CHECK(code == 0);
  CHECK(help.find("Usage: kubectl karta [OPTIONS] SUBCOMMAND") != std::string::npos);
  CHECK(help.find("karta-webhook") == std::string::npos);
  std::string inspect_help = setup.run("kubectl karta inspect --help", &code);
  CHECK(code == 0);
  CHECK(inspect_help.find("Usage: kubectl karta inspect [OPTIONS] [target]") != std::string::npos);
  CHECK(inspect_help.find("  kubectl karta inspect jobset/demo -n research --kubeconfig ~/.kube/config\n") !=
        std::string::npos);
  CHECK(inspect_help.find("karta-webhook") == std::string::npos);
  // Under its own name it is karta-webhook still.
  CHECK(setup.run(test::binary_path().string() + " --help", &code).find("kubectl karta") == std::string::npos);
}

TEST_CASE("cmake --install puts the kubectl-karta link beside the binary, where kubectl finds it") {
  test::TempDir prefix;
  int code = -1;
  std::string log = test::run_command(
      "cmake --install " + test::binary_path().parent_path().string() + " --prefix " + prefix.path.string() + " 2>&1",
      &code);
  CHECK(code == 0);
  CHECK(log.find("kubectl-karta -> karta-webhook") != std::string::npos);
  fs::path link = prefix.path / "bin/kubectl-karta";
  REQUIRE(fs::is_symlink(link));
  CHECK(fs::read_symlink(link) == "karta-webhook");
  CHECK(test::run_command("env PATH=" + (prefix.path / "bin").string() + ":/usr/bin:/bin kubectl plugin list 2>&1",
                          &code) == "The following compatible plugins are available:\n\n" + link.string() + "\n");
  CHECK(code == 0);
  CHECK(test::run_command(link.string() + " --help", &code).find("Usage: kubectl karta [OPTIONS] SUBCOMMAND") !=
        std::string::npos);
}

// A scratch checkout: scripts/install-kubectl-plugin.sh copied in, and the binaries the README's commands
// leave behind (build-release/ from scripts/run-dev.sh, build/ from scripts/test.sh) as copies of this
// build's.
struct ScratchCheckout {
  test::TempDir dir;
  fs::path root = dir.path / "checkout";
  fs::path bin = dir.path / "bin";
  ScratchCheckout() {
    fs::create_directories(root / "scripts");
    fs::copy_file(test::source_dir() / "scripts/install-kubectl-plugin.sh", root / "scripts/install-kubectl-plugin.sh");
  }
  fs::path build(const std::string& folder) {
    fs::create_directories(root / folder);
    fs::copy_file(test::binary_path(), root / folder / "karta-webhook");
    return root / folder / "karta-webhook";
  }
  std::string install(int* code) const {
    return test::run_command("env HOME=" + dir.path.string() + " PATH=" + bin.string() + ":/usr/bin:/bin sh " +
                                 (root / "scripts/install-kubectl-plugin.sh").string() + " " + bin.string() + " 2>&1",
                             code);
  }
  std::string kubectl(const std::string& arguments, int* code) const {
    return test::run_command("env PATH=" + bin.string() + ":/usr/bin:/bin kubectl " + arguments + " 2>&1", code);
  }
};

TEST_CASE("after run-dev.sh, install-kubectl-plugin.sh links the release build, says so, and kubectl runs it") {
  ScratchCheckout checkout;
  const fs::path release = checkout.build("build-release");
  int code = -1;
  const std::string version = test::run_command(release.string() + " --version");
  CHECK(checkout.install(&code) ==
        "kubectl-karta -> " + release.string() + " (" + version.substr(0, version.find('\n')) + ") in " +
            checkout.bin.string() + "\n");
  CHECK(code == 0);
  CHECK(fs::read_symlink(checkout.bin / "kubectl-karta") == release);
  CHECK(checkout.kubectl("plugin list", &code) ==
        "The following compatible plugins are available:\n\n" + (checkout.bin / "kubectl-karta").string() + "\n");
  CHECK(checkout.kubectl("karta --version", &code) == version);
  CHECK(code == 0);

  SUBCASE("with the test build there too, the release build is still the one linked") {
    checkout.build("build");
    CHECK(checkout.install(&code).starts_with("kubectl-karta -> " + release.string() + " ("));
    CHECK(fs::read_symlink(checkout.bin / "kubectl-karta") == release);
  }
}

TEST_CASE("with only the test build, install-kubectl-plugin.sh links build/karta-webhook; with neither it refuses") {
  ScratchCheckout checkout;
  int code = -1;
  CHECK(checkout.install(&code) ==
        "install-kubectl-plugin: karta-webhook is not built (neither " + (checkout.root / "build-release/karta-webhook").string() +
            " nor " + (checkout.root / "build/karta-webhook").string() +
            "); run scripts/run-dev.sh (the release build) or scripts/test.sh first\n");
  CHECK(code == 1);
  CHECK_FALSE(fs::exists(checkout.bin / "kubectl-karta"));

  const fs::path test_build = checkout.build("build");
  CHECK(checkout.install(&code).starts_with("kubectl-karta -> " + test_build.string() + " ("));
  CHECK(code == 0);
  CHECK(fs::read_symlink(checkout.bin / "kubectl-karta") == test_build);
}

}  // namespace e2e_kubectl_plugin
