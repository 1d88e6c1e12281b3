#include "scheduler/actions/event_writer.h"

#include <gtest/gtest.h>

#include "scheduler/actions/round_builder.h"
#include "scheduler/testing/fake_kube_actions.h"

namespace taskgov::scheduler::actions {
namespace {

using decisions::PreemptionReason;
using testing::RoundBuilder;
using testing::VictimBuilder;

constexpr PreemptionReason kReclaim = PreemptionReason::kReclaim;
constexpr PreemptionReason kFairShare = PreemptionReason::kFairShare;
constexpr PreemptionReason kInTeam = PreemptionReason::kInTeamPriority;

struct PreemptingCase {
  std::string name;
  Round round;
  int64_t grace_s;
  std::string note;
};

void PrintTo(const PreemptingCase& c, std::ostream* os) { *os << c.name; }

class PreemptingEventTest : public ::testing::TestWithParam<PreemptingCase> {};

TEST_P(PreemptingEventTest, NamesWhatIsFreedFromWhomAndWhy) {
  const PreemptingCase& c = GetParam();
  const EventRecord e = EventWriter::PreemptingEvent(c.round, c.grace_s);
  EXPECT_EQ(e.note, c.note);
  EXPECT_EQ(e.ns, "ns-" + model::TeamNames().Name(c.round.preemptor.team));
  EXPECT_EQ(e.pod_name, c.round.preemptor.key.substr(c.round.preemptor.key.find('/') + 1));
  EXPECT_EQ(e.pod_uid, c.round.preemptor.uid);
  EXPECT_EQ(e.type, "Normal");
  EXPECT_EQ(e.reason, "Preempting");
  EXPECT_EQ(e.action, "Preempting");
}

INSTANTIATE_TEST_SUITE_P(
    Rounds, PreemptingEventTest,
    ::testing::Values(
        PreemptingCase{
            "Reclaim",
            RoundBuilder("b-0").Gpus(4).Victim(VictimBuilder("a-3").Gpus(4).Reason(kReclaim)), 120,
            "taskgov is reclaiming 4 nvidia.com/gpu on ml.p5.48xlarge from team-a "
            "(Reclaim): evicting 1 pod with a 120s grace period"},
        PreemptingCase{"InTeamIsPreempting",
                       RoundBuilder("urgent").Team("team-a").Gpus(2).Victim(
                           VictimBuilder("train-1").Gpus(2).Reason(kInTeam)),
                       30,
                       "taskgov is preempting 2 nvidia.com/gpu on ml.p5.48xlarge from team-a "
                       "(InTeamPriority): evicting 1 pod with a 30s grace period"},
        PreemptingCase{"FairShareIsReclaiming",
                       RoundBuilder("y-0").Team("team-y").Gpus(2).Victim(
                           VictimBuilder("x-0").Team("team-x").Gpus(2).Reason(kFairShare)),
                       120,
                       "taskgov is reclaiming 2 nvidia.com/gpu on ml.p5.48xlarge from team-x "
                       "(FairShare): evicting 1 pod with a 120s grace period"},
        // Own-team victims with reclaim from a borrower: every team with its reasons.
        PreemptingCase{"SeveralTeamsAndReasons",
                       RoundBuilder("a-9")
                           .Team("team-a")
                           .Gpus(8)
                           .Victim(VictimBuilder("c-0").Team("team-c").Gpus(4).Reason(kReclaim))
                           .Victim(VictimBuilder("a-1").Gpus(2).Reason(kInTeam))
                           .Victim(VictimBuilder("a-2").Gpus(2).Reason(kInTeam)),
                       120,
                       "taskgov is reclaiming 8 nvidia.com/gpu on ml.p5.48xlarge from team-c "
                       "(Reclaim), team-a (InTeamPriority): evicting 3 pods with a 120s grace "
                       "period"}),
    [](const ::testing::TestParamInfo<PreemptingCase>& info) { return info.param.name; });

TEST(PreemptedEventTest, TheVictimsNoteWithTheGracePeriod) {
  const EventRecord e = EventWriter::PreemptedEvent(
      VictimBuilder("a-3").Note("Reclaim: team-b reclaims the nvidia.com/gpu"), 120);
  EXPECT_EQ(e.ns, "ns-team-a");
  EXPECT_EQ(e.pod_name, "a-3");
  EXPECT_EQ(e.pod_uid, "uid-a-3");
  EXPECT_EQ(e.type, "Normal");
  EXPECT_EQ(e.reason, "Preempted");
  EXPECT_EQ(e.action, "Preempting");
  EXPECT_EQ(e.note, "Reclaim: team-b reclaims the nvidia.com/gpu (grace period 120s)");
}

// Issue 35: a victim whose training says when it last checkpointed is told what it loses.
TEST(PreemptedEventTest, AVictimWithACheckpointIsToldTheWorkItLoses) {
  RoundVictim v = VictimBuilder("a-3").Note("Reclaim: team-b reclaims the nvidia.com/gpu");
  v.checkpoint_ms = 1'000'000;
  EXPECT_EQ(EventWriter::PreemptedEvent(v, 120, "", 1'000'000 + 12 * 60'000 + 5'000).note,
            "Reclaim: team-b reclaims the nvidia.com/gpu (grace period 120s); loses about 12 min "
            "of work since its last checkpoint");
  EXPECT_EQ(EventWriter::PreemptedEvent(v, 120, "", 1'000'000 + 40'000).note,
            "Reclaim: team-b reclaims the nvidia.com/gpu (grace period 120s); loses about 40 s of "
            "work since its last checkpoint");
  v.checkpoint_ms = 0;  // unknown: nothing said
  EXPECT_EQ(EventWriter::PreemptedEvent(v, 120, "", 5'000'000).note,
            "Reclaim: team-b reclaims the nvidia.com/gpu (grace period 120s)");
}

TEST(EventWriterTest, RecordsThroughKubeActions) {
  scheduler::testing::FakeKubeActions kube;
  EventWriter writer(&kube);
  const Round round =
      RoundBuilder("b-0").Gpus(4).Victim(VictimBuilder("a-3").Gpus(4).Note("why")).Build();
  writer.RoundStarted(round, 60);
  writer.VictimEvicted(round.victims[0], 60);
  const std::vector<EventRecord> events = kube.events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].note, EventWriter::PreemptingEvent(round, 60).note);
  EXPECT_EQ(events[0].pod_uid, "uid-b-0");
  EXPECT_EQ(events[1].note, "why (grace period 60s)");
  EXPECT_EQ(events[1].pod_uid, "uid-a-3");
}

}  // namespace
}  // namespace taskgov::scheduler::actions
