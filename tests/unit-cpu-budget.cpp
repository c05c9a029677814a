// The CPUs the server sizes itself by: affinity, then a cgroup quota (a pod's CPU limit).

#include <doctest/doctest.h>

#include <sched.h>

#include <thread>

#include "server/cpu_budget.h"

namespace unit_cpu_budget {  // this file's names, apart from other tests' in a unity build

using karta::cpus_from_cgroup_v1;
using karta::cpus_from_cgroup_v2;

TEST_CASE("a cgroup v2 cpu.max quota is read as whole CPUs, rounded up") {
  CHECK(cpus_from_cgroup_v2("200000 100000\n") == 2);
  CHECK(cpus_from_cgroup_v2("150000 100000\n") == 2);  // 1.5 CPUs: two threads may run
  CHECK(cpus_from_cgroup_v2("50000 100000") == 1);
  CHECK(cpus_from_cgroup_v2("1000 100000") == 1);
  CHECK(cpus_from_cgroup_v2("max 100000\n") == std::nullopt);  // no limit
  CHECK(cpus_from_cgroup_v2("") == std::nullopt);
  CHECK(cpus_from_cgroup_v2("200000") == std::nullopt);
  CHECK(cpus_from_cgroup_v2("200000 0") == std::nullopt);
  CHECK(cpus_from_cgroup_v2("-5 100000") == std::nullopt);
}

TEST_CASE("a cgroup v1 CFS quota is read the same way; -1 is no limit") {
  CHECK(cpus_from_cgroup_v1("400000\n", "100000\n") == 4);
  CHECK(cpus_from_cgroup_v1("250000", "100000") == 3);
  CHECK(cpus_from_cgroup_v1("-1\n", "100000\n") == std::nullopt);
  CHECK(cpus_from_cgroup_v1("x", "100000") == std::nullopt);
}

TEST_CASE("available CPUs are at least one and at most the CPUs this process may run on") {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(sched_getaffinity(0, sizeof set, &set) == 0);
  std::size_t cpus = karta::available_cpus();
  CHECK(cpus >= 1);
  CHECK(cpus <= static_cast<std::size_t>(CPU_COUNT(&set)));
}

}  // namespace unit_cpu_budget
