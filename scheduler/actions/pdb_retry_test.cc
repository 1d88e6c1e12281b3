#include "scheduler/actions/pdb_retry.h"

#include <gtest/gtest.h>

#include "scheduler/actions/round_builder.h"

namespace taskgov::scheduler::actions {
namespace {

using testing::VictimBuilder;
using Step = PdbRetry::Step;
using Uids = std::vector<std::string>;

constexpr int64_t kNow = 1'000'000;
constexpr PdbRetry::Options kOptions{/*retry_ms=*/30'000, /*max_attempts=*/3,
                                     /*max_reselections=*/3};

TEST(PdbRetryTest, ABlockHoldsForTheRetryTimeThenExpires) {
  PdbRetry retry(kOptions);
  EXPECT_FALSE(retry.Blocked("uid-a-3", kNow));
  retry.Block("uid-a-3", kNow);
  EXPECT_TRUE(retry.Blocked("uid-a-3", kNow));
  EXPECT_TRUE(retry.Blocked("uid-a-3", kNow + 29'999));
  EXPECT_FALSE(retry.Blocked("uid-a-3", kNow + 30'000));
  retry.Expire(kNow + 29'999);
  EXPECT_EQ(retry.blocked_count(), 1u);
  retry.Expire(kNow + 30'000);
  EXPECT_EQ(retry.blocked_count(), 0u);
  // Blocked again later: from the new refusal.
  retry.Block("uid-a-3", kNow + 40'000);
  EXPECT_TRUE(retry.Blocked("uid-a-3", kNow + 69'999));
}

struct RefusalCase {
  std::string name;
  std::vector<RoundVictim> victims;
  size_t refused;  // index into victims
  bool by_pdb;
  Step step;
  Uids drop = {};
};

void PrintTo(const RefusalCase& c, std::ostream* os) { *os << c.name; }

class OnRefusedTest : public ::testing::TestWithParam<RefusalCase> {};

TEST_P(OnRefusedTest, RetriesOrChoosesAgain) {
  const RefusalCase& c = GetParam();
  const PdbRetry retry(kOptions);
  const PdbRetry::Decision d = retry.OnRefused(c.victims, c.victims[c.refused], c.by_pdb, kNow);
  EXPECT_EQ(d.step, c.step);
  EXPECT_EQ(d.drop, c.drop);
  EXPECT_EQ(d.retry_at_ms, c.step == Step::kRetryLater ? kNow + kOptions.retry_ms : 0);
}

VictimBuilder Member(const std::string& name, VictimPhase phase) {
  return VictimBuilder(name).Gang("train").Phase(phase);
}

INSTANTIATE_TEST_SUITE_P(
    Refusals, OnRefusedTest,
    ::testing::Values(
        RefusalCase{"ABudgetRefusalChoosesAgainAtOnce",
                    {VictimBuilder("a-3"), VictimBuilder("a-2")},
                    0,
                    true,
                    Step::kChooseAgain,
                    {"uid-a-3"}},
        RefusalCase{"AFailureIsRetriedNextRun",
                    {VictimBuilder("a-3").Attempts(2)},
                    0,
                    false,
                    Step::kRetryNextRun},
        RefusalCase{"AFailureTooOftenChoosesAgain",
                    {VictimBuilder("a-3").Attempts(3), VictimBuilder("a-2")},
                    0,
                    false,
                    Step::kChooseAgain,
                    {"uid-a-3"}},
        // A budget refusal counts no attempt and is never merely retried.
        RefusalCase{"ABudgetRefusalIgnoresAttempts",
                    {VictimBuilder("a-3").Attempts(0)},
                    0,
                    true,
                    Step::kChooseAgain,
                    {"uid-a-3"}},
        // Nothing of the gang is gone yet: it goes as a whole, its members not evicted with it.
        RefusalCase{
            "AGangNotStartedIsDroppedWhole",
            {Member("job-0", VictimPhase::kToEvict), VictimBuilder("a-1"),
             Member("job-1", VictimPhase::kToEvict), Member("job-2", VictimPhase::kToEvict)},
            2,
            true,
            Step::kChooseAgain,
            {"uid-job-0", "uid-job-1", "uid-job-2"}},
        // Half a gang is worth nothing: once a member is evicted or gone, finish it later.
        RefusalCase{
            "AGangStartedIsRetriedLater",
            {Member("job-0", VictimPhase::kEvicted), Member("job-1", VictimPhase::kToEvict)},
            1,
            true,
            Step::kRetryLater},
        RefusalCase{"AGangWithAMemberGoneIsRetriedLater",
                    {Member("job-0", VictimPhase::kGone), Member("job-1", VictimPhase::kToEvict)},
                    1,
                    true,
                    Step::kRetryLater},
        RefusalCase{"AGangStartedAfterTooManyFailuresIsRetriedLater",
                    {Member("job-0", VictimPhase::kEvicted),
                     Member("job-1", VictimPhase::kToEvict).Attempts(3)},
                    1,
                    false,
                    Step::kRetryLater},
        // A member blocked before (retried now) does not count as started, and stays.
        RefusalCase{
            "ABlockedMemberIsNotStartedAndStays",
            {Member("job-0", VictimPhase::kBlocked), Member("job-1", VictimPhase::kToEvict)},
            1,
            true,
            Step::kChooseAgain,
            {"uid-job-1"}},
        // Another gang's members are not touched.
        RefusalCase{"OnlyItsOwnGang",
                    {VictimBuilder("x-0").Gang("other"), Member("job-0", VictimPhase::kToEvict)},
                    1,
                    true,
                    Step::kChooseAgain,
                    {"uid-job-0"}}),
    [](const ::testing::TestParamInfo<RefusalCase>& info) { return info.param.name; });

TEST(PdbRetryTest, MaxReselectionsIsTheOption) {
  EXPECT_EQ(PdbRetry(kOptions).max_reselections(), 3);
  EXPECT_EQ(PdbRetry(PdbRetry::Options{1, 1, 0}).max_reselections(), 0);
}

}  // namespace
}  // namespace taskgov::scheduler::actions
