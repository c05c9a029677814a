#pragma once

// The seed's demo JobSet on the local API server, for the tests of how the live commands reach a cluster
// (exec credential plugins, proxies, the kubectl plugin): the JobSet of examples/jobset-demo.yaml, its
// three Jobs and its three running pods, written as the JobSet and Job controllers write them (the same
// objects unit-live-inspect builds), in namespace research.

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/fake_api_server.h"

namespace karta::test::demo_cluster {

using json = nlohmann::json;

FakeResource pods();
FakeResource jobs();
FakeResource jobsets();
std::vector<json> demo_jobsets();  // the JobSet "demo", created 2026-12-02T01:00:00Z
std::vector<json> demo_jobs();
std::vector<json> demo_pods();

// Serves pods, Jobs and JobSets with the demo's objects on `server`.
void serve_demo(FakeApiServer& server);

// `inspect jobset/demo -n research` of the demo, from the end of its first line (which holds the age).
extern const char* const kDescribeAfterHeader;

}  // namespace karta::test::demo_cluster
