#pragma once

// What the tests of the Kubernetes client and its watcher share: the kartas collection's path, a Karta
// object, a quick poll and watcher options with short pages and backoffs. In a namespace of their own
// because karta::test::eventually (support/running_webhook.h) is another poll: every 50 ms, no default
// limit.

#include <chrono>
#include <filesystem>
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

// A kubeconfig for `connection` split over two files, as $KUBECONFIG can list them: DIR/cluster.yaml
// holds the cluster (its CA in the file ca.pem beside it), the context and current-context;
// DIR/user/user.yaml the user (its token in the file token beside it). Returns
// "DIR/cluster.yaml:DIR/user/user.yaml:DIR/missing.yaml": the third file does not exist.
std::string split_kubeconfig(const std::filesystem::path& dir, const kube::KubeConnection& connection);

}  // namespace karta::test::kube_fixtures
