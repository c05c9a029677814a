#include "runtime/webhook.h"

#include <algorithm>
#include <functional>

#include <spdlog/spdlog.h>

#include "definitions/api/published_api.h"
#include "definitions/builtin_catalog.h"
#include "runtime/admission_http.h"
#include "runtime/allocator.h"
#include "server/cpu_budget.h"

namespace karta {
namespace {

// The texts compiled into the binary that loading parses (the built-in catalog, and the published CRDs
// whose schemas the definitions are checked against): once parsed they are kept only in their parsed form.
void release_embedded_texts() {
  for (const auto& file : builtin_catalog_files()) release_read_only_pages(file.text);
  release_read_only_pages(embedded::run_ai_kartas_yaml());
  release_read_only_pages(embedded::optimization_nvidia_com_resourceinterfaces_yaml());
  release_read_only_pages(embedded::pod_v1_json());
}

// The groups of the state's definitions that did not come from the cluster's Kartas.
std::set<std::string> local_groups(const AdmissionState& state) {
  std::set<std::string> groups;
  for (const auto& definition : state.catalog.definitions()) {
    const GroupVersionKind& kind = definition->root_kind();
    if (state.cluster_kartas.count(kind.group + "/" + kind.version + "/" + kind.kind) == 0) groups.insert(kind.group);
  }
  return groups;
}

// What /metrics adds about the cluster's CRDs: how many are indexed, whose schema is held, and the work
// their events made. Cost follows the second, not the first (README, "Cost with the cluster's size").
std::string cluster_schema_metrics(const ClusterSchemas& schemas) {
  return "# HELP karta_cluster_crds_indexed CustomResourceDefinitions of the cluster, indexed by name and resourceVersion\n"
         "# TYPE karta_cluster_crds_indexed gauge\n"
         "karta_cluster_crds_indexed " + std::to_string(schemas.indexed()) + "\n"
         "# HELP karta_cluster_crd_schemas_held CustomResourceDefinitions whose schema is held: those of the groups definitions use, and those fetched for /validate\n"
         "# TYPE karta_cluster_crd_schemas_held gauge\n"
         "karta_cluster_crd_schemas_held " + std::to_string(schemas.held()) + "\n"
         "# HELP karta_cluster_crd_gets_total GETs of one CustomResourceDefinition, or of a group version's discovery for /validate\n"
         "# TYPE karta_cluster_crd_gets_total counter\n"
         "karta_cluster_crd_gets_total " + std::to_string(schemas.gets()) + "\n"
         "# HELP karta_cluster_crd_events_ignored_total Watch events of CustomResourceDefinitions outside the groups definitions use: indexed, nothing reloaded\n"
         "# TYPE karta_cluster_crd_events_ignored_total counter\n"
         "karta_cluster_crd_events_ignored_total " + std::to_string(schemas.events_ignored()) + "\n";
}

}  // namespace

Webhook::Webhook(WebhookConfig config)
    : config_(std::move(config)),
      service_(std::make_shared<AdmissionService>()),
      // One jq state per CPU that may run it, not per thread: jq runs are CPU-bound and short.
      loader_(config_.definition_directories, config_.policy_file,
              std::min(config_.server.threads, available_cpus()), config_.crd_directories) {
  auto started = std::chrono::steady_clock::now();
  auto certificates = std::make_shared<CertificateStore>(config_.tls);
  loaded_fingerprint_ = loader_.fingerprint();
  auto state = loader_.load();
  if (config_.policy_file.empty()) spdlog::warn("no --policy given: nothing will be injected");
  if (state->policy.says_nothing) spdlog::warn("policy {} says nothing: true: nothing will be injected", state->policy.source);
  for (const auto& warning : state->policy.warnings) spdlog::warn("policy {}: {}", state->policy.source, warning);
  auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  spdlog::info("loaded {} definitions and policy {} in {} ms", state->catalog.size(), state->policy.source,
               elapsed.count());
  to_prepare_ = state->catalog.definitions();
  local_groups_ = local_groups(*state);
  attach_namespaces(*state);
  service_->update(std::move(state));
  if (config_.cluster) {
    ClusterSchemasOptions schema_options;
    schema_options.client = config_.watcher_options.client;
    schemas_ = std::make_shared<ClusterSchemas>(*config_.cluster, schema_options);
  }

  auto service = service_;
  // A review whose namespace's labels are still to be learnt is answered later (runtime/admission_http.h).
  auto admission = [service = std::shared_ptr<const AdmissionService>(service_)](AdmissionEndpoint endpoint) -> DeferringHandler {
    return [service, endpoint](HttpRequest& r, Deferral& deferral) {
      return handle_admission(service, endpoint, r, deferral);
    };
  };
  std::vector<Route> routes{
      {"POST", "/mutate", {}, {}, admission(AdmissionEndpoint::Mutate)},
      {"POST", "/validate", {},
       // Validating a definition compiles its jq (~18 ms an expression): off the connection threads. A
       // workload that merely mentions the word is sent there too, which costs it nothing but a hop.
       [](const HttpRequest& r) {
         return r.body.find("\"Karta\"") != std::string::npos || r.body.find("\"ResourceInterface\"") != std::string::npos;
       },
       admission(AdmissionEndpoint::Validate)},
      // The policy ConfigMap, read with the policy loader (its YAML and regular expressions): off the
      // connection threads, as a ConfigMap may hold a megabyte.
      {"POST", "/validate-policy", {}, [](const HttpRequest&) { return true; }, admission(AdmissionEndpoint::ValidatePolicy)},
      {"GET", "/healthz", [](const HttpRequest&) { return text_response(200, "ok"); }, {}, {}},
      {"GET", "/readyz",
       [this](const HttpRequest&) {
         std::string why = not_ready_reason();
         return why.empty() ? text_response(200, "ok") : text_response(503, std::move(why));
       },
       {}, {}},
      {"GET", "/metrics",
       [service, schemas = schemas_](const HttpRequest&) {
         std::string text = service->metrics().render();
         if (schemas) text += cluster_schema_metrics(*schemas);
         return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", std::move(text), {}};
       },
       {}, {}},
  };
  server_ = std::make_unique<HttpsServer>(config_.server, certificates, std::move(routes));
  server_->set_on_shutdown_begin([this] { shutting_down_ = true; });
  // A probe's or a burst's TLS handshakes and buffers, freed, would otherwise stay in the closing thread's
  // cache and the arena's dirty pages for as long as the webhook stays idle.
  server_->set_on_idle([] { release_free_memory(); });
  // The expiry is published here, not in server/, which knows nothing of the webhook's metrics.
  auto publish_expiry = [service, certificates] {
    service->metrics().set_certificate_expiry(
        std::chrono::duration_cast<std::chrono::seconds>(certificates->not_after().time_since_epoch()).count());
  };
  publish_expiry();
  server_->set_on_certificate_reload([service, publish_expiry](bool ok) {
    service->metrics().record_reload("certificate", ok);
    if (ok) publish_expiry();
  });
  reload_thread_ = std::thread([this] { watch_for_changes(); });
  prepare_thread_ = std::thread([this] { prepare_admission_programs(); });
  if (config_.cluster) start_cluster_watch();
}

void Webhook::start_cluster_watch() {
  auto changed = [this] {
    {
      std::lock_guard lock(reload_mutex_);
      cluster_changed_ = true;
    }
    reload_wake_.notify_all();
  };
  kube::WatcherCallbacks kartas;
  kartas.on_snapshot = [this, changed](std::vector<json> objects) {
    {
      std::lock_guard lock(cluster_mutex_);
      kartas_listed_ = true;
      kartas_.clear();
      for (auto& object : objects) {
        // The key first: json's operator= takes its argument by value, and C++17 evaluates the right
        // side of an assignment first, so `map[key(object)] = std::move(object)` reads a moved-from object.
        std::string key = kube::ResourceWatcher::object_key(object);
        kartas_[key] = std::move(object);
      }
    }
    changed();
  };
  kartas.on_event = [this, changed](kube::EventType type, const json& object) {
    {
      std::lock_guard lock(cluster_mutex_);
      if (type == kube::EventType::Deleted) {
        kartas_.erase(kube::ResourceWatcher::object_key(object));
      } else {
        kartas_[kube::ResourceWatcher::object_key(object)] = object;
      }
    }
    changed();
  };
  // CRDs: metadata only, into the index. Only a CRD of a group definitions use makes a reload, which
  // fetches that CRD and checks the definitions again; any other is indexed and forgotten.
  kube::WatcherCallbacks crds;
  crds.on_snapshot = [this, changed](std::vector<json> objects) {
    bool used_changed = schemas_->replace_index(objects);
    bool first = false;
    {
      std::lock_guard lock(cluster_mutex_);
      first = !std::exchange(crds_listed_, true);
    }
    if (first || used_changed) changed();
  };
  crds.on_event = [this, changed](kube::EventType type, const json& object) {
    if (schemas_->apply_event(type, object)) changed();
  };
  karta_watcher_ = std::make_unique<kube::ResourceWatcher>(*config_.cluster, "/apis/run.ai/v1alpha1/kartas",
                                                           std::move(kartas), config_.watcher_options);
  kube::WatcherOptions crd_options = config_.watcher_options;
  crd_options.metadata_only = true;
  crd_watcher_ = std::make_unique<kube::ResourceWatcher>(
      *config_.cluster, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", std::move(crds), crd_options);
  spdlog::info("watching Kartas, and CustomResourceDefinitions by metadata, at {}", config_.cluster->server_url());
  crd_watcher_->start();
  karta_watcher_->start();
}

void Webhook::attach_namespaces(AdmissionState& state) {
  if (!config_.cluster) return;  // the labels are unknown: admission says so when the policy needs them
  std::lock_guard lock(namespaces_mutex_);
  if (!namespaces_ && state.policy.needs_namespace_labels()) {
    namespaces_ = std::make_shared<ClusterNamespaces>(*config_.cluster, config_.watcher_options);
    namespaces_->start();
  }
  state.namespaces = namespaces_;
}

std::shared_ptr<ClusterNamespaces> Webhook::cluster_namespaces() {
  std::lock_guard lock(namespaces_mutex_);
  return namespaces_;
}

Webhook::~Webhook() {
  if (karta_watcher_) karta_watcher_->stop();
  if (auto namespaces = cluster_namespaces()) namespaces->stop();
  if (crd_watcher_) crd_watcher_->stop();
  {
    std::lock_guard lock(reload_mutex_);
    stop_reloading_ = true;
  }
  reload_wake_.notify_all();
  prepare_wake_.notify_all();
  if (reload_thread_.joinable()) reload_thread_.join();
  if (prepare_thread_.joinable()) prepare_thread_.join();
}

void Webhook::prepare_admission_programs() {
  // The definitions served now: each reload hands over its own. Between reloads they are looked at again
  // every reload interval, for a program whose runs had to wait for its one state (JqProgram::prepare).
  std::vector<std::shared_ptr<const CompiledDefinition>> definitions;
  bool release_pending = false;
  std::unique_lock lock(reload_mutex_);
  while (true) {
    const bool fresh = prepare_wake_.wait_for(lock, config_.reload_interval,
                                              [this] { return stop_reloading_ || !to_prepare_.empty(); });
    if (stop_reloading_) return;
    if (fresh) definitions = std::exchange(to_prepare_, {});
    lock.unlock();
    auto started = std::chrono::steady_clock::now();
    std::size_t compiled = 0;
    bool stopping = false;
    for (bool more = true; more && !stopping;) {
      more = false;
      for (const auto& definition : definitions) {
        {
          std::lock_guard stop(reload_mutex_);
          stopping = stop_reloading_;
        }
        if (stopping) break;
        if (definition->prepare_admission()) {
          more = true;
          ++compiled;
        }
      }
    }
    auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
    if (compiled > 0) spdlog::info("compiled {} jq states for admission in {} ms", compiled, elapsed.count());
    // Loading and compiling leave freed memory behind (libjq binds its builtins anew each time), and an
    // idle webhook would otherwise keep it: jemalloc purges only as it allocates again. Not right after a
    // reload, though: in a stream of events the next reload would fault the same pages back in. Once a
    // reload interval has passed with none, the memory goes back.
    if (fresh) {
      release_pending = true;
    } else if (release_pending || compiled > 0) {
      release_free_memory();
      release_pending = false;
    }
    if (fresh) release_embedded_texts();  // a reload parsed the built-in catalog again
    lock.lock();
  }
}

void Webhook::watch_for_changes() {
  std::unique_lock lock(reload_mutex_);
  while (true) {
    reload_wake_.wait_for(lock, config_.reload_interval, [this] { return stop_reloading_ || cluster_changed_; });
    if (stop_reloading_) return;
    bool cluster_changed = std::exchange(cluster_changed_, false);
    lock.unlock();
    const AdmissionStateLoader::Fingerprint fingerprint = loader_.fingerprint();
    std::vector<const char*> sources;
    if (cluster_changed) sources.push_back("cluster");
    if (fingerprint.definitions != loaded_fingerprint_.definitions) sources.push_back("definitions");
    if (fingerprint.policy != loaded_fingerprint_.policy) sources.push_back("policy");
    if (!sources.empty()) {
      reload(sources);
      loaded_fingerprint_ = fingerprint;  // a broken file is reported once, not every interval
    }
    lock.lock();
  }
}

// Compiling happens here, off the threads that answer admissions.
// Counted under each source that changed; a policy that does not load under "policy" alone, whatever
// else changed, as that is what to fix.
void Webhook::reload(const std::vector<const char*>& sources) {
  ClusterSources cluster;
  bool both_listed = false;
  {
    std::lock_guard lock(cluster_mutex_);
    cluster.kartas = kartas_;
    both_listed = kartas_listed_ && crds_listed_;
  }
  try {
    if (schemas_) {
      // W: the groups of the definitions loaded from files and of the cluster's Kartas. Their CRDs that
      // changed since the last reload are fetched now; the others' schemas are shared with the state
      // served until now.
      std::set<std::string> groups = local_groups_;
      for (const auto& [name, karta] : cluster.kartas) {
        if (auto kind = defined_kind(karta)) groups.insert(kind->group);
      }
      cluster.crd_schemas = schemas_->refresh(groups);
    }
    std::vector<std::string> rejected;
    auto state = loader_.load(cluster, &rejected);
    local_groups_ = local_groups(*state);
    if (schemas_) {
      state->fetch_crd = [schemas = schemas_](const GroupVersionKind& kind, std::chrono::steady_clock::time_point deadline) {
        return schemas->fetch(kind, deadline);
      };
    }
    spdlog::info("reloaded {} definitions ({} from the cluster) and policy {} (sha256 {})", state->catalog.size(),
                 state->cluster_kartas.size(), state->policy.source, state->policy_digest);
    if (std::find(sources.begin(), sources.end(), std::string_view("policy")) != sources.end()) {
      for (const auto& warning : state->policy.warnings) spdlog::warn("policy {}: {}", state->policy.source, warning);
    }
    auto definitions = state->catalog.definitions();
    attach_namespaces(*state);
    service_->update(std::move(state));
    {
      std::lock_guard lock(reload_mutex_);
      to_prepare_ = std::move(definitions);
    }
    prepare_wake_.notify_all();
    for (const char* source : sources) {
      service_->metrics().record_reload(source, std::string_view(source) == "policy" || rejected.empty());
    }
    service_->metrics().set_last_reload_successful(rejected.empty());
    if (both_listed && !cluster_loaded_.exchange(true)) {
      spdlog::info("the cluster's Kartas and CustomResourceDefinitions are loaded: ready");
    }
  } catch (const PolicyLoadError& e) {
    spdlog::error("reload failed, still serving the previous definitions and policy {}: {}",
                  service_->state()->policy_digest, e.what());
    service_->metrics().record_reload("policy", false);
    service_->metrics().set_last_reload_successful(false);
  } catch (const std::exception& e) {
    spdlog::error("reload failed, still serving the previous definitions and policy: {}", e.what());
    for (const char* source : sources) service_->metrics().record_reload(source, false);
    service_->metrics().set_last_reload_successful(false);
  }
}

unsigned short Webhook::listen() {
  unsigned short port = server_->listen();
  spdlog::info("serving HTTPS on {}:{} with {} threads", config_.server.bind_address, port, config_.server.threads);
  return port;
}

void Webhook::run(bool handle_signals) {
  // Loading freed the YAML trees and the parse's temporaries, most of them cached by this thread; the
  // prepare thread releases again once the jq states are compiled.
  release_free_memory();
  release_embedded_texts();
  server_->run(handle_signals);
}
void Webhook::shutdown() { server_->shutdown(); }
std::string Webhook::not_ready_reason() const {
  if (shutting_down_) return "shutting down";
  if (!service_->ready()) return "definitions not loaded";
  if (config_.cluster && !cluster_loaded_) return "waiting for the first LIST of Kartas and CustomResourceDefinitions";
  // Until then every admission in a namespace would wait for a GET of it.
  auto state = service_->state();
  auto namespaces = std::dynamic_pointer_cast<const ClusterNamespaces>(state->namespaces);
  if (namespaces && state->policy.needs_namespace_labels() && !namespaces->listed()) {
    return "waiting for the first LIST of Namespaces";
  }
  return "";
}

bool Webhook::ready() const { return not_ready_reason().empty(); }

}  // namespace karta
