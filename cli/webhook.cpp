#include "cli/webhook.h"

#include <spdlog/spdlog.h>

#include "definitions/documents.h"

namespace karta {
namespace {

HttpResponse text(int status, std::string body) {
  return HttpResponse{status, "text/plain; charset=utf-8", std::move(body) + "\n", {}};
}

}  // namespace

std::shared_ptr<AdmissionState> load_admission_state(const std::vector<std::filesystem::path>& definition_directories,
                                                     const std::filesystem::path& policy_file,
                                                     std::size_t concurrency) {
  auto state = std::make_shared<AdmissionState>();
  CatalogSources sources;
  sources.directories = definition_directories;
  sources.concurrency = concurrency;
  state->catalog = load_catalog(sources);
  if (!policy_file.empty()) state->policy = load_policy(policy_file);
  return state;
}

Webhook::Webhook(WebhookConfig config) : config_(std::move(config)), service_(std::make_shared<AdmissionService>()) {
  auto started = std::chrono::steady_clock::now();
  auto certificates = std::make_shared<CertificateStore>(config_.tls);
  auto state = load_admission_state(config_.definition_directories, config_.policy_file, config_.server.threads);
  if (config_.policy_file.empty()) spdlog::warn("no --policy given: nothing will be injected");
  auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  spdlog::info("loaded {} definitions and policy {} in {} ms", state->catalog.size(), state->policy.source,
               elapsed.count());
  service_->update(std::move(state));

  auto service = service_;
  std::vector<Route> routes{
      {"POST", "/mutate", [service](const HttpRequest& r) { return service->handle(AdmissionEndpoint::Mutate, r); }},
      {"POST", "/validate", [service](const HttpRequest& r) { return service->handle(AdmissionEndpoint::Validate, r); }},
      {"GET", "/healthz", [](const HttpRequest&) { return text(200, "ok"); }},
      {"GET", "/readyz",
       [this](const HttpRequest&) {
         if (shutting_down_) return text(503, "shutting down");
         return service_->ready() ? text(200, "ok") : text(503, "definitions not loaded");
       }},
  };
  server_ = std::make_unique<HttpsServer>(config_.server, std::move(certificates), std::move(routes));
  server_->set_on_shutdown_begin([this] { shutting_down_ = true; });
}

Webhook::~Webhook() = default;

unsigned short Webhook::listen() {
  unsigned short port = server_->listen();
  spdlog::info("serving HTTPS on {}:{} with {} threads", config_.server.bind_address, port, config_.server.threads);
  return port;
}

void Webhook::run(bool handle_signals) { server_->run(handle_signals); }
void Webhook::shutdown() { server_->shutdown(); }
bool Webhook::ready() const { return !shutting_down_ && service_->ready(); }

}  // namespace karta
