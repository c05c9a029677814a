#include "kube/retry_backoff.h"

#include <algorithm>

namespace karta::kube {

RetryBackoff::RetryBackoff(BackoffOptions options)
    : options_(options),
      random_(options.seed ? *options.seed : (std::uint64_t{std::random_device{}()} << 32) | std::random_device{}()),
      step_(options.initial) {}

double RetryBackoff::unit_fraction(std::mt19937_64& random) { return static_cast<double>(random() >> 11) * 0x1.0p-53; }

std::chrono::milliseconds RetryBackoff::next(std::chrono::steady_clock::time_point now) {
  if (last_wait_started_ && now - *last_wait_started_ >= options_.reset_after) step_ = options_.initial;
  last_wait_started_ = now;
  std::chrono::milliseconds wait = step_;
  step_ = std::min(step_ * 2, options_.cap);
  if (options_.jitter > 0) {
    wait += std::chrono::milliseconds(
        static_cast<std::int64_t>(unit_fraction(random_) * options_.jitter * static_cast<double>(wait.count())));
  }
  return wait;
}

}  // namespace karta::kube
