#include "scheduler/actions/round.h"

#include <gtest/gtest.h>

#include "scheduler/actions/round_builder.h"

namespace taskgov::scheduler::actions {
namespace {

using decisions::PreemptionReason;
using testing::RoundBuilder;
using testing::VictimBuilder;
using Reasons = std::vector<PreemptionReason>;
using Teams = std::vector<std::pair<std::string, Reasons>>;

struct FreedCase {
  std::string name;
  Round round;
  std::string resource;
  int64_t amount;
  Teams teams;
  bool reclaim;
  bool fair;
};

void PrintTo(const FreedCase& c, std::ostream* os) { *os << c.name; }

class FreedByTest : public ::testing::TestWithParam<FreedCase> {};

TEST_P(FreedByTest, SaysWhatTheVictimsFree) {
  const FreedCase& c = GetParam();
  const Freed freed = FreedBy(c.round);
  EXPECT_EQ(freed.resource, c.resource);
  EXPECT_EQ(freed.amount, c.amount);
  EXPECT_EQ(freed.teams, c.teams);
  EXPECT_EQ(freed.reclaim, c.reclaim);
  EXPECT_EQ(freed.fair, c.fair);
}

constexpr PreemptionReason kReclaim = PreemptionReason::kReclaim;
constexpr PreemptionReason kFairShare = PreemptionReason::kFairShare;
constexpr PreemptionReason kInTeam = PreemptionReason::kInTeamPriority;

INSTANTIATE_TEST_SUITE_P(
    Rounds, FreedByTest,
    ::testing::Values(
        FreedCase{"OneReclaim",
                  RoundBuilder("b-0").Gpus(4).Victim(VictimBuilder("a-3").Gpus(4).Reason(kReclaim)),
                  "nvidia.com/gpu",
                  4,
                  {{"team-a", {kReclaim}}},
                  true,
                  false},
        // Teams in victim order, each reason once; amounts add up.
        FreedCase{"TeamsInVictimOrder",
                  RoundBuilder("b-0")
                      .Gpus(8)
                      .Victim(VictimBuilder("c-0").Team("team-c").Gpus(2).Reason(kFairShare))
                      .Victim(VictimBuilder("a-0").Gpus(2).Reason(kReclaim))
                      .Victim(VictimBuilder("c-1").Team("team-c").Gpus(2).Reason(kReclaim))
                      .Victim(VictimBuilder("c-2").Team("team-c").Gpus(2).Reason(kFairShare)),
                  "nvidia.com/gpu",
                  8,
                  {{"team-c", {kFairShare, kReclaim}}, {"team-a", {kReclaim}}},
                  true,
                  true},
        // Only what victims are charged on the round's flavor counts.
        FreedCase{
            "OtherFlavorsDoNotCount",
            RoundBuilder("b-0")
                .Team("team-a")
                .Gpus(4)
                .Victim(VictimBuilder("a-0").Gpus(4).Reason(kInTeam))
                .Victim(VictimBuilder("a-1").Gpus(4).Flavor("ml.p4d.24xlarge").Reason(kInTeam)),
            "nvidia.com/gpu",
            4,
            {{"team-a", {kInTeam}}},
            false,
            false},
        // The main resource: the largest accelerator request, else cpu, else the first.
        FreedCase{"LargestAccelerator",
                  RoundBuilder("b-0")
                      .Request("cpu", 4000)
                      .Request("vpc.amazonaws.com/efa", 1)
                      .Request("nvidia.com/gpu", 8)
                      .Victim(VictimBuilder("a-0").Gpus(8)),
                  "nvidia.com/gpu",
                  8,
                  {{"team-a", {kReclaim}}},
                  true,
                  false},
        FreedCase{"CpuWithoutAccelerators",
                  RoundBuilder("b-0")
                      .Request("memory", 1 << 30)
                      .Request("cpu", 4000)
                      .Victim(VictimBuilder("a-0").Gpus(8)),
                  "cpu",
                  0,
                  {{"team-a", {kReclaim}}},
                  true,
                  false},
        FreedCase{"FirstResourceOtherwise",
                  RoundBuilder("b-0").Request("memory", 1 << 30).Request("hugepages-2Mi", 4),
                  "hugepages-2Mi",
                  0,
                  {},
                  false,
                  false},
        FreedCase{"NoRequest", RoundBuilder("b-0"), "cpu", 0, {}, false, false}),
    [](const ::testing::TestParamInfo<FreedCase>& info) { return info.param.name; });

TEST(EvictionDueTest, ToEvictAlwaysBlockedFromItsRetryTimeOthersNever) {
  EXPECT_TRUE(EvictionDue(VictimBuilder("a").Phase(VictimPhase::kToEvict), 0));
  EXPECT_FALSE(EvictionDue(VictimBuilder("a").Phase(VictimPhase::kBlocked, 100), 99));
  EXPECT_TRUE(EvictionDue(VictimBuilder("a").Phase(VictimPhase::kBlocked, 100), 100));
  EXPECT_FALSE(EvictionDue(VictimBuilder("a").Phase(VictimPhase::kEvicted), 1'000'000));
  EXPECT_FALSE(EvictionDue(VictimBuilder("a").Phase(VictimPhase::kGone), 1'000'000));
}

TEST(PodCountTest, OneAndMany) {
  EXPECT_EQ(PodCount(0), "0 pods");
  EXPECT_EQ(PodCount(1), "1 pod");
  EXPECT_EQ(PodCount(2), "2 pods");
}

}  // namespace
}  // namespace taskgov::scheduler::actions
