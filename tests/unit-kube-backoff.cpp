// The watcher's retry backoff, after client-go's reflector: growth from 0.8 s, the 30 s cap, the jitter
// and its bounds, the seed, and the rule that starts the waits over.

#include <doctest/doctest.h>

#include <chrono>
#include <vector>

#include "kube/retry_backoff.h"

namespace unit_kube_backoff {  // this file's names, apart from other tests' in a unity build

namespace kube = karta::kube;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// The waits of `count` retries, each begun `apart` after the one before.
std::vector<long long> waits(kube::RetryBackoff& backoff, int count, Clock::duration apart = 1s,
                             Clock::time_point start = Clock::time_point{}) {
  std::vector<long long> result;
  for (int i = 0; i < count; ++i) result.push_back(backoff.next(start + i * apart).count());
  return result;
}

}  // namespace

TEST_CASE("without jitter the waits are client-go's steps: 0.8 s doubling to the 30 s cap, then 30 s") {
  kube::RetryBackoff backoff({.jitter = 0});
  CHECK(waits(backoff, 9) == std::vector<long long>{800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000});
}

TEST_CASE("with client-go's jitter (1.0) each wait of a step d lasts from d up to 2d, drawn from the seeded generator") {
  const std::vector<long long> steps{800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000, 30000};
  kube::RetryBackoff backoff({.seed = 42});
  std::vector<long long> drawn = waits(backoff, 10, 61s);
  // The same draws, made here from a generator of the same seed: d + floor(r * d).
  std::mt19937_64 random(42);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    CAPTURE(i);
    double r = kube::RetryBackoff::unit_fraction(random);
    CHECK(r >= 0.0);
    CHECK(r < 1.0);
    CHECK(drawn[i] == steps[i] + static_cast<long long>(r * static_cast<double>(steps[i])));
    CHECK(drawn[i] >= steps[i]);
    CHECK(drawn[i] < 2 * steps[i]);
  }
  // A seed repeats its waits; another seed draws others.
  kube::RetryBackoff again({.seed = 42});
  CHECK(waits(again, 10, 61s) == drawn);
  kube::RetryBackoff other({.seed = 43});
  CHECK(waits(other, 10, 61s) != drawn);
  // std::mt19937_64's draws are fixed by the standard: its first from the default seed, 5489, is
  // 14514284786278117030, so the first wait is 800 + floor(800 * 0.78682...) ms on every platform.
  kube::RetryBackoff standard({.seed = 5489});
  CHECK(standard.next(Clock::time_point{}) == 1429ms);
}

TEST_CASE("the waits start over only when no wait has begun for two minutes, as client-go's resetDuration") {
  kube::RetryBackoff backoff({.jitter = 0});
  Clock::time_point t{};
  CHECK(backoff.next(t) == 800ms);
  CHECK(backoff.next(t += 2s) == 1600ms);
  CHECK(backoff.next(t += 119s) == 3200ms);  // a watch that lasted less than two minutes: still growing
  CHECK(backoff.next(t += 120s) == 800ms);   // one that lasted two minutes: the server is taken as healthy
  CHECK(backoff.next(t += 1s) == 1600ms);
  // A persistent failure retried every 30-60 s never waits two minutes between waits: it stays capped.
  kube::RetryBackoff capped({.seed = 1});
  std::vector<long long> late = waits(capped, 20, 0s);
  Clock::time_point now{};
  kube::RetryBackoff persistent({.seed = 1});
  for (long long expected : late) {
    auto wait = persistent.next(now);
    CHECK(wait.count() == expected);
    now += wait + 50ms;  // the wait, then a LIST and a watch that fail at once
  }
  CHECK(late.back() >= 30000);
}

TEST_CASE("shorter timings for tests keep the same shape: growth, cap and jitter bounds") {
  kube::RetryBackoff backoff({.initial = 50ms, .cap = 200ms, .seed = 7});
  std::vector<long long> drawn = waits(backoff, 6);
  const std::vector<long long> steps{50, 100, 200, 200, 200, 200};
  for (std::size_t i = 0; i < steps.size(); ++i) {
    CAPTURE(i);
    CHECK(drawn[i] >= steps[i]);
    CHECK(drawn[i] < 2 * steps[i]);
  }
}

}  // namespace unit_kube_backoff
