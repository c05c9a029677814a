#include "runtime/namespace_watch.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "k8s/name_syntax.h"
#include "k8s/terminal_text.h"
#include "kube/api_path.h"

namespace karta {
namespace {

constexpr const char* kNamespaces = "/api/v1/namespaces";
// client-go's metadata client asks for these (k8s.io/client-go/metadata), with JSON as the fallback.
constexpr const char* kAcceptList = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
constexpr const char* kAcceptObject = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

// Why a namespace's labels are unknown, as a waiter is told: its own lookup's fate, in words that name
// neither the API server nor anything another request sent.
constexpr const char* kShuttingDown = "the webhook is shutting down";
constexpr const char* kNotInTime = "still being read at the admission's deadline";
constexpr const char* kAbsent = "no such namespace";

// What is kept of a namespace: its name, resourceVersion (for the watch) and labels.
void keep_labels(json& object) {
  json kept = {{"metadata", json::object()}};
  if (object.is_object() && object.contains("metadata") && object["metadata"].is_object()) {
    json& metadata = object["metadata"];
    for (const char* key : {"name", "resourceVersion", "labels"}) {
      if (metadata.contains(key)) kept["metadata"][key] = std::move(metadata[key]);
    }
  }
  object = std::move(kept);
}

std::string name_of(const json& object) {
  const json* name = object.contains("metadata") ? &object["metadata"] : nullptr;
  if (name == nullptr || !name->contains("name") || !(*name)["name"].is_string()) return "";
  return (*name)["name"].get<std::string>();
}

// An error for the log: escaped, and cut (an API server's message can be long).
std::string loggable(const std::string& text) {
  std::string escaped = terminal_text(text);
  return escaped.size() <= 300 ? escaped : escaped.substr(0, 297) + "...";
}

NamespaceLookup unknown(std::string why) { return {std::nullopt, std::move(why)}; }

}  // namespace

ClusterNamespaces::ClusterNamespaces(kube::KubeConnection connection, kube::WatcherOptions options,
                                     NamespaceLookupOptions lookups)
    : options_(lookups) {
  kube::ApiClientOptions get_options = options.client;
  get_options.accept = kAcceptObject;
  get_options.request_timeout = std::min(get_options.request_timeout, options_.get_timeout);
  get_options.connect_timeout = std::min(get_options.connect_timeout, options_.get_timeout);
  get_options.handshake_timeout = std::min(get_options.handshake_timeout, options_.get_timeout);
  for (std::size_t i = 0; i < std::max<std::size_t>(options_.concurrency, 1); ++i) {
    getters_.push_back(std::make_unique<kube::ApiClient>(connection, get_options));
  }

  options.client.accept = kAcceptList;
  options.client.stream_accept = kAcceptObject;
  options.keep_only = keep_labels;
  kube::WatcherCallbacks callbacks;
  callbacks.on_snapshot = [this](std::vector<json> objects) {
    std::map<std::string, LabelMap> labels;
    for (const json& object : objects) labels[name_of(object)] = namespace_labels_of(object);
    Answers answers;
    {
      std::lock_guard lock(mutex_);
      labels_ = std::move(labels);
      listed_ = true;
      std::erase_if(absent_, [this](const auto& entry) { return labels_.count(entry.first) > 0; });
      std::vector<std::string> waited;
      for (auto& [name, lookup] : lookups_) {
        lookup->watch_spoke = true;  // a GET sent before this LIST may have read an older state
        waited.push_back(name);
      }
      for (const std::string& name : waited) settle_locked(name, answers);
    }
    deliver(answers);
  };
  callbacks.on_event = [this](kube::EventType type, const json& object) {
    const std::string name = name_of(object);
    Answers answers;
    {
      std::lock_guard lock(mutex_);
      if (type == kube::EventType::Deleted) {
        labels_.erase(name);
        remember_absent(name, Clock::now());
      } else {
        labels_[name] = namespace_labels_of(object);
        absent_.erase(name);
      }
      settle_locked(name, answers);
    }
    deliver(answers);
  };
  watcher_ = std::make_unique<kube::ResourceWatcher>(std::move(connection), kNamespaces, std::move(callbacks),
                                                     std::move(options));
  for (auto& getter : getters_) threads_.emplace_back([this, client = getter.get()] { get_loop(*client); });
  threads_.emplace_back([this] { deadline_loop(); });
}

ClusterNamespaces::~ClusterNamespaces() { stop(); }

void ClusterNamespaces::start() {
  spdlog::info("watching Namespaces (metadata only) for the policy's namespace labels");
  watcher_->start();
}

void ClusterNamespaces::stop() {
  Answers answers;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    for (auto& [name, lookup] : lookups_) {
      for (auto& waiter : lookup->waiters) {
        if (!std::exchange(waiter->answered, true)) answers.emplace_back(waiter, unknown(kShuttingDown));
      }
    }
  }
  queued_.notify_all();
  deadline_moved_.notify_all();
  watcher_->stop();
  for (auto& getter : getters_) getter->cancel();
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  deliver(answers);
}

std::size_t ClusterNamespaces::known() const {
  std::lock_guard lock(mutex_);
  return labels_.size();
}

bool ClusterNamespaces::listed() const {
  std::lock_guard lock(mutex_);
  return listed_;
}

NamespaceLookup ClusterNamespaces::find(const std::string& namespace_name) const {
  std::lock_guard lock(mutex_);
  return find_locked(namespace_name, Clock::now());
}

NamespaceLookup ClusterNamespaces::find_locked(const std::string& namespace_name, Clock::time_point now) const {
  if (stopping_) return unknown(kShuttingDown);
  if (auto it = labels_.find(namespace_name); it != labels_.end()) return {it->second, ""};
  if (namespace_name.empty()) return unknown("no namespace");
  if (!is_dns_label(namespace_name)) return unknown("not a namespace name");
  if (auto it = absent_.find(namespace_name); it != absent_.end()) {
    if (now < it->second) return unknown(kAbsent);
    absent_.erase(it);
  }
  return {std::nullopt, "not seen yet", /*pending=*/true};
}

void ClusterNamespaces::remember_absent(const std::string& namespace_name, Clock::time_point now) const {
  if (absent_.size() >= options_.max_absent && absent_.count(namespace_name) == 0) {
    std::erase_if(absent_, [now](const auto& entry) { return entry.second <= now; });
    if (absent_.size() >= options_.max_absent) return;  // full of fresh ones: this one is asked again
  }
  absent_[namespace_name] = now + options_.remember_absent;
}

void ClusterNamespaces::settle_locked(const std::string& namespace_name, Answers& answers) {
  auto it = lookups_.find(namespace_name);
  if (it == lookups_.end()) return;
  it->second->watch_spoke = true;
  NamespaceLookup lookup = find_locked(namespace_name, Clock::now());
  if (lookup.pending) return;  // the watch has not said whether it exists: its GET will
  for (auto& waiter : it->second->waiters) {
    if (!std::exchange(waiter->answered, true)) answers.emplace_back(waiter, lookup);
  }
  it->second->waiters.clear();
  if (!it->second->sent) lookups_.erase(it);  // a GET still queued is not sent
}

void ClusterNamespaces::await(const std::string& namespace_name, Clock::time_point deadline,
                              std::function<void(NamespaceLookup)> done) const {
  NamespaceLookup lookup;
  {
    std::lock_guard lock(mutex_);
    const Clock::time_point now = Clock::now();
    lookup = find_locked(namespace_name, now);
    if (lookup.pending && now >= deadline) lookup = unknown(kNotInTime);
    if (lookup.pending) {
      auto waiter = std::make_shared<Waiter>(Waiter{std::move(done)});
      std::shared_ptr<Lookup>& entry = lookups_[namespace_name];
      if (!entry) {
        entry = std::make_shared<Lookup>();
        queue_.push_back(namespace_name);
        queued_.notify_one();
      }
      entry->waiters.push_back(waiter);
      const bool earliest = deadlines_.empty() || deadline < deadlines_.begin()->first;
      deadlines_.emplace(deadline, waiter);
      if (earliest) deadline_moved_.notify_one();
      return;
    }
  }
  done(std::move(lookup));
}

void ClusterNamespaces::get_loop(kube::ApiClient& client) {
  std::unique_lock lock(mutex_);
  while (true) {
    queued_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    const std::string name = std::move(queue_.front());
    queue_.pop_front();
    auto it = lookups_.find(name);
    if (it == lookups_.end() || it->second->sent) continue;  // the watch answered it, or a GET is on its way
    const std::shared_ptr<Lookup> lookup = it->second;
    if (std::none_of(lookup->waiters.begin(), lookup->waiters.end(), [](const auto& w) { return !w->answered; })) {
      lookups_.erase(it);  // every waiter's deadline passed: nobody needs the answer
      continue;
    }
    lookup->sent = true;
    lock.unlock();
    enum class Outcome { Found, Absent, Failed } outcome = Outcome::Failed;
    LabelMap labels;
    std::string why;
    try {
      labels = namespace_labels_of(client.get(kube::resource_path("", "v1", "namespaces", "", name)));
      outcome = Outcome::Found;
    } catch (const kube::ApiError& e) {
      if (e.status() == 404) {
        outcome = Outcome::Absent;
      } else {
        why = e.cancelled() ? kShuttingDown
              : e.status() > 0 ? "GET answered " + std::to_string(e.status()) + (e.reason().empty() ? "" : " " + e.reason())
                               : "GET failed: no answer from the API server";
        spdlog::warn("namespace \"{}\": labels unknown: {}", name, loggable(e.what()));
      }
    } catch (const std::exception& e) {
      why = "GET failed";
      spdlog::warn("namespace \"{}\": labels unknown: {}", name, loggable(e.what()));
    }
    lock.lock();
    const Clock::time_point now = Clock::now();
    NamespaceLookup answer = outcome == Outcome::Found    ? NamespaceLookup{labels, ""}
                             : outcome == Outcome::Absent ? unknown(kAbsent)
                                                          : unknown(why.size() <= 80 ? why : why.substr(0, 77) + "...");
    if (lookup->watch_spoke) {
      // The watch's word wins; when it has none for this name, the GET's answers its waiters, unkept.
      if (NamespaceLookup store = find_locked(name, now); !store.pending) answer = std::move(store);
    } else if (outcome == Outcome::Found) {
      labels_[name] = std::move(labels);
    } else if (outcome == Outcome::Absent) {
      remember_absent(name, now);
    }
    Answers answers;
    for (auto& waiter : lookup->waiters) {
      if (!std::exchange(waiter->answered, true)) answers.emplace_back(waiter, answer);
    }
    if (auto current = lookups_.find(name); current != lookups_.end() && current->second == lookup) lookups_.erase(current);
    lock.unlock();
    deliver(answers);
    lock.lock();
  }
}

void ClusterNamespaces::deadline_loop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (deadlines_.empty()) {
      deadline_moved_.wait(lock);
      continue;
    }
    if (const Clock::time_point next = deadlines_.begin()->first; Clock::now() < next) {
      deadline_moved_.wait_until(lock, next);
      continue;
    }
    Answers answers;
    const Clock::time_point now = Clock::now();
    while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
      if (auto waiter = deadlines_.begin()->second.lock(); waiter && !std::exchange(waiter->answered, true)) {
        answers.emplace_back(waiter, unknown(kNotInTime));
      }
      deadlines_.erase(deadlines_.begin());
    }
    lock.unlock();
    deliver(answers);
    lock.lock();
  }
}

// Outside the lock: a waiter's callback may do anything (post an admission's answer, or answer it).
void ClusterNamespaces::deliver(Answers& answers) {
  for (auto& [waiter, lookup] : answers) {
    std::function<void(NamespaceLookup)> done = std::move(waiter->done);
    waiter->done = nullptr;  // what it holds (a connection) goes now, not when the lookup ends
    done(std::move(lookup));
  }
}

}  // namespace karta
