#include "server/cpu_budget.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace karta {
namespace {

std::optional<std::int64_t> parse_integer(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<std::size_t> quota_cpus(std::optional<std::int64_t> quota, std::optional<std::int64_t> period) {
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;
  return static_cast<std::size_t>(std::max<std::int64_t>(1, (*quota + *period - 1) / *period));
}

std::optional<std::string> read_file(const char* path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::optional<std::size_t> cpus_from_cgroup_v2(std::string_view cpu_max) {
  auto space = cpu_max.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  return quota_cpus(parse_integer(cpu_max.substr(0, space)), parse_integer(cpu_max.substr(space + 1)));
}

std::optional<std::size_t> cpus_from_cgroup_v1(std::string_view quota_us, std::string_view period_us) {
  return quota_cpus(parse_integer(quota_us), parse_integer(period_us));
}

std::size_t available_cpus() {
  std::size_t cpus = std::max(1u, std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = std::max(1, CPU_COUNT(&set));
  std::optional<std::size_t> quota;
  if (auto v2 = read_file("/sys/fs/cgroup/cpu.max")) {
    quota = cpus_from_cgroup_v2(*v2);
  } else if (auto v1 = read_file("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")) {
    if (auto period = read_file("/sys/fs/cgroup/cpu/cpu.cfs_period_us")) quota = cpus_from_cgroup_v1(*v1, *period);
  }
  return quota ? std::min(cpus, *quota) : cpus;
}

std::size_t default_server_threads() { return std::min<std::size_t>(256, available_cpus()); }

}  // namespace karta
