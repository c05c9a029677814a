// karta-fake-api-server DIR: the tests' local API server (support/fake_api_server.h) as a program, for
// scripts/image-test.sh, which runs the image's binary with the Deployment's arguments, --in-cluster
// among them, against it as the pod's API server.
//
// It serves the cluster-scoped kartas (none) and the CustomResourceDefinitions (none) on 127.0.0.1, with
// certificates it makes in DIR, and writes there what a pod's service account mount and environment
// hold: DIR/serviceaccount/{token,ca.crt,namespace}, and DIR/port. It runs until SIGTERM or SIGINT, then
// writes DIR/requests, each request it received as its request line, and exits 0.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "support/fake_api_server.h"

namespace {

namespace fs = std::filesystem;

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out.flush()) {
    std::cerr << "karta-fake-api-server: cannot write " << path << "\n";
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: karta-fake-api-server DIR\n";
    return 2;
  }
  // The support code reports a failure with doctest's REQUIRE; outside a test run, say it and stop.
  doctest::Context context;
  context.setAsDefaultForAssertsOutOfTestCases();
  context.setAssertHandler([](const doctest::AssertData& data) {
    std::cerr << "karta-fake-api-server: " << data.m_file << ":" << data.m_line << ": " << data.m_expr << " "
              << data.m_exception.c_str() << data.m_decomp.c_str() << "\n";
    std::exit(1);
  });
  // Blocked before any thread starts, so every thread leaves them to sigwait below.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const fs::path dir = argv[1];
  fs::create_directories(dir / "serviceaccount");
  karta::test::FakeApiServer server(dir, {});
  server.serve(karta::test::crd_resource());
  write_file(dir / "serviceaccount" / "token", "sesame");
  write_file(dir / "serviceaccount" / "namespace", "karta-system");
  fs::copy_file(server.certificates().ca, dir / "serviceaccount" / "ca.crt", fs::copy_options::overwrite_existing);
  write_file(dir / "port.tmp", std::to_string(server.port()) + "\n");
  fs::rename(dir / "port.tmp", dir / "port");  // whoever waits for it reads it whole

  int received = 0;
  sigwait(&signals, &received);
  std::string lines;
  for (const std::string& line : server.request_lines()) lines += line + "\n";
  write_file(dir / "requests", lines);
  return 0;
}
