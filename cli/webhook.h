#pragma once

// The running webhook: the admission service behind the HTTPS server, with its health, readiness and
// lifecycle. `serve` runs one; the end-to-end tests run one in-process on an ephemeral port.

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "admission/admission_service.h"
#include "server/https_server.h"

namespace karta {

struct WebhookConfig {
  ServerOptions server;
  TlsFiles tls;
  std::vector<std::filesystem::path> definition_directories;
  std::filesystem::path policy_file;  // empty: inject nothing
};

// Loads definitions and policy (a broken one is a broken environment: throws).
std::shared_ptr<AdmissionState> load_admission_state(const std::vector<std::filesystem::path>& definition_directories,
                                                     const std::filesystem::path& policy_file,
                                                     std::size_t concurrency);

class Webhook {
 public:
  explicit Webhook(WebhookConfig config);  // throws on unusable certificates, definitions or policy
  ~Webhook();

  unsigned short listen();
  void run(bool handle_signals = true);  // blocks until shut down
  void shutdown();

  AdmissionService& service() { return *service_; }
  bool ready() const;

 private:
  WebhookConfig config_;
  std::shared_ptr<AdmissionService> service_;
  std::atomic<bool> shutting_down_{false};
  std::unique_ptr<HttpsServer> server_;
};

}  // namespace karta
