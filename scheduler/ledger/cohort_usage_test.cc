#include "scheduler/ledger/cohort_usage.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::ledger {
namespace {

using model::FlavorNames;
using model::kUnlimited;
using model::ResourceNames;
using model::TeamNames;
using scheduler::testing::PolicyBuilder;

constexpr char kGpu[] = "nvidia.com/gpu";
constexpr char kP5[] = "ml.p5.48xlarge";

// One team cell: in the policy (with its cohort) or left over from a removed team.
struct Line {
  std::string team;
  std::string cohort;  // the policy's, or (not in_policy) the former cohort
  int64_t nominal = 0;
  int64_t lending = kUnlimited;
  int64_t usage = 0;
  bool in_policy = true;
  std::string flavor = kP5;
};

// What a cell is expected to borrow and lend; nullopt: the cell is left out.
struct Want {
  int64_t borrowed = 0;
  double lent = 0;
};

struct Case {
  std::string name;
  std::vector<Line> lines;
  std::vector<std::optional<Want>> want;             // parallel to lines
  std::map<std::string, int64_t> cohort_quota = {};  // GPUs on kP5 a cohort holds itself
};

// The view the ledger reports for a line (G = N − min(L, N)).
CellView ViewOf(const Line& l) {
  CellView v;
  v.exists = true;
  v.usage = l.usage;
  v.nominal = l.nominal;
  v.lending_limit = l.lending;
  v.guaranteed = l.nominal - std::min(l.lending, l.nominal);
  return v;
}

std::string TeamName(const Case& c, const Line& l) { return "cu-" + c.name + "-" + l.team; }

std::vector<CohortCellUsage> Compute(const Case& c) {
  PolicyBuilder builder;
  std::vector<Ledger::CellUsage> cells;
  std::map<std::string, std::string, std::less<>> former;
  for (const Line& l : c.lines) {
    const std::string team = TeamName(c, l);
    if (l.in_policy) {
      builder.Team(team, l.cohort).Quota(l.flavor, kGpu, l.nominal, kUnlimited, l.lending);
    } else {
      former[team] = l.cohort;
    }
    cells.push_back(
        Ledger::CellUsage{CellKey{TeamNames().Intern(team), FlavorNames().Intern(l.flavor),
                                  ResourceNames().Intern(kGpu)},
                          ViewOf(l)});
  }
  for (const auto& [cohort, gpus] : c.cohort_quota) builder.CohortQuota(cohort, kP5, kGpu, gpus);
  return ComputeCohortUsage(cells, *builder.Build(), [&](std::string_view team) {
    auto it = former.find(team);
    return it == former.end() ? std::string_view() : std::string_view(it->second);
  });
}

TEST(CohortUsageTest, BorrowedAndLentPerCell) {
  const std::vector<Case> cases = {
      {"one-borrower-two-lenders",
       // B = 8; idle lendable: l1 8, l2 4, b 0 → lent 8·8/12 and 8·4/12.
       {{"l1", "p", 10, kUnlimited, 2}, {"l2", "p", 10, kUnlimited, 6}, {"b", "p", 4, 0, 12}},
       {Want{0, 16.0 / 3}, Want{0, 8.0 / 3}, Want{8, 0}}},
      {"lending-limits-bound-the-idle-part",
       // l1 lends at most 3 and l2 at most 5 of their idle 10: B = 6 over Σ I = 8.
       {{"l1", "p", 10, 3, 0}, {"l2", "p", 10, 5, 0}, {"b", "p", 0, 0, 6}},
       {Want{0, 2.25}, Want{0, 3.75}, Want{6, 0}}},
      {"two-borrowers",
       // B = 2 + 3; x and y use their lendable part themselves; z leaves 15 idle.
       {{"x", "p", 8, 4, 10}, {"y", "p", 8, 8, 11}, {"z", "p", 16, kUnlimited, 1}},
       {Want{2, 0}, Want{3, 0}, Want{0, 5}}},
      {"nobody-borrows",
       {{"p", "c", 8, kUnlimited, 8}, {"q", "c", 8, kUnlimited, 3}},
       {Want{0, 0}, Want{0, 0}}},
      {"borrowing-beyond-idle-lends-all-that-is-idle",
       // Limits shrank under running pods: B = 10 > Σ I = 4; each lends no more than it leaves.
       {{"l", "p", 4, kUnlimited, 0}, {"b", "p", 0, 0, 10}},
       {Want{0, 4}, Want{10, 0}}},
      {"teams-without-cohort-pool-alone",
       {{"alone", "", 10, kUnlimited, 0}, {"other", "", 0, 0, 4}},
       {Want{0, 0}, Want{4, 0}}},
      {"cohorts-are-separate-pools",
       {{"l", "c1", 10, kUnlimited, 0}, {"b", "c2", 0, 0, 4}},
       {Want{0, 0}, Want{4, 0}}},
      {"flavors-are-separate-pools",
       {{"l", "p", 10, kUnlimited, 0, true, "ml.g5.12xlarge"}, {"b", "p", 0, 0, 4}},
       {Want{0, 0}, Want{4, 0}}},
      {"removed-team-keeps-its-former-cohort",
       {{"l", "p", 10, kUnlimited, 0}, {"gone", "p", 0, 0, 4, false}},
       {Want{0, 4}, Want{4, 0}}},
      {"removed-team-without-former-cohort-pools-alone",
       {{"l", "p", 10, kUnlimited, 0}, {"gone", "", 0, 0, 4, false}},
       {Want{0, 0}, Want{4, 0}}},
      {"a-cohorts-own-quota-carries-its-share",
       // B = 6 over Σ I = 8 (l) + 4 (the cohort's own): l lends 6·8/12, the cohort carries 2.
       {{"l", "p", 10, kUnlimited, 2}, {"b", "p", 0, 0, 6}},
       {Want{0, 4}, Want{6, 0}},
       {{"p", 4}}},
      {"a-cohorts-own-quota-stays-in-its-cohort",
       {{"l", "p", 10, kUnlimited, 2}, {"b", "p", 0, 0, 6}},
       {Want{0, 6}, Want{6, 0}},
       {{"elsewhere", 4}}},
      {"drained-cells-outside-the-policy-are-left-out",
       {{"idle", "p", 10, kUnlimited, 0}, {"gone", "p", 0, 0, 0, false}},
       {Want{0, 0}, std::nullopt}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::vector<CohortCellUsage> got = Compute(c);
    size_t next = 0;
    for (size_t i = 0; i < c.lines.size(); ++i) {
      SCOPED_TRACE(c.lines[i].team);
      if (!c.want[i]) continue;
      ASSERT_LT(next, got.size());
      const CohortCellUsage& u = got[next++];
      EXPECT_EQ(u.key.team, TeamNames().Intern(TeamName(c, c.lines[i])));  // in cell order
      EXPECT_EQ(u.view.usage, c.lines[i].usage);
      EXPECT_EQ(u.borrowed, c.want[i]->borrowed);
      EXPECT_NEAR(u.lent, c.want[i]->lent, 1e-9);
    }
    EXPECT_EQ(next, got.size()) << "cells left out that should not be, or the reverse";
  }
}

// Property: when the pool constraint holds (B ≤ Σ I), Σ lent = Σ borrowed in every pool, and no
// cell lends more than it leaves idle.
TEST(CohortUsageTest, LentSumsToBorrowedWhenThePoolConstraintHolds) {
  Case c{"property", {}, {}};
  for (int i = 0; i < 6; ++i) {
    const int64_t nominal = 4 + 2 * i;
    const int64_t lending = i % 3 == 0 ? kUnlimited : i;
    const int64_t usage = i % 2 == 1 ? nominal + i : i / 2;  // three borrowers, three lenders
    c.lines.push_back(Line{"t" + std::to_string(i), "p", nominal, lending, usage});
  }
  const std::vector<CohortCellUsage> got = Compute(c);
  ASSERT_EQ(got.size(), c.lines.size());
  double lent = 0, borrowed = 0, idle = 0;
  for (const CohortCellUsage& u : got) {
    const int64_t own = std::max(u.view.guaranteed, std::min(u.view.usage, u.view.nominal));
    const double cell_idle = static_cast<double>(std::max<int64_t>(0, u.view.nominal - own));
    EXPECT_LE(u.lent, cell_idle + 1e-9);
    lent += u.lent;
    borrowed += static_cast<double>(u.borrowed);
    idle += cell_idle;
  }
  ASSERT_LE(borrowed, idle) << "the case must satisfy the pool constraint";
  EXPECT_GT(borrowed, 0);
  EXPECT_NEAR(lent, borrowed, 1e-9);
}

}  // namespace
}  // namespace taskgov::scheduler::ledger
