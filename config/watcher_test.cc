// Hot reload: simulated kubelet swaps, an invalid update followed by a valid one, the periodic
// content check, and readers running during reloads.

#include "config/watcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/log.h"
#include "config/test_util.h"

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
    return o;
  }
};

int GpusOf(const scheduler::Policy& p, const std::string& team) {
  const scheduler::Team* t = p.FindTeam(team);
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
  scheduler::PolicyPtr good = f.store.Current();
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
        scheduler::PolicyPtr p = f.store.Current();
        const int v = GpusOf(*p, "t0");
        if (p->teams.size() != static_cast<size_t>(v % 5 + 1)) torn++;
        for (const scheduler::Team& t : p->teams) {
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

}  // namespace
}  // namespace taskgov::config
