#pragma once

// AdmittedPods: the pods a filter admitted recently, by UID, so that the bind verb binds only
// pods taskgov filtered (issue 36, item 9) — governed pods hold a reservation besides, but a pod
// of no team passed through holds none. An entry lives `ttl_ms` from its last admission
// (kube-scheduler binds within milliseconds of the filter; Admission keeps it longer than the
// assumed reservation, whose expiry the bind repairs).
//
// Bounded: at most kShards × per_shard entries; a full shard first drops its expired entries,
// then all of them (fail closed: a pod dropped so is refused at bind with the reason, and
// kube-scheduler filters it again).
//
// Thread-safety: every method may be called from any thread; the map is split in shards by
// UID hash, each behind its own mutex held for one hash-map operation.

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace taskgov::scheduler::decisions {

class AdmittedPods {
 public:
  static constexpr size_t kShards = 16;
  explicit AdmittedPods(int64_t ttl_ms, size_t per_shard = 4096)
      : ttl_ms_(ttl_ms), per_shard_(per_shard) {}

  // A filter admitted the pod at `now_ms`.
  void Note(std::string_view uid, int64_t now_ms);
  // Whether a filter admitted it within the TTL before `now_ms`.
  [[nodiscard]] bool Admitted(std::string_view uid, int64_t now_ms) const;

 private:
  struct Shard {
    mutable std::mutex mu;
    std::unordered_map<std::string, int64_t> expires_ms;  // by uid
  };
  Shard& ShardOf(std::string_view uid) const;

  const int64_t ttl_ms_;
  const size_t per_shard_;
  mutable std::array<Shard, kShards> shards_;
};

}  // namespace taskgov::scheduler::decisions
