#pragma once

// The seed's demo JobSet on the local API server: the JobSet of examples/jobset-demo.yaml, its three Jobs
// and its three running pods, written as the JobSet and Job controllers write them, label for label, in
// namespace research. unit-live-inspect builds its cluster from these pieces; the tests of how the live
// commands reach a cluster (exec credential plugins, proxies, the kubectl plugin) serve the demo whole.

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/live_inspect.h"
#include "support/fake_api_server.h"
#include "support/test_support.h"

namespace karta::test::demo_cluster {

using json = nlohmann::json;

inline constexpr const char* kCreated = "2026-12-02T01:00:00Z";  // every object's creationTimestamp
// The live tests' now: 20 s after kCreated.
std::chrono::system_clock::time_point twenty_seconds_later();

// `inspect` and `list` of a cluster, run in-process: exit code, output and errors.
CliRun inspect(const LiveOptions& options);
CliRun list(const LiveOptions& options);

FakeResource pods();
FakeResource jobs();
FakeResource jobsets();

// An ownerReferences entry naming the controller.
json controller(const std::string& api_version, const std::string& kind, const std::string& name, const std::string& uid);
// A Job of a JobSet, as the JobSet controller creates it.
json job(const std::string& jobset, const std::string& jobset_uid, const std::string& replicated_job, int index);
// A pod of that Job, labelled as the JobSet and Job controllers label it, running and ready on `node`
// when `node` is given, else pending and unschedulable.
json jobset_pod(const std::string& name, const std::string& jobset, const std::string& replicated_job, int index,
                const std::string& node);

json demo_jobset();                    // the JobSet "demo", uid "uid-demo"
std::vector<json> demo_jobsets();      // {demo_jobset()}
std::vector<json> demo_jobs();         // leader 0, worker 0, worker 1
std::vector<json> demo_pods();         // one running pod per Job, all on runai-cluster-worker-0-0

// Serves pods, Jobs and JobSets with the demo's objects on `server`.
void serve_demo(FakeApiServer& server);

// `inspect jobset/demo -n research` of the demo, from the end of its first line (which holds the age).
extern const char* const kDescribeAfterHeader;

}  // namespace karta::test::demo_cluster
