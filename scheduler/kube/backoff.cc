#include "scheduler/kube/backoff.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <random>

namespace taskgov::scheduler::kube {

RandomSource MakeRandomSource(uint64_t seed) {
  struct State {
    std::mutex mu;
    std::mt19937_64 engine;
  };
  auto state = std::make_shared<State>();
  state->engine.seed(seed != 0 ? seed
                               : (static_cast<uint64_t>(std::random_device{}()) << 32) ^
                                     std::random_device{}());
  return [state]() {
    std::lock_guard<std::mutex> lock(state->mu);
    return std::uniform_real_distribution<double>(0.0, 1.0)(state->engine);
  };
}

Backoff::Backoff(BackoffOptions options, const common::Clock* clock, RandomSource random)
    : options_(options),
      clock_(clock != nullptr ? clock : common::SystemClock::Get()),
      random_(random ? std::move(random) : MakeRandomSource()),
      base_(options.initial) {}

std::chrono::milliseconds Backoff::Next() {
  const common::Clock::SteadyTime now = clock_->SteadyNow();
  if (failed_before_ && now - last_failure_ >= options_.reset_after) base_ = options_.initial;
  failed_before_ = true;
  last_failure_ = now;
  const std::chrono::milliseconds base = std::min(base_, options_.max);
  const double r = std::clamp(random_(), 0.0, 1.0);
  auto delay = std::chrono::milliseconds(
      static_cast<int64_t>(static_cast<double>(base.count()) * (1.0 + options_.jitter * r)));
  delay = std::min(delay, options_.max);
  const double next = static_cast<double>(base.count()) * options_.factor;
  base_ = next >= static_cast<double>(options_.max.count())
              ? options_.max
              : std::chrono::milliseconds(static_cast<int64_t>(next));
  return delay;
}

std::chrono::milliseconds Backoff::current_base() const { return base_; }

}  // namespace taskgov::scheduler::kube
