// Hot reload: simulated kubelet swaps, an invalid update followed by a valid one, the periodic
// content check, and readers running during reloads.

#include "config/watcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>

#include "config/test_util.h"
#include "scheduler/common/log.h"

namespace taskgov::config {
namespace {

using testing::KubeletPublish;
using testing::TempDir;

constexpr auto kDeadline = std::chrono::seconds(20);

std::string Team(const std::string& name, int count) {
  return "apiVersion: taskgov.io/v1\nkind: Team\nname: " + name +
         "\ncohort: c\ncompute: [{instanceType: ml.g5.xlarge, count: " + std::to_string(count) +
         "}]\n";
}

// Counts on_reload calls and lets the test wait for the n-th.
class Reloads {
 public:
  void Record(const LoadResult& r) {
    std::lock_guard<std::mutex> lock(mu_);
    ++count_;
    last_ok_ = r.ok();
    last_error_ = r.FirstError();
    cv_.notify_all();
  }
  // Waits until at least `n` reloads happened; false on timeout.
  bool WaitFor(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kDeadline, [&] { return count_ >= n; });
  }
  bool last_ok() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_ok_;
  }
  std::string last_error() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_error_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int count_ = 0;
  bool last_ok_ = false;
  std::string last_error_;
};

struct Fixture {
  TempDir dir;
  PolicyStore store;
  Reloads reloads;
  std::atomic<int64_t> clock{1'700'000'000'000};

  WatcherOptions Options(bool inotify) {
    WatcherOptions o;
    o.dir = dir.path();
    o.use_inotify = inotify;
    o.debounce = std::chrono::milliseconds(20);
    // With inotify the periodic check stays out of the way; without it, it is the mechanism.
    o.poll_interval = inotify ? std::chrono::hours(1) : std::chrono::milliseconds(20);
    o.now_unix_ms = [this] { return clock.load(); };
    o.on_reload = [this](const LoadResult& r) { reloads.Record(r); };
    o.settle = std::chrono::milliseconds(5);
    return o;
  }
};

int GpusOf(const scheduler::model::Policy& p, const std::string& team) {
  const scheduler::model::Team* t = p.FindTeam(team);
  if (t == nullptr || t->flavors.empty()) return -1;
  for (const auto& q : t->flavors[0].resources) {
    if (q.resource == "nvidia.com/gpu") return static_cast<int>(q.nominal);
  }
  return -1;
}

TEST(ConfigWatcher, KubeletSwapInvalidUpdateThenValidUpdate) {
  Fixture f;
  KubeletPublish(f.dir.path(), {{"a.yaml", Team("a", 1)}}, "10_00_00.000000001");
  ConfigWatcher watcher(&f.store, f.Options(/*inotify=*/true));
  LoadResult initial = watcher.Reload();
  ASSERT_TRUE(initial.ok()) << testing::Dump(initial);
  EXPECT_EQ(GpusOf(*f.store.Current(), "a"), 1);
  ASSERT_TRUE(watcher.Start().ok());

  // A valid update: team a grows, team b appears.
  f.clock = 1'700'000'001'000;
  KubeletPublish(f.dir.path(), {{"a.yaml", Team("a", 2)}, {"b.yaml", Team("b", 3)}},
                 "10_01_00.000000002");
  ASSERT_TRUE(f.reloads.WaitFor(2));
  EXPECT_TRUE(f.reloads.last_ok()) << f.reloads.last_error();
  scheduler::model::PolicyPtr good = f.store.Current();
  EXPECT_EQ(GpusOf(*good, "a"), 2);
  EXPECT_EQ(GpusOf(*good, "b"), 3);

  // An invalid update: the last good snapshot stays, the failure is recorded.
  f.clock = 1'700'000'002'000;
  KubeletPublish(f.dir.path(),
                 {{"a.yaml", Team("a", 4)},
                  {"b.yaml",
                   "apiVersion: taskgov.io/v1\nkind: Team\n"
                   "name: b\ncompute: [{count: -1}]\n"}},
                 "10_02_00.000000003");
  ASSERT_TRUE(f.reloads.WaitFor(3));
  EXPECT_FALSE(f.reloads.last_ok());
  EXPECT_EQ(f.store.Current(), good);  // the very same snapshot
  ReloadStatus s = watcher.status();
  EXPECT_EQ(s.attempts, 3u);
  EXPECT_EQ(s.successes, 2u);
  EXPECT_EQ(s.failures, 1u);
  EXPECT_FALSE(s.last_success);
  EXPECT_EQ(s.last_attempt_unix_ms, 1'700'000'002'000);
  EXPECT_EQ(s.last_success_unix_ms, 1'700'000'001'000);
  EXPECT_NE(s.last_error.find("b.yaml: compute[0]"), std::string::npos) << s.last_error;
  EXPECT_EQ(s.current_hash, good->source_hash);

  // A valid update after the invalid one is published.
  f.clock = 1'700'000'003'000;
  KubeletPublish(f.dir.path(), {{"a.yaml", Team("a", 5)}}, "10_03_00.000000004");
  ASSERT_TRUE(f.reloads.WaitFor(4));
  EXPECT_TRUE(f.reloads.last_ok()) << f.reloads.last_error();
  EXPECT_EQ(GpusOf(*f.store.Current(), "a"), 5);
  EXPECT_EQ(f.store.Current()->FindTeam("b"), nullptr);  // b.yaml was removed
  s = watcher.status();
  EXPECT_TRUE(s.last_success);
  EXPECT_EQ(s.successes, 3u);
  EXPECT_EQ(s.last_success_unix_ms, 1'700'000'003'000);
  EXPECT_TRUE(s.last_error.empty());
  EXPECT_EQ(f.store.generation(), 3u);
  watcher.Stop();
}

// Many filesystem events inside the debounce window (each write changes the content) make one
// check and one load; a later change makes the next one.
TEST(ConfigWatcher, ABurstOfEventsWithinTheDebounceIsOneReloadAttempt) {
  Fixture f;
  f.dir.Write("a.yaml", Team("a", 1));
  WatcherOptions options = f.Options(/*inotify=*/true);
  options.debounce = std::chrono::milliseconds(500);
  ConfigWatcher watcher(&f.store, options);
  ASSERT_TRUE(watcher.Reload().ok());
  ASSERT_TRUE(watcher.Start().ok());
  for (int i = 2; i <= 21; ++i) {
    f.dir.Write("a.yaml", Team("a", i));
    f.dir.Write("b" + std::to_string(i % 3) + ".yaml", Team("b" + std::to_string(i % 3), i));
  }
  ASSERT_TRUE(f.reloads.WaitFor(2));
  EXPECT_TRUE(f.reloads.last_ok()) << f.reloads.last_error();
  EXPECT_EQ(GpusOf(*f.store.Current(), "a"), 21);
  // The next change, well after the burst: had the burst made more than one check, it would
  // show in the counts now.
  f.dir.Write("a.yaml", Team("a", 30));
  ASSERT_TRUE(f.reloads.WaitFor(3));
  EXPECT_EQ(GpusOf(*f.store.Current(), "a"), 30);
  const ReloadStatus s = watcher.status();
  EXPECT_EQ(s.checks, 2u);
  EXPECT_EQ(s.attempts, 3u);  // the initial Reload, the burst, the next change
  watcher.Stop();
}

// The watcher logs each diagnostic of an attempt once (the process's on_reload does not repeat
// them).
TEST(ConfigWatcher, EachWarningIsLoggedOncePerAttempt) {
  Fixture f;
  f.dir.Write("cq.yaml", R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: q}
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: ml.m5.large, resources: [{name: cpu, nominalQuota: 4}]}]
)");
  ConfigWatcher watcher(&f.store, f.Options(/*inotify=*/false));
  common::log::ScopedCapture logs;
  LoadResult r = watcher.Reload();
  ASSERT_TRUE(r.ok()) << testing::Dump(r);
  ASSERT_EQ(r.warning_count(), 1u) << testing::Dump(r);
  EXPECT_EQ(logs.Count("spec.namespaceSelector"), 1u);
  EXPECT_EQ(logs.Count("configuration loaded"), 1u);
}

TEST(ConfigWatcher, PeriodicContentCheckWithoutInotify) {
  Fixture f;
  f.dir.Write("a.yaml", Team("a", 1));
  ConfigWatcher watcher(&f.store, f.Options(/*inotify=*/false));
  ASSERT_TRUE(watcher.Reload().ok());
  ASSERT_TRUE(watcher.Start().ok());
  f.dir.Write("a.yaml", Team("a", 7));  // a plain edit, no kubelet
  ASSERT_TRUE(f.reloads.WaitFor(2));
  EXPECT_EQ(GpusOf(*f.store.Current(), "a"), 7);
  watcher.Stop();
}

TEST(ConfigWatcher, UnchangedContentIsNotReloaded) {
  Fixture f;
  f.dir.Write("a.yaml", Team("a", 1));
  ConfigWatcher watcher(&f.store, f.Options(/*inotify=*/false));
  EXPECT_TRUE(watcher.CheckForChanges());
  EXPECT_FALSE(watcher.CheckForChanges());
  f.dir.Write("a.yaml", "not: [valid");
  EXPECT_TRUE(watcher.CheckForChanges());
  EXPECT_FALSE(watcher.CheckForChanges());  // the same bad content is not re-tried
  EXPECT_EQ(watcher.status().checks, 4u);
  EXPECT_EQ(watcher.status().attempts, 2u);
  EXPECT_EQ(watcher.status().failures, 1u);
  EXPECT_EQ(GpusOf(*f.store.Current(), "a"), 1);
}

TEST(ConfigWatcher, StartFailsForAMissingDirectory) {
  PolicyStore store;
  WatcherOptions o;
  o.dir = "/nonexistent/taskgov";
  ConfigWatcher watcher(&store, o);
  common::Status s = watcher.Start();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("/nonexistent/taskgov"), std::string::npos);
}

TEST(ConfigWatcher, ReadersDuringReloadsSeeWholeSnapshots) {
  Fixture f;
  // Version v: teams t0..t(v%5) each with v instances, so a torn read is visible.
  auto version = [](int v) {
    std::vector<std::pair<std::string, std::string>> files;
    for (int i = 0; i <= v % 5; ++i) {
      files.emplace_back("t" + std::to_string(i) + ".yaml", Team("t" + std::to_string(i), v));
    }
    return files;
  };
  KubeletPublish(f.dir.path(), version(1), "11_00_00.000000000");
  ConfigWatcher watcher(&f.store, f.Options(/*inotify=*/true));
  ASSERT_TRUE(watcher.Reload().ok());
  ASSERT_TRUE(watcher.Start().ok());

  std::atomic<bool> done{false};
  std::atomic<int> torn{0};
  std::atomic<long> reads{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      while (!done.load(std::memory_order_acquire)) {
        scheduler::model::PolicyPtr p = f.store.Current();
        const int v = GpusOf(*p, "t0");
        if (p->teams.size() != static_cast<size_t>(v % 5 + 1)) torn++;
        for (const scheduler::model::Team& t : p->teams) {
          if (GpusOf(*p, t.name) != v) torn++;
        }
        reads++;
      }
    });
  }
  // Synchronous reloads interleaved with the watcher thread's own.
  for (int v = 2; v <= 30; ++v) {
    char stamp[32];
    std::snprintf(stamp, sizeof stamp, "11_00_%02d.000000000", v);
    KubeletPublish(f.dir.path(), version(v), stamp);
    (void)watcher.CheckForChanges();
  }
  done.store(true, std::memory_order_release);
  for (std::thread& t : readers) t.join();
  watcher.Stop();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(GpusOf(*f.store.Current(), "t0"), 30);
  EXPECT_EQ(watcher.status().failures, 0u);
}

// ---- The fail-safe: an emptied, truncated or vanished policy is refused, the last good stays.

struct FailSafeCase {
  std::string name;
  std::function<void(const TempDir&)> damage;
  std::string file;  // the file the first error names ("" = the directory)
  std::string text;  // part of the first error
};

TEST(ConfigWatcher, AnEmptiedTruncatedOrVanishedPolicyIsRefusedAndTheLastGoodStays) {
  const std::string kTwoTeams = Team("a", 1) + "---\n" + Team("b", 2);
  const std::vector<FailSafeCase> cases = {
      {"truncated to 0 bytes", [](const TempDir& d) { d.Write("teams.yaml", ""); }, "teams.yaml",
       "the file is empty (0 bytes)"},
      {"only a comment left", [](const TempDir& d) { d.Write("teams.yaml", "# x\n"); },
       "teams.yaml", "holds no document"},
      {"every file deleted",
       [](const TempDir& d) {
         std::filesystem::remove(d.path() + "/teams.yaml");
         std::filesystem::remove(d.path() + "/policy.yaml");
       },
       "", "no team is defined"},
      {"teams file deleted, policy settings left",
       [](const TempDir& d) { std::filesystem::remove(d.path() + "/teams.yaml"); }, "",
       "no team is defined"},
      {"cut at a line end (still valid YAML: team b loses its quota)",
       [&](const TempDir& d) {
         d.Write("teams.yaml", kTwoTeams.substr(0, kTwoTeams.rfind("cohort: c")));
       },
       "teams.yaml", "shrank to its first"},
      {"cut inside the last document (team b gone)",
       [&](const TempDir& d) {
         d.Write("teams.yaml", kTwoTeams.substr(0, kTwoTeams.rfind("---") + 4));
       },
       "teams.yaml", "shrank to its first"},
  };
  for (const FailSafeCase& c : cases) {
    Fixture f;
    f.dir.Write("policy.yaml",
                "apiVersion: taskgov.io/v1\nkind: TaskGovernancePolicy\n"
                "podsWithoutTeam: Refuse\n");
    f.dir.Write("teams.yaml", kTwoTeams);
    ConfigWatcher watcher(&f.store, f.Options(/*inotify=*/false));
    ASSERT_TRUE(watcher.Reload().ok()) << c.name;
    const scheduler::model::PolicyPtr good = f.store.Current();
    ASSERT_EQ(good->teams.size(), 2u) << c.name;

    c.damage(f.dir);
    common::log::ScopedCapture logs;
    EXPECT_TRUE(watcher.CheckForChanges()) << c.name;
    EXPECT_EQ(f.store.Current(), good) << c.name;  // the very same snapshot
    const ReloadStatus s = watcher.status();
    EXPECT_FALSE(s.last_success) << c.name;
    EXPECT_EQ(s.failures, 1u) << c.name;
    EXPECT_NE(s.last_error.find(c.text), std::string::npos) << c.name << ": " << s.last_error;
    const std::string prefix = c.file.empty() ? "<config>: " : c.file + ": ";
    EXPECT_EQ(s.last_error.rfind(prefix, 0), 0u) << c.name << ": " << s.last_error;
    EXPECT_EQ(logs.Count("invalid configuration refused"), 1u) << c.name;
    EXPECT_EQ(logs.Count("\"teams_in_force\":2"), 1u) << c.name;
  }
}

TEST(ConfigWatcher, AnExplicitlyEmptyPolicyIsPublished) {
  Fixture f;
  f.dir.Write("teams.yaml", Team("a", 1));
  ConfigWatcher watcher(&f.store, f.Options(/*inotify=*/false));
  ASSERT_TRUE(watcher.Reload().ok());
  std::filesystem::remove(f.dir.path() + "/teams.yaml");
  f.dir.Write("policy.yaml",
              "apiVersion: taskgov.io/v1\nkind: TaskGovernancePolicy\nemptyPolicy: true\n");
  EXPECT_TRUE(watcher.CheckForChanges());
  EXPECT_TRUE(watcher.status().last_success) << watcher.status().last_error;
  EXPECT_TRUE(f.store.Current()->teams.empty());
}

// A change whose end was removed on purpose loads once anything else in the file changed too.
TEST(ConfigWatcher, AShortenedFileWithAnotherEditIsNotATruncation) {
  Fixture f;
  f.dir.Write("teams.yaml", Team("a", 1) + "---\n" + Team("b", 2));
  ConfigWatcher watcher(&f.store, f.Options(/*inotify=*/false));
  ASSERT_TRUE(watcher.Reload().ok());
  f.dir.Write("teams.yaml", "# b retired\n" + Team("a", 1));
  EXPECT_TRUE(watcher.CheckForChanges());
  EXPECT_TRUE(watcher.status().last_success) << watcher.status().last_error;
  EXPECT_EQ(f.store.Current()->teams.size(), 1u);
}

// A writer that is not done: the directory is read again every `settle` until two reads agree,
// and only that content is parsed. The test's sleep plays the writer, one step per wait.
TEST(ConfigWatcher, ADirectoryBeingWrittenIsWaitedOutUntilItsContentIsStable) {
  Fixture f;
  f.dir.Write("a.yaml", Team("a", 1));
  const std::string final_b = Team("b", 7);
  std::vector<std::function<void()>> steps;
  size_t waits = 0;
  WatcherOptions options = f.Options(/*inotify=*/false);
  options.sleep = [&](std::chrono::milliseconds) {
    if (waits < steps.size()) steps[waits]();
    ++waits;
  };
  ConfigWatcher watcher(&f.store, options);
  ASSERT_TRUE(watcher.Reload().ok());

  f.dir.Write("b.yaml", final_b.substr(0, 30));  // a partial write, cut mid-line
  steps = {
      [&] { f.dir.Write("b.yaml", final_b.substr(0, 60)); },
      [&] { f.dir.Write("b.yaml", final_b); },
  };
  waits = 0;
  EXPECT_TRUE(watcher.CheckForChanges());
  EXPECT_EQ(waits, 3u);  // 30 → 60 bytes, 60 → all, all → all: stable
  const ReloadStatus s = watcher.status();
  EXPECT_TRUE(s.last_success) << s.last_error;
  EXPECT_EQ(s.attempts, 2u);  // the initial load and the final content, nothing in between
  EXPECT_EQ(s.failures, 0u);
  EXPECT_EQ(GpusOf(*f.store.Current(), "b"), 7);
}

TEST(ConfigWatcher, ContentStillChangingAtTheSettleTimeoutIsRefused) {
  Fixture f;
  f.dir.Write("a.yaml", Team("a", 1));
  WatcherOptions options = f.Options(/*inotify=*/false);
  int step = 0;
  bool writing = false;
  options.settle_timeout = std::chrono::milliseconds(0);  // give up at the first disagreement
  options.sleep = [&](std::chrono::milliseconds) {
    if (writing) f.dir.Write("a.yaml", Team("a", 2 + step++));
  };
  ConfigWatcher watcher(&f.store, options);
  ASSERT_TRUE(watcher.Reload().ok());
  const scheduler::model::PolicyPtr good = f.store.Current();
  writing = true;
  f.dir.Write("a.yaml", Team("a", 50));
  EXPECT_TRUE(watcher.CheckForChanges());
  EXPECT_EQ(f.store.Current(), good);
  EXPECT_NE(watcher.status().last_error.find("still changing"), std::string::npos)
      << watcher.status().last_error;
  writing = false;
  EXPECT_TRUE(watcher.CheckForChanges());  // the writer is done: the next check loads it
  EXPECT_TRUE(watcher.status().last_success) << watcher.status().last_error;
}

// RequestReload (SIGHUP) re-reads on the watcher thread even when nothing changed.
TEST(ConfigWatcher, RequestReloadReReadsNowOnTheWatcherThread) {
  Fixture f;
  f.dir.Write("a.yaml", Team("a", 1));
  WatcherOptions options = f.Options(/*inotify=*/true);
  options.poll_interval = std::chrono::hours(1);
  ConfigWatcher watcher(&f.store, options);
  ASSERT_TRUE(watcher.Reload().ok());
  ASSERT_TRUE(watcher.Start().ok());
  watcher.RequestReload();
  ASSERT_TRUE(f.reloads.WaitFor(2));
  EXPECT_TRUE(f.reloads.last_ok()) << f.reloads.last_error();
  EXPECT_EQ(watcher.status().attempts, 2u);
  watcher.RequestReload();
  ASSERT_TRUE(f.reloads.WaitFor(3));
  watcher.Stop();
  EXPECT_EQ(watcher.status().attempts, 3u);
}

}  // namespace
}  // namespace taskgov::config
