#include "scheduler/ledger/ledger.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <string_view>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "scheduler/common/log.h"
#include "scheduler/model/quantity.h"

namespace taskgov::scheduler::ledger {

using model::FlavorNames;
using model::FlavorQuota;
using model::FormatQuantity;
using model::IdAmounts;
using model::kUnlimited;
using model::NameId;
using model::Policy;
using model::PolicyPtr;
using model::ResourceAmount;
using model::ResourceList;
using model::ResourceNames;
using model::ResourceQuota;
using model::SaturatingAdd;
using model::SaturatingSub;
using model::Team;
using model::TeamNames;

namespace {

// Counter order: seq_cst at every counter access, for the reason under "Memory order" in
// ledger.h (one total order over all counter operations; free on x86-64). The generation
// hand-over names its own orders below.
constexpr auto kCounter = std::memory_order_seq_cst;

struct alignas(64) TeamCell {
  std::atomic<int64_t> g{0};  // usage inside the guaranteed part, ≤ guaranteed
  std::atomic<int64_t> b{0};  // usage charged to the pool
  CellKey key;
  int64_t nominal = 0;
  int64_t borrowing_limit = 0;
  int64_t lending_limit = 0;
  int64_t guaranteed = 0;
  int64_t ceiling = 0;
  uint32_t pool = 0;
};

// A cohort's pool for one (flavor, resource): a node of the cohort tree (ledger.h, "Cohort
// tree"). Its usage U = g + b is what its children store in it (their b), never below their sum.
struct alignas(64) PoolCell {
  std::atomic<int64_t> g{0};  // usage within its local quota (a root: all of it)
  std::atomic<int64_t> b{0};  // usage stored in its parent's pool (a root: none)
  int64_t capacity = 0;       // S: its subtree quota
  int64_t guaranteed = 0;     // its local quota S − lending limit (none: 0); a root: S
  int64_t b_limit = 0;        // what b may reach: S − local + borrowing limit (none: unlimited)
  int64_t potential = 0;      // what it could give a child with no usage anywhere (fixed)
  int32_t parent = -1;        // its parent cohort's pool for the same (flavor, resource)
  NameId flavor = 0;
  NameId resource = 0;
};

// A (team, flavor)'s cells: refs[first, first + count) of its generation — its own cells, then
// the companions it charges on other flavors (Generation::aliases).
struct Range {
  uint32_t first = 0;
  uint32_t count = 0;
};

uint64_t PairKey(NameId a, NameId b) { return (uint64_t{a} << 32) | b; }

// (team, flavor) → its cells: open addressing in a power-of-two table at most half full, built
// once per generation and read-only after (no division and no pointer chase on the hot path).
class RangeIndex {
 public:
  void Build(const std::vector<std::pair<uint64_t, Range>>& entries) {
    size_t size = 2;
    while (size < entries.size() * 2) size *= 2;
    slots_.assign(size, Slot{});
    mask_ = size - 1;
    for (const auto& [key, range] : entries) {
      size_t i = Home(key);
      while (slots_[i].used && slots_[i].key != key) i = (i + 1) & mask_;
      slots_[i] = Slot{key, range, true};
    }
  }

  [[nodiscard]] const Range* Find(uint64_t key) const {
    for (size_t i = Home(key);; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (!slot.used) return nullptr;
      if (slot.key == key) return &slot.range;
    }
  }

 private:
  struct Slot {
    uint64_t key = 0;
    Range range;
    bool used = false;
  };
  // Fibonacci hashing: team and flavor ids are small and dense, so their bits are mixed first.
  [[nodiscard]] size_t Home(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 32) & mask_;
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

// Takes up to `q` from `counter` without letting it drop below zero; returns what it took.
int64_t TakeUpTo(std::atomic<int64_t>& counter, int64_t q) {
  int64_t cur = counter.load(kCounter);
  while (true) {
    const int64_t take = std::clamp<int64_t>(cur, 0, q);
    if (take == 0) return 0;
    if (counter.compare_exchange_weak(cur, cur - take, kCounter)) return take;
  }
}

// Adds `q` to `counter` if the sum stays within `limit` (checked inside the compare-exchange).
bool AddWithin(std::atomic<int64_t>& counter, int64_t q, int64_t limit) {
  int64_t cur = counter.load(kCounter);
  do {
    if (SaturatingAdd(cur, q) > limit) return false;
  } while (!counter.compare_exchange_weak(cur, SaturatingAdd(cur, q), kCounter));
  return true;
}

// A cell's usage g + b. b is read before g: usage only moves from b to g (Rebalance adds to g
// before it takes from b), so in this order it may be counted twice for a moment, never missed.
int64_t UsageOf(const TeamCell& c) {
  const int64_t b = c.b.load(kCounter);
  return SaturatingAdd(b, c.g.load(kCounter));
}

// A broken invariant, never input: misuse that would otherwise wait for itself forever (a bug in
// the caller), or an environment that breaks the sessions' fence. Logged, then abort.
[[noreturn]] void Die(std::string_view what) {
  common::log::Error("ledger", what);
  std::abort();
}

// This thread's innermost open Session (each links to the next outer one, of any ledger), and
// the ledger whose swap this thread is running, if any. Plain thread-locals: only their own
// thread reads or writes them.
thread_local Ledger::Session* tls_innermost = nullptr;
thread_local const Ledger* tls_swapping = nullptr;

// A thread's announcement of the one ledger it has sessions open on ("fast" sessions, see
// Ledger::Enter). Slots live in one process-wide list, are never freed (a few per thread ever
// running) and are reused by later threads once their thread has ended.
struct alignas(64) SessionSlot {
  // The ledger this slot's thread has sessions open on, or null. Written only by its thread.
  std::atomic<const Ledger*> ledger{nullptr};
  std::atomic<bool> owned{true};
  SessionSlot* next = nullptr;  // immutable once the slot is in the list
};
std::atomic<SessionSlot*> slots_head{nullptr};

// This thread's slot (taken on its first session) and how many sessions it holds on the
// announced ledger.
struct ThreadSlot {
  SessionSlot* slot = nullptr;
  int depth = 0;
  ~ThreadSlot() {
    // Release: the next owner's acquire claim sees the slot idle (its ledger is null here: a
    // Session ends on the thread that opened it).
    if (slot != nullptr) slot->owned.store(false, std::memory_order_release);
  }
};
thread_local ThreadSlot tls_slot;

// The announcement's fence, made asymmetric when the kernel offers membarrier(2): a thread
// opening a session then stores into its slot with no fence of its own (a plain store, kept
// before its read of the closed bit by a compiler barrier), and a swap, after closing, runs
// MEMBARRIER_CMD_PRIVATE_EXPEDITED, which executes a full memory barrier on every running thread
// of the process. A thread it interrupts before its store then reads the closed bit after that
// barrier (and backs out); one interrupted after it has the store visible to the swap's scan.
// Without membarrier (an old kernel, a seccomp profile that denies it) the store is seq_cst.
// Decided once, before the first session opens (a function-local static). The environment
// variable TASKGOV_LEDGER_SYMMETRIC_FENCE=1 chooses the seq_cst store (the stress tests run both).
bool AsymmetricFence() {
  static const bool registered = [] {
    const char* symmetric = std::getenv("TASKGOV_LEDGER_SYMMETRIC_FENCE");
    if (symmetric != nullptr && std::string_view(symmetric) == "1") return false;
    return syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  }();
  return registered;
}

// The swap's half of the asymmetric fence.
void HeavyFence() {
  if (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
    // Registered, yet refused: sessions announce without a fence, so going on could let a swap
    // free a generation in use. A broken environment, not input.
    Die("membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) failed after registration");
  }
}

SessionSlot* ClaimSlot() {
  // Acquire: slots are published complete by the release push below.
  for (SessionSlot* s = slots_head.load(std::memory_order_acquire); s != nullptr; s = s->next) {
    bool idle = false;
    // Acquire: pairs with the release in ~ThreadSlot of the thread that left it.
    if (!s->owned.load(std::memory_order_relaxed) &&
        s->owned.compare_exchange_strong(idle, true, std::memory_order_acquire)) {
      return s;
    }
  }
  auto* slot = new SessionSlot();  // never freed: the list is process-wide and append-only
  slot->next = slots_head.load(std::memory_order_relaxed);
  // seq_cst: a swap that closed the ledger and then read the head without this slot precedes
  // this push, and so this thread's first announcement, in the single total order: that
  // announcement's read of the closed bit sees the swap. (A swap that reads this head sees the
  // slot's fields.)
  while (!slots_head.compare_exchange_weak(slot->next, slot, std::memory_order_seq_cst,
                                           std::memory_order_relaxed)) {
  }
  return slot;
}

}  // namespace

struct Ledger::Generation {
  uint64_t number = 0;
  PolicyPtr policy;
  std::unique_ptr<TeamCell[]> cells;
  size_t cell_count = 0;
  std::unique_ptr<uint32_t[]> refs;  // cell indices, per (team, flavor) a Range of them
  // A (team, flavor)'s cells on other flavors, as that (team, flavor) sees them: a resource the
  // team has no quota for on the flavor, charged on the team's first flavor covering it whose
  // node labels every node of the flavor has (Kueue's resource groups: cpu and memory on an
  // unlabelled default flavor, GPUs on instance types).
  std::vector<std::pair<CellKey, uint32_t>> aliases;
  std::unique_ptr<PoolCell[]> pools;
  size_t pool_count = 0;
  std::vector<std::string> pool_cohorts;                     // the cohort key of each pool
  RangeIndex index;                                          // (team, flavor) → its cells
  std::unordered_map<NameId, std::vector<NameId>> governed;  // flavor → resources with cells

  bool Governed(NameId flavor, NameId resource) const {
    auto it = governed.find(flavor);
    return it != governed.end() &&
           std::find(it->second.begin(), it->second.end(), resource) != it->second.end();
  }

  const Range* Find(NameId team, NameId flavor) const { return index.Find(PairKey(team, flavor)); }

  TeamCell* CellIn(const Range& range, NameId resource) const {
    for (uint32_t i = range.first; i < range.first + range.count; ++i) {
      if (cells[refs[i]].key.resource == resource) return &cells[refs[i]];
    }
    return nullptr;
  }

  TeamCell* FindCell(NameId team, NameId flavor, NameId resource) const {
    const Range* range = Find(team, flavor);
    return range == nullptr ? nullptr : CellIn(*range, resource);
  }

  uint32_t IndexOf(const TeamCell& c) const { return static_cast<uint32_t>(&c - cells.get()); }

  // Step 1 of ledger.h: takes what fits of `q` into g, also keeping g + b within `cap` for the b
  // read here (exact for the team limit only together with step 3; see kWithinNominal).
  static int64_t TakeGuaranteed(TeamCell& c, int64_t q, int64_t cap) {
    int64_t cur_g = c.g.load(kCounter);
    while (true) {
      int64_t take = std::min(q, c.guaranteed - cur_g);
      take = std::min(take, SaturatingSub(cap, SaturatingAdd(cur_g, c.b.load(kCounter))));
      if (take <= 0) return 0;
      if (c.g.compare_exchange_weak(cur_g, cur_g + take, kCounter)) return take;
    }
  }

  // Takes `q` of one resource (steps 1–3 of ledger.h) or nothing.
  bool Take(TeamCell& c, int64_t q, int64_t cap, RefusalKind* why) {
    const RefusalKind over_team =
        cap == c.ceiling ? RefusalKind::kBorrowingLimit : RefusalKind::kNominal;
    // What b may reach: with g ≤ guaranteed always, b ≤ cap − guaranteed keeps g + b ≤ cap.
    const int64_t b_limit = SaturatingSub(cap, c.guaranteed);
    const int64_t a = TakeGuaranteed(c, q, cap);
    const int64_t r = q - a;
    if (r == 0) return true;
    // The team limit is checked for real in step 3; a look first gives the right reason when
    // both the team and the pool would refuse.
    if (SaturatingAdd(c.b.load(kCounter), r) > b_limit) {
      TakeUpTo(c.g, a);
      *why = over_team;
      return false;
    }
    // 2. The pool, before b: P never drops below Σ b.
    if (!TakePool(static_cast<int32_t>(c.pool), r)) {
      TakeUpTo(c.g, a);
      *why = RefusalKind::kPool;
      return false;
    }
    // 3. The team's pool charge, against its limit.
    if (!AddWithin(c.b, r, b_limit)) {
      GivePool(static_cast<int32_t>(c.pool), r);  // what step 2 added: P stays ≥ Σ b
      TakeUpTo(c.g, a);
      *why = over_team;
      return false;
    }
    return true;
  }

  // Step 2 of ledger.h on pool `p` and up the cohort tree: takes `r` into the pool — what fits
  // its local quota into g, the rest from its parent's pool and then into b, against its
  // borrowing limit — or nothing. A root takes it all into g, within its subtree quota.
  bool TakePool(int32_t p, int64_t r) {
    PoolCell& n = pools[p];
    if (n.parent < 0) return AddWithin(n.g, r, n.guaranteed);
    const int64_t a = TakeLocal(n.g, r, n.guaranteed);
    const int64_t rest = r - a;
    if (rest == 0) return true;
    if (SaturatingAdd(n.b.load(kCounter), rest) > n.b_limit || !TakePool(n.parent, rest)) {
      TakeUpTo(n.g, a);
      return false;
    }
    if (!AddWithin(n.b, rest, n.b_limit)) {
      GivePool(n.parent, rest);
      TakeUpTo(n.g, a);
      return false;
    }
    return true;
  }

  // Takes what fits of `q` into `g` below `limit`; returns what it took.
  static int64_t TakeLocal(std::atomic<int64_t>& g, int64_t q, int64_t limit) {
    int64_t cur = g.load(kCounter);
    while (true) {
      const int64_t take = std::min(q, limit - cur);
      if (take <= 0) return 0;
      if (g.compare_exchange_weak(cur, cur + take, kCounter)) return take;
    }
  }

  // Adds `r` to pool `p` without limits (existing usage): local quota first, the rest up the
  // tree (a root takes it all).
  void AddPool(int32_t p, int64_t r) {
    PoolCell& n = pools[p];
    if (n.parent < 0) {
      n.g.fetch_add(r, kCounter);
      return;
    }
    const int64_t a = TakeLocal(n.g, r, n.guaranteed);
    if (r - a > 0) {
      AddPool(n.parent, r - a);  // the parent first: never below Σ b
      n.b.fetch_add(r - a, kCounter);
    }
  }

  // Takes `r` out of pool `p` (a child just took as much out of its b): b first, and the parent
  // with it, then g; then moves what b holds into a local quota that has room again.
  void GivePool(int32_t p, int64_t r) {
    PoolCell& n = pools[p];
    if (n.parent < 0) {
      n.g.fetch_sub(r, kCounter);  // ≥ what its children store: stays ≥ 0
      return;
    }
    const int64_t from_b = TakeUpTo(n.b, r);
    if (from_b > 0) GivePool(n.parent, from_b);
    if (from_b < r) TakeUpTo(n.g, r - from_b);
    RebalancePool(n);
  }

  // Rebalance (below) for a pool of a cohort with a parent.
  void RebalancePool(PoolCell& n) { MoveToLocal(n.g, n.b, n.guaranteed, n.parent); }

  // Moves what fits of b into g (local quota `local`), b's part of pool `pool` with it. g grows
  // first, so in the total order of counter operations the usage is too high meanwhile, never
  // too low (what Give's check relies on).
  void MoveToLocal(std::atomic<int64_t>& g, std::atomic<int64_t>& b, int64_t local, int32_t pool) {
    const int64_t cur_b = b.load(kCounter);
    if (cur_b <= 0) return;
    int64_t cur_g = g.load(kCounter);
    const int64_t x = std::min(cur_b, local - cur_g);
    if (x <= 0 || !g.compare_exchange_strong(cur_g, cur_g + x, kCounter)) return;
    const int64_t moved = TakeUpTo(b, x);
    if (moved > 0) GivePool(pool, moved);
    if (moved < x) TakeUpTo(g, x - moved);  // what b no longer had
  }

  // A pool's usage U = g + b (b first, as UsageOf).
  int64_t PoolUsage(const PoolCell& n) const {
    const int64_t b = n.b.load(kCounter);
    return SaturatingAdd(b, n.g.load(kCounter));
  }

  // What pool `p` can still give a child, up the tree (Kueue's available()): its local quota
  // left, plus what its parent can give within its borrowing limit; a root: S − U.
  // A loop up the tree and back down: any depth costs no stack. `known` (optional, one entry per
  // pool, kUnknownFree until computed) memoizes every pool's answer on the path, so computing all
  // of them (Pools) is linear.
  static constexpr int64_t kUnknownFree = std::numeric_limits<int64_t>::min();
  int64_t PoolFree(int32_t p, std::vector<int64_t>* known = nullptr) const {
    constexpr size_t kInline = 16;  // deeper trees spill into the vector
    std::array<int32_t, kInline> inline_path;
    std::vector<int32_t> spilled;
    size_t depth = 0;
    int64_t above = 0;  // what the parent of the pool at hand can give
    for (int32_t at = p; at >= 0; at = pools[at].parent) {
      if (known != nullptr && (*known)[at] != kUnknownFree) {
        above = (*known)[at];
        break;
      }
      if (depth < kInline) {
        inline_path[depth] = at;
      } else {
        spilled.push_back(at);
      }
      ++depth;
    }
    for (size_t i = depth; i-- > 0;) {
      const int32_t at = i < kInline ? inline_path[i] : spilled[i - kInline];
      const PoolCell& n = pools[at];
      above = PoolFreeOf(PoolUsage(n), n.capacity, n.guaranteed, n.b_limit, n.parent < 0, above);
      if (known != nullptr) (*known)[at] = above;
    }
    return above;
  }

  // Adds `q` without limits (existing usage), guaranteed part first.
  void Add(TeamCell& c, int64_t q) {
    const int64_t a = TakeLocal(c.g, q, c.guaranteed);
    if (q - a > 0) {
      AddPool(static_cast<int32_t>(c.pool), q - a);  // pool first: never below Σ b
      c.b.fetch_add(q - a, kCounter);
    }
  }

  // Subtracts `q` from the cell: b first (and the pool with it), then g. False, an over-release,
  // when the cell holds less than `q`; see "Release" in ledger.h.
  bool Give(TeamCell& c, int64_t q) {
    if (UsageOf(c) < q) return false;  // nothing subtracted
    const int64_t from_b = TakeUpTo(c.b, q);
    if (from_b > 0) GivePool(static_cast<int32_t>(c.pool), from_b);  // ≥ Σ b: stays ≥ 0
    const int64_t from_g = from_b < q ? TakeUpTo(c.g, q - from_b) : 0;
    Rebalance(c);
    return from_b + from_g == q;  // short only if a racing release drained a drifted cell
  }

  // Moves usage from b to g when the guaranteed part has room again (races between concurrent
  // reserves and releases can leave b > 0 while g < guaranteed, which only over-charges the pool).
  void Rebalance(TeamCell& c) { MoveToLocal(c.g, c.b, c.guaranteed, static_cast<int32_t>(c.pool)); }

  CellView View(const TeamCell& c) const {
    CellView v;
    v.exists = true;
    v.usage = UsageOf(c);
    v.nominal = c.nominal;
    v.borrowing_limit = c.borrowing_limit;
    v.lending_limit = c.lending_limit;
    v.guaranteed = c.guaranteed;
    v.pool_used = PoolUsage(pools[c.pool]);
    v.pool_capacity = pools[c.pool].capacity;
    v.pool_free = PoolFree(static_cast<int32_t>(c.pool));
    v.pool_potential = pools[c.pool].potential;
    v.pool = static_cast<int32_t>(c.pool);
    return v;
  }

  // Why `q` of cell `c` was refused, with the numbers.
  Refusal Refuse(const TeamCell& c, RefusalKind kind, int64_t q) const {
    const CellView v = View(c);
    Refusal refusal;
    refusal.kind = kind;
    refusal.team = c.key.team;
    refusal.flavor = c.key.flavor;
    refusal.resource = c.key.resource;
    refusal.requested = q;
    refusal.in_use = v.usage;
    refusal.nominal = v.nominal;
    refusal.borrowing_limit = v.borrowing_limit;
    refusal.pool_used = v.pool_used;
    refusal.pool_capacity = v.pool_capacity;
    refusal.pool_free = v.pool_free;
    refusal.pool_potential = v.pool_potential;
    return refusal;
  }
};

namespace {

// The cells and pools of a generation to build, planned in the order they are first named, then
// laid out by Fill.
class CellPlan {
 public:
  explicit CellPlan(const Policy& policy) : policy_(policy) {}

  // Every quota line of the policy; the first line of a (team, flavor, resource) wins.
  void AddPolicyCells() {
    for (const Team& team : policy_.teams) {
      const NameId team_id = TeamNames().Intern(team.name);
      const std::string cohort = CohortKey(team.name, "");
      for (const FlavorQuota& fq : team.flavors) {
        const NameId flavor_id = FlavorNames().Intern(fq.flavor);
        for (const ResourceQuota& rq : fq.resources) {
          const NameId resource_id = ResourceNames().Intern(rq.resource);
          const uint32_t pool = PoolOf(cohort, flavor_id, resource_id);
          pools_[pool].own = SaturatingAdd(pools_[pool].own, rq.lendable());
          Add(Spec{CellKey{team_id, flavor_id, resource_id}, &rq, pool});
        }
      }
    }
  }

  // Cells with zero limits for usage the policy does not mention.
  void AddExtraCells(const std::vector<Ledger::ExtraCell>& extra) {
    for (const Ledger::ExtraCell& cell : extra) {
      const CellKey& key = cell.key;
      const std::string cohort = CohortKey(TeamNames().Name(key.team), cell.cohort);
      Add(Spec{key, nullptr, PoolOf(cohort, key.flavor, key.resource)});
    }
  }

  // The limits of the policy's cohort pools (model::CohortPools: subtree quotas, local quotas
  // and borrowing limits, a cohort's own quota included). A pool no team of its cohort's
  // tree governs is not the policy's: an orphan cell's keeps limits of zero.
  void AddCohortPools() {
    for (const model::CohortPool& from : model::CohortPools(policy_)) {
      const std::optional<NameId> flavor = FlavorNames().Find(from.flavor);
      const std::optional<NameId> resource = ResourceNames().Find(from.resource);
      if (!flavor || !resource) continue;
      auto it = pool_ids_.find(std::tuple{from.cohort, *flavor, *resource});
      if (it == pool_ids_.end()) continue;
      PoolSpec& pool = pools_[it->second];
      pool.from_policy = true;
      pool.capacity = from.subtree;
      pool.local = from.local;
      pool.borrowing_limit = from.borrowing_limit;
    }
  }

  void Fill(Ledger::Generation& gen) const {
    FillCells(gen);
    FillGoverned(gen);
    FillPools(gen);
  }

 private:
  struct Spec {
    CellKey key;
    const ResourceQuota* quota = nullptr;  // null: an orphan cell with zero limits
    uint32_t pool = 0;
  };

  // A pool to be: its parent's pool, and its limits — the policy's cohort pool's, or for the
  // pool of a team in no cohort, what the team lends (a root).
  struct PoolSpec {
    int32_t parent = -1;
    int64_t own = 0;  // Σ min(L, N) of its teams
    bool from_policy = false;
    int64_t capacity = 0;
    int64_t local = 0;
    int64_t borrowing_limit = kUnlimited;
  };

  // Pools per (cohort, flavor, resource); a new one brings its parent cohort's, up to the root
  // (Policy::ParentCohort: a link that would close a cycle is cut there). A loop, not a
  // recursion: a chain of cohorts any number deep costs no stack.
  uint32_t PoolOf(const std::string& cohort_key, NameId flavor, NameId resource) {
    auto [it, inserted] = pool_ids_.emplace(std::tuple{cohort_key, flavor, resource},
                                            static_cast<uint32_t>(pools_.size()));
    const uint32_t id = it->second;
    if (!inserted) return id;
    pools_.emplace_back();
    uint32_t child = id;
    for (std::string_view parent = policy_.ParentCohort(cohort_key); !parent.empty();
         parent = policy_.ParentCohort(parent)) {
      auto [up, made] = pool_ids_.emplace(std::tuple{std::string(parent), flavor, resource},
                                          static_cast<uint32_t>(pools_.size()));
      if (made) pools_.emplace_back();
      pools_[child].parent = static_cast<int32_t>(up->second);
      if (!made) break;  // its ancestors' pools exist already
      child = up->second;
    }
    return id;
  }

  // A team without a cohort lends and borrows only with itself. A team the policy does not know
  // keeps the cohort it had (its usage still occupies that cohort's capacity) or gets a pool of
  // its own, of capacity 0.
  std::string CohortKey(std::string_view team_name, const std::string& hint) const {
    const Team* team = policy_.FindTeam(team_name);
    if (team == nullptr) return hint.empty() ? "\x01orphan:" + std::string(team_name) : hint;
    return team->cohort.empty() ? "\x01team:" + team->name : team->cohort;
  }

  void Add(Spec spec) {
    const uint64_t key = PairKey(spec.key.team, spec.key.flavor);
    std::vector<Spec>& list = specs_[key];
    if (list.empty()) order_.push_back(key);
    for (const Spec& s : list) {
      if (s.key.resource == spec.key.resource) return;
    }
    list.push_back(spec);
  }

  // The cells of each (team, flavor) next to each other, in first-seen order.
  void FillCells(Ledger::Generation& gen) const {
    size_t total = 0;
    for (const auto& [key, list] : specs_) total += list.size();
    gen.cells = std::make_unique<TeamCell[]>(total);
    gen.cell_count = total;
    uint32_t next = 0;
    for (uint64_t key : order_) {
      for (const Spec& spec : specs_.at(key)) {
        TeamCell& cell = gen.cells[next++];
        cell.key = spec.key;
        cell.pool = spec.pool;
        if (spec.quota != nullptr) {
          cell.nominal = spec.quota->nominal;
          cell.borrowing_limit = spec.quota->borrowing_limit;
          cell.lending_limit = spec.quota->lending_limit;
          cell.guaranteed = spec.quota->guaranteed();
          cell.ceiling = spec.quota->ceiling();
        }
      }
    }
    FillRanges(gen);
  }

  // Each (team, flavor)'s own cells (laid out in order by FillCells), then its companions.
  void FillRanges(Ledger::Generation& gen) const {
    std::unordered_map<uint64_t, uint32_t> offsets;  // (team, flavor) → its first cell
    uint32_t own = 0;
    for (uint64_t key : order_) {
      offsets.emplace(key, own);
      own += static_cast<uint32_t>(specs_.at(key).size());
    }
    std::vector<uint32_t> refs;
    std::vector<std::pair<uint64_t, Range>> ranges;
    ranges.reserve(order_.size());
    for (uint64_t key : order_) {
      const uint32_t first = static_cast<uint32_t>(refs.size());
      const size_t count = specs_.at(key).size();
      for (size_t i = 0; i < count; ++i) refs.push_back(offsets.at(key) + static_cast<uint32_t>(i));
      AddCompanions(gen, specs_.at(key), offsets, &refs);
      ranges.emplace_back(key, Range{first, static_cast<uint32_t>(refs.size() - first)});
    }
    gen.refs = std::make_unique<uint32_t[]>(refs.size());
    std::copy(refs.begin(), refs.end(), gen.refs.get());
    gen.index.Build(ranges);
  }

  // The companions of a policy team's (team, flavor) with cells `own`, the last of `refs`
  // (Policy::TeamCompanions, computed once per team), but for a resource `own` has a cell for
  // (an orphan's, at least).
  void AddCompanions(Ledger::Generation& gen, const std::vector<Spec>& own,
                     const std::unordered_map<uint64_t, uint32_t>& offsets,
                     std::vector<uint32_t>* refs) const {
    const CellKey& at = own.front().key;
    const Team* team = policy_.FindTeam(TeamNames().Name(at.team));
    if (team == nullptr || own.front().quota == nullptr) return;
    for (const auto& [resource_name, flavor_name] : CompanionsOf(*team, at.flavor)) {
      const NameId resource = ResourceNames().Intern(resource_name);
      if (std::any_of(own.begin(), own.end(),
                      [&](const Spec& s) { return s.key.resource == resource; })) {
        continue;
      }
      const uint64_t pair = PairKey(at.team, FlavorNames().Intern(flavor_name));
      const std::vector<Spec>& list = specs_.at(pair);
      uint32_t cell = offsets.at(pair);
      for (const Spec& spec : list) {
        if (spec.key.resource == resource) break;
        ++cell;
      }
      refs->push_back(cell);
      gen.aliases.emplace_back(CellKey{at.team, at.flavor, resource}, cell);
    }
  }

  // Policy::TeamCompanions of `team`, for its flavor `flavor` (empty when it has none there).
  const std::vector<std::pair<std::string, std::string>>& CompanionsOf(const Team& team,
                                                                       NameId flavor) const {
    static const std::vector<std::pair<std::string, std::string>> kNone;
    auto [it, inserted] = companions_.try_emplace(&team);
    if (inserted) {
      it->second.lists = policy_.TeamCompanions(team);
      for (size_t i = 0; i < team.flavors.size(); ++i) {
        it->second.by_flavor.emplace(FlavorNames().Intern(team.flavors[i].flavor), i);
      }
    }
    auto at = it->second.by_flavor.find(flavor);
    return at == it->second.by_flavor.end() ? kNone : it->second.lists[at->second];
  }

  static void FillGoverned(Ledger::Generation& gen) {
    for (size_t i = 0; i < gen.cell_count; ++i) {
      std::vector<NameId>& list = gen.governed[gen.cells[i].key.flavor];
      if (std::find(list.begin(), list.end(), gen.cells[i].key.resource) == list.end()) {
        list.push_back(gen.cells[i].key.resource);
      }
    }
  }

  void FillPools(Ledger::Generation& gen) const {
    const size_t n = pools_.size();
    gen.pools = std::make_unique<PoolCell[]>(n);
    gen.pool_count = n;
    gen.pool_cohorts.resize(n);
    for (const auto& [key, id] : pool_ids_) {
      gen.pool_cohorts[id] = std::get<0>(key);
      gen.pools[id].flavor = std::get<1>(key);
      gen.pools[id].resource = std::get<2>(key);
    }
    for (size_t i = 0; i < n; ++i) {
      const PoolSpec& spec = pools_[i];
      PoolCell& pool = gen.pools[i];
      pool.parent = spec.parent;
      pool.capacity = spec.from_policy ? spec.capacity : spec.own;
      if (spec.parent < 0) {
        pool.guaranteed = pool.capacity;  // a root keeps all of it
        continue;
      }
      pool.guaranteed = spec.from_policy ? spec.local : 0;
      pool.b_limit = spec.borrowing_limit == kUnlimited
                         ? kUnlimited
                         : SaturatingAdd(pool.capacity - pool.guaranteed, spec.borrowing_limit);
    }
    std::vector<bool> done(n, false);
    for (size_t i = 0; i < n; ++i) Potential(gen, static_cast<int32_t>(i), &done);
  }

  // What pool `p` could give a child with no usage anywhere (Kueue's potentialAvailable()): its
  // local quota and what its parent could give, within its borrowing limit; a root: all of it.
  // Usage never changes it: computed once per generation, parents first (memoized), by a loop
  // up the tree and back down (no recursion: any depth costs no stack).
  static void Potential(Ledger::Generation& gen, int32_t p, std::vector<bool>* done) {
    std::vector<int32_t> path;  // from p up to the first pool done, or a root
    for (int32_t at = p; at >= 0 && !(*done)[at]; at = gen.pools[at].parent) path.push_back(at);
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      PoolCell& n = gen.pools[*it];
      (*done)[*it] = true;
      if (n.parent < 0) {
        n.potential = n.capacity;
        continue;
      }
      const int64_t most = SaturatingAdd(n.guaranteed, gen.pools[n.parent].potential);
      n.potential = n.b_limit == kUnlimited
                        ? most
                        : std::min(most, SaturatingAdd(n.guaranteed, n.b_limit));  // S + limit
    }
  }

  const Policy& policy_;
  struct TeamCompanionLists {
    std::vector<std::vector<std::pair<std::string, std::string>>> lists;  // per team flavor
    std::unordered_map<NameId, size_t> by_flavor;
  };
  mutable std::unordered_map<const Team*, TeamCompanionLists> companions_;
  std::map<std::tuple<std::string, NameId, NameId>, uint32_t> pool_ids_;
  std::vector<PoolSpec> pools_;
  std::vector<uint64_t> order_;  // (team, flavor) in first-seen order
  std::unordered_map<uint64_t, std::vector<Spec>> specs_;
};

// Writes the known resources of `list` to `out` (room for list.size()); returns how many.
size_t FillKnownIds(const ResourceList& list, IdAmount* out) {
  size_t n = 0;
  for (const ResourceAmount& r : list) {
    if (std::optional<NameId> id = ResourceNames().Find(r.name)) out[n++] = IdAmount{*id, r.amount};
  }
  return n;
}

// Calls fn with the known resources of `list`, without allocating for lists of typical size.
template <typename Fn>
auto WithKnownIds(const ResourceList& list, Fn&& fn) {
  constexpr size_t kInline = 16;
  if (list.size() > kInline) {
    const IdAmounts ids = KnownIdAmounts(list);
    return fn(std::span<const IdAmount>(ids));
  }
  std::array<IdAmount, kInline> buffer;
  return fn(std::span<const IdAmount>(buffer.data(), FillKnownIds(list, buffer.data())));
}

}  // namespace

IdAmounts KnownIdAmounts(const ResourceList& list) {
  IdAmounts out(list.size());
  out.resize(FillKnownIds(list, out.data()));
  return out;
}

int64_t Charge::Amount(NameId resource) const {
  for (uint8_t i = 0; i < count; ++i) {
    if (items[i].resource == resource) return items[i].amount;
  }
  return 0;
}

std::string Refusal::Explain() const {
  const std::string& team_name = TeamNames().Name(team);
  const std::string& flavor_name = FlavorNames().Name(flavor);
  if (kind == RefusalKind::kNoQuota) {
    return team_name + ": no quota on " + flavor_name;
  }
  if (kind == RefusalKind::kBusy) {
    return team_name +
           ": taskgov's reservation table is full until its next compaction (within "
           "a second): tried again at the next scheduling attempt";
  }
  if (kind == RefusalKind::kTooManyResources) {
    return team_name + ": the pod requests more than " + std::to_string(kMaxChargedResources) +
           " governed resources on " + flavor_name;
  }
  const std::string& r = ResourceNames().Name(resource);
  auto q = [&](int64_t v) {
    return v == kUnlimited ? std::string("unlimited") : FormatQuantity(r, v);
  };
  std::string out = team_name + ": " + r + " on " + flavor_name + ": requested " + q(requested) +
                    ", in use " + q(in_use) + " of nominal " + q(nominal);
  switch (kind) {
    case RefusalKind::kNominal:
      out += " (staying within nominal)";
      break;
    case RefusalKind::kBorrowingLimit:
      out += ", borrowing limit " + q(borrowing_limit);
      break;
    case RefusalKind::kPool:
      out += ", borrowing limit " + q(borrowing_limit) + ", cohort pool free " + q(pool_free) +
             " of " + q(pool_potential);
      break;
    default:
      break;
  }
  return out;
}

// ---- Session ----

Ledger::Generation* Ledger::Enter(const Ledger& ledger, bool* counted) {
  ThreadSlot& mine = tls_slot;
  if (mine.slot == nullptr) mine.slot = ClaimSlot();
  const bool fast = mine.depth == 0;  // else this thread announces another ledger already
  *counted = !fast;
  while (true) {
    if (fast) {
      // A Dekker pair with Swap: this thread announces the ledger and then reads the closed bit;
      // a swap sets the bit and then reads every slot. At least one sees the other: by the
      // asymmetric fence (a plain store here, see AsymmetricFence), else by seq_cst (xchg).
      if (AsymmetricFence()) {
        mine.slot->ledger.store(&ledger, std::memory_order_relaxed);
        std::atomic_signal_fence(std::memory_order_seq_cst);
      } else {
        mine.slot->ledger.store(&ledger, std::memory_order_seq_cst);
      }
      if ((ledger.sessions_.load(std::memory_order_seq_cst) & kSwapClosed) == 0) {
        mine.depth = 1;
        // Relaxed: current_ is written only while the bit is set, and the seq_cst load above,
        // which read the reopening's release (or a later value), orders this load after it.
        return ledger.current_.load(std::memory_order_relaxed);
      }
      // Release: nothing was done inside; a swap waiting for this slot may go on.
      mine.slot->ledger.store(nullptr, std::memory_order_release);
    } else {
      // A second ledger on this thread (tests): counted in the ledger's word. Acquire: when this
      // reads the value a swap's reopening wrote (or a later one), the generation that swap
      // published is visible; count and bit share one word, so a swap's close comes either
      // after this increment (and waits for it) or before it (and this backs out).
      const uint64_t before = ledger.sessions_.fetch_add(1, std::memory_order_acquire);
      if ((before & kSwapClosed) == 0) return ledger.current_.load(std::memory_order_relaxed);
      // Relaxed: nothing was done inside; the swap only waits for the count to drop.
      ledger.sessions_.fetch_sub(1, std::memory_order_relaxed);
    }
    // Relaxed: the retry's seq_cst or acquire read is what synchronises with the reopening.
    while ((ledger.sessions_.load(std::memory_order_relaxed) & kSwapClosed) != 0) {
      std::this_thread::yield();  // a swap is under way: wait for the next generation
    }
  }
}

Ledger::Session::Session(const Ledger& ledger) : ledger_(&ledger), below_(tls_innermost) {
  if (tls_swapping == &ledger) {
    Die("a Session opened inside this ledger's own swap (Rebuild's collect?) would wait "
        "for that swap forever");
  }
  const Session* outer = below_;
  while (outer != nullptr && outer->ledger_ != &ledger) outer = outer->below_;
  if (outer != nullptr) {
    // Nested: join the generation the outer session holds, the way it holds it. The outer
    // session keeps a swap in its wait from before this to after it, so no order is needed:
    // the join is thread-private (the depth) or a relaxed increment (one thread, one counter:
    // modification order follows program order); the release at the end publishes this
    // session's updates.
    gen_ = outer->gen_;
    counted_ = outer->counted_;
    if (counted_) {
      ledger.sessions_.fetch_add(1, std::memory_order_relaxed);
    } else {
      ++tls_slot.depth;
    }
  } else {
    gen_ = Enter(ledger, &counted_);
  }
  tls_innermost = this;
}

Ledger::Session::~Session() {
  // Unlink from this thread's chain: usually the innermost, but sessions may end in any order.
  Session** link = &tls_innermost;
  while (*link != nullptr && *link != this) link = &(*link)->below_;
  if (*link == nullptr) Die("a Session ended on another thread than it was opened on");
  *link = below_;
  // Release: this session's counter updates happen before the swap, whose acquire read sees the
  // slot cleared or the count drop, reads the counters.
  if (counted_) {
    ledger_->sessions_.fetch_sub(1, std::memory_order_release);
  } else if (--tls_slot.depth == 0) {
    tls_slot.slot->ledger.store(nullptr, std::memory_order_release);  // a plain store on x86-64
  }
}

std::variant<Charge, Refusal> Ledger::Session::Reserve(NameId team, NameId flavor,
                                                       const IdAmounts& request, Mode mode) {
  return ReserveIds(team, flavor, request, mode);
}

std::variant<Charge, Refusal> Ledger::Session::Reserve(NameId team, NameId flavor,
                                                       const ResourceList& request, Mode mode) {
  return WithKnownIds(
      request, [&](std::span<const IdAmount> ids) { return ReserveIds(team, flavor, ids, mode); });
}

std::variant<Charge, Refusal> Ledger::Session::ReserveIds(NameId team, NameId flavor,
                                                          std::span<const IdAmount> request,
                                                          Mode mode) {
  // Built in the returned object (every return names `out`): a Charge is 160 bytes.
  std::variant<Charge, Refusal> out(std::in_place_type<Charge>);
  Charge& charge = *std::get_if<Charge>(&out);
  const Range* range = gen_->Find(team, flavor);
  if (range == nullptr) {
    out = Refusal{.kind = RefusalKind::kNoQuota, .team = team, .flavor = flavor};
    return out;
  }
  charge.generation = gen_->number;
  charge.team = team;
  charge.flavor = flavor;
  for (const auto& [resource, amount] : request) {
    if (amount <= 0) continue;
    TeamCell* cell = gen_->CellIn(*range, resource);
    if (cell == nullptr) continue;  // not governed for this team on this flavor
    RefusalKind why = RefusalKind::kTooManyResources;
    const int64_t cap =
        mode == Mode::kWithinNominal ? std::min(cell->nominal, cell->ceiling) : cell->ceiling;
    if (charge.count == kMaxChargedResources || !gen_->Take(*cell, amount, cap, &why)) {
      // Gives back what this call took. The cells hold it, so only a cell that had drifted
      // already (a double release racing this call) can refuse, and that is counted.
      (void)Release(charge);
      out = why == RefusalKind::kTooManyResources
                ? Refusal{.kind = why, .team = team, .flavor = flavor}
                : gen_->Refuse(*cell, why, amount);
      return out;
    }
    charge.items[charge.count++] = Charge::Item{resource, gen_->IndexOf(*cell), amount};
  }
  for (uint8_t i = 0; i < charge.count; ++i) {
    const TeamCell& cell = gen_->cells[charge.items[i].cell];
    if (UsageOf(cell) > cell.nominal) charge.borrowing = true;
  }
  return out;
}

bool Ledger::Session::ForceCharge(NameId team, NameId flavor, const IdAmounts& request,
                                  Charge* charge, std::vector<CellKey>* missing) {
  return ForceChargeIds(team, flavor, request, charge, missing);
}

bool Ledger::Session::ForceCharge(NameId team, NameId flavor, const ResourceList& request,
                                  Charge* charge, std::vector<CellKey>* missing) {
  return WithKnownIds(request, [&](std::span<const IdAmount> ids) {
    return ForceChargeIds(team, flavor, ids, charge, missing);
  });
}

bool Ledger::Session::ForceChargeIds(NameId team, NameId flavor, std::span<const IdAmount> request,
                                     Charge* charge, std::vector<CellKey>* missing) {
  *charge = Charge{};
  charge->generation = gen_->number;
  charge->team = team;
  charge->flavor = flavor;
  // The team's cells for the flavor (its companions included) are charged, and resources others
  // govern on this flavor need a cell; what nobody governs is not charged.
  missing->clear();
  for (const IdAmount& want : request) {
    if (want.second > 0 && gen_->Governed(flavor, want.first) &&
        gen_->FindCell(team, flavor, want.first) == nullptr) {
      missing->push_back(CellKey{team, flavor, want.first});
    }
  }
  if (!missing->empty()) return false;
  for (const IdAmount& want : request) {
    TeamCell* cell = want.second > 0 ? gen_->FindCell(team, flavor, want.first) : nullptr;
    if (cell == nullptr) continue;
    if (charge->count == kMaxChargedResources) break;  // config keeps flavors far below this
    gen_->Add(*cell, want.second);
    charge->items[charge->count++] = Charge::Item{want.first, gen_->IndexOf(*cell), want.second};
    if (UsageOf(*cell) > cell->nominal) charge->borrowing = true;
  }
  return true;
}

bool Ledger::Session::Release(const Charge& charge) { return Release(charge, nullptr); }

bool Ledger::Session::Release(const Charge& charge, std::bitset<kMaxChargedResources>* refused) {
  std::bitset<kMaxChargedResources> bad;
  for (uint8_t i = 0; i < charge.count; ++i) {
    const Charge::Item& item = charge.items[i];
    TeamCell* cell = charge.generation == gen_->number
                         ? &gen_->cells[item.cell]
                         : gen_->FindCell(charge.team, charge.flavor, item.resource);
    // A cell gone after a reload held nothing (cells with usage are carried over).
    if (cell == nullptr || !gen_->Give(*cell, item.amount)) bad.set(i);
  }
  // Relaxed: a statistic; nothing is ordered by it.
  if (bad.any()) ledger_->over_releases_.fetch_add(bad.count(), std::memory_order_relaxed);
  if (refused != nullptr) *refused = bad;
  return bad.none();
}

CellView Ledger::Session::View(NameId team, NameId flavor, NameId resource) const {
  const TeamCell* cell = gen_->FindCell(team, flavor, resource);
  return cell == nullptr ? CellView{} : gen_->View(*cell);
}

bool Ledger::Session::HasFlavor(NameId team, NameId flavor) const {
  return gen_->Find(team, flavor) != nullptr;
}

std::vector<NameId> Ledger::Session::Resources(NameId team, NameId flavor) const {
  std::vector<NameId> out;
  if (const Range* range = gen_->Find(team, flavor)) {
    for (uint32_t i = range->first; i < range->first + range->count; ++i) {
      out.push_back(gen_->cells[gen_->refs[i]].key.resource);
    }
  }
  return out;
}

std::vector<Ledger::PoolUsage> Ledger::Session::Pools() const {
  std::vector<PoolUsage> out(gen_->pool_count);
  std::vector<int64_t> free(gen_->pool_count, Generation::kUnknownFree);
  for (size_t i = 0; i < gen_->pool_count; ++i) {
    const PoolCell& p = gen_->pools[i];
    PoolUsage& u = out[i];
    const std::string& cohort = gen_->pool_cohorts[i];
    if (cohort.empty() || cohort[0] != '\x01') u.cohort = cohort;
    u.flavor = p.flavor;
    u.resource = p.resource;
    u.parent = p.parent;
    u.in_parent = p.b.load(kCounter);
    u.used = SaturatingAdd(u.in_parent, p.g.load(kCounter));
    u.capacity = p.capacity;
    u.local = p.guaranteed;
    u.in_parent_limit = p.b_limit;
    u.free = gen_->PoolFree(static_cast<int32_t>(i), &free);
    u.potential = p.potential;
  }
  return out;
}

const Policy& Ledger::Session::policy() const { return *gen_->policy; }
uint64_t Ledger::Session::generation() const { return gen_->number; }

// ---- Ledger ----

Ledger::Ledger(PolicyPtr policy) {
  // Relaxed: whoever hands the ledger to other threads publishes it (with its generation).
  current_.store(Build(std::move(policy), {}).release(), std::memory_order_relaxed);
}

// Acquire: whoever destroys the ledger has synchronised with its last swap.
Ledger::~Ledger() { delete current_.load(std::memory_order_acquire); }

std::unique_ptr<Ledger::Generation> Ledger::Build(PolicyPtr policy, std::vector<ExtraCell> extra,
                                                  bool numbered) {
  CellPlan plan(*policy);
  plan.AddPolicyCells();
  plan.AddExtraCells(extra);
  plan.AddCohortPools();
  auto gen = std::make_unique<Generation>();
  // Relaxed: only a unique number; numbered builds run in the constructor or under
  // structure_mu_ (ApplyPolicy numbers its build there).
  if (numbered) gen->number = next_generation_.fetch_add(1, std::memory_order_relaxed);
  gen->policy = std::move(policy);
  plan.Fill(*gen);
  return gen;
}

namespace {

// Appends the cells of `gen` whose usage is not `want` (by cell index) to `drift`.
void AppendDrift(const Ledger::Generation& gen, const std::vector<int64_t>& want,
                 std::vector<Ledger::Drift>* drift) {
  for (size_t i = 0; i < gen.cell_count; ++i) {
    const int64_t usage = UsageOf(gen.cells[i]);
    if (usage != want[i]) drift->push_back(Ledger::Drift{gen.cells[i].key, usage, want[i]});
  }
}

// What `charges` hold, one sum per item (grouped by charge, so by team and flavor).
std::vector<Ledger::CellSum> SumsOf(const std::vector<Charge*>& charges) {
  std::vector<Ledger::CellSum> sums;
  for (const Charge* c : charges) {
    for (uint8_t i = 0; i < c->count; ++i) {
      sums.push_back({CellKey{c->team, c->flavor, c->items[i].resource}, c->items[i].amount});
    }
  }
  return sums;
}

// The cells of `old` whose usage differs from `expected`, and the cells `expected` puts usage in
// that `old` lacks.
std::vector<Ledger::Drift> DriftOf(const Ledger::Generation& old,
                                   const std::vector<Ledger::CellSum>& expected) {
  std::vector<int64_t> want(old.cell_count, 0);  // by cell index
  std::vector<Ledger::Drift> drift;
  const Range* range = nullptr;  // of the last (team, flavor): sums come grouped by team
  CellKey last{};
  for (const Ledger::CellSum& sum : expected) {
    if (range == nullptr || sum.key.team != last.team || sum.key.flavor != last.flavor) {
      range = old.Find(sum.key.team, sum.key.flavor);
      last = sum.key;
    }
    const TeamCell* cell = range == nullptr ? nullptr : old.CellIn(*range, sum.key.resource);
    if (cell != nullptr) {
      want[old.IndexOf(*cell)] += sum.amount;
    } else if (sum.amount != 0) {
      drift.push_back(Ledger::Drift{sum.key, 0, sum.amount});
    }
  }
  AppendDrift(old, want, &drift);
  return drift;
}

// Charges `charges` (quiescent in `old`) to `next` and re-points them at it (items without a
// cell there are dropped). Each cell of `old` is looked up in `next` once, not once per charge:
// this runs while no session may open.
void MoveCharges(const Ledger::Generation& old, Ledger::Generation& next,
                 const std::vector<Charge*>& charges) {
  constexpr uint32_t kNone = 0xffffffff;
  std::vector<uint32_t> moved(old.cell_count);  // old cell index → next cell index
  for (size_t i = 0; i < old.cell_count; ++i) {
    const CellKey& key = old.cells[i].key;
    const TeamCell* cell = next.FindCell(key.team, key.flavor, key.resource);
    moved[i] = cell == nullptr ? kNone : next.IndexOf(*cell);
  }
  for (Charge* charge : charges) {
    uint8_t kept = 0;
    for (uint8_t i = 0; i < charge->count; ++i) {
      Charge::Item item = charge->items[i];
      uint32_t to = kNone;
      if (charge->generation == old.number) {
        to = moved[item.cell];
      } else if (const TeamCell* cell =
                     next.FindCell(charge->team, charge->flavor, item.resource)) {
        to = next.IndexOf(*cell);
      }
      if (to == kNone) continue;
      next.Add(next.cells[to], item.amount);
      item.cell = to;
      charge->items[kept++] = item;
    }
    charge->count = kept;
    charge->generation = next.number;
  }
}

// Copies the usage of every cell of `old` to the same cell of `next`, split for its limits.
void CopyUsage(const Ledger::Generation& old, Ledger::Generation& next) {
  for (size_t i = 0; i < old.cell_count; ++i) {
    const TeamCell& from = old.cells[i];
    const int64_t usage = UsageOf(from);
    if (usage == 0) continue;
    TeamCell* to = next.FindCell(from.key.team, from.key.flavor, from.key.resource);
    if (to != nullptr) next.Add(*to, usage);  // make_next keeps every cell with usage
  }
}

}  // namespace

void Ledger::Swap(const std::function<std::unique_ptr<Generation>(const Generation&)>& make_next) {
  for (const Session* s = tls_innermost; s != nullptr; s = s->below_) {
    if (s->ledger_ == this) {
      Die("ApplyPolicy, EnsureCells, Rebuild or Verify called on a thread that holds a Session "
          "on the same ledger: the swap would wait for that session forever");
    }
  }
  struct SwappingMark {
    const Ledger* previous = tls_swapping;
    ~SwappingMark() { tls_swapping = previous; }
  } mark;
  tls_swapping = this;
  std::lock_guard<std::mutex> lock(structure_mu_);
  // Closes the ledger to new sessions (see Enter) and waits for those inside to end: threads
  // announcing this ledger in their slot, and sessions counted in sessions_. The loads read
  // what ~Session's release store or decrement wrote (or a later value), so those sessions'
  // counter updates happen before what follows.
  // seq_cst: the Dekker pair of Enter (set the bit, then read the slots), with the heavy half
  // of the asymmetric fence when sessions announce without one.
  sessions_.fetch_or(kSwapClosed, std::memory_order_seq_cst);
  if (AsymmetricFence()) HeavyFence();
  // seq_cst head: see ClaimSlot (a slot pushed after this read belongs to a thread that will see
  // the bit).
  for (SessionSlot* s = slots_head.load(std::memory_order_seq_cst); s != nullptr; s = s->next) {
    while (s->ledger.load(std::memory_order_seq_cst) == this) std::this_thread::yield();
  }
  while ((sessions_.load(std::memory_order_acquire) & ~kSwapClosed) != 0) {
    std::this_thread::yield();
  }
  // Quiescent from here until the reopening: no session holds or can take a generation.
  Generation* old = current_.load(std::memory_order_relaxed);
  std::unique_ptr<Generation> next = make_next(*old);
  if (next != nullptr) {
    // Relaxed: published by the release reopening below, which every later session acquires.
    current_.store(next.release(), std::memory_order_relaxed);
    delete old;  // no session can reach it: every one entering from here on loads `next`
  }
  // Release: the new generation's contents (and current_) happen before any session that
  // enters after this; sessions that backed out meanwhile enter again (see Enter).
  sessions_.fetch_and(~kSwapClosed, std::memory_order_release);
}

namespace {

// The cells of `gen` that hold usage, with the cohort each was in.
std::vector<Ledger::ExtraCell> CellsWithUsage(const Ledger::Generation& gen) {
  std::vector<Ledger::ExtraCell> cells;
  for (size_t i = 0; i < gen.cell_count; ++i) {
    if (UsageOf(gen.cells[i]) != 0) {
      cells.push_back(Ledger::ExtraCell{gen.cells[i].key, gen.pool_cohorts[gen.cells[i].pool]});
    }
  }
  return cells;
}

// The distinct cells `charges` name, as extra cells of a rebuilt `old` (keeping each cell's
// cohort).
std::vector<Ledger::ExtraCell> CellsCharged(const Ledger::Generation& old,
                                            const std::vector<Charge*>& charges) {
  std::vector<Ledger::ExtraCell> extra;
  std::unordered_map<uint64_t, std::vector<NameId>> seen;  // (team, flavor) → resources
  for (const Charge* c : charges) {
    std::vector<NameId>& resources = seen[PairKey(c->team, c->flavor)];
    for (uint8_t i = 0; i < c->count; ++i) {
      const NameId resource = c->items[i].resource;
      if (std::find(resources.begin(), resources.end(), resource) != resources.end()) continue;
      resources.push_back(resource);
      const TeamCell* cell = old.FindCell(c->team, c->flavor, resource);
      extra.push_back(Ledger::ExtraCell{CellKey{c->team, c->flavor, resource},
                                        cell ? old.pool_cohorts[cell->pool] : ""});
    }
  }
  return extra;
}

}  // namespace

void Ledger::Quiesce(const std::function<void()>& fn) {
  Swap([&](const Generation&) -> std::unique_ptr<Generation> {
    fn();
    return nullptr;
  });
}

namespace {

// Whether every cell of `old` that holds usage has its cell in `next` (CopyUsage keeps it).
bool KeepsEveryCharge(const Ledger::Generation& old, const Ledger::Generation& next) {
  for (size_t i = 0; i < old.cell_count; ++i) {
    const TeamCell& cell = old.cells[i];
    if (UsageOf(cell) != 0 &&
        next.FindCell(cell.key.team, cell.key.flavor, cell.key.resource) == nullptr) {
      return false;
    }
  }
  return true;
}

}  // namespace

void Ledger::ApplyPolicy(PolicyPtr policy) {
  // The new generation is built before the swap, while sessions go on: its layout needs the
  // cells that hold usage now (read in a session). Inside the swap only the usage is copied —
  // linear in the cells — unless a cell gained usage meanwhile that the build has no cell for
  // (an orphan the new policy drops, charged in between): then it is built again there.
  std::lock_guard<std::mutex> one_at_a_time(apply_mu_);
  std::vector<ExtraCell> extra;
  {
    Session session(*this);
    extra = CellsWithUsage(*session.gen_);
  }
  std::unique_ptr<Generation> next = Build(policy, std::move(extra), /*numbered=*/false);
  Swap([&](const Generation& old) {
    if (!KeepsEveryCharge(old, *next)) next = Build(policy, CellsWithUsage(old), false);
    // Relaxed: only a unique number, in the order generations are published.
    next->number = next_generation_.fetch_add(1, std::memory_order_relaxed);
    CopyUsage(old, *next);
    return std::move(next);
  });
}

void Ledger::EnsureCells(const std::vector<CellKey>& keys) {
  Swap([&](const Generation& old) {
    std::vector<ExtraCell> extra = CellsWithUsage(old);
    for (const CellKey& key : keys) extra.push_back(ExtraCell{key, ""});
    std::unique_ptr<Generation> next = Build(old.policy, std::move(extra));
    CopyUsage(old, *next);
    return next;
  });
}

std::unique_ptr<Ledger::Generation> Ledger::RebuildFrom(const Generation& old,
                                                        const std::vector<Charge*>& charges,
                                                        std::vector<Drift>* drift) {
  std::unique_ptr<Generation> next = Build(old.policy, CellsCharged(old, charges));
  *drift = DriftOf(old, SumsOf(charges));
  MoveCharges(old, *next, charges);
  return next;
}

std::vector<Ledger::Drift> Ledger::Rebuild(const std::function<std::vector<Charge*>()>& collect) {
  std::vector<Drift> drift;
  Swap([&](const Generation& old) { return RebuildFrom(old, collect(), &drift); });
  return drift;
}

std::vector<Ledger::Drift> Ledger::Verify(const std::function<std::vector<CellSum>()>& expected,
                                          const std::function<std::vector<Charge*>()>& collect) {
  std::vector<Drift> drift;
  Swap([&](const Generation& old) -> std::unique_ptr<Generation> {
    if (DriftOf(old, expected()).empty()) return nullptr;
    return RebuildFrom(old, collect(), &drift);
  });
  return drift;
}

std::vector<Ledger::CellUsage> Ledger::Cells(PolicyPtr* policy) const {
  Session session(*this);
  const Generation* gen = session.gen_;
  if (policy != nullptr) *policy = gen->policy;
  std::vector<CellUsage> out;
  out.reserve(gen->cell_count);
  for (size_t i = 0; i < gen->cell_count; ++i) {
    out.push_back(CellUsage{gen->cells[i].key, gen->View(gen->cells[i])});
  }
  return out;
}

std::vector<Ledger::PoolUsage> Ledger::Pools() const { return Session(*this).Pools(); }

Ledger::Usage Ledger::ReadUsage(PolicyPtr* policy) const {
  Session session(*this);
  if (policy != nullptr) *policy = session.gen_->policy;
  Usage out;
  out.pools = session.Pools();
  const Generation* gen = session.gen_;
  out.cells.reserve(gen->cell_count);
  for (size_t i = 0; i < gen->cell_count; ++i) {
    out.cells.push_back(CellUsage{gen->cells[i].key, gen->View(gen->cells[i])});
  }
  for (const auto& [key, cell] : gen->aliases) {
    out.companions.push_back(CellUsage{key, gen->View(gen->cells[cell])});
  }
  return out;
}

PolicyPtr Ledger::policy() const {
  Session session(*this);
  return session.gen_->policy;
}

uint64_t Ledger::generation() const {
  Session session(*this);
  return session.gen_->number;
}

// Relaxed: a statistic read on its own.
uint64_t Ledger::over_releases() const { return over_releases_.load(std::memory_order_relaxed); }

bool Ledger::UsesAsymmetricFence() { return AsymmetricFence(); }

// Acquire: a caller that sees the swap over also sees what it published.
bool Ledger::swap_in_progress() const {
  return (sessions_.load(std::memory_order_acquire) & kSwapClosed) != 0;
}

}  // namespace taskgov::scheduler::ledger
