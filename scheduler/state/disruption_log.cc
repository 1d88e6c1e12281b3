#include "scheduler/state/disruption_log.h"

#include <algorithm>

namespace taskgov::scheduler::state {

int64_t DisruptionLog::Until(const Entry& e) {
  if (e.disruptions < kFirstBackedOff) return e.last_ms;
  int64_t back_off = kFirstBackOffMs;
  for (int i = kFirstBackedOff; i < e.disruptions && back_off < kMaxBackOffMs; ++i) back_off *= 2;
  return e.last_ms + std::min(back_off, kMaxBackOffMs);
}

void DisruptionLog::Note(std::string_view workload, int64_t now_ms, std::string_view stopped_for) {
  if (workload.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  ForgetOldLocked(now_ms);
  auto it = entries_.find(workload);
  if (it == entries_.end()) it = entries_.emplace(std::string(workload), Entry{}).first;
  size_.store(entries_.size(), std::memory_order_relaxed);
  Entry& e = it->second;
  if (e.disruptions > 0 && e.last_ms == now_ms) return;  // another member of the same round
  if (e.disruptions > 0 && now_ms - e.last_ms > kForgetMs) e.disruptions = 0;
  ++e.disruptions;
  e.last_ms = now_ms;
  e.stopped_for = stopped_for;
}

std::optional<DisruptionLog::BackOff> DisruptionLog::BackingOff(std::string_view workload,
                                                                int64_t now_ms,
                                                                const Alive& alive) const {
  if (workload.empty() || size_.load(std::memory_order_relaxed) == 0) return std::nullopt;
  std::string stopped_for;
  BackOff b;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(workload);
    if (it == entries_.end()) return std::nullopt;
    const int64_t until = Until(it->second);
    if (now_ms >= until) return std::nullopt;
    b = BackOff{it->second.disruptions, it->second.last_ms, until, false};
    if (b.disruptions == 1) stopped_for = it->second.stopped_for;
  }
  b.ends_with_preemptor = !stopped_for.empty();
  // Asked without the lock: `alive` takes the cluster's.
  if (!stopped_for.empty() && alive && !alive(stopped_for)) return std::nullopt;
  return b;
}

size_t DisruptionLog::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

// Entries whose last disruption is kForgetMs old are dropped, at most once a minute.
void DisruptionLog::ForgetOldLocked(int64_t now_ms) {
  if (now_ms < next_sweep_ms_) return;
  next_sweep_ms_ = now_ms + 60'000;
  std::erase_if(entries_, [&](const auto& e) { return now_ms - e.second.last_ms > kForgetMs; });
  size_.store(entries_.size(), std::memory_order_relaxed);
}

}  // namespace taskgov::scheduler::state
