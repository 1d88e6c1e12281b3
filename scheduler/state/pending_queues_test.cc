#include "scheduler/state/pending_queues.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <thread>

namespace taskgov::scheduler::state {
namespace {

PendingPod Pending(std::string uid, model::NameId team, int32_t priority, int64_t created_ms) {
  PendingPod p;
  p.key = "ns/" + uid;
  p.uid = std::move(uid);
  p.team = team;
  p.priority = priority;
  p.created_ms = created_ms;
  return p;
}

std::vector<std::string> Keys(const std::vector<PendingRef>& pods) {
  std::vector<std::string> out;
  for (const PendingRef& p : pods) out.push_back(p->uid);
  return out;
}

class PendingQueuesTest : public ::testing::Test {
 protected:
  // Calls `notes` while another thread holds the queues' write lock (inside Retarget), which
  // it keeps until `notes` returned — bounded: notes that waited for the lock would never
  // return, and the caller's check fails instead of the test hanging. True when they returned
  // while it was held.
  bool NoteWhileAWriterHolds(const std::function<void()>& notes) {
    std::promise<void> inside;
    std::promise<void> noted;
    std::future<void> noted_seen = noted.get_future();
    bool noted_while_held = false;
    std::thread holder([&] {
      bool first = true;
      queues_.Retarget([&](PendingPod&) {
        if (!first) return;
        first = false;
        inside.set_value();
        noted_while_held =
            noted_seen.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
      });
    });
    inside.get_future().wait();
    notes();
    noted.set_value();
    holder.join();
    return noted_while_held;
  }

  common::FakeClock clock_;
  PendingQueues queues_{&clock_, PendingQueues::Options{60'000}};
};

PendingPod Member(std::string uid, const std::string& gang, int64_t created_ms) {
  PendingPod p = Pending(std::move(uid), 1, 0, created_ms);
  p.workload = gang;
  p.workload_size = 4;
  return p;
}

TEST_F(PendingQueuesTest, AGangCountsOnceAsAWorkloadAndItsMembersAreLeftOutOfItsOwnView) {
  queues_.Upsert(Member("x-0", "job-x", 100));
  queues_.Upsert(Member("x-1", "job-x", 101));
  queues_.Upsert(Pending("lone", 1, 0, 102));
  queues_.NoteRefused(Member("y-0", "job-y", 103));  // a filter refused it
  const PendingQueues::Counts n = queues_.CountsOf(1);
  EXPECT_EQ(n.total, 4u);
  EXPECT_EQ(n.refused, 1u);
  EXPECT_EQ(n.workloads, 3u);  // job-x, lone, job-y
  EXPECT_EQ(n.refused_workloads, 1u);
  // A member of job-x looking at who is ahead of it does not see its own gang.
  EXPECT_EQ(Keys(queues_.Ahead(1, 0, 999, "x-2", false, 10, "job-x")),
            (std::vector<std::string>{"lone", "y-0"}));
}

TEST_F(PendingQueuesTest, RanksByPriorityThenAgeOrByAgeAlone) {
  queues_.Upsert(Pending("old-low", 1, 1, 100));
  queues_.Upsert(Pending("new-high", 1, 9, 300));
  queues_.Upsert(Pending("mid-high", 1, 9, 200));
  queues_.Upsert(Pending("other-team", 2, 99, 1));
  // Ahead of a priority-5 pod created at 250: the two priority-9 pods, older first.
  EXPECT_EQ(Keys(queues_.Ahead(1, 5, 250, "me", /*by_priority=*/true, 10)),
            (std::vector<std::string>{"mid-high", "new-high"}));
  // By age alone, only the pods created before 250.
  EXPECT_EQ(Keys(queues_.Ahead(1, 5, 250, "me", /*by_priority=*/false, 10)),
            (std::vector<std::string>{"old-low", "mid-high"}));
  EXPECT_EQ(Keys(queues_.Ahead(1, 5, 250, "me", true, 1)), std::vector<std::string>{"mid-high"});
  ASSERT_TRUE(queues_.Head(1, true).has_value());
  EXPECT_EQ(queues_.Head(1, true)->uid, "mid-high");
  EXPECT_EQ(queues_.Head(1, false)->uid, "old-low");
  // The whole queue in the same orders; refused once a filter call refused it.
  queues_.NoteRefused(Pending("old-low", 1, 1, 100));
  queues_.Flush();
  auto uids = [](const std::vector<PendingQueues::Queued>& queue) {
    std::vector<std::string> out;
    for (const PendingQueues::Queued& q : queue) out.push_back(q.pod.uid + (q.refused ? "!" : ""));
    return out;
  };
  EXPECT_EQ(uids(queues_.QueueOf(1, true)),
            (std::vector<std::string>{"mid-high", "new-high", "old-low!"}));
  EXPECT_EQ(uids(queues_.QueueOf(1, false)),
            (std::vector<std::string>{"old-low!", "mid-high", "new-high"}));
  EXPECT_TRUE(queues_.QueueOf(3, true).empty());
  // The refusal's reasons, and since when they are given; an informer update keeps them.
  PendingPod again = Pending("old-low", 1, 1, 100);
  again.refusal = "team 1: the pool is full";
  queues_.NoteRefused(again);
  queues_.Flush();
  const int64_t since = clock_.NowMs();
  clock_.Advance(5'000);
  queues_.NoteRefused(again);
  queues_.Flush();
  queues_.Upsert(Pending("old-low", 1, 1, 100));
  std::vector<PendingQueues::Queued> queue = queues_.QueueOf(1, false);
  ASSERT_EQ(queue.front().pod.uid, "old-low");
  EXPECT_EQ(queue.front().pod.refusal, "team 1: the pool is full");
  EXPECT_EQ(queue.front().refused_ms, since);
  again.refusal = "team 1: a pod ranked ahead could use it";
  queues_.NoteRefused(again);
  queues_.Flush();
  queue = queues_.QueueOf(1, false);
  EXPECT_EQ(queue.front().pod.refusal, "team 1: a pod ranked ahead could use it");
  EXPECT_EQ(queue.front().refused_ms, since + 5'000);
  queues_.Remove("mid-high");
  EXPECT_EQ(queues_.Head(1, true)->uid, "new-high");
  EXPECT_FALSE(queues_.Head(3, true).has_value());
}

TEST_F(PendingQueuesTest, FilterNotesRefuseAdmitAndExpire) {
  queues_.Upsert(Pending("informed", 1, 0, 100));
  queues_.NoteRefused(Pending("informed", 1, 0, 100));
  queues_.NoteRefused(Pending("filter-only", 1, 0, 200));
  EXPECT_EQ(queues_.CountsOf(1).total, 2u);
  EXPECT_EQ(queues_.CountsOf(1).refused, 2u);
  queues_.NoteAdmitted("informed");
  EXPECT_EQ(queues_.CountsOf(1).total, 1u);
  // A pod known only from filter calls stops counting once it has not been filtered for the TTL.
  clock_.Advance(60'001);
  EXPECT_EQ(queues_.CountsOf(1).total, 0u);
  EXPECT_FALSE(queues_.Head(1, true).has_value());
}

// Pods known only from filter calls are forgotten by the Sync after their TTL, and no more than
// max_filter_only are kept: a client filtering pods the informer never reports (a fresh uid
// each time) cannot grow the queues without bound. Pods the informer reports are never capped.
TEST_F(PendingQueuesTest, FilterOnlyPodsAreForgottenAfterTheirTtlAndCapped) {
  PendingQueues queues(&clock_, PendingQueues::Options{60'000, 3});
  queues.Upsert(Pending("informed", 1, 0, 1));
  for (int i = 0; i < 5; ++i) queues.NoteRefused(Pending("probe-" + std::to_string(i), 1, 0, 10));
  queues.Flush();
  EXPECT_EQ(queues.CountsOf(1).total, 4u);  // informed + 3 probes
  EXPECT_EQ(queues.filter_only(), 3u);
  EXPECT_EQ(queues.filter_only_dropped(), 2u);
  queues.NoteRefused(Pending("probe-0", 1, 0, 10));  // one already kept: refreshed, not dropped
  queues.Flush();
  EXPECT_EQ(queues.filter_only_dropped(), 2u);
  queues.Upsert(Pending("probe-1", 1, 0, 10));  // the informer reports it: no longer filter-only
  EXPECT_EQ(queues.filter_only(), 2u);
  clock_.Advance(60'001);
  queues.Sync();
  EXPECT_EQ(queues.filter_only(), 0u);
  EXPECT_EQ(queues.CountsOf(1).total, 2u);  // informed, probe-1
  for (int i = 5; i < 8; ++i) queues.NoteRefused(Pending("probe-" + std::to_string(i), 1, 0, 10));
  queues.Flush();
  EXPECT_EQ(queues.filter_only(), 3u);  // room again
  EXPECT_EQ(queues.filter_only_dropped(), 2u);
}

// A pod refused again and again (over quota, retried on every cluster event) keeps waiting: each
// refusal refreshes its time, through the shortcut that posts nothing.
TEST_F(PendingQueuesTest, RepeatedRefusalsKeepAFilterOnlyPodWaiting) {
  queues_.NoteRefused(Pending("retried", 1, 0, 100));
  queues_.Flush();
  EXPECT_EQ(queues_.CountsOf(1).total, 1u);
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(50'000);
    queues_.NoteRefused(Pending("retried", 1, 0, 100));
    queues_.Flush();
  }
  EXPECT_EQ(queues_.CountsOf(1).total, 1u);
  EXPECT_EQ(queues_.CountsOf(1).refused, 1u);
  // A refusal at another rank is a change: posted and applied.
  queues_.NoteRefused(Pending("retried", 1, 7, 100));
  queues_.Flush();
  EXPECT_EQ(queues_.Head(1, true)->priority, 7);
  clock_.Advance(60'001);
  EXPECT_EQ(queues_.CountsOf(1).total, 0u);
}

// A re-rank after a policy change keeps when each pod was last filtered: reloads every few
// seconds must not keep pods the filter no longer asks about (found by the soak: they did).
TEST_F(PendingQueuesTest, RetargetKeepsWhenAFilterOnlyPodWasLastSeen) {
  queues_.Upsert(Pending("informed", 1, 0, 1));
  queues_.NoteRefused(Pending("filter-only", 1, 0, 2));
  queues_.Flush();
  clock_.Advance(50'000);
  queues_.Retarget([](PendingPod&) {});
  clock_.Advance(10'001);
  queues_.Sync();
  EXPECT_EQ(queues_.filter_only(), 0u);
  EXPECT_EQ(queues_.CountsOf(1).total, 1u);
  EXPECT_EQ(queues_.CountsOf(1).refused, 0u);  // "informed" was never refused: still not
}

TEST_F(PendingQueuesTest, RetargetMovesOrDropsEntries) {
  queues_.Upsert(Pending("a", 1, 0, 100));
  queues_.Upsert(Pending("b", 1, 0, 200));
  queues_.Retarget([](PendingPod& p) { p.team = p.uid == "a" ? 2 : kNoTeam; });
  EXPECT_EQ(queues_.CountsOf(1).total, 0u);
  EXPECT_EQ(queues_.CountsOf(2).total, 1u);
  EXPECT_EQ(queues_.Head(2, true)->uid, "a");
}

TEST_F(PendingQueuesTest, RetargetGangTouchesOnlyThatGangsMembersAndKeepsTheirStanding) {
  PendingPod x0 = Pending("x-0", 1, 0, 100);
  x0.gang = "podgroup/ns/x";  // named, size not declared yet: waits as a lone pod
  PendingPod x1 = x0;
  x1.uid = "x-1";
  x1.created_ms = 101;
  queues_.Upsert(x0);
  queues_.NoteRefused(x1);  // known from a refusing filter
  queues_.Upsert(Pending("lone", 1, 0, 102));
  EXPECT_EQ(queues_.CountsOf(1).workloads, 3u);
  int touched = 0;
  queues_.RetargetGang("podgroup/ns/x", [&](PendingPod& p) {
    ++touched;
    p.workload = p.gang;  // its PodGroup declares 2
    p.workload_size = 2;
  });
  EXPECT_EQ(touched, 2);
  const PendingQueues::Counts n = queues_.CountsOf(1);
  EXPECT_EQ(n.total, 3u);
  EXPECT_EQ(n.workloads, 2u);  // the gang, the lone pod
  EXPECT_EQ(n.refused, 1u);    // x-1 is still the refused one
  // Removing a member unindexes it: a later retarget touches the other only.
  queues_.Remove("x-0");
  touched = 0;
  queues_.RetargetGang("podgroup/ns/x", [&](PendingPod&) { ++touched; });
  EXPECT_EQ(touched, 1);
}

// A pod is announced when it joins the queues — whichever side saw it first — and not again
// while it waits, however often it is reported, refused or re-ranked; it is again once it left
// and comes back.
TEST_F(PendingQueuesTest, APodIsAnnouncedOnceWhenItStartsWaiting) {
  int joins = 0;
  queues_.SetJoinObserver([&joins] { ++joins; });
  queues_.Upsert(Pending("seen", 1, 0, 100));  // the informer reports it first
  EXPECT_EQ(joins, 1);
  queues_.Upsert(Pending("seen", 1, 5, 100));  // reported again, at another rank
  PendingPod refused = Pending("seen", 1, 5, 100);
  refused.refusal = "team 1: over quota";
  queues_.NoteRefused(refused);  // a filter call refuses it, then again and again
  queues_.Flush();
  queues_.NoteRefused(refused);
  queues_.Flush();
  refused.refusal = "team 1: the pool is full";
  queues_.NoteRefused(refused);
  queues_.Flush();
  EXPECT_EQ(joins, 1);
  queues_.NoteRefused(Pending("tried", 1, 0, 200));  // a filter call sees it first
  queues_.Flush();
  EXPECT_EQ(joins, 2);
  queues_.NoteRefused(Pending("tried", 1, 0, 200));
  queues_.Flush();
  queues_.Upsert(Pending("tried", 1, 0, 200));
  queues_.Retarget([](PendingPod& p) { ++p.priority; });  // a policy change re-ranks both
  queues_.RetargetGang("none", [](PendingPod&) {});
  queues_.Sync();
  EXPECT_EQ(joins, 2);
  queues_.NoteAdmitted("tried");  // admitted; its reservation lapses and it is refused again
  queues_.Flush();
  queues_.NoteRefused(Pending("tried", 1, 0, 200));
  queues_.Flush();
  EXPECT_EQ(joins, 3);
  queues_.Remove("seen");  // e.g. deleted and recreated under its uid by a test client
  queues_.Upsert(Pending("seen", 1, 0, 100));
  EXPECT_EQ(joins, 4);
  queues_.Remove("seen");
  EXPECT_EQ(joins, 4);
}

// Filter threads refusing new pods and retrying them while an informer thread reports them and
// others: every join is announced by the threads that wrote (a Sync after them finds none left
// to announce), no more often than pods joined, and retries announce nothing.
TEST_F(PendingQueuesTest, ConcurrentJoinsAreAllAnnouncedByTheWriters) {
  constexpr int kThreads = 3;
  constexpr int kPerThread = 1'000;
  std::atomic<int> joins{0};
  queues_.SetJoinObserver([&joins] { joins.fetch_add(1, std::memory_order_relaxed); });
  auto uid = [](int t, int i) { return "f" + std::to_string(t) + "-" + std::to_string(i); };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        PendingPod pod = Pending(uid(t, i), 1, 0, i);
        queues_.NoteRefused(pod);
        pod.refusal = "retried";
        queues_.NoteRefused(pod);
      }
    });
  }
  std::thread informer([&] {
    for (int i = 0; i < kPerThread; ++i) {
      queues_.Upsert(Pending(uid(0, i), 1, 0, i));
      queues_.Upsert(Pending("i-" + std::to_string(i), 2, 0, i));
    }
  });
  for (std::thread& t : threads) t.join();
  informer.join();
  // The applier thread may still be applying the last notes and announcing their joins.
  queues_.Flush();
  const int announced = joins.load();
  EXPECT_GE(announced, 1);
  EXPECT_LE(announced, (kThreads + 1) * kPerThread);
  queues_.Sync();
  EXPECT_EQ(joins.load(), announced);
  for (int i = 0; i < kPerThread; ++i) queues_.NoteRefused(Pending(uid(1, i), 1, 3, i));
  EXPECT_EQ(joins.load(), announced);
  EXPECT_EQ(queues_.CountsOf(1).total, size_t{kThreads * kPerThread});
}

// The filter path never waits for the queues' write lock: a note posted while another thread
// holds it returns at once, and is in force as soon as that holder lets go — without anyone
// calling Sync().
TEST_F(PendingQueuesTest, NotesNeverWaitForTheWriteLockAndAreAppliedByItsHolder) {
  queues_.Upsert(Pending("held", 1, 0, 100));
  queues_.Upsert(Pending("admitted", 1, 5, 50));
  EXPECT_TRUE(NoteWhileAWriterHolds([&] {
    queues_.NoteAdmitted("admitted");
    queues_.NoteRefused(Pending("late", 1, 0, 300));
  }));
  // Applied by the holder before or right after it let go: visible to a non-syncing reader.
  EXPECT_EQ(Keys(queues_.Ahead(1, 0, 1'000, "me", true, 10)),
            (std::vector<std::string>{"held", "late"}));
}

// The notes' fast paths (a repeated refusal, an admission of a pod that never waited) look
// with a shared lock only when it is free at once: behind a writer they post instead of waiting.
TEST_F(PendingQueuesTest, FastNotesDoNotWaitForAWriterEither) {
  queues_.Upsert(Pending("held", 1, 0, 100));
  queues_.NoteRefused(Pending("refused", 1, 0, 200));
  ASSERT_EQ(queues_.CountsOf(1).refused, 1u);  // applied: its next refusal takes the fast path
  EXPECT_TRUE(NoteWhileAWriterHolds([&] {
    queues_.NoteRefused(Pending("refused", 1, 0, 200));
    queues_.NoteAdmitted("never-waited");
  }));
  EXPECT_EQ(Keys(queues_.Ahead(1, 0, 1'000, "me", true, 10)),
            (std::vector<std::string>{"held", "refused"}));
  EXPECT_EQ(queues_.CountsOf(1).refused, 1u);
  // Unblocked, an admission of a pod that never waited changes nothing.
  queues_.NoteAdmitted("never-waited-either");
  EXPECT_EQ(queues_.CountsOf(1).total, 2u);
}

// Several filter threads post notes while an informer thread writes: every note lands once.
TEST_F(PendingQueuesTest, ConcurrentNotesAndInformerWritesLoseNothing) {
  constexpr int kThreads = 3;
  constexpr int kPerThread = 2'000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        queues_.NoteRefused(Pending("f" + std::to_string(t) + "-" + std::to_string(i), 1, 0, i));
      }
    });
  }
  std::thread informer([&] {
    for (int i = 0; i < kPerThread; ++i) {
      queues_.Upsert(Pending("i-" + std::to_string(i), 2, 0, i));
      (void)queues_.Head(1, true);
    }
  });
  for (std::thread& t : threads) t.join();
  informer.join();
  EXPECT_EQ(queues_.CountsOf(1).total, size_t{kThreads * kPerThread});
  EXPECT_EQ(queues_.CountsOf(1).refused, size_t{kThreads * kPerThread});
  EXPECT_EQ(queues_.CountsOf(2).total, size_t{kPerThread});
}

// No other writer comes: the queues' own applier applies a filter call's note soon after it was
// posted (reads never apply notes), and announces the join — on its thread, not the caller's,
// which only posted.
TEST_F(PendingQueuesTest, TheApplierAppliesANoteWithoutAnotherWriter) {
  std::atomic<bool> announced_here{false};
  std::atomic<int> joins{0};
  const std::thread::id caller = std::this_thread::get_id();
  queues_.SetJoinObserver([&] {
    if (std::this_thread::get_id() == caller) announced_here.store(true);
    joins.fetch_add(1);
  });
  queues_.NoteRefused(Pending("alone", 1, 0, 100));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!queues_.Head(1, true).has_value() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(queues_.Head(1, true).has_value());
  EXPECT_EQ(queues_.Head(1, true)->uid, "alone");
  queues_.Flush();  // its join announced
  EXPECT_EQ(joins.load(), 1);
  EXPECT_FALSE(announced_here.load());
}

// Stopped, the applier applies nothing: a note waits for a writer, and Flush applies it itself.
TEST_F(PendingQueuesTest, AfterStopNotesWaitForAWriterAndFlushAppliesThem) {
  queues_.Stop();
  queues_.Stop();  // idempotent
  queues_.NoteRefused(Pending("late", 1, 0, 100));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(queues_.Head(1, true).has_value());
  queues_.Flush();
  ASSERT_TRUE(queues_.Head(1, true).has_value());
  EXPECT_EQ(queues_.Head(1, true)->uid, "late");
}

model::ResourceList Gpus(int64_t n) {
  model::ResourceList r;
  r.Set("nvidia.com/gpu", n);
  return r;
}

// A gang's need: the asking member's request, then its other pending members oldest first (ties
// by uid), then the largest request known for each member not seen; a member that moved to
// another workload or left is no longer counted, also after the queues were rebuilt.
TEST_F(PendingQueuesTest, AGangsNeedCountsItsPendingMembersOldestFirst) {
  auto member = [](std::string uid, std::string workload, int64_t created_ms, int64_t gpus) {
    PendingPod p = Member(std::move(uid), workload, created_ms);
    p.request = Gpus(gpus);
    return p;
  };
  queues_.Upsert(member("x-a", "job-x", 102, 1));
  queues_.Upsert(member("x-b", "job-x", 101, 3));
  queues_.Upsert(member("x-c", "job-x", 101, 5));  // as old as x-b: after it by uid
  queues_.Upsert(member("y-0", "job-y", 50, 7));   // another gang of the team
  PendingPod other_team = member("x-d", "job-x", 10, 8);
  other_team.team = 2;  // the same workload name in another team's queue
  queues_.Upsert(other_team);
  auto need = [&](int64_t members, int64_t* estimated) {
    return queues_.GangNeed(1, "job-x", "x-0", Gpus(2), members, estimated).Get("nvidia.com/gpu");
  };
  int64_t estimated = -1;
  EXPECT_EQ(need(2, &estimated), 2 + 3);
  EXPECT_EQ(estimated, 0);
  EXPECT_EQ(need(3, &estimated), 2 + 3 + 5);
  EXPECT_EQ(need(4, &estimated), 2 + 3 + 5 + 1);
  EXPECT_EQ(need(6, &estimated), 2 + 3 + 5 + 1 + 2 * 5);  // two not seen, at the largest
  EXPECT_EQ(estimated, 2);

  queues_.Upsert(member("x-b", "job-z", 101, 3));  // moved to another workload
  EXPECT_EQ(need(2, &estimated), 2 + 5);
  queues_.Remove("x-c");
  EXPECT_EQ(need(2, &estimated), 2 + 1);
  queues_.Remove("x-a");
  EXPECT_EQ(need(2, &estimated), 2 + 2);  // none pending: one more at its own request
  EXPECT_EQ(estimated, 1);

  queues_.Upsert(member("x-e", "job-x", 103, 4));
  queues_.Retarget([](PendingPod&) {});  // rebuilds every index
  EXPECT_EQ(need(2, &estimated), 2 + 4);
  EXPECT_EQ(queues_.GangNeed(1, "job-z", "x-0", Gpus(2), 2).Get("nvidia.com/gpu"), 2 + 3);
}

}  // namespace
}  // namespace taskgov::scheduler::state
