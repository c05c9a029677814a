#pragma once

// How long a watcher waits before it retries, after client-go's reflector (tools/cache/reflector.go):
// NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0). Each wait starts at 0.8 s and doubles up to
// 30 s, and each is stretched by a random share of itself (jitter 1.0: a wait of d lasts from d up to
// 2d), so that many clients retrying at once spread out. A persistent failure therefore settles at one
// retry every 30 to 60 s. The waits start over from 0.8 s only when no wait has begun for 2 minutes,
// which in a watcher means a LIST and watch that lasted that long: a failure that returns at once (a
// 410 on every watch, an API server that answers 500) keeps the waits growing.

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>

namespace karta::kube {

struct BackoffOptions {
  std::chrono::milliseconds initial{800};
  std::chrono::milliseconds cap{30'000};  // the longest wait before jitter
  double jitter = 1.0;                    // a wait of d lasts d + r * jitter * d, r drawn from [0, 1)
  // client-go's resetDuration: "If we don't backoff for 2min, assume API server is healthy".
  std::chrono::milliseconds reset_after{120'000};
  // The jitter's random numbers: a fixed seed repeats them (tests); none seeds from std::random_device.
  std::optional<std::uint64_t> seed;
};

class RetryBackoff {
 public:
  explicit RetryBackoff(BackoffOptions options = {});

  // The wait to begin at `now`, before the next retry.
  std::chrono::milliseconds next(std::chrono::steady_clock::time_point now);

  // A number from [0, 1) made of the top 53 bits of one draw of `random`: std::mt19937_64's draws are
  // fixed by the C++ standard, so a seed gives the same waits with every standard library (which
  // std::uniform_real_distribution does not promise).
  static double unit_fraction(std::mt19937_64& random);

 private:
  BackoffOptions options_;
  std::mt19937_64 random_;
  std::chrono::milliseconds step_;  // the next wait before jitter
  std::optional<std::chrono::steady_clock::time_point> last_wait_started_;
};

}  // namespace karta::kube
