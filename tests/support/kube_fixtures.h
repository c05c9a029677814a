#pragma once

// What the tests of the Kubernetes client and its watcher share: the kartas collection's path, a Karta
// object, a quick poll and watcher options with short pages and backoffs. In a namespace of their own
// because karta::test::eventually (support/running_webhook.h) is another poll: every 50 ms, no default
// limit.

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/watcher.h"

namespace karta::test::kube_fixtures {

using json = nlohmann::json;

constexpr const char* kKartas = "/apis/run.ai/v1alpha1/kartas";

// Waits for `condition`, looking every 2 ms, at most `timeout`.
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout = std::chrono::seconds(5));

json karta_object(const std::string& name, const std::string& kind = "Job");

std::vector<std::string> names(const std::vector<json>& objects);

kube::WatcherOptions test_options();

}  // namespace karta::test::kube_fixtures
