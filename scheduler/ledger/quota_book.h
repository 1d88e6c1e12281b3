#pragma once

// QuotaBook: the ledger plus the reservations behind its counters, keyed by pod UID.
//
// A reservation is *assumed* after a positive filter (it expires after a TTL unless confirmed),
// *bound* once the pod is seen bound (or bound by us), and gone once released. Every operation is
// idempotent per UID: confirming a bound pod again, releasing twice, or an informer replaying
// events changes nothing; a re-filter of an assumed pod replaces its reservation; a pod recreated
// under a new UID is a new reservation (its predecessor's is released when that pod goes).
//
// Consistency: each operation opens a Ledger::Session and then claims the records it changes —
// the pod's reservation, then (for a gang member) its gang's hold — so the ledger counters and
// the records change together, and Reconcile() — which rebuilds the counters from the records
// while no session is open — sees them quiescent. A release the ledger refuses (an over-release:
// the counters had drifted from the records) is logged as a warning naming the team, flavor and
// resource, counted by the ledger (Ledger::over_releases), and the operation goes on;
// Reconcile() repairs the counters.
//
// Thread-safety: all methods are thread-safe, and none takes a lock that calls for different pods
// share. Reservations and gang holds live in RecordTables (record_table.h): found and inserted
// without a lock, each record changed under its own claim — held by one operation on that pod (or
// gang), for a few counter steps, never across I/O or another component's lock; claims are taken
// in one order (a pod's reservation before its gang's hold; two holds in key order), so they
// cannot deadlock. Two filters wait for each other only when they are for the same pod, or for
// members of the same gang while they take their shares; claim_waits() counts the times a caller
// found a claim taken. The per-team counts behind CountByTeam() and Reconcile() are atomic tallies
// (team_tally.h). The tables are compacted (empty records freed, the arrays regrown) by
// ExpireAssumed() inside Ledger::Quiesce; a table too full to take a new pod's reservation — a
// burst of new pods larger than the room left since the last compaction — refuses it with
// RefusalKind::kBusy (fail closed; kube-scheduler tries again) and has the next ExpireAssumed()
// compact.
//
// Requests come as IdAmounts (resource ids; the hot path, no name lookups) or as a ResourceList
// (converted once with KnownIdAmounts, lock-free).

#include <array>
#include <atomic>
#include <bit>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "scheduler/common/clock.h"
#include "scheduler/ledger/ledger.h"
#include "scheduler/ledger/record_table.h"
#include "scheduler/ledger/team_tally.h"
#include "scheduler/model/string_pool.h"

namespace taskgov::scheduler::ledger {

inline constexpr model::NameId kNoNode = 0xffffffff;

enum class ReservationState : uint8_t { kAssumed, kBound };

// What decisions need to know about a charged pod without the pod store.
// 32 bytes: one is kept with every reservation.
struct PodMeta {
  int32_t priority = 0;
  model::NameId node = kNoNode;
  // The gang it is a member of (WorkloadRef::key), "" for a lone pod. Pooled (4 bytes; "" takes
  // no lock): a std::string was 32 bytes of every reservation, most of them lone pods'.
  model::PooledString workload;
  int64_t created_ms = 0;
  int64_t admitted_ms = 0;  // when it was admitted (assumed or seen bound first)
};

// A gang's quota (DESIGN §3.7): what its first member's filter reserved for every member, less
// the shares members took. Charges are canonical per cell, so a share moves between the gang's
// charge and a member's reservation without touching the ledger's counters.
// A gang whose pod sets run on different flavors (a launcher on CPU nodes, workers pinned to GPU
// nodes) holds a part on each, reserved together.
inline constexpr size_t kMaxGangFlavors = 4;

struct GangHold {
  // The gang's key, pooled once for the gang: its members' reservations copy it (PodMeta.workload),
  // which takes no lock, where pooling it for each member would take the pool's.
  model::PooledString key;
  model::NameId team = 0;
  int32_t size = 0;     // members the gang declares
  int32_t holders = 0;  // members holding a reservation (assumed or bound)
  // Reserved for members that have not taken their share yet: a charge per flavor, the first
  // member's first.
  std::array<Charge, kMaxGangFlavors> remaining{};
  uint8_t parts = 0;
  int64_t reserved_ms = 0;  // since when it waits to be whole
  // The deadline for the gang to be whole — every declared member holding quota — after which
  // `remaining` is released and the members holding quota are reported (TakeExpiredGangs):
  // set when the gang starts waiting (its first member, or a member lost after it was whole),
  // kNever while it is whole.
  int64_t expires_ms = kNever;
  int64_t ttl_ms = 0;
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

  // Whether quota is held for members that have not taken their share (on `flavor`).
  [[nodiscard]] bool holds_quota() const {
    for (uint8_t p = 0; p < parts; ++p) {
      if (Holds(remaining[p])) return true;
    }
    return false;
  }
  [[nodiscard]] bool holds_quota(model::NameId flavor) const {
    const Charge* part = Part(flavor);
    return part != nullptr && Holds(*part);
  }
  // The part on `flavor`, if the gang holds one there.
  [[nodiscard]] const Charge* Part(model::NameId flavor) const {
    for (uint8_t p = 0; p < parts; ++p) {
      if (remaining[p].flavor == flavor) return &remaining[p];
    }
    return nullptr;
  }
  [[nodiscard]] Charge* Part(model::NameId flavor) {
    return const_cast<Charge*>(std::as_const(*this).Part(flavor));
  }

 private:
  static bool Holds(const Charge& c) {
    for (uint8_t i = 0; i < c.count; ++i) {
      if (c.items[i].amount > 0) return true;
    }
    return false;
  }
};

// What a gang's members pinned to another flavor need there (AssumeMember).
struct FlavorNeed {
  model::NameId flavor = 0;
  model::IdAmounts need;
};

struct Reservation {
  Charge charge;
  ReservationState state = ReservationState::kAssumed;
  int64_t expires_ms = 0;  // assumed only
  PodMeta meta;
};

class QuotaBook {
 public:
  QuotaBook(model::PolicyPtr policy, const common::Clock* clock);
  QuotaBook(const QuotaBook&) = delete;
  QuotaBook& operator=(const QuotaBook&) = delete;

  // After a positive filter: reserves `request` for (team, flavor) as an assumed reservation that
  // expires after `ttl_ms`, replacing an earlier assumed reservation of the same UID. A bound
  // UID is left as it is and its charge returned.
  [[nodiscard]] std::variant<Charge, Refusal> Assume(std::string_view uid, model::NameId team,
                                                     model::NameId flavor,
                                                     const model::IdAmounts& request,
                                                     Ledger::Mode mode, int64_t ttl_ms,
                                                     const PodMeta& meta);
  [[nodiscard]] std::variant<Charge, Refusal> Assume(std::string_view uid, model::NameId team,
                                                     model::NameId flavor,
                                                     const model::ResourceList& request,
                                                     Ledger::Mode mode, int64_t ttl_ms,
                                                     const PodMeta& meta);
  // The same inside the caller's session: a decision that read the ledger through `session`
  // reserves in the generation it read (and opens no second session on its thread).
  [[nodiscard]] std::variant<Charge, Refusal> Assume(Ledger::Session& session, std::string_view uid,
                                                     model::NameId team, model::NameId flavor,
                                                     const model::IdAmounts& request,
                                                     Ledger::Mode mode, int64_t ttl_ms,
                                                     const PodMeta& meta);
  [[nodiscard]] std::variant<Charge, Refusal> Assume(Ledger::Session& session, std::string_view uid,
                                                     model::NameId team, model::NameId flavor,
                                                     const model::ResourceList& request,
                                                     Ledger::Mode mode, int64_t ttl_ms,
                                                     const PodMeta& meta);

  // For a member of gang `workload` (declaring `size` members; this one asks `request`):
  // admits it on `flavor` with a share of the gang's reservation there. When the gang holds none
  // yet, reserves for every member at once, all or nothing — `gang_need` (what the members not
  // holding a reservation need together on `flavor`, this one included) or, when null, (size −
  // members holding a reservation) × request, and `elsewhere`: what members pinned to other
  // flavors need there — and keeps the rest for the others until `gang_ttl_ms` has passed; what
  // is left once every member took its share goes back. A member beyond what the gang
  // reserved (more pods than declared, or a recreated one) is reserved alone. A re-filter of a
  // member keeps its share; a bound UID is left as it is. The share is an assumed reservation
  // expiring after `ttl_ms`, as Assume's. Its PodMeta is `meta` with the gang's pooled key (the
  // hold's: only a gang's first member pools it; `meta.workload` is not read).
  [[nodiscard]] std::variant<Charge, Refusal> AssumeMember(
      Ledger::Session& session, std::string_view uid, std::string_view workload, int32_t size,
      model::NameId team, model::NameId flavor, const model::IdAmounts& request, Ledger::Mode mode,
      int64_t ttl_ms, int64_t gang_ttl_ms, const PodMeta& meta,
      const model::IdAmounts* gang_need = nullptr, std::span<const FlavorNeed> elsewhere = {});
  // The gang's hold, if it has one.
  [[nodiscard]] std::optional<GangHold> FindGang(std::string_view workload) const;

  enum class ConfirmOutcome { kConfirmedAssumed, kCharged, kAlreadyBound };
  // The pod is bound (seen bound, or bound by us). An assumed reservation on the same flavor
  // becomes bound; otherwise the pod's request is charged unconditionally (existing usage).
  ConfirmOutcome ConfirmBound(std::string_view uid, model::NameId team, model::NameId flavor,
                              const model::IdAmounts& request, const PodMeta& meta);
  ConfirmOutcome ConfirmBound(std::string_view uid, model::NameId team, model::NameId flavor,
                              const model::ResourceList& request, const PodMeta& meta);

  // The pod ended, was deleted, or its binding failed. True if a reservation was released.
  bool Release(std::string_view uid);
  // A gang member's assumed share goes back to its gang's hold (not to the ledger): the hold
  // keeps the quota for the gang's other members. What a paused job's resumption reserves for
  // its pods (actions/job_resumer.h): a stand-in member is admitted with the whole gang's need,
  // then hands its share back. False (nothing changed) when `uid` holds no assumed share of a
  // gang whose hold can take it.
  bool ReturnToGang(std::string_view uid);
  // The hold of gang `from`, none of whose members holds a share, becomes gang `to`'s (a
  // resumed RayJob's quota goes to the cluster KubeRay creates for it: its pods' gang). False,
  // nothing moved, when `from` holds nothing or has members; when `to` has a hold already,
  // `from`'s quota is given back.
  bool MoveGang(std::string_view from, std::string_view to);
  // The pod no longer counts as a member of its gang (no-op for a lone pod or one already
  // detached). `lost`: it is terminating (evicted or deleted; it keeps its quota until it is
  // gone), so a member recreated in its place is admitted with the gang again — whole — not
  // alone beside it, and the gang has its timeout to be whole again. Not lost: it completed
  // (Succeeded), and a gang that finishes member by member is not waiting for anyone.
  void DetachFromGang(std::string_view uid, bool lost);
  // Releases assumed reservations whose TTL has passed — a gang member's share goes back to its
  // gang while the gang holds quota — and the quota of gangs whose members did not all come in
  // time (logged, naming the gang and how many members came); returns how many pod reservations
  // expired.
  size_t ExpireAssumed();
  // How many gang holds expired with members missing: monotonic.
  [[nodiscard]] uint64_t gangs_expired() const {
    return gangs_expired_.load(std::memory_order_relaxed);
  }
  // A gang whose hold expired while some of its members held quota: partly admitted, it must not
  // run partly (DESIGN §3.7); the preemption controller evicts those members.
  struct ExpiredGang {
    std::string workload;
    model::NameId team = 0;
    int32_t admitted = 0;  // members holding quota when the hold expired
    int32_t size = 0;
    int64_t waited_s = 0;
  };
  // The partly admitted gangs expired since the last call (at most kMaxExpiredGangs kept).
  [[nodiscard]] std::vector<ExpiredGang> TakeExpiredGangs();
  static constexpr size_t kMaxExpiredGangs = 4096;

  [[nodiscard]] std::optional<Reservation> Find(std::string_view uid) const;
  // Whether pod `uid` holds a reservation (Find without the copy).
  [[nodiscard]] bool Holds(std::string_view uid) const;
  // Whether pod `uid` holds a reservation or its gang `workload` ("" for none) has a hold: Holds
  // or FindGang, in one session and without copying the hold.
  [[nodiscard]] bool HoldsFor(std::string_view uid, std::string_view workload) const;
  // Calls `fn` for every reservation (each under its claim: keep `fn` short, no QuotaBook calls
  // inside).
  void ForEach(const std::function<void(std::string_view uid, const Reservation&)>& fn) const;
  [[nodiscard]] size_t size() const;
  // Reservations per team: bound (running) and assumed pods, and admitted workloads (lone pods
  // holding a reservation, and gangs once each).
  struct TeamCounts {
    int64_t running = 0;
    int64_t assumed = 0;
    int64_t workloads = 0;
  };
  [[nodiscard]] std::unordered_map<model::NameId, TeamCounts> CountByTeam() const;
  // How many times an operation found a record claimed by another and waited: monotonic.
  [[nodiscard]] uint64_t claim_waits() const {
    return claim_waits_.load(std::memory_order_relaxed);
  }

  // Checks the ledger counters against the reservations (their sums kept per team, so without
  // a walk of every reservation) and, when some cell drifted, rebuilds the counters from the
  // reservations; reports the cells that had drifted.
  std::vector<Ledger::Drift> Reconcile();
  // New limits; usage kept.
  void ApplyPolicy(model::PolicyPtr policy) { ledger_.ApplyPolicy(std::move(policy)); }

  [[nodiscard]] Ledger& ledger() { return ledger_; }
  [[nodiscard]] const Ledger& ledger() const { return ledger_; }

 private:
  using Records = RecordTable<Reservation>;
  using Gangs = RecordTable<GangHold>;
  struct Shard {
    Records table{kShardHeadroom};
    // No assumed reservation of the shard expires before this (a lower bound, lowered by every
    // assumption, reset and rebuilt by the sweep), so ExpireAssumed skips a shard with nothing
    // due — at 100,000 bound pods the sweep was a walk of every reservation each second.
    // Relaxed: a sweep that misses a bound lowered at that instant sweeps it at the next tick.
    std::atomic<int64_t> next_due_ms{std::numeric_limits<int64_t>::max()};
    // An assumed reservation expires at `expires_ms`.
    void Due(int64_t expires_ms) {
      int64_t cur = next_due_ms.load(std::memory_order_relaxed);
      while (expires_ms < cur &&
             !next_due_ms.compare_exchange_weak(cur, expires_ms, std::memory_order_relaxed)) {
      }
    }
  };
  // Shards only split the sweep and the compaction; no operation waits for another on a shard.
  static constexpr size_t kShards = 32;
  static constexpr size_t kShardHeadroom = 256;  // records each shard has room for when empty

  // A shard is chosen by the hash's top bits: a shard's table probes from its low bits, and keys
  // that shared those would start their probes on a thirty-second of the slots.
  Shard& ShardOf(size_t hash) const {
    static_assert((kShards & (kShards - 1)) == 0 && kShards > 1);
    constexpr int kShardBits = std::countr_zero(kShards);
    return shards_[hash >> (std::numeric_limits<size_t>::digits - kShardBits)];
  }
  // Claims `uid`'s record (creating it), `hash` its Records::Hash; empty when the table is full
  // (compaction then due).
  Records::Claim Acquire(Shard& shard, std::string_view uid, size_t hash);
  // Claims `uid`'s record if it holds a reservation.
  Records::Claim FindPresent(std::string_view uid) const;
  // Claims gang `workload`'s hold record (creating it when `create`).
  Gangs::Claim ClaimGang(std::string_view workload, bool create) const;
  // The refusal of a pod whose reservation the full table cannot take.
  Refusal Busy(model::NameId team, model::NameId flavor);
  // `r` enters (sign +1) or leaves (−1) the table, or is about to change (−1) and changed (+1).
  void Tally(const Reservation& r, int sign);
  // A reservation into / out of a claimed record.
  void Put(Shard& shard, Records::Record& record, Reservation r);
  void Erase(Records::Record& record);
  // With the record claimed: gives its reservation back and erases it; a gang member's leaves
  // its gang.
  void Drop(Ledger::Session& session, std::string_view uid, Records::Record& record);
  // With the gang's record claimed: a new, empty hold of `team` / no hold any more.
  static GangHold& NewHold(Gangs::Record& gang, model::NameId team);
  // AssumeMember's reservation for a gang: `need` on `flavor`, then each of `elsewhere` on its
  // flavor, into `parts` (`*count` of them); all or nothing — the first refusal, after what was
  // reserved went back.
  static std::optional<Refusal> ReserveParts(
      Ledger::Session& session, std::string_view workload, model::NameId team, model::NameId flavor,
      const model::IdAmounts& need, std::span<const FlavorNeed> elsewhere, Ledger::Mode mode,
      std::array<Charge, kMaxGangFlavors>* parts, uint8_t* count);
  // Gives back what the gang still holds for members that did not take their share (every part).
  void GiveBackParts(Ledger::Session& session, std::string_view workload, GangHold* hold);
  static void DropHold(Gangs::Record& gang);
  // With the gang's record claimed: one member more / fewer holds quota of it (the team's count
  // of gangs holding quota moves with the first and the last).
  void HolderJoined(GangHold& hold);
  void HolderLeft(GangHold& hold);
  // Gives `charge` (of pod `uid`) back; warns about every resource the ledger refused.
  static void GiveBack(Ledger::Session& session, std::string_view uid, const Charge& charge);
  // With the gang's record claimed: a member took its share (or reserved alone); the gang is
  // whole, or waits for the others until its deadline.
  // AssumeMember's: the reservation `record` holds (on another flavor, or for another gang or
  // none) goes — back to `from_hold`, the hold it came from, while that holds quota, else to the
  // ledger — and the member leaves that hold.
  void GiveUpForMember(Ledger::Session& session, std::string_view uid, Records::Record& record,
                       Gangs::Record* from_hold);
  void MemberJoined(Ledger::Session& session, std::string_view workload, GangHold* hold,
                    int64_t now, int64_t gang_ttl_ms);
  // With the member's record claimed: the hold of gang `workload` (created when it has none)
  // counts a member bound without a share (seen bound after a restart).
  void HoldForBoundMember(std::string_view workload, model::NameId team);
  // With the gang's record claimed: a member's reservation is gone (released, or its share
  // returned); `lost` as for DetachFromGang.
  void MemberGone(Gangs::Record& gang, bool lost = true);
  // With the member's and its gang's records claimed: returns the share of member reservation
  // `r` (about to leave the table) to its gang's hold while that holds quota and has not
  // expired, and counts the member gone. False (nothing done) otherwise.
  bool ReturnShare(const Reservation& r, Gangs::Record* gang);
  // Releases the holds whose time has passed.
  void ExpireGangs(Ledger::Session& session, int64_t now);
  // Frees empty records and regrows the tables (quiescent: no session may be open).
  void Compact();

  Ledger ledger_;
  const common::Clock* clock_;
  mutable std::array<Shard, kShards> shards_;
  // The gangs' holds, by workload key.
  mutable Gangs gangs_{kShardHeadroom};
  TeamTally tally_;
  std::atomic<int64_t> present_{0};                  // reservations held; relaxed: a count
  mutable std::atomic<bool> compaction_due_{false};  // a full table refused a reservation
  std::atomic<uint64_t> gangs_expired_{0};           // relaxed: a statistic
  // Guards expired_gangs_, written by the sweep and taken by the controller: off the filter path.
  std::mutex expired_mu_;
  std::vector<ExpiredGang> expired_gangs_;
  // Relaxed: a statistic, publishing nothing.
  mutable std::atomic<uint64_t> claim_waits_{0};
};

}  // namespace taskgov::scheduler::ledger
