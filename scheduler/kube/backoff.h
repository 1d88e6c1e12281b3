#pragma once

// Backoff: jittered exponential backoff for watch and list retries (DESIGN §5), as client-go's
// reflector does it: the base delay starts at `initial` (0.8 s) and doubles per failure up to
// `max` (30 s); each delay is the base stretched by up to `jitter` (a random fraction, drawn from
// the injected source) and capped at `max`; after `reset_after` (2 min) without a failure the
// base starts over. Time comes from the injected Clock.
//
// Not synchronised: one owner (a reflector thread).

#include <chrono>
#include <functional>

#include "scheduler/common/clock.h"

namespace taskgov::scheduler::kube {

struct BackoffOptions {
  std::chrono::milliseconds initial{800};
  std::chrono::milliseconds max{30'000};
  double factor = 2.0;
  double jitter = 0.2;  // delay ∈ [base, base × (1 + jitter)], capped at max
  std::chrono::milliseconds reset_after{120'000};
};

// A uniform random source in [0, 1). Must be thread-safe when shared.
using RandomSource = std::function<double()>;
// A thread-safe source seeded from std::random_device (or `seed` when non-zero).
[[nodiscard]] RandomSource MakeRandomSource(uint64_t seed = 0);

class Backoff {
 public:
  Backoff(BackoffOptions options, const common::Clock* clock, RandomSource random);

  // The delay to wait after a failure observed now.
  [[nodiscard]] std::chrono::milliseconds Next();
  // The base delay the next failure would start from (for tests and logs).
  [[nodiscard]] std::chrono::milliseconds current_base() const;

 private:
  BackoffOptions options_;
  const common::Clock* clock_;
  RandomSource random_;
  std::chrono::milliseconds base_;
  bool failed_before_ = false;
  common::Clock::SteadyTime last_failure_{};
};

}  // namespace taskgov::scheduler::kube
