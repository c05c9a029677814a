#include "kube/watcher.h"

#include <stdexcept>
#include <utility>

#include <spdlog/spdlog.h>

#include "json/json_document.h"
#include "kube/list_pages.h"
#include "kube/json_fields.h"

namespace karta::kube {

using json = nlohmann::json;

namespace {

// Thrown out of a stream's line callback to stop reading it: the watch has nothing more to give.
struct StreamGone {};

ApiClientOptions client_options(const WatcherOptions& options) {
  ApiClientOptions client = options.client;
  if (options.metadata_only) {
    client.accept = kMetadataListAccept;
    client.stream_accept = kMetadataAccept;
  }
  return client;
}

}  // namespace

const char* to_string(EventType type) {
  switch (type) {
    case EventType::Added:
      return "ADDED";
    case EventType::Modified:
      return "MODIFIED";
    case EventType::Deleted:
      return "DELETED";
  }
  return "?";
}

std::string ResourceWatcher::object_key(const json& object) {
  std::string name = metadata_string(object, "name");
  std::string space = metadata_string(object, "namespace");
  return space.empty() ? name : space + "/" + name;
}

ResourceWatcher::ResourceWatcher(KubeConnection connection, std::string collection, WatcherCallbacks callbacks,
                                 WatcherOptions options)
    : collection_(std::move(collection)),
      callbacks_(std::move(callbacks)),
      options_(std::move(options)),
      client_(std::make_unique<ApiClient>(std::move(connection), client_options(options_))),
      backoff_(options_.backoff) {}

ResourceWatcher::~ResourceWatcher() { stop(); }

void ResourceWatcher::start() {
  if (thread_.joinable() || stopping_) {
    throw std::logic_error("ResourceWatcher for " + collection_ + ": start() after start() or stop()");
  }
  thread_ = std::thread([this] { run(); });
}

void ResourceWatcher::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  client_->cancel();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

bool ResourceWatcher::wait_until_synced(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [this] { return synced_.load() || stopping_.load(); }) && synced_.load();
}

std::map<std::string, std::string> ResourceWatcher::versions() const {
  std::lock_guard lock(mutex_);
  return versions_;
}

std::string ResourceWatcher::resource_version() const {
  std::lock_guard lock(mutex_);
  return resource_version_;
}

std::string ResourceWatcher::last_error() const {
  std::lock_guard lock(mutex_);
  return last_error_;
}

void ResourceWatcher::record_error(const std::string& error) {
  {
    std::lock_guard lock(mutex_);
    last_error_ = error;
  }
  ++errors_;
  spdlog::warn("watching {}: {}", collection_, error);
}

bool ResourceWatcher::back_off() {
  std::unique_lock lock(mutex_);
  std::chrono::milliseconds delay = backoff_.next(std::chrono::steady_clock::now());
  spdlog::debug("watching {}: retrying in {} ms", collection_, delay.count());
  return !changed_.wait_for(lock, delay, [this] { return stopping_.load(); });
}

void ResourceWatcher::run() {
  bool need_list = true;
  while (!stopping_) {
    try {
      if (need_list) {
        list();
        need_list = false;
        continue;
      }
      auto started = std::chrono::steady_clock::now();
      WatchEnd end = watch();
      if (end == WatchEnd::Gone) {
        ++relists_after_gone_;
        need_list = true;
        // Wait before every LIST after a 410, as client-go's reflector does: if even a fresh LIST's
        // resourceVersion is too old to watch from, LIST and WATCH would otherwise alternate as fast as
        // the server answers.
        if (!back_off()) break;
        continue;
      }
      // A stream that ends at once with nothing in it, over and over, would spin too.
      if (events_in_watch_ == 0 && std::chrono::steady_clock::now() - started < std::chrono::seconds(1)) {
        if (!back_off()) break;
      }
    } catch (const ApiError& e) {
      if (stopping_ || e.cancelled()) break;
      record_error(e.what());
      if (!back_off()) break;
    } catch (const std::exception& e) {
      if (stopping_) break;
      record_error(e.what());
      if (!back_off()) break;
    }
  }
}

void ResourceWatcher::list() {
  std::vector<json> items;
  ListSummary summary = list_all(*client_, collection_, {.label_selector = "", .page_size = options_.page_size}, [&](ListPage& page) {
    for (json& item : page.items) {
      if (options_.keep_only) options_.keep_only(item);
      items.push_back(std::move(item));
    }
  });
  const std::string& list_version = summary.resource_version;
  if (list_version.empty()) {
    throw std::runtime_error("GET " + client_->url(collection_) +
                             ": the list has no metadata.resourceVersion to watch from");
  }

  std::map<std::string, std::string> by_key;
  for (const json& item : items) by_key[object_key(item)] = metadata_string(item, "resourceVersion");
  bool unchanged = false;
  {
    std::lock_guard lock(mutex_);
    unchanged = synced_ && by_key == versions_;
    versions_ = std::move(by_key);
    resource_version_ = list_version;
  }
  ++lists_;
  spdlog::info("listed {}: {} objects at resourceVersion {}{}", collection_, items.size(), list_version,
               unchanged ? ", unchanged" : "");
  if (!unchanged) deliver_snapshot(std::move(items));
  synced_ = true;
  {
    std::lock_guard lock(mutex_);  // so that a wait_until_synced cannot miss the change
  }
  changed_.notify_all();
}

void ResourceWatcher::deliver_snapshot(std::vector<json> objects) {
  if (!callbacks_.on_snapshot) return;
  try {
    callbacks_.on_snapshot(std::move(objects));
  } catch (const std::exception& e) {
    record_error(std::string("on_snapshot failed: ") + e.what());
  }
}

ResourceWatcher::WatchEnd ResourceWatcher::watch() {
  std::string query = collection_ + "?watch=1&resourceVersion=" + query_escape(resource_version()) +
                      "&allowWatchBookmarks=true&timeoutSeconds=" + std::to_string(options_.watch_timeout.count());
  const std::string request = "GET " + client_->url(query);
  events_in_watch_ = 0;
  bool gone = false;
  try {
    client_->stream_lines(
        query, options_.watch_timeout + options_.watch_grace,
        [&](std::string_view line) {
          handle_event(request, line, gone);
          if (gone) throw StreamGone{};
        },
        [&] { ++watches_; });
  } catch (const StreamGone&) {
    return WatchEnd::Gone;
  } catch (const ApiError& e) {
    // Some API servers answer a watch from a compacted resourceVersion with 410 itself.
    if (e.status() == 410 && !e.cancelled()) {
      spdlog::info("watching {}: {}; listing again", collection_, e.what());
      return WatchEnd::Gone;
    }
    throw;
  }
  spdlog::debug("watching {}: the stream ended after {} events; watching again from {}", collection_, events_in_watch_,
                resource_version());
  return WatchEnd::Ended;
}

void ResourceWatcher::handle_event(const std::string& request, std::string_view line, bool& gone) {
  // Bounded as every answer is (kube/api_client.h): an event nested too deep is an error, not a crash.
  json event;
  try {
    event = parse_json_within(line, kMaxAnswerDepth);
  } catch (const JsonParseError& e) {
    if (e.too_deep()) {
      throw std::runtime_error(request + ": a watch event is " + e.what() + ", the most an answer may be");
    }
  }
  if (!event.is_object() || !event.contains("object")) {
    std::string shown(line.substr(0, 200));
    throw std::runtime_error(request + ": a line of the stream is not a watch event: " + shown);
  }
  const std::string type = string_at(event, "type");
  json& object = event["object"];
  if (type == "ERROR") {
    ApiError error = ApiError::from_status(request, object);
    if (error.status() == 410) {
      spdlog::info("watching {}: {}; listing again", collection_, error.what());
      gone = true;
      return;
    }
    throw error;  // counted; the watch is retried from the same resourceVersion after a backoff
  }
  ++events_in_watch_;
  std::string version = metadata_string(object, "resourceVersion");
  if (type == "BOOKMARK") {
    // A bookmark says the server has seen everything up to its resourceVersion: the next watch can
    // start there and the server need not keep older history for us.
    if (version.empty()) throw std::runtime_error(request + ": a BOOKMARK event has no metadata.resourceVersion");
    std::lock_guard lock(mutex_);
    resource_version_ = version;
    return;
  }
  EventType event_type;
  if (type == "ADDED") {
    event_type = EventType::Added;
  } else if (type == "MODIFIED") {
    event_type = EventType::Modified;
  } else if (type == "DELETED") {
    event_type = EventType::Deleted;
  } else {
    throw std::runtime_error(request + ": unknown watch event type \"" + type + "\"");
  }
  if (!object.is_object() || metadata_string(object, "name").empty()) {
    throw std::runtime_error(request + ": a " + type + " event's object has no metadata.name");
  }
  if (options_.keep_only) options_.keep_only(object);
  std::string key = object_key(object);
  {
    std::lock_guard lock(mutex_);
    if (event_type == EventType::Deleted) {
      versions_.erase(key);
    } else {
      versions_[key] = version;
    }
    if (!version.empty()) resource_version_ = version;
  }
  spdlog::debug("watching {}: {} {} at resourceVersion {}", collection_, type, key, version);
  if (!callbacks_.on_event) return;
  try {
    callbacks_.on_event(event_type, object);
  } catch (const std::exception& e) {
    record_error(std::string("on_event failed for ") + type + " " + key + ": " + e.what());
  }
}

}  // namespace karta::kube
