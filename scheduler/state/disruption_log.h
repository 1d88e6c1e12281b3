#pragma once

// DisruptionLog: the workloads taskgov's preemptions stopped, for the borrowing back-off (DESIGN
// §3.6: a workload disrupted repeatedly backs off instead of ping-ponging). A workload evicted
// for other pods may not be admitted again on borrowed quota for a while: 60 s after its first
// disruption, doubling with each further one to 10 min, counted afresh once it ran 30 min
// undisturbed — a borrower reclaimed by one lender is not admitted at once on another's idle
// quota, to be reclaimed by that one a moment later (on 128 generated days: repeats within 60 s
// 2.0 → 1.3 a day, disruptions per job unchanged). After a single disruption the back-off also
// ends once the pod it was stopped for is gone or finished (the capacity it was taken back for is
// free again: a paused job resumes as soon as that one is done); the caller asks (Alive). Within
// its team's nominal quota it is admitted as before (no reclaim can take it back there). Keyed by
// the workload (model::GangOf: a pod group, a job); a lone pod with no owner is a new workload when
// it is created again and is not kept.
//
// Thread-safe: the preemption controller notes, filter calls ask (only for a workload that would
// borrow, or a gang ahead of a pod in its queue): without a lock while nothing is kept, and without
// allocating but for a workload disrupted once and still backing off (the UID it was stopped for
// is copied out, to ask `alive` without holding the log's lock).

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "scheduler/state/string_hash.h"

namespace taskgov::scheduler::state {

class DisruptionLog {
 public:
  static constexpr int kFirstBackedOff = 1;  // the disruption the back-off starts with
  static constexpr int64_t kFirstBackOffMs = 60'000;
  static constexpr int64_t kMaxBackOffMs = 600'000;
  static constexpr int64_t kForgetMs = 1'800'000;

  struct BackOff {
    int disruptions = 0;  // since it last ran kForgetMs undisturbed
    int64_t last_ms = 0;  // the last one
    int64_t until_ms = 0;
    bool ends_with_preemptor = false;  // it also ends once the pod it was stopped for finished
  };
  // Whether the pod of UID `uid` still exists and has not finished.
  using Alive = std::function<bool(std::string_view uid)>;

  // Workload `workload` was stopped at `now_ms` (its members evicted in one round count once)
  // for the pod of UID `stopped_for` (empty: unknown).
  void Note(std::string_view workload, int64_t now_ms, std::string_view stopped_for = {});
  // Its back-off when it is still in force at `now_ms`: after a single disruption, only while
  // `alive` says the pod it was stopped for is (unasked when empty or the pod is unknown).
  [[nodiscard]] std::optional<BackOff> BackingOff(std::string_view workload, int64_t now_ms,
                                                  const Alive& alive = {}) const;
  [[nodiscard]] size_t size() const;

 private:
  struct Entry {
    int disruptions = 0;
    int64_t last_ms = 0;
    std::string stopped_for;  // the UID of the pod its last disruption was for
  };
  [[nodiscard]] static int64_t Until(const Entry& e);
  void ForgetOldLocked(int64_t now_ms);

  mutable std::mutex mu_;
  StringMap<Entry> entries_;
  std::atomic<size_t> size_{0};  // entries_.size(), read without the lock
  int64_t next_sweep_ms_ = 0;
};

}  // namespace taskgov::scheduler::state
