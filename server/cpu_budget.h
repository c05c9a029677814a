#pragma once

// How many CPUs this process may use: the CPUs it may run on (sched_getaffinity), further limited by a
// cgroup CPU quota when it has one (a container's `resources.limits.cpu`), rounded up. A node's core
// count alone would give a pod limited to 2 CPUs on a 64-core node 64 threads and 64 copies of every jq
// program.

#include <cstddef>
#include <optional>
#include <string_view>

namespace karta {

std::size_t available_cpus();

// The server's worker threads when --threads is not given: one per available CPU, at most 256.
std::size_t default_server_threads();

// The CPUs a cgroup v2 `cpu.max` line allows ("200000 100000" -> 2, "150000 100000" -> 2), or nullopt
// for no limit ("max 100000") or text that is not a quota.
std::optional<std::size_t> cpus_from_cgroup_v2(std::string_view cpu_max);

// The same from cgroup v1's cpu.cfs_quota_us and cpu.cfs_period_us (a quota of -1: no limit).
std::optional<std::size_t> cpus_from_cgroup_v1(std::string_view quota_us, std::string_view period_us);

}  // namespace karta
