#include "scheduler/actions/pdb_retry.h"

namespace taskgov::scheduler::actions {

void PdbRetry::Block(const std::string& uid, int64_t now_ms) {
  blocked_until_[uid] = now_ms + options_.retry_ms;
}

bool PdbRetry::Blocked(const std::string& uid, int64_t now_ms) const {
  auto it = blocked_until_.find(uid);
  return it != blocked_until_.end() && it->second > now_ms;
}

size_t PdbRetry::Expire(int64_t now_ms) {
  const size_t before = blocked_until_.size();
  for (auto it = blocked_until_.begin(); it != blocked_until_.end();) {
    it = it->second <= now_ms ? blocked_until_.erase(it) : std::next(it);
  }
  return before - blocked_until_.size();
}

PdbRetry::Decision PdbRetry::OnRefused(const std::vector<RoundVictim>& victims,
                                       const RoundVictim& refused, bool by_pdb,
                                       int64_t now_ms) const {
  Decision out;
  if (!by_pdb && refused.attempts < options_.max_attempts) return out;
  // Half a gang is worth nothing: once part of it is gone, finish it later.
  bool gang_started = false;
  if (!refused.gang.empty()) {
    for (const RoundVictim& x : victims) {
      gang_started =
          gang_started || (x.gang == refused.gang && x.uid != refused.uid &&
                           (x.phase == VictimPhase::kEvicted || x.phase == VictimPhase::kGone));
    }
  }
  if (gang_started) {
    out.step = Step::kRetryLater;
    out.retry_at_ms = now_ms + options_.retry_ms;
    return out;
  }
  // Drop it (and its gang's members not evicted yet) and choose again.
  out.step = Step::kChooseAgain;
  for (const RoundVictim& x : victims) {
    if (x.uid == refused.uid ||
        (!refused.gang.empty() && x.gang == refused.gang && x.phase == VictimPhase::kToEvict)) {
      out.drop.push_back(x.uid);
    }
  }
  return out;
}

}  // namespace taskgov::scheduler::actions
