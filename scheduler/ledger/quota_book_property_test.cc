// Property test of the QuotaBook: random sequences of assume (filter), confirm (bind / seen
// bound), release (pod ended or deleted), TTL expiry, policy reload and reconcile over random
// teams, two flavors and two resources, checked against a reference model of the reservations.
//
// After every step: the ledger's usage of every (team, flavor, resource) equals the sum of the
// live reservations of the model, the table holds exactly the model's UIDs in the model's states,
// and reconciling finds no drift. After every admission: DESIGN §3.3 holds for every cell the
// admission charged (usage within nominal, or nominal + borrowing limit when borrowing; the
// cohort pool within its capacity). In rounds without reloads and without unconditional charges
// (pods seen bound that were never admitted), §3.3 holds for every cell at every step.

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "scheduler/ledger/quota_book.h"
#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::ledger {
namespace {

using model::FlavorNames;
using model::kUnlimited;
using model::NameId;
using model::PolicyPtr;
using model::ResourceAmount;
using model::ResourceList;
using model::ResourceNames;
using model::SaturatingAdd;
using model::TeamNames;
using scheduler::testing::PolicyBuilder;
using Mode = Ledger::Mode;

const std::vector<std::string> kFlavors = {"ml.p5.48xlarge", "ml.g5.12xlarge"};
const std::vector<std::string> kResources = {"nvidia.com/gpu", "cpu"};

struct Limits {
  int64_t nominal = 0, borrowing = kUnlimited, lending = kUnlimited;
};

struct ModelReservation {
  std::string team;
  std::string flavor;
  ResourceList request;
  ReservationState state = ReservationState::kAssumed;
  int64_t expires_ms = 0;
};

struct Model {
  // limits[team][flavor][resource]; a team may have no quota on a flavor.
  std::map<std::string, std::map<std::string, std::map<std::string, Limits>>> limits;
  std::map<std::string, ModelReservation> live;  // by UID

  // What an unconditional charge takes: the resources governed on the flavor — by a team's
  // quota, or by a cell the ledger keeps for usage the policy no longer mentions (the test
  // reconciles after every step, so such a cell exists exactly while a live charge names it).
  ResourceList Charged(const std::string& flavor, const ResourceList& request) const {
    ResourceList out;
    for (const ResourceAmount& want : request) {
      if (want.amount <= 0) continue;
      bool governed = false;
      for (const auto& [team, flavors] : limits) governed = governed || flavors.count(flavor);
      for (const auto& [uid, r] : live) {
        governed = governed || (r.flavor == flavor && r.request.Get(want.name) > 0);
      }
      if (governed) out.Set(want.name, want.amount);
    }
    return out;
  }

  int64_t Usage(const std::string& team, const std::string& flavor,
                const std::string& resource) const {
    int64_t sum = 0;
    for (const auto& [uid, r] : live) {
      if (r.team == team && r.flavor == flavor) sum += r.request.Get(resource);
    }
    return sum;
  }
};

PolicyPtr PolicyFrom(const Model& model) {
  PolicyBuilder builder;
  for (const auto& [team, flavors] : model.limits) {
    builder.Team(team, "c");
    for (const auto& [flavor, resources] : flavors) {
      for (const auto& [resource, l] : resources) {
        builder.Quota(flavor, resource, l.nominal, l.borrowing, l.lending);
      }
    }
  }
  return builder.Build();
}

class QuotaBookPropertyTest : public ::testing::Test {
 protected:
  CellView View(const std::string& team, const std::string& flavor, const std::string& resource) {
    Ledger::Session s(book_->ledger());
    return s.View(TeamNames().Intern(team), FlavorNames().Intern(flavor),
                  ResourceNames().Intern(resource));
  }
  // DESIGN §3.3 for one cell: usage within the ceiling of `mode`, the pool within its capacity.
  // `pool_before` allows a pool that was already over its capacity (after a reload shrank it, or
  // after unconditional charges) as long as it did not grow.
  ::testing::AssertionResult WithinLimits(const std::string& team, const std::string& flavor,
                                          const std::string& resource, Mode mode,
                                          int64_t pool_before = 0) {
    const CellView v = View(team, flavor, resource);
    if (!v.exists) return ::testing::AssertionSuccess();
    const int64_t ceiling =
        mode == Mode::kWithinNominal ? v.nominal : SaturatingAdd(v.nominal, v.borrowing_limit);
    if (v.usage > ceiling) {
      return ::testing::AssertionFailure() << team << "/" << flavor << "/" << resource << " usage "
                                           << v.usage << " over ceiling " << ceiling;
    }
    if (v.pool_used > std::max(v.pool_capacity, pool_before)) {
      return ::testing::AssertionFailure() << flavor << "/" << resource << " pool used "
                                           << v.pool_used << " over capacity " << v.pool_capacity;
    }
    return ::testing::AssertionSuccess();
  }

  common::FakeClock clock_;
  std::unique_ptr<QuotaBook> book_;
};

TEST_F(QuotaBookPropertyTest, RandomSequencesKeepUsageExactAndLimitsHeld) {
  std::mt19937_64 rng(20261130);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  int64_t admissions = 0, refusals = 0, forced = 0, expired = 0;
  for (int round = 0; round < 60; ++round) {
    // Odd rounds: no reloads and no unconditional charges, so §3.3 holds globally.
    const bool strict = round % 2 == 1;
    Model model;
    const int teams = 2 + static_cast<int>(pick(4));
    auto random_limits = [&] {
      Limits l;
      l.nominal = static_cast<int64_t>(pick(9));
      l.borrowing = pick(3) == 0 ? kUnlimited : static_cast<int64_t>(pick(6));
      l.lending = pick(3) == 0 ? kUnlimited : static_cast<int64_t>(pick(6));
      return l;
    };
    auto random_team_limits = [&](const std::string& team) {
      auto& flavors = model.limits[team];
      flavors.clear();
      for (const std::string& flavor : kFlavors) {
        if (flavor != kFlavors[0] && pick(4) == 0) continue;  // no quota on the second flavor
        for (const std::string& resource : kResources) flavors[flavor][resource] = random_limits();
      }
    };
    for (int t = 0; t < teams; ++t) random_team_limits("t" + std::to_string(t));
    book_ = std::make_unique<QuotaBook>(PolicyFrom(model), &clock_);

    for (int step = 0; step < 250; ++step) {
      SCOPED_TRACE("round " + std::to_string(round) + " step " + std::to_string(step));
      const std::string uid = "u" + std::to_string(pick(24));
      const std::string team = "t" + std::to_string(pick(static_cast<size_t>(teams)));
      const std::string flavor = kFlavors[pick(kFlavors.size())];
      const ResourceList request{{kResources[0], 1 + static_cast<int64_t>(pick(3))},
                                 {kResources[1], static_cast<int64_t>(pick(4))}};
      const int op = static_cast<int>(pick(20));
      if (op < 9) {  // filter → assume
        const Mode mode = pick(2) ? Mode::kBorrowing : Mode::kWithinNominal;
        const int64_t ttl = 1000 + static_cast<int64_t>(pick(4000));
        auto it = model.live.find(uid);
        const bool was_bound =
            it != model.live.end() && it->second.state == ReservationState::kBound;
        std::map<std::string, int64_t> pool_before;
        for (const std::string& resource : kResources) {
          pool_before[resource] = View(team, flavor, resource).pool_used;
        }
        auto r = book_->Assume(uid, TeamNames().Intern(team), FlavorNames().Intern(flavor), request,
                               mode, ttl, PodMeta{});
        if (was_bound) {
          ASSERT_TRUE(std::holds_alternative<Charge>(r)) << "a bound pod keeps its charge";
        } else {
          if (it != model.live.end()) model.live.erase(it);  // the re-filter replaces it
          if (std::holds_alternative<Charge>(r)) {
            ++admissions;
            model.live[uid] = ModelReservation{team, flavor, request, ReservationState::kAssumed,
                                               clock_.NowMs() + ttl};
            for (const std::string& resource : kResources) {
              if (request.Get(resource) == 0) continue;  // not charged: nothing to hold
              ASSERT_TRUE(WithinLimits(team, flavor, resource, mode, pool_before[resource]));
            }
          } else {
            ++refusals;
          }
        }
      } else if (op < 13) {  // seen bound
        auto it = model.live.find(uid);
        const bool known = it != model.live.end();
        if (strict && !known) continue;
        const QuotaBook::ConfirmOutcome outcome = book_->ConfirmBound(
            uid, TeamNames().Intern(team), FlavorNames().Intern(flavor), request, PodMeta{});
        if (known && it->second.state == ReservationState::kBound) {
          ASSERT_EQ(outcome, QuotaBook::ConfirmOutcome::kAlreadyBound);
        } else if (known && it->second.team == team && it->second.flavor == flavor) {
          ASSERT_EQ(outcome, QuotaBook::ConfirmOutcome::kConfirmedAssumed);
          it->second.state = ReservationState::kBound;
        } else {
          // Never admitted, or bound elsewhere than assumed: charged unconditionally.
          ASSERT_EQ(outcome, QuotaBook::ConfirmOutcome::kCharged);
          ++forced;
          model.live[uid] = ModelReservation{team, flavor, model.Charged(flavor, request),
                                             ReservationState::kBound, 0};
          if (strict) {  // strict rounds keep §3.3 global: the pod goes at once
            ASSERT_TRUE(book_->Release(uid));
            model.live.erase(uid);
          }
        }
      } else if (op < 17) {  // ended or deleted (duplicates included)
        ASSERT_EQ(book_->Release(uid), model.live.erase(uid) == 1);
      } else if (op < 19) {  // time passes; assumed reservations expire
        clock_.Advance(static_cast<int64_t>(pick(3000)));
        size_t want = 0;
        for (auto it = model.live.begin(); it != model.live.end();) {
          if (it->second.state == ReservationState::kAssumed &&
              it->second.expires_ms <= clock_.NowMs()) {
            it = model.live.erase(it);
            ++want;
          } else {
            ++it;
          }
        }
        ASSERT_EQ(book_->ExpireAssumed(), want);
        expired += static_cast<int64_t>(want);
      } else if (!strict) {  // reload: new limits, usage kept
        random_team_limits("t" + std::to_string(pick(static_cast<size_t>(teams))));
        book_->ApplyPolicy(PolicyFrom(model));
      }

      // The counters are the sum of the live reservations, cell by cell.
      for (const auto& [t, flavors] : model.limits) {
        for (const std::string& f : kFlavors) {
          for (const std::string& resource : kResources) {
            const CellView v = View(t, f, resource);
            ASSERT_EQ(v.usage, model.Usage(t, f, resource)) << t << "/" << f << "/" << resource;
            if (strict) {
              ASSERT_TRUE(WithinLimits(t, f, resource, Mode::kBorrowing));
            }
          }
        }
      }
      // The table is the model.
      ASSERT_EQ(book_->size(), model.live.size());
      for (const auto& [u, want] : model.live) {
        std::optional<Reservation> got = book_->Find(u);
        ASSERT_TRUE(got.has_value()) << u;
        ASSERT_EQ(got->state, want.state) << u;
        ASSERT_EQ(got->charge.team, TeamNames().Intern(want.team)) << u;
        ASSERT_EQ(got->charge.flavor, FlavorNames().Intern(want.flavor)) << u;
      }
      // The counts kept with the table are the model's.
      std::map<NameId, std::pair<int64_t, int64_t>> want_counts;  // team → running, assumed
      for (const auto& [u, r] : model.live) {
        auto& [running, assumed] = want_counts[TeamNames().Intern(r.team)];
        (r.state == ReservationState::kBound ? running : assumed) += 1;
      }
      const auto counts = book_->CountByTeam();
      ASSERT_EQ(counts.size(), want_counts.size());
      for (const auto& [t, want] : want_counts) {
        ASSERT_EQ(counts.at(t).running, want.first) << TeamNames().Name(t);
        ASSERT_EQ(counts.at(t).assumed, want.second) << TeamNames().Name(t);
        ASSERT_EQ(counts.at(t).workloads, want.first + want.second) << TeamNames().Name(t);
      }
      ASSERT_TRUE(book_->Reconcile().empty());
    }
  }
  // The sequences exercised every path.
  EXPECT_GT(admissions, 1000);
  EXPECT_GT(refusals, 100);
  EXPECT_GT(forced, 100);
  EXPECT_GT(expired, 100);
}

}  // namespace
}  // namespace taskgov::scheduler::ledger
