#include "scheduler/ledger/cohort_usage.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "scheduler/model/interner.h"
#include "scheduler/model/resources.h"

namespace taskgov::scheduler::ledger {

using model::Cohort;
using model::FlavorNames;
using model::FlavorQuota;
using model::NameId;
using model::Policy;
using model::ResourceNames;
using model::ResourceQuota;
using model::SaturatingAdd;
using model::Team;
using model::TeamNames;

namespace {

// A cohort's pool for (flavor, resource); a team without a cohort has one of its own (`alone`).
struct PoolKey {
  bool alone = false;
  std::string_view cohort;  // when !alone
  NameId team = 0;          // when alone
  NameId flavor = 0;
  NameId resource = 0;
  bool operator<(const PoolKey& o) const {
    return std::tie(alone, cohort, team, flavor, resource) <
           std::tie(o.alone, o.cohort, o.team, o.flavor, o.resource);
  }
};

struct Pool {
  int64_t borrowed = 0;  // B
  int64_t idle = 0;      // Σ I
};

int64_t Borrowed(const CellView& v) { return std::max<int64_t>(0, v.usage - v.nominal); }

// I_t of the header: the part of the lendable quota the team does not use itself.
int64_t IdleLendable(const CellView& v) {
  const int64_t own = std::max(v.guaranteed, std::min(v.usage, v.nominal));
  return std::max<int64_t>(0, v.nominal - own);
}

// What the policy says about the cells: each team's cohort, and which cells it names.
struct PolicyCells {
  explicit PolicyCells(const Policy& policy) : policy(policy) {
    for (const Team& team : policy.teams) {
      const std::optional<NameId> team_id = TeamNames().Find(team.name);
      if (!team_id) continue;  // never interned: the ledger has no cell of it
      cohorts.emplace(*team_id, team.cohort);
      for (const FlavorQuota& fq : team.flavors) {
        const std::optional<NameId> flavor = FlavorNames().Find(fq.flavor);
        for (const ResourceQuota& rq : fq.resources) {
          const std::optional<NameId> resource = ResourceNames().Find(rq.resource);
          if (flavor && resource) named.emplace(*team_id, *flavor, *resource);
        }
      }
    }
    for (const Cohort& cohort : policy.cohorts) {
      for (const FlavorQuota& fq : cohort.flavors) {
        const std::optional<NameId> flavor = FlavorNames().Find(fq.flavor);
        for (const ResourceQuota& rq : fq.resources) {
          const std::optional<NameId> resource = ResourceNames().Find(rq.resource);
          if (!flavor || !resource) continue;
          int64_t& q = cohort_quota[{policy.RootCohort(cohort.name), *flavor, *resource}];
          q = SaturatingAdd(q, rq.nominal);
        }
      }
    }
  }
  // The quota the cohorts of the tree rooted at `root` hold themselves on (flavor, resource).
  int64_t CohortQuota(std::string_view root, NameId flavor, NameId resource) const {
    auto it = cohort_quota.find({root, flavor, resource});
    return it == cohort_quota.end() ? 0 : it->second;
  }
  bool Names(const CellKey& key) const {
    return named.count({key.team, key.flavor, key.resource}) > 0;
  }

  const Policy& policy;
  std::unordered_map<NameId, std::string_view> cohorts;
  std::set<std::tuple<NameId, NameId, NameId>> named;
  std::map<std::tuple<std::string_view, NameId, NameId>, int64_t> cohort_quota;
};

PoolKey PoolOf(const CellKey& key, const PolicyCells& policy, const FormerCohort& former_cohort) {
  std::string_view cohort;
  if (auto it = policy.cohorts.find(key.team); it != policy.cohorts.end()) {
    cohort = it->second;
  } else if (former_cohort) {
    cohort = former_cohort(TeamNames().Name(key.team));
  }
  if (cohort.empty()) return PoolKey{true, {}, key.team, key.flavor, key.resource};
  return PoolKey{false, policy.policy.RootCohort(cohort), 0, key.flavor, key.resource};
}

double Lent(const CellView& v, const Pool& pool) {
  if (pool.idle <= 0 || pool.borrowed <= 0) return 0;
  const double idle = static_cast<double>(IdleLendable(v));
  return std::min(idle, static_cast<double>(pool.borrowed) * idle / static_cast<double>(pool.idle));
}

}  // namespace

std::vector<CohortCellUsage> ComputeCohortUsage(const std::vector<Ledger::CellUsage>& cells,
                                                const Policy& policy,
                                                const FormerCohort& former_cohort) {
  const PolicyCells in_policy(policy);
  std::map<PoolKey, Pool> pools;
  std::vector<CohortCellUsage> out;
  std::vector<const Pool*> pool_of;  // parallel to `out` (map nodes do not move)
  out.reserve(cells.size());
  pool_of.reserve(cells.size());
  for (const Ledger::CellUsage& cell : cells) {
    if (cell.view.usage == 0 && !in_policy.Names(cell.key)) continue;  // drained, not in policy
    Pool& pool = pools[PoolOf(cell.key, in_policy, former_cohort)];
    pool.borrowed = SaturatingAdd(pool.borrowed, Borrowed(cell.view));
    pool.idle = SaturatingAdd(pool.idle, IdleLendable(cell.view));
    out.push_back(CohortCellUsage{cell.key, cell.view, Borrowed(cell.view), 0});
    pool_of.push_back(&pool);
  }
  // A cohort's own quota is idle lendable quota no team holds: it carries its share of the
  // borrowing, and the teams' lent shares leave that part out.
  for (auto& [key, pool] : pools) {
    if (!key.alone) {
      pool.idle =
          SaturatingAdd(pool.idle, in_policy.CohortQuota(key.cohort, key.flavor, key.resource));
    }
  }
  for (size_t i = 0; i < out.size(); ++i) out[i].lent = Lent(out[i].view, *pool_of[i]);
  return out;
}

}  // namespace taskgov::scheduler::ledger
