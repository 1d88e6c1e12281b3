#pragma once

// PdbRetry: what the preemption controller does when an eviction is refused (DESIGN §4: "respect
// PodDisruptionBudgets — a refused eviction means choose other victims or wait").
//
//  * Blocked-until bookkeeping. A pod whose eviction a PodDisruptionBudget refused is not chosen
//    as a victim again for retry_ms (Candidate::pdb_blocked).
//  * The reselection policy (OnRefused), for a victim whose eviction was refused:
//      - another error, fewer than max_attempts times: retry it at the next run;
//      - else, when some other member of its gang is already evicted or gone: retry it after
//        retry_ms (half a gang is worth nothing, so the gang is finished, not replaced);
//      - else drop it, with the members of its gang not evicted yet, and choose other victims
//        for the round at once — at most max_reselections times per round and run.
//
// Time is passed in (the run's clock reading). Thread-compatible: the controller uses it from
// RunOnce only (serialised).

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "scheduler/actions/round.h"

namespace taskgov::scheduler::actions {

class PdbRetry {
 public:
  struct Options {
    int64_t retry_ms = 30'000;
    int max_attempts = 3;      // per victim, for errors other than a PDB refusal
    int max_reselections = 3;  // per round and run
  };
  explicit PdbRetry(Options options) : options_(options) {}

  // A budget refused the pod's eviction at `now_ms`.
  void Block(const std::string& uid, int64_t now_ms);
  // Still blocked at `now_ms`.
  [[nodiscard]] bool Blocked(const std::string& uid, int64_t now_ms) const;
  // Forgets the blocks over at `now_ms`.
  // Forgets the blocks that ended by `now_ms`; how many did (their pods may be victims again).
  size_t Expire(int64_t now_ms);
  [[nodiscard]] size_t blocked_count() const { return blocked_until_.size(); }

  enum class Step {
    kRetryNextRun,  // it stays to evict
    kRetryLater,    // blocked until retry_at_ms (VictimPhase::kBlocked)
    kChooseAgain,   // drop `drop` from the round and choose other victims
  };
  struct Decision {
    Step step = Step::kRetryNextRun;
    int64_t retry_at_ms = 0;        // kRetryLater
    std::vector<std::string> drop;  // kChooseAgain: uids, in the round's victim order
  };
  // The policy for `refused`, a victim of `victims` (its attempts already counting this refusal
  // unless `by_pdb`).
  [[nodiscard]] Decision OnRefused(const std::vector<RoundVictim>& victims,
                                   const RoundVictim& refused, bool by_pdb, int64_t now_ms) const;
  [[nodiscard]] int max_reselections() const { return options_.max_reselections; }

 private:
  const Options options_;
  std::unordered_map<std::string, int64_t> blocked_until_;  // victim uid → ms
};

}  // namespace taskgov::scheduler::actions
