#pragma once

// Ledger: the lock-free quota accounting of DESIGN §3.3.
//
// Cells. Usage is held per (team, flavor, resource) in a TeamCell and per (cohort, flavor,
// resource) in a PoolCell. A team cell splits its usage U into two counters:
//   g — usage inside the team's guaranteed part G = N − L (never lent), g ≤ G;
//   b — usage charged to the cohort pool (its own lendable part and anything borrowed).
// The pool counter P is Σ b over the cohort's teams and its capacity C is Σ L plus the quota the
// cohort holds itself (Kueue Cohort resourceGroups). Admission of q on a resource takes what fits
// from g, and the rest r from the pool and then from b:
//   1. g' = g + a ≤ G                         (CAS loop; a = min(q, G − g))
//   2. P' = P + r ≤ C                         (CAS loop; pool first, so P ≥ Σ b at every instant)
//   3. b' = b + r ≤ T − G                     (CAS loop; T = N + B, or N when staying in nominal)
// Each step checks its limit inside the compare-exchange (never check-then-add). A failed step
// gives back what the earlier steps took. Every increase of g is checked against G, so g ≤ G
// always; hence b ≥ U − G, the pool constraint Σ max(0, U − G) ≤ Σ b ≤ P ≤ C of DESIGN §3.3
// holds (there C = Σ L: a cohort holding no quota of its own), and U = g + b ≤ G + (T − G) = T for
// what Reserve admits (ForceCharge and the copy into a new generation add usage that already
// exists, without limits). A reader may observe a reservation half applied (taken from g but not
// yet from the pool); that can cause a spurious refusal, never an over-admission. A multi-resource
// reservation takes every resource or gives back everything it took. Mode::kWithinNominal is exact
// when reservations of one team do not overlap in time. Step 1 bounds g + b + a by N with the b it
// reads, and a borrowing reservation of the same team may raise b just after that read, so two
// overlapping ones can leave the team above N. It still stays within N + B, and the pool within C,
// because steps 2 and 3 check their own counters.
//
// Cohort tree. A cohort with a parent (Kueue Cohort parentName) stores in its parent's pool what
// its own cannot hold, as a team stores in its cohort's pool what its guaranteed part cannot
// (Kueue pkg/cache/scheduler/resource_node.go). A pool node has a subtree quota S (its own quota,
// its teams' Σ L, and for each child cohort the part of the child's S beyond the child's local
// quota), a local quota S − lending limit (none: 0; a root keeps all of S) and a borrowing limit;
// its usage U is split as a team cell's: g ≤ local, and b, stored in the parent, ≤ S − local +
// borrowing limit. Step 2 runs up the tree: each pool takes into g what fits, the rest first
// from its parent (recursively) and then into b; a root takes into g within S. A failed step
// gives back what the steps below it took. Every pool's U stays ≥ Σ b of its children (a parent
// grows before a child's b, and shrinks after), so a root's S bounds everything stored in it.
// For a flat cohort (a root with teams only) this is step 2 above, unchanged.
//
// Release. Releases are canonical: a release takes from b first (shrinking the pool charge), then
// from g, so the ledger need not remember how each reservation was split. A release first checks
// that the cell holds what the charge names (reading b before g: usage only moves from b to g, so
// that order never undercounts) and subtracts nothing for that resource when it does not: an
// over-release, which only drift causes (a charge released twice, or usage rebuilt without it).
// The ledger counts those (over_releases()) and Release returns false. The subtractions are CAS
// loops that never take g or b below zero. P cannot go below zero because it never drops below
// Σ b. A pool releases the same way up the tree: b first (and the parent with it), then g. In
// one case a refused release still subtracts: when it races with another release of the
// same cell, which needs the cell to have drifted already. It then takes only what the cell
// holds, and the counters stay non-negative with P ≥ Σ b.
//
// Memory order. Every counter access is seq_cst. The limit checks would need only per-counter
// atomicity, but the release check and the rebalance (which moves usage from b to g, adding to g
// first) reason about g + b "at one instant". The single total order of seq_cst operations,
// consistent with each thread's program order, is what gives that phrase a meaning across two
// counters. On x86-64 this costs nothing: every read-modify-write is a locked instruction
// whatever its order, and a seq_cst load is a plain load.
//
// Generations. Limits and the cell layout come from one Policy snapshot: a Generation. A new
// policy (or a cell needed for usage the policy does not mention: a removed team or flavor)
// makes a new Generation. The swap closes the ledger to new sessions and waits until no session
// is open; a thread announces the ledger it has sessions on in a slot of its own (one store to
// open, one to end: no shared counter and, where the kernel offers membarrier(2), no fence on
// the hot path; the swap runs the heavy half of that asymmetric fence). This is a grace period
// of microseconds, during which newly opened sessions wait. The swap then copies the usage over
// with the canonical split for the new limits, publishes the new generation, frees the old one (no
// session can reach it) and reopens. Usage is never lost or double counted across a reload; usage
// above new limits stays (no running pod is touched) and blocks new admissions until it drains.
// Swaps are serialised by a mutex. Reserve, ForceCharge and Release take no lock and never wait
// (their CAS loops retry only when another thread changed the same counter). Opening a Session
// takes no lock either; it waits only while a swap is under way, from closing the current
// generation to publishing the next (the grace period plus the copy).
//
// Charges. Reserve returns a Charge: what was taken, per governed resource, with the cell
// indices of the generation it was taken in. Release accepts charges of any generation (cells are
// found again by name after a reload). Resources the team's quota does not govern on the flavor
// are not charged.
//
// Companion cells. A pod is charged on its node's flavor, resource by resource, as Kueue assigns
// a flavor per resource group: a resource the team has no quota for on that flavor is charged on
// the first of the team's flavors (in its order) that has quota for it and whose node labels
// every node of the pod's flavor has — typically cpu and memory on an unlabelled default flavor
// for a GPU pod on an instance-type flavor. A (team, flavor) finds those cells beside its own
// (one lookup, as its own), so Reserve, Release, View and ForceCharge charge them; a team with no
// quota of its own on the flavor has none.

#include <algorithm>
#include <array>
#include <atomic>
#include <bitset>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "scheduler/model/interner.h"
#include "scheduler/model/policy.h"
#include "scheduler/model/resources.h"

namespace taskgov::scheduler::ledger {

inline constexpr size_t kMaxChargedResources = 8;

// One entry of an IdAmounts list (resources.h): an interned resource and its amount.
using IdAmount = model::IdAmounts::value_type;

// The resources of `list` that have an interned id, with their amounts, in list order. A name that
// was never interned has no cell anywhere (Build interns every governed resource), so dropping it
// changes no charge, and unlike ToIdAmounts this never adds names from untrusted input to the
// interner. Lock-free (Interner::Find).
[[nodiscard]] model::IdAmounts KnownIdAmounts(const model::ResourceList& list);

struct Charge {
  struct Item {
    model::NameId resource = 0;
    uint32_t cell = 0;  // index in the generation's cells
    int64_t amount = 0;
  };
  uint64_t generation = 0;
  model::NameId team = 0;
  model::NameId flavor = 0;
  uint8_t count = 0;
  // True when, after this charge, the team used more than its nominal quota of some resource.
  bool borrowing = false;
  std::array<Item, kMaxChargedResources> items{};

  [[nodiscard]] int64_t Amount(model::NameId resource) const;
};

enum class RefusalKind {
  kNoQuota,         // the team has no quota on this flavor
  kNominal,         // would exceed nominal (when asked to stay within it)
  kBorrowingLimit,  // would exceed nominal + borrowing limit
  kPool,            // the cohort has no idle quota left for it
  kTooManyResources,
  kBusy,  // the QuotaBook's table had no room for the reservation (until its next compaction)
};

struct Refusal {
  RefusalKind kind = RefusalKind::kNoQuota;
  model::NameId team = 0;
  model::NameId flavor = 0;
  model::NameId resource = 0;
  int64_t requested = 0;
  int64_t in_use = 0;
  int64_t nominal = 0;
  int64_t borrowing_limit = 0;
  int64_t pool_used = 0;
  int64_t pool_capacity = 0;
  int64_t pool_free = 0;
  int64_t pool_potential = 0;  // what the tree could lend the team (a flat cohort: its capacity)

  // e.g. "team-a: nvidia.com/gpu on ml.p5.48xlarge: requested 8, in use 16 of nominal 16,
  // borrowing limit 0"
  [[nodiscard]] std::string Explain() const;
};

// One team cell and its pool, read with three loads (b before g, so usage moving from b to g may
// be counted twice for a moment but is never missed).
struct CellView {
  bool exists = false;
  int64_t usage = 0;
  int64_t nominal = 0;
  int64_t borrowing_limit = 0;
  int64_t lending_limit = 0;
  int64_t guaranteed = 0;
  // The pool of the team's cohort: its usage U and subtree quota S (a flat cohort: Σ b and
  // Σ L plus its own quota); what the team may still take from it, up the cohort tree (a flat
  // cohort: S − U); and what it could give with no usage anywhere (a flat cohort: S).
  int64_t pool_used = 0;
  int64_t pool_capacity = 0;
  int64_t pool_free = 0;
  int64_t pool_potential = 0;
  int32_t pool = -1;  // that pool's index in the generation's pools (Ledger::Pools)
  // borrowed = max(0, usage − nominal); lent (to others) is computed by the caller per cohort.
};

// What a cohort pool can still give a child (Kueue's available(); see "Cohort tree"): what is
// left of its local quota, plus what its parent can give (`parent_free`) within its borrowing
// limit (`in_parent_limit`, kUnlimited: none); a root (`root`): what is left of its subtree
// quota. The rule of the ledger's pools and of preemption's simulation of them.
[[nodiscard]] inline int64_t PoolFreeOf(int64_t used, int64_t capacity, int64_t local,
                                        int64_t in_parent_limit, bool root, int64_t parent_free) {
  if (root) return std::max<int64_t>(0, capacity - used);
  int64_t from_parent = parent_free;
  if (in_parent_limit != model::kUnlimited) {
    const int64_t in_parent = std::max<int64_t>(0, used - local);
    from_parent = std::min(from_parent, std::max<int64_t>(0, in_parent_limit - in_parent));
  }
  return model::SaturatingAdd(std::max<int64_t>(0, local - used), from_parent);
}

struct CellKey {
  model::NameId team = 0;
  model::NameId flavor = 0;
  model::NameId resource = 0;
  bool operator==(const CellKey&) const = default;
};

class Ledger {
 public:
  enum class Mode { kWithinNominal, kBorrowing };
  struct Generation;

  explicit Ledger(model::PolicyPtr policy);
  ~Ledger();
  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;

  // A scope in which operations run against one generation. While any Session is open, a
  // generation swap waits (and a Session opened during a swap waits until the swap is done), so
  // a caller can keep side tables (the reservation table) consistent with the counters by
  // updating them inside the same Session. Sessions are cheap (a store to open, a store to end, and
  // a thread-local link) and take no lock.
  //
  // Nesting. A Session opened on a thread that already holds one on the same ledger joins the
  // generation the outer one holds, without waiting. Outer and nested sessions therefore always
  // see the same generation. Waiting there instead would deadlock: the swap waits for the outer
  // session to end while the nested one waits for the swap. Joining is safe because the outer
  // session's count keeps any swap in its wait, so the generation is neither copied
  // nor freed until both have ended (in either order). A Session belongs to the thread that
  // opened it: use and destroy it there.
  //
  // Two ledgers. A thread may hold sessions on two ledgers at once (tests do; production has
  // one), but, as with locks, every thread must open them in one order: a thread inside A that
  // opens B waits while B swaps, and B's swap waits for B's sessions, so a thread inside B
  // opening A while A swaps would close the cycle.
  //
  // Misuse that would wait for itself forever aborts with a message instead: calling
  // ApplyPolicy, EnsureCells or Rebuild on a thread that holds a Session on the same ledger, or
  // opening a Session inside Rebuild's `collect`.
  // A cohort's pool for (flavor, resource), read with a few loads (see "Cohort tree").
  struct PoolUsage {
    std::string cohort;  // "" for the pool of a team in no cohort (or of an orphan cell)
    model::NameId flavor = 0;
    model::NameId resource = 0;
    int32_t parent = -1;          // index in Pools() of its parent cohort's pool; -1 at a root
    int64_t used = 0;             // U
    int64_t in_parent = 0;        // b: the part stored in its parent's pool
    int64_t capacity = 0;         // S: its subtree quota
    int64_t local = 0;            // its local quota (a root: S)
    int64_t in_parent_limit = 0;  // what b may reach (kUnlimited: no borrowing limit)
    int64_t free = 0;             // what a child may still take from it, up the tree
    int64_t potential = 0;        // what it could give a child with no usage anywhere
  };
  class Session {
   public:
    explicit Session(const Ledger& ledger);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // Reserves every governed resource of `request` for (team, flavor) or nothing. The ids must
    // be distinct (as ToIdAmounts and KnownIdAmounts make them); non-positive amounts are
    // skipped. No lock, no allocation.
    [[nodiscard]] std::variant<Charge, Refusal> Reserve(model::NameId team, model::NameId flavor,
                                                        const model::IdAmounts& request, Mode mode);
    // The same for names: looks each name up once (lock-free) and reserves the known ones. No
    // lock; allocates only for requests naming more than 16 resources.
    [[nodiscard]] std::variant<Charge, Refusal> Reserve(model::NameId team, model::NameId flavor,
                                                        const model::ResourceList& request,
                                                        Mode mode);
    // Charges unconditionally (usage that already exists, e.g. a bound pod, is never refused).
    // Returns false and leaves nothing charged when a needed cell does not exist in this
    // generation; `missing` then names the cells to create with Ledger::EnsureCells.
    [[nodiscard]] bool ForceCharge(model::NameId team, model::NameId flavor,
                                   const model::IdAmounts& request, Charge* charge,
                                   std::vector<CellKey>* missing);
    [[nodiscard]] bool ForceCharge(model::NameId team, model::NameId flavor,
                                   const model::ResourceList& request, Charge* charge,
                                   std::vector<CellKey>* missing);
    // Gives a charge (of this or an earlier generation) back. Returns true when every resource
    // was subtracted. For a resource whose cell no longer holds that much (or no longer exists)
    // it subtracts nothing, counts an over-release (Ledger::over_releases) and returns false;
    // see "Release" in the header comment. `refused`, if given, gets bit i set for each refused
    // charge.items[i].
    [[nodiscard]] bool Release(const Charge& charge);
    [[nodiscard]] bool Release(const Charge& charge, std::bitset<kMaxChargedResources>* refused);

    [[nodiscard]] CellView View(model::NameId team, model::NameId flavor,
                                model::NameId resource) const;
    [[nodiscard]] bool HasFlavor(model::NameId team, model::NameId flavor) const;
    // Governed resources of (team, flavor), in cell order.
    [[nodiscard]] std::vector<model::NameId> Resources(model::NameId team,
                                                       model::NameId flavor) const;
    // Every pool of the session's generation (Ledger::Pools).
    [[nodiscard]] std::vector<PoolUsage> Pools() const;
    [[nodiscard]] const model::Policy& policy() const;
    [[nodiscard]] uint64_t generation() const;

   private:
    friend class Ledger;
    std::variant<Charge, Refusal> ReserveIds(model::NameId team, model::NameId flavor,
                                             std::span<const IdAmount> request, Mode mode);
    bool ForceChargeIds(model::NameId team, model::NameId flavor, std::span<const IdAmount> request,
                        Charge* charge, std::vector<CellKey>* missing);

    const Ledger* ledger_;
    Generation* gen_ = nullptr;
    Session* below_;        // the next outer open Session of this thread (any ledger), or null
    bool counted_ = false;  // counted in ledger_->sessions_, not announced in the thread's slot
  };

  // Installs new limits; keeps usage (see the header comment). The new generation is built
  // while sessions go on; the swap only copies the usage (sessions wait for that, linear in the
  // cells).
  void ApplyPolicy(model::PolicyPtr policy);
  // Runs `fn` while no Session is open, keeping the generation: for side tables that sessions
  // read and that `fn` moves or frees (the QuotaBook's compaction). Waits as a swap does; aborts
  // on a thread that holds a Session, and `fn` must not open one.
  void Quiesce(const std::function<void()>& fn);
  // Adds cells (with zero limits) for usage the policy does not mention.
  void EnsureCells(const std::vector<CellKey>& keys);
  // A cell whose counters disagreed with the charges it should hold.
  struct Drift {
    CellKey key;
    int64_t ledger_usage = 0;
    int64_t charged = 0;
  };
  // Replaces all usage by the sum of the charges `collect` returns and reports every cell that
  // differed. `collect` runs while no Session is open, so whatever a caller updates inside
  // Sessions is quiescent. Returned charges are re-pointed at the new generation (updated in
  // place).
  std::vector<Drift> Rebuild(const std::function<std::vector<Charge*>()>& collect);
  // The usage a cell should hold.
  struct CellSum {
    CellKey key;
    int64_t amount = 0;
  };
  // Rebuild, done only when needed: while no Session is open, compares every cell's usage with
  // the sums `expected` returns (several sums of one cell add up); only when one differs does it
  // rebuild from `collect`'s charges as Rebuild does, reporting the drift. Without drift the
  // generation stays and the charges are not walked: the time no Session may open is the cells'
  // and the sums', not the charges' (at 100,000 charges a Rebuild holds sessions out ~40 ms).
  std::vector<Drift> Verify(const std::function<std::vector<CellSum>()>& expected,
                            const std::function<std::vector<Charge*>()>& collect);

  // A cell to create beyond the policy's, for usage the policy does not mention.
  struct ExtraCell {
    CellKey key;
    std::string cohort;  // the pool's cohort key it had, for teams the policy no longer has
  };
  struct CellUsage {
    CellKey key;
    CellView view;
  };
  // Every cell of the current generation (orphans included) and, when `policy` is not null,
  // that generation's policy (the one the cells' limits come from).
  [[nodiscard]] std::vector<CellUsage> Cells(model::PolicyPtr* policy = nullptr) const;
  // Every pool of the current generation (CellView::pool indexes them).
  [[nodiscard]] std::vector<PoolUsage> Pools() const;
  // Every cell and pool of the current generation, read in one session.
  struct Usage {
    std::vector<CellUsage> cells;
    std::vector<PoolUsage> pools;
    // A team's cells on other flavors that it charges for pods on a flavor (see "Companion
    // cells"), each keyed as that flavor sees it: (team, the pod's flavor, resource).
    std::vector<CellUsage> companions;
  };
  // `policy`, if given, gets that generation's policy.
  [[nodiscard]] Usage ReadUsage(model::PolicyPtr* policy = nullptr) const;
  [[nodiscard]] model::PolicyPtr policy() const;
  [[nodiscard]] uint64_t generation() const;
  // How many times a release was refused for a resource (see Session::Release): monotonic.
  [[nodiscard]] uint64_t over_releases() const;
  // Whether sessions announce themselves without a fence (membarrier(2) registered; see
  // "Generations" above). For tests and diagnostics.
  [[nodiscard]] static bool UsesAsymmetricFence();
  // True from when a swap has closed the current generation to new sessions until it has
  // published the next one. For tests and diagnostics.
  [[nodiscard]] bool swap_in_progress() const;

 private:
  // Settles a new (outermost) session on the current generation, waiting out a swap. A thread
  // holding no session announces the ledger in its slot (one store); a thread that announces
  // another ledger already is counted in sessions_ instead (`counted`).
  static Generation* Enter(const Ledger& ledger, bool* counted);
  // A generation of `policy` with `extra` cells, numbered unless `numbered` is false (the caller
  // numbers it when it publishes it).
  std::unique_ptr<Generation> Build(model::PolicyPtr policy, std::vector<ExtraCell> extra,
                                    bool numbered = true);
  // Closes the current generation, waits until no session is inside it, builds the next one
  // with `make_next` (which fills its counters) and publishes it; when `make_next` returns null,
  // reopens the current one unchanged.
  void Swap(const std::function<std::unique_ptr<Generation>(const Generation&)>& make_next);
  // A generation like `old` whose counters hold `charges`, re-pointed at it; `drift` gets the
  // cells of `old` that disagreed with them (and those they name that `old` lacks). With `old`
  // quiescent.
  std::unique_ptr<Generation> RebuildFrom(const Generation& old,
                                          const std::vector<Charge*>& charges,
                                          std::vector<Drift>* drift);

  // In the top bit, whether a swap has closed the ledger to new sessions; in the low bits, the
  // sessions counted here (those of a thread that has sessions open on another ledger already;
  // the others announce themselves in their thread's slot). A swap sets the bit, waits until no
  // slot announces this ledger and the count is zero, and only then replaces current_ (see
  // Enter and Swap).
  static constexpr uint64_t kSwapClosed = uint64_t{1} << 63;
  mutable std::atomic<uint64_t> sessions_{0};
  // Written only by a swap, while the ledger is closed and no session is open.
  std::atomic<Generation*> current_{nullptr};
  std::mutex structure_mu_;  // serialises swaps
  std::mutex apply_mu_;      // serialises ApplyPolicy's builds (taken before structure_mu_)
  std::atomic<uint64_t> next_generation_{1};
  mutable std::atomic<uint64_t> over_releases_{0};
};

}  // namespace taskgov::scheduler::ledger
