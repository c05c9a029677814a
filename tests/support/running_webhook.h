#pragma once

// A webhook running in-process on an ephemeral port with certificates made for the test.

#include <fstream>
#include <functional>
#include <thread>

#include "runtime/webhook.h"
#include "support/test_support.h"

namespace karta::test {

struct RunningWebhook {
  TempDir dir;
  TestCertificates certificates{dir.path};
  std::unique_ptr<Webhook> webhook;
  unsigned short port = 0;
  std::thread thread;

  explicit RunningWebhook(std::function<void(WebhookConfig&)> adjust = {},
                          const std::string& policy = "podTemplates:\n"
                                                      "  labels: {platform.example.com/managed: \"true\"}\n"
                                                      "  annotations: {platform.example.com/owner: platform}\n") {
    std::ofstream(dir.path / "policy.yaml") << policy;
    WebhookConfig config;
    config.server.bind_address = "127.0.0.1";
    config.server.port = 0;
    config.server.threads = 2;
    config.server.certificate_poll = std::chrono::milliseconds(100);
    config.reload_interval = std::chrono::milliseconds(200);
    config.tls = {certificates.certificate, certificates.key};
    config.policy_file = dir.path / "policy.yaml";
    if (adjust) adjust(config);
    webhook = std::make_unique<Webhook>(config);
    port = webhook->listen();
    thread = std::thread([this] { webhook->run(/*handle_signals=*/false); });
  }
  ~RunningWebhook() {
    webhook->shutdown();
    thread.join();
  }
};

// Polls `condition` until it holds or `limit` passes; returns whether it held.
inline bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return condition();
}

}  // namespace karta::test
