// Informers (reflectors + typed stores) against the fake API server: initial sync, missing CRDs,
// watch resumption, bookmarks, relists after 410, expired continue tokens, slow and dropped
// connections, an event-order fuzz, and an observer that calls the API from its callback.

#include "scheduler/kube/informers.h"
#include "scheduler/decisions/topology.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "scheduler/common/log.h"
#include "scheduler/kube/actions.h"
#include "scheduler/kube/testing/fake_apiserver.h"
#include "scheduler/kube/testing/test_support.h"
#include "scheduler/model/kube_json.h"
#include "scheduler/state/cluster_state.h"
#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::kube {
namespace {

using ledger::Ledger;
using ledger::QuotaBook;
using model::DecodeNode;
using model::DecodePod;
using model::FlavorNames;
using model::Pod;
using model::ResourceNames;
using model::TeamNames;
using scheduler::kube::testing::FakeApiServer;
using scheduler::kube::testing::FakeApiServerOptions;
using scheduler::kube::testing::FaultRule;
using scheduler::kube::testing::RecordedRequest;
using state::ClusterState;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::NodeJson;
using testing::PodJson;
using testing::RecordingObserver;

std::string Meta(const std::string& json, const char* field) {
  rapidjson::Document doc;
  doc.Parse(json.c_str());
  const rapidjson::Value* meta = testing::TestMember(doc, "metadata");
  const rapidjson::Value* v = meta == nullptr ? nullptr : testing::TestMember(*meta, field);
  return v != nullptr && v->IsString() ? v->GetString() : "";
}

class InformersTest : public ::testing::Test {
 protected:
  void StartServer(FakeApiServerOptions options = {}) {
    server_ = std::make_unique<FakeApiServer>(std::move(options));
    ASSERT_TRUE(server_->Start().ok());
    auto client = KubeClient::Create(testing::HttpConfig(server_->port()));
    ASSERT_TRUE(client.ok());
    client_ = std::move(*client);
  }

  InformerOptions FastOptions() {
    InformerOptions options;
    options.reflector.backoff.initial = milliseconds(1);
    options.reflector.backoff.max = milliseconds(20);
    options.reflector.request_timeout = seconds(5);
    options.reflector.min_healthy_watch = milliseconds(0);
    options.random = MakeRandomSource(1);
    return options;
  }

  void StartInformers(InformerOptions options) {
    informers_ = std::make_unique<Informers>(
        client_.get(), &observer_, ObjectDecoders{testing::TestDecodePod, testing::TestDecodeNode},
        options);
    informers_->Start();
  }
  // The product's wiring: the real decoders feeding a ClusterState and its QuotaBook.
  void StartInformersInto(ClusterState* cluster) {
    informers_ = std::make_unique<Informers>(client_.get(), cluster,
                                             ObjectDecoders{DecodePod, DecodeNode}, FastOptions());
    informers_->Start();
  }
  void StartInformers() { StartInformers(FastOptions()); }

  // The pod watch breaks and cannot be re-opened for a while; meanwhile `names` (namespace "ns")
  // are deleted and the history is compacted, so the deletes can only be learnt by relisting.
  void DeletePodsWhileTheWatchIsDown(const std::vector<std::string>& names) {
    FaultRule unavailable;
    unavailable.path_prefix = "/api/v1/pods";
    unavailable.watch = true;
    unavailable.status = 503;
    unavailable.times = -1;
    server_->AddFault(unavailable);
    server_->DropWatches("pods");
    ASSERT_TRUE(server_->WaitFor(
        [&] {
          for (const auto& r : server_->requests()) {
            if (r.path == "/api/v1/pods" && r.watch && r.status == 503) return true;
          }
          return false;
        },
        seconds(20)));
    for (const std::string& name : names) ASSERT_TRUE(server_->Delete("pods", "ns", name));
    server_->Compact();
    server_->ClearFaults();
  }

  bool WaitSynced() {
    return observer_.Wait([](RecordingObserver& o) { return o.synced_.size() == 15; });
  }

  ReflectorStats StatsOf(const std::string& resource) {
    for (const ReflectorStats& s : informers_->Stats()) {
      if (s.resource == resource) return s;
    }
    ADD_FAILURE() << "no reflector for " << resource;
    return {};
  }

  bool WaitStats(const std::string& resource,
                 const std::function<bool(const ReflectorStats&)>& predicate) {
    return informers_->WaitStats(resource, predicate, seconds(20));
  }

  bool WaitWatching(const std::string& resource, size_t n = 1) {
    return server_->WaitFor([&] { return server_->open_watches(resource) == n; }, seconds(20));
  }

  std::vector<std::string> WatchTargets(const std::string& path) {
    std::vector<std::string> out;
    for (const auto& r : server_->requests()) {
      if (r.path == path && r.watch) out.push_back(r.target);
    }
    return out;
  }

  void TearDown() override {
    if (informers_) informers_->Stop();
    EXPECT_TRUE(observer_.With([](RecordingObserver& o) { return o.errors_; }).empty())
        << "inconsistent stream: "
        << observer_.With([](RecordingObserver& o) { return o.errors_.front(); });
  }

  std::unique_ptr<FakeApiServer> server_;
  std::unique_ptr<KubeClient> client_;
  RecordingObserver observer_;
  std::unique_ptr<Informers> informers_;
};

TEST_F(InformersTest, InitialSyncFromTheSampleCluster) {
  StartServer();
  server_->LoadSampleCluster();
  ASSERT_TRUE(
      server_->Upsert("pods", PodJson("hyperpod-ns-a", "running", "hyperpod-p5-0", "Running"))
          .ok());
  ASSERT_TRUE(
      server_->Upsert("pods", PodJson("hyperpod-ns-a", "done", "hyperpod-p5-0", "Succeeded")).ok());
  ASSERT_TRUE(server_
                  ->Upsert("podgroups",
                           "{\"metadata\":{\"name\":\"pg\",\"namespace\":"
                           "\"hyperpod-ns-b\"},\"spec\":{\"queue\":\"q-b\"}}")
                  .ok());
  ASSERT_TRUE(server_
                  ->Upsert("jobs",
                           "{\"metadata\":{\"name\":\"train\",\"namespace\":\"hyperpod-ns-a\","
                           "\"uid\":\"job-uid-1\"},\"spec\":{\"parallelism\":8}}")
                  .ok());
  StartInformers();
  ASSERT_TRUE(WaitSynced());
  EXPECT_TRUE(informers_->synced());
  observer_.With([](RecordingObserver& o) {
    EXPECT_EQ(o.nodes_.size(), 5u);
    EXPECT_EQ(o.namespaces_.size(), 5u);
    EXPECT_EQ(o.namespaces_["hyperpod-ns-b"].at("kubernetes.io/metadata.name"), "hyperpod-ns-b");
    EXPECT_EQ(o.local_queues_["hyperpod-ns-a/hyperpod-ns-a-localqueue"],
              "hyperpod-ns-a-clusterqueue");
    EXPECT_EQ(o.pod_groups_["hyperpod-ns-b/pg"], "q-b/1");  // minMember defaults to 1
    EXPECT_EQ(o.gang_sizes_["owner/job-uid-1"], 8);
    // The field selector keeps finished pods out.
    EXPECT_EQ(o.pods_.size(), 1u);
    EXPECT_EQ(o.pods_.count("hyperpod-ns-a/running"), 1u);
    for (auto kind :
         {ObjectKind::kPod, ObjectKind::kNode, ObjectKind::kNamespace, ObjectKind::kLocalQueue,
          ObjectKind::kPodGroup, ObjectKind::kJob, ObjectKind::kJobSet, ObjectKind::kPyTorchJob,
          ObjectKind::kTFJob, ObjectKind::kMPIJob, ObjectKind::kXGBoostJob, ObjectKind::kPaddleJob,
          ObjectKind::kJAXJob, ObjectKind::kRayCluster, ObjectKind::kRayJob}) {
      EXPECT_EQ(o.synced_[kind], 1);
    }
    return 0;
  });
  bool selector_sent = false;
  for (const auto& r : server_->requests()) {
    if (r.path == "/api/v1/pods" &&
        r.target.find("fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed") !=
            std::string::npos) {
      selector_sent = true;
    }
  }
  EXPECT_TRUE(selector_sent);

  // A pod that finishes leaves the selector: the watch reports it deleted.
  ASSERT_TRUE(server_->SetPodPhase("hyperpod-ns-a", "running", "Succeeded"));
  ASSERT_TRUE(observer_.Wait([](RecordingObserver& o) { return o.pods_.empty(); }));
  EXPECT_EQ(observer_.With([](RecordingObserver& o) { return o.deleted_pods_; }),
            std::vector<std::string>{"hyperpod-ns-a/running"});
}

TEST_F(InformersTest, AMissingCrdIsReportedOnceCountsAsSyncedAndIsPickedUpLater) {
  FakeApiServerOptions options;
  options.serve_local_queues = false;
  options.serve_pod_groups = false;
  StartServer(options);
  InformerOptions informer_options = FastOptions();
  informer_options.reflector.missing_crd_recheck = milliseconds(50);
  StartInformers(informer_options);
  ASSERT_TRUE(WaitSynced());
  ReflectorStats queues = StatsOf("localqueues");
  EXPECT_FALSE(queues.served);
  EXPECT_TRUE(queues.synced);
  EXPECT_EQ(queues.list_errors, 0u);

  // The CRD gets installed: the next quiet re-check lists and watches it.
  server_->SetServed("localqueues", true);
  ASSERT_TRUE(server_
                  ->Upsert("localqueues",
                           "{\"metadata\":{\"name\":\"q\",\"namespace\":\"t\"},"
                           "\"spec\":{\"clusterQueue\":\"cq\"}}")
                  .ok());
  ASSERT_TRUE(
      observer_.Wait([](RecordingObserver& o) { return o.local_queues_.count("t/q") == 1; }));
  EXPECT_TRUE(WaitStats("localqueues", [](const ReflectorStats& s) { return s.served; }));
  EXPECT_EQ(observer_.With([](RecordingObserver& o) { return o.synced_[ObjectKind::kLocalQueue]; }),
            1);
}

// LocalQueues: v1beta2 is asked for first; the fake API server serves Kueue at v1beta1 only
// (like a cluster with Kueue < 0.15), so the informer falls back to it and stays there.
TEST_F(InformersTest, LocalQueuesUseTheServedKueueVersionPreferringV1beta2) {
  StartServer();
  ASSERT_TRUE(server_
                  ->Upsert("localqueues",
                           "{\"metadata\":{\"name\":\"q\",\"namespace\":\"t\"},"
                           "\"spec\":{\"clusterQueue\":\"cq\"}}")
                  .ok());
  common::log::ScopedCapture logs;
  StartInformers();
  ASSERT_TRUE(WaitSynced());
  ASSERT_TRUE(
      observer_.Wait([](RecordingObserver& o) { return o.local_queues_.count("t/q") == 1; }));
  ASSERT_TRUE(WaitWatching("localqueues"));
  const std::string v1beta2 = "/apis/kueue.x-k8s.io/v1beta2/localqueues";
  const std::string v1beta1 = "/apis/kueue.x-k8s.io/v1beta1/localqueues";
  // The lists, in order (the open watch, on the only served path, is waited for above).
  std::vector<std::pair<std::string, int>> lists;  // path, status
  for (const auto& r : server_->requests()) {
    if (r.path.rfind("/apis/kueue.x-k8s.io/", 0) == 0 && !r.watch) {
      lists.emplace_back(r.path, r.status);
    }
  }
  ASSERT_EQ(lists.size(), 2u);
  EXPECT_EQ(lists[0], std::make_pair(v1beta2, 404));  // preferred, not served
  EXPECT_EQ(lists[1], std::make_pair(v1beta1, 200));
  ReflectorStats stats = StatsOf("localqueues");
  EXPECT_TRUE(stats.served);
  EXPECT_EQ(stats.path, v1beta1);
  EXPECT_EQ(logs.Count("resource not served"), 0u);  // a fallback is not a missing CRD

  // A relist (410) stays on the version found.
  server_->ExpireWatches("localqueues");
  ASSERT_TRUE(WaitStats("localqueues", [](const ReflectorStats& s) { return s.lists == 2; }));
  size_t v1beta2_asks = 0;
  for (const auto& r : server_->requests()) v1beta2_asks += r.path == v1beta2 ? 1 : 0;
  EXPECT_EQ(v1beta2_asks, 1u);
}

// A missing CRD: every version answers 404, re-checked quietly; the log says so exactly once.
TEST_F(InformersTest, AMissingCrdIsLoggedExactlyOnceAcrossRechecks) {
  FakeApiServerOptions options;
  options.serve_local_queues = false;
  StartServer(options);
  common::log::ScopedCapture logs;
  InformerOptions informer_options = FastOptions();
  informer_options.reflector.missing_crd_recheck = milliseconds(20);
  StartInformers(informer_options);
  ASSERT_TRUE(WaitSynced());
  // Several re-check rounds (each asks v1beta2, then v1beta1).
  ASSERT_TRUE(server_->WaitFor(
      [&] {
        size_t v1beta1 = 0;
        for (const auto& r : server_->requests()) {
          v1beta1 += r.path == "/apis/kueue.x-k8s.io/v1beta1/localqueues" ? 1 : 0;
        }
        return v1beta1 >= 4;
      },
      seconds(20)));
  EXPECT_EQ(logs.Count("resource not served"), 1u);
  const std::vector<std::string> lines = logs.Lines();
  for (const std::string& line : lines) {
    if (line.find("resource not served") == std::string::npos) continue;
    EXPECT_NE(line.find("\"resource\":\"localqueues\""), std::string::npos) << line;
    EXPECT_NE(line.find("v1beta2/localqueues, /apis/kueue.x-k8s.io/v1beta1/localqueues"),
              std::string::npos)
        << line;
  }
  EXPECT_FALSE(StatsOf("localqueues").served);
  EXPECT_EQ(StatsOf("localqueues").list_errors, 0u);
}

// 429 with Retry-After on a list and on a watch, at the reflector: a Retry-After longer than the
// call's deadline is not waited out by the client, so the reflector gets the 429 and waits at
// least that long, although its own backoff (1 ms here) would retry at once.
TEST_F(InformersTest, TooManyRequestsWaitsForRetryAfterOnListAndWatch) {
  StartServer();
  InformerOptions options = FastOptions();
  options.reflector.request_timeout = milliseconds(800);
  ASSERT_TRUE(server_->Upsert("nodes", NodeJson("n1")).ok());
  FaultRule list_throttled;
  list_throttled.path_prefix = "/api/v1/nodes";
  list_throttled.watch = false;
  list_throttled.status = 429;
  list_throttled.reason = "TooManyRequests";
  list_throttled.retry_after_seconds = 1;
  server_->AddFault(list_throttled);
  StartInformers(options);
  ASSERT_TRUE(WaitSynced());
  ASSERT_TRUE(WaitWatching("nodes"));
  auto requests_to = [&](bool watch) {
    std::vector<RecordedRequest> out;
    for (const auto& r : server_->requests()) {
      if (r.path == "/api/v1/nodes" && r.watch == watch) out.push_back(r);
    }
    return out;
  };
  std::vector<RecordedRequest> lists = requests_to(false);
  ASSERT_EQ(lists.size(), 2u);
  EXPECT_EQ(lists[0].status, 429);
  EXPECT_EQ(lists[1].status, 200);
  EXPECT_GE(lists[1].at - lists[0].at, milliseconds(1000));
  EXPECT_EQ(StatsOf("nodes").list_errors, 1u);

  FaultRule watch_throttled = list_throttled;
  watch_throttled.watch = true;
  server_->AddFault(watch_throttled);
  server_->EndWatches("nodes");
  ASSERT_TRUE(server_->WaitFor(
      [&] {
        std::vector<RecordedRequest> w = requests_to(true);
        return w.size() >= 3 && w.back().status == 200;
      },
      seconds(20)));
  std::vector<RecordedRequest> watches = requests_to(true);
  ASSERT_EQ(watches.size(), 3u);
  EXPECT_EQ(watches[1].status, 429);
  EXPECT_GE(watches[2].at - watches[1].at, milliseconds(1000));
  EXPECT_TRUE(WaitStats("nodes", [](const ReflectorStats& s) {
    return s.watch_restarts.count("throttled") == 1 && s.watch_restarts.at("throttled") == 1;
  }));
}

TEST_F(InformersTest, AWatchThatEndsCleanlyResumesFromTheLastVersion) {
  StartServer();
  StartInformers();
  ASSERT_TRUE(WaitSynced());
  ASSERT_TRUE(server_->Upsert("pods", PodJson("ns", "a")).ok());
  ASSERT_TRUE(observer_.Wait([](RecordingObserver& o) { return o.pods_.count("ns/a") == 1; }));
  const std::string last = std::to_string(server_->resource_version());
  server_->EndWatches("pods");
  ASSERT_TRUE(
      server_->WaitFor([&] { return WatchTargets("/api/v1/pods").size() == 2; }, seconds(20)));
  std::vector<std::string> targets = WatchTargets("/api/v1/pods");
  ASSERT_EQ(targets.size(), 2u);
  EXPECT_NE(targets[1].find("resourceVersion=" + last + "&"), std::string::npos) << targets[1];
  EXPECT_NE(targets[1].find("allowWatchBookmarks=true"), std::string::npos);
  ASSERT_TRUE(server_->Upsert("pods", PodJson("ns", "b")).ok());
  ASSERT_TRUE(observer_.Wait([](RecordingObserver& o) { return o.pods_.count("ns/b") == 1; }));
  // The counters are updated right after the observer is told.
  ASSERT_TRUE(WaitStats("pods", [](const ReflectorStats& s) { return s.added == 2; }));
  ReflectorStats stats = StatsOf("pods");
  EXPECT_EQ(stats.lists, 1u);  // no relist
  EXPECT_EQ(stats.watch_restarts["ended"], 1u);
  EXPECT_EQ(stats.added, 2u);
}

TEST_F(InformersTest, BookmarksAdvanceTheResumeVersion) {
  StartServer();
  StartInformers();
  ASSERT_TRUE(WaitSynced());
  ASSERT_TRUE(server_->Upsert("nodes", NodeJson("n1")).ok());  // moves the global version
  ASSERT_TRUE(observer_.Wait([](RecordingObserver& o) { return o.nodes_.size() == 1; }));
  const std::string bookmark = std::to_string(server_->resource_version());
  ASSERT_TRUE(WaitWatching("pods"));
  server_->SendBookmarks("pods");
  ASSERT_TRUE(WaitStats("pods", [](const ReflectorStats& s) { return s.bookmarks == 1; }));
  EXPECT_EQ(StatsOf("pods").resource_version, bookmark);
  server_->EndWatches("pods");
  ASSERT_TRUE(
      server_->WaitFor([&] { return WatchTargets("/api/v1/pods").size() == 2; }, seconds(20)));
  EXPECT_NE(WatchTargets("/api/v1/pods")[1].find("resourceVersion=" + bookmark + "&"),
            std::string::npos);
}

// A pod that Succeeds or Fails leaves the field-selected watch as DELETED in that state (the
// watch cache's transition): the delete says what it ended as; a real delete says nothing.
TEST_F(InformersTest, APodThatEndsLeavesTheWatchWithItsFinalPhase) {
  StartServer();
  for (const char* name : {"done", "broke", "gone"}) {
    ASSERT_TRUE(server_->Upsert("pods", PodJson("ns", name, "node-1")).ok());
  }
  StartInformers();
  ASSERT_TRUE(observer_.Wait([](RecordingObserver& o) { return o.pods_.size() == 3; }));
  ASSERT_TRUE(WaitWatching("pods"));
  ASSERT_TRUE(server_->SetPodPhase("ns", "done", "Succeeded"));
  ASSERT_TRUE(server_->SetPodPhase("ns", "broke", "Failed"));
  ASSERT_TRUE(server_->Delete("pods", "ns", "gone"));
  ASSERT_TRUE(observer_.Wait([](RecordingObserver& o) { return o.pods_.empty(); }));
  const std::map<std::string, model::PodPhase> phases =
      observer_.With([](RecordingObserver& o) { return o.deleted_phases_; });
  EXPECT_EQ(phases.at("ns/done"), model::PodPhase::kSucceeded);
  EXPECT_EQ(phases.at("ns/broke"), model::PodPhase::kFailed);
  EXPECT_EQ(phases.at("ns/gone"), model::PodPhase::kUnknown);
}

TEST_F(InformersTest, ARelistAfterExpiryReportsThreeVanishedPodsAsDeleted) {
  StartServer();
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(server_->Upsert("pods", PodJson("ns", "p" + std::to_string(i), "node-1")).ok());
  }
  StartInformers();
  ASSERT_TRUE(observer_.Wait([](RecordingObserver& o) { return o.pods_.size() == 5; }));
  const int upserts_before = observer_.With([](RecordingObserver& o) { return o.pod_upserts_; });
  ASSERT_TRUE(WaitWatching("pods"));

  ASSERT_NO_FATAL_FAILURE(DeletePodsWhileTheWatchIsDown({"p1", "p2", "p3"}));

  ASSERT_TRUE(observer_.Wait([](RecordingObserver& o) { return o.pods_.size() == 2; }));
  std::vector<std::string> deleted =
      observer_.With([](RecordingObserver& o) { return o.deleted_pods_; });
  std::sort(deleted.begin(), deleted.end());
  EXPECT_EQ(deleted, (std::vector<std::string>{"ns/p1", "ns/p2", "ns/p3"}));
  ASSERT_TRUE(WaitStats("pods", [](const ReflectorStats& s) { return s.lists == 2; }));
  ReflectorStats stats = StatsOf("pods");
  EXPECT_EQ(stats.vanished_on_relist, 3u);
  EXPECT_GE(stats.watch_restarts["expired"], 1u);
  EXPECT_GE(stats.watch_restarts["dropped"], 1u);
  // The two survivors were listed again unchanged: the observer was not told twice.
  EXPECT_EQ(observer_.With([](RecordingObserver& o) { return o.pod_upserts_; }), upserts_before);
}

// The relist above, through the product's ClusterState: the three vanished pods' quota usage and
// node usage are released, the survivors' kept.
TEST_F(InformersTest, ARelistReleasesTheUsageOfVanishedPods) {
  StartServer();
  common::FakeClock clock;
  QuotaBook book(scheduler::testing::PolicyBuilder()
                     .Team("t", "c")
                     .Namespaces({"ns"})
                     .Quota("ml.p5", "nvidia.com/gpu", 8)
                     .Build(),
                 &clock);
  ClusterState cluster(&book, &clock, ClusterState::Options{});
  auto usage = [&] {
    Ledger::Session s(book.ledger());
    return s
        .View(TeamNames().Intern("t"), FlavorNames().Intern("ml.p5"),
              ResourceNames().Intern("nvidia.com/gpu"))
        .usage;
  };
  auto wait_usage = [&](int64_t want) {
    const auto deadline = std::chrono::steady_clock::now() + seconds(20);
    while (usage() != want && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(10));
    }
    return usage() == want;
  };
  ASSERT_TRUE(server_->Upsert("nodes", testing::NodeJson("node-1")).ok());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(
        server_->Upsert("pods", PodJson("ns", "p" + std::to_string(i), "node-1", "Running")).ok());
  }
  StartInformersInto(&cluster);
  ASSERT_TRUE(wait_usage(5)) << usage();
  ASSERT_TRUE(WaitWatching("pods"));

  ASSERT_NO_FATAL_FAILURE(DeletePodsWhileTheWatchIsDown({"p1", "p2", "p3"}));

  ASSERT_TRUE(wait_usage(2)) << usage();
  EXPECT_EQ(cluster.nodes().View("node-1").used.Get("nvidia.com/gpu"), 2);
  EXPECT_EQ(book.size(), 2u);
  EXPECT_EQ(StatsOf("pods").vanished_on_relist, 3u);
}

TEST_F(InformersTest, A410StatusOnWatchRelists) {
  StartServer();
  ASSERT_TRUE(server_->Upsert("pods", PodJson("ns", "a")).ok());
  StartInformers();
  ASSERT_TRUE(WaitSynced());
  ASSERT_TRUE(WaitWatching("pods"));
  FaultRule gone;
  gone.path_prefix = "/api/v1/pods";
  gone.watch = true;
  gone.status = 410;
  gone.reason = "Expired";
  server_->AddFault(gone);
  server_->EndWatches("pods");
  ASSERT_TRUE(WaitStats("pods", [](const ReflectorStats& s) { return s.lists == 2; }));
  EXPECT_EQ(StatsOf("pods").watch_restarts["expired"], 1u);
  ASSERT_TRUE(server_->Upsert("pods", PodJson("ns", "b")).ok());
  ASSERT_TRUE(observer_.Wait([](RecordingObserver& o) { return o.pods_.size() == 2; }));
  EXPECT_EQ(observer_.With([](RecordingObserver& o) { return o.pod_upserts_; }), 2);
}

TEST_F(InformersTest, AnExpiredContinueTokenRestartsTheList) {
  StartServer();
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(server_->Upsert("pods", PodJson("ns", "p" + std::to_string(i))).ok());
  }
  FaultRule expired;
  expired.path_prefix = "/api/v1/pods";
  expired.only_with_continue = true;
  expired.status = 410;
  expired.reason = "Expired";
  expired.message = "The provided continue parameter is too old";
  server_->AddFault(expired);
  InformerOptions options = FastOptions();
  options.reflector.page_size = 2;
  StartInformers(options);
  ASSERT_TRUE(WaitSynced());
  ReflectorStats stats = StatsOf("pods");
  EXPECT_EQ(stats.expired_continues, 1u);
  EXPECT_EQ(stats.lists, 1u);
  EXPECT_EQ(stats.list_pages, 4u);  // 1 page, expired, then 3 pages from the start
  observer_.With([](RecordingObserver& o) {
    EXPECT_EQ(o.pods_.size(), 5u);
    EXPECT_EQ(o.pod_upserts_, 5);  // the first page, listed twice, was reported once
    return 0;
  });
}

TEST_F(InformersTest, ListErrorsBackOffAndRetry) {
  StartServer();
  ASSERT_TRUE(server_->Upsert("nodes", NodeJson("n1")).ok());
  FaultRule broken;
  broken.path_prefix = "/api/v1/nodes";
  broken.status = 500;
  broken.times = 3;
  server_->AddFault(broken);
  StartInformers();
  ASSERT_TRUE(WaitSynced());
  EXPECT_EQ(StatsOf("nodes").list_errors, 3u);
  EXPECT_EQ(observer_.With([](RecordingObserver& o) { return o.nodes_.size(); }), 1u);
}

TEST_F(InformersTest, SlowAndDroppedWatchConnectionsAreResumed) {
  StartServer();
  InformerOptions options = FastOptions();
  options.reflector.request_timeout = milliseconds(300);
  StartInformers(options);
  ASSERT_TRUE(WaitSynced());
  ASSERT_TRUE(WaitWatching("nodes"));
  FaultRule slow;
  slow.path_prefix = "/api/v1/nodes";
  slow.watch = true;
  slow.delay = milliseconds(2000);
  server_->AddFault(slow);
  server_->DropWatches("nodes");
  ASSERT_TRUE(WaitStats("nodes", [](const ReflectorStats& s) {
    auto it = s.watch_restarts.find("error");
    return it != s.watch_restarts.end() && it->second >= 1;
  }));
  ASSERT_TRUE(server_->Upsert("nodes", NodeJson("late")).ok());
  ASSERT_TRUE(observer_.Wait([](RecordingObserver& o) { return o.nodes_.count("late") == 1; }));
  ReflectorStats stats = StatsOf("nodes");
  EXPECT_EQ(stats.watch_restarts["dropped"], 1u);
  EXPECT_EQ(stats.lists, 1u);
}

// A watch that was healthy when it broke is resumed at once, however often that happens (as
// client-go resumes it): the backoff here is an hour, so a wait would fail the test.
TEST_F(InformersTest, AHealthyWatchThatBreaksIsResumedWithoutBackoff) {
  StartServer();
  InformerOptions options = FastOptions();
  options.reflector.backoff.initial = std::chrono::hours(1);
  options.reflector.backoff.max = std::chrono::hours(1);
  options.reflector.min_healthy_watch = std::chrono::hours(1);  // healthy means: had events
  StartInformers(options);
  ASSERT_TRUE(WaitSynced());
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(WaitWatching("nodes")) << "drop " << i;
    const std::string name = "n" + std::to_string(i);
    ASSERT_TRUE(server_->Upsert("nodes", NodeJson(name)).ok());
    ASSERT_TRUE(observer_.Wait([&](RecordingObserver& o) { return o.nodes_.count(name) == 1; }));
    server_->DropWatches("nodes");
  }
  ASSERT_TRUE(WaitWatching("nodes"));
  EXPECT_EQ(StatsOf("nodes").watch_restarts["dropped"], 4u);
  EXPECT_EQ(StatsOf("nodes").lists, 1u);
}

// A watch answered late (but within the request timeout) streams from where it asked.
TEST_F(InformersTest, AWatchAnsweredLateStillStreams) {
  StartServer();
  InformerOptions options = FastOptions();
  options.reflector.request_timeout = milliseconds(5000);
  StartInformers(options);
  ASSERT_TRUE(WaitSynced());
  ASSERT_TRUE(WaitWatching("nodes"));
  FaultRule slow;
  slow.path_prefix = "/api/v1/nodes";
  slow.watch = true;
  slow.delay = milliseconds(1000);
  server_->AddFault(slow);
  server_->DropWatches("nodes");
  ASSERT_TRUE(server_->Upsert("nodes", NodeJson("late")).ok());
  ASSERT_TRUE(observer_.Wait([](RecordingObserver& o) { return o.nodes_.count("late") == 1; }));
  ASSERT_TRUE(server_->Upsert("nodes", NodeJson("later")).ok());
  ASSERT_TRUE(observer_.Wait([](RecordingObserver& o) { return o.nodes_.count("later") == 1; }));
  ReflectorStats stats = StatsOf("nodes");
  EXPECT_EQ(stats.watch_restarts["dropped"], 1u);
  EXPECT_EQ(stats.lists, 1u);
}

TEST_F(InformersTest, EventOrderFuzzKeepsTheObserverConsistent) {
  StartServer();
  StartInformers();
  ASSERT_TRUE(WaitSynced());
  std::mt19937 rng(20260101);
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  const std::vector<std::string> names = {"w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7"};
  const std::vector<std::string> nodes = {"n0", "n1", "n2"};
  auto pod_json = [&](const std::string& name) { return server_->Get("pods", "team", name); };
  for (int op = 0; op < 400; ++op) {
    const std::string name = names[static_cast<size_t>(pick(static_cast<int>(names.size())))];
    const std::string node = nodes[static_cast<size_t>(pick(static_cast<int>(nodes.size())))];
    switch (pick(14)) {
      case 0:
      case 1:  // created, possibly bound to a node that does not exist yet
        (void)server_->Upsert("pods", PodJson("team", name, pick(2) ? node : ""));
        break;
      case 2:  // bound / running
        if (pod_json(name))
          (void)server_->Upsert(
              "pods", PodJson("team", name, node, "Running", Meta(*pod_json(name), "uid")));
        break;
      case 3:
        (void)server_->Delete("pods", "team", name);
        break;
      case 4:  // finished: leaves the field selector
        (void)server_->SetPodPhase("team", name, pick(2) ? "Succeeded" : "Failed");
        break;
      case 5:  // a node appears (again: deleted and re-added gets a new uid)
        (void)server_->Upsert("nodes", NodeJson(node));
        break;
      case 6:
        (void)server_->Delete("nodes", "", node);
        break;
      case 7:  // duplicate ADDED of the current version (of a pod the watch shows)
        if (auto json = pod_json(name)) {
          rapidjson::Document doc;
          doc.Parse(json->c_str());
          common::Result<Pod> pod = testing::TestDecodePod(doc);
          if (pod.ok() && !pod->terminal()) server_->InjectWatchEvent("pods", "ADDED", *json);
        }
        break;
      case 8:  // DELETED for an object nobody has seen, on a watch that is open (an event
               // injected while the reflector relists reaches nobody, and under load the ops
               // can all fall into relists: the anomaly counters below would see none)
        ASSERT_TRUE(WaitWatching("pods"));
        server_->InjectWatchEvent("pods", "DELETED",
                                  PodJson("team", "ghost-" + std::to_string(op)));
        break;
      case 9:  // DELETED for another incarnation of a pod
        if (pod_json(name)) {
          server_->InjectWatchEvent("pods", "DELETED",
                                    PodJson("team", name, "", "Running", "stale-uid"));
        }
        break;
      case 10:  // duplicate MODIFIED of a node
        if (auto json = server_->Get("nodes", "", node)) {
          server_->InjectWatchEvent("nodes", "MODIFIED", *json);
        }
        break;
      case 11:
        switch (pick(4)) {
          case 0:
            server_->EndWatches(pick(2) ? "pods" : "nodes");
            break;
          case 1:
            server_->DropWatches(pick(2) ? "pods" : "nodes");
            break;
          case 2:
            server_->ExpireWatches(pick(2) ? "pods" : "nodes");
            break;
          default:
            server_->Compact();
            break;
        }
        break;
      default:  // re-created under the same name: a new uid
        if (server_->Delete("pods", "team", name)) {
          (void)server_->Upsert("pods", PodJson("team", name, node));
        }
        break;
    }
  }
  // Converges to exactly the server's state.
  std::map<std::string, RecordingObserver::PodState> want_pods;
  for (const std::string& json : server_->List("pods")) {
    common::Result<Pod> pod = [&] {
      rapidjson::Document doc;
      doc.Parse(json.c_str());
      return testing::TestDecodePod(doc);
    }();
    ASSERT_TRUE(pod.ok());
    if (pod->terminal()) continue;
    want_pods[pod->key()] =
        RecordingObserver::PodState{pod->uid, pod->resource_version, pod->node_name};
  }
  std::map<std::string, std::string> want_nodes;
  for (const std::string& json : server_->List("nodes")) {
    want_nodes[Meta(json, "name")] = Meta(json, "resourceVersion");
  }
  const bool converged = observer_.Wait(
      [&](RecordingObserver& o) {
        if (o.nodes_ != want_nodes || o.pods_.size() != want_pods.size()) return false;
        for (const auto& [key, state] : want_pods) {
          auto it = o.pods_.find(key);
          if (it == o.pods_.end() || it->second.uid != state.uid ||
              it->second.resource_version != state.resource_version ||
              it->second.node != state.node) {
            return false;
          }
        }
        return true;
      },
      seconds(30));
  EXPECT_TRUE(converged);
  ReflectorStats pods = StatsOf("pods");
  EXPECT_GT(pods.unknown_deletes + pods.stale_deletes + pods.duplicates, 0u);
}

TEST_F(InformersTest, AnObserverMayCallTheApiFromItsCallback) {
  StartServer();
  ApiKubeActions actions(client_.get());
  observer_.on_pod_upsert = [&](const Pod& pod) {
    if (pod.node_name.empty()) {
      // Blocking I/O from the informer thread: it must not wait on the watch it is serving.
      EXPECT_TRUE(actions.Bind(pod.namespace_, pod.name, pod.uid, "node-1").ok());
    }
  };
  StartInformers();
  ASSERT_TRUE(WaitSynced());
  ASSERT_TRUE(server_->Upsert("pods", PodJson("ns", "needs-a-node")).ok());
  ASSERT_TRUE(observer_.Wait([](RecordingObserver& o) {
    auto it = o.pods_.find("ns/needs-a-node");
    return it != o.pods_.end() && it->second.node == "node-1";
  }));
  EXPECT_EQ(server_->bindings().size(), 1u);
  informers_->Stop();  // before `actions` goes away
}

common::Result<GangSizeInfo> Decoded(
    common::Result<GangSizeInfo> (*decode)(const rapidjson::Value&), const char* json) {
  rapidjson::Document doc;
  doc.Parse(json);
  return decode(doc);
}

TEST(DecodeGangSizeTest, AJobsParallelism) {
  common::Result<GangSizeInfo> job = Decoded(
      DecodeJob, R"({"metadata":{"name":"j","namespace":"n","uid":"u"},"spec":{"parallelism":4}})");
  ASSERT_TRUE(job.ok()) << job.error().message;
  EXPECT_EQ(job->workload, "owner/u");
  EXPECT_EQ(job->size, 4);
  job = Decoded(DecodeJob, R"({"metadata":{"name":"j","namespace":"n","uid":"u"},"spec":{}})");
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->size, 1);  // the Job default
  EXPECT_EQ(Decoded(DecodeJob, R"({"metadata":{"name":"j","namespace":"n"}})").error().message,
            "metadata.uid: missing");
  EXPECT_EQ(Decoded(DecodeJob, R"({"metadata":{"name":"j","uid":"u"},"spec":{"parallelism":-2}})")
                .error()
                .message,
            "spec.parallelism: expected a non-negative integer");
}

// Issue 37: Kueue's TAS annotations as its docs write them (site/static/examples/jobs/
// sample-jobset-tas-combined.yaml: a block for the podset, slices of 4 per rack) reach the
// pods' template, and those `hyp` writes on the job's own metadata are kept with the job.
TEST(DecodeJobControlTest, KueuesTopologyAnnotationsOnTheTemplateAndTheJob) {
  common::Result<GangSizeInfo> set = Decoded(DecodeJobSet, R"({
    "metadata":{"name":"jobset-tas-combined","namespace":"a","uid":"u",
      "labels":{"kueue.x-k8s.io/queue-name":"user-queue"},
      "annotations":{"kueue.x-k8s.io/podset-preferred-topology":"cloud.provider.com/topology-block",
        "other":"x"}},
    "spec":{"replicatedJobs":[{"name":"workers","replicas":1,"template":{"spec":{
      "parallelism":8,"completions":8,"backoffLimit":0,
      "template":{"metadata":{"annotations":{
          "kueue.x-k8s.io/podset-required-topology":"cloud.provider.com/topology-block",
          "kueue.x-k8s.io/podset-slice-required-topology":"cloud.provider.com/topology-rack",
          "kueue.x-k8s.io/podset-slice-size":"4"}},
        "spec":{"containers":[{"name":"sleep","image":"busybox",
          "resources":{"requests":{"cpu":"1","memory":"200Mi"}}}]}}}}}]}})");
  ASSERT_TRUE(set.ok()) << set.error().message;
  ASSERT_NE(set->control, nullptr);
  ASSERT_EQ(set->control->pod_sets.size(), 1u);
  const decisions::TopologyRequest r = decisions::TopologyRequestOf(set->control->pod_sets[0].pod);
  EXPECT_EQ(r.invalid, "");
  EXPECT_TRUE(r.required());
  EXPECT_EQ(r.level, "cloud.provider.com/topology-block");
  EXPECT_EQ(r.slice_level, "cloud.provider.com/topology-rack");
  EXPECT_EQ(r.slice_size, 4);
  EXPECT_EQ(set->control->annotations.at("kueue.x-k8s.io/podset-preferred-topology"),
            "cloud.provider.com/topology-block");
  EXPECT_EQ(set->control->annotations.count("other"), 0u);
}

// Issue 35: what pausing and resuming a Job needs — its path, its suspend flag, taskgov's
// annotations (and only those), a podFailurePolicy that ignores evictions, and its pod set.
TEST(DecodeJobControlTest, AJobsControl) {
  common::Result<GangSizeInfo> job = Decoded(DecodeJob, R"({
    "metadata":{"name":"train","namespace":"a","uid":"u","creationTimestamp":"2026-01-01T00:00:10Z",
      "annotations":{"taskgov.io/suspended-by":"taskgov","taskgov.io/suspensions":"2","other":"x"}},
    "spec":{"parallelism":8,"completions":8,"suspend":true,
      "podFailurePolicy":{"rules":[
        {"action":"FailJob","onExitCodes":{"operator":"In","values":[42]}},
        {"action":"Ignore","onPodConditions":[{"type":"DisruptionTarget"}]}]},
      "template":{"metadata":{"labels":{"app":"t"}},"spec":{"priorityClassName":"low",
        "containers":[{"name":"c","resources":{"requests":{"nvidia.com/gpu":"4"}}}]}}}})");
  ASSERT_TRUE(job.ok()) << job.error().message;
  ASSERT_NE(job->control, nullptr);
  const model::JobControl& c = *job->control;
  EXPECT_EQ(c.kind, "Job");
  EXPECT_EQ(c.path, "/apis/batch/v1/namespaces/a/jobs/train");
  EXPECT_EQ(c.workload, "owner/u");
  EXPECT_FALSE(c.run_policy);
  EXPECT_TRUE(c.suspended);
  EXPECT_TRUE(c.paused_by_taskgov());
  EXPECT_EQ(c.suspensions(), 2);
  EXPECT_EQ(c.annotations.count("other"), 0u);
  EXPECT_TRUE(c.ignores_disruption);
  EXPECT_EQ(c.creation_unix_ms, 1767225610000);
  ASSERT_EQ(c.pod_sets.size(), 1u);
  EXPECT_EQ(c.pod_sets[0].count, 8);
  EXPECT_EQ(c.pod_sets[0].pod.namespace_, "a");
  EXPECT_EQ(c.pod_sets[0].pod.priority_class_name, "low");
  EXPECT_EQ(model::EffectiveRequest(c.pod_sets[0].pod).ToString(), "nvidia.com/gpu: 4");

  // A rule that counts evictions first decides: they count.
  job = Decoded(DecodeJob, R"({"metadata":{"name":"j","namespace":"a","uid":"u"},"spec":{
    "podFailurePolicy":{"rules":[{"action":"Count","onPodConditions":[{"type":"DisruptionTarget"}]},
      {"action":"Ignore","onPodConditions":[{"type":"DisruptionTarget"}]}]},"template":{"spec":{}}}})");
  ASSERT_TRUE(job.ok());
  ASSERT_NE(job->control, nullptr);
  EXPECT_FALSE(job->control->ignores_disruption);
  EXPECT_FALSE(job->control->suspended);
  // No template: nothing to resume from, so not pausable (its pods are evicted).
  job = Decoded(DecodeJob, R"({"metadata":{"name":"j","namespace":"a","uid":"u"},"spec":{}})");
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->control, nullptr);
}

TEST(DecodeJobControlTest, APyTorchJobIsSuspendedThroughItsRunPolicy) {
  common::Result<GangSizeInfo> job = Decoded(DecodePyTorchJob, R"({
    "metadata":{"name":"p","namespace":"n","uid":"u"},
    "spec":{"runPolicy":{"suspend":true},"pytorchReplicaSpecs":{
      "Master":{"replicas":1,"template":{"spec":{"containers":[{"name":"m"}]}}},
      "Worker":{"replicas":7,"template":{"spec":{"containers":[{"name":"w"}]}}}}}})");
  ASSERT_TRUE(job.ok()) << job.error().message;
  ASSERT_NE(job->control, nullptr);
  EXPECT_EQ(job->control->path, "/apis/kubeflow.org/v1/namespaces/n/pytorchjobs/p");
  EXPECT_TRUE(job->control->run_policy);
  EXPECT_TRUE(job->control->suspended);
  EXPECT_FALSE(job->control->paused_by_taskgov()) << "suspended, but not by taskgov";
  EXPECT_EQ(job->control->pods(), 8);
}

// A JobSet is paused through spec.suspend (its controller suspends its Jobs); its pod sets are
// its replicated Jobs' templates × replicas × parallelism.
TEST(DecodeJobControlTest, AJobSetAndARayClusterArePausableARayJobsClusterIsNot) {
  common::Result<GangSizeInfo> set = Decoded(DecodeJobSet, R"({
    "metadata":{"name":"train","namespace":"n","uid":"u"},
    "spec":{"suspend":false,"replicatedJobs":[
      {"name":"launcher","template":{"spec":{"template":{"spec":{"containers":[{"name":"l"}]}}}}},
      {"name":"workers","replicas":2,"template":{"spec":{"parallelism":4,
        "template":{"spec":{"containers":[{"name":"w","resources":{"requests":{"nvidia.com/gpu":"8"}}}]}}}}}]}})");
  ASSERT_TRUE(set.ok()) << set.error().message;
  ASSERT_NE(set->control, nullptr);
  EXPECT_EQ(set->control->kind, "JobSet");
  EXPECT_EQ(set->control->workload, "jobset/n/train");
  EXPECT_EQ(set->control->path, "/apis/jobset.x-k8s.io/v1alpha2/namespaces/n/jobsets/train");
  EXPECT_FALSE(set->control->run_policy);
  ASSERT_EQ(set->control->pod_sets.size(), 2u);
  EXPECT_EQ(set->control->pod_sets[1].count, 8);
  EXPECT_EQ(set->control->pods(), 9);

  const char* ray = R"({"metadata":{"name":"rc","namespace":"n","uid":"r"%s},
    "spec":{"suspend":true,"headGroupSpec":{"template":{"spec":{"containers":[{"name":"h"}]}}},
      "workerGroupSpecs":[{"replicas":2,"numOfHosts":2,
        "template":{"spec":{"containers":[{"name":"w"}]}}}]}})";
  std::string mine = ray;
  mine.replace(mine.find("%s"), 2, "");
  common::Result<GangSizeInfo> cluster = Decoded(DecodeRayCluster, mine.c_str());
  ASSERT_TRUE(cluster.ok()) << cluster.error().message;
  ASSERT_NE(cluster->control, nullptr);
  EXPECT_EQ(cluster->control->path, "/apis/ray.io/v1/namespaces/n/rayclusters/rc");
  EXPECT_TRUE(cluster->control->suspended);
  EXPECT_EQ(cluster->control->pods(), 5);
  std::string owned = ray;
  owned.replace(owned.find("%s"), 2,
                R"(,"ownerReferences":[{"kind":"RayJob","name":"j","uid":"x","controller":true}])");
  cluster = Decoded(DecodeRayCluster, owned.c_str());
  ASSERT_TRUE(cluster.ok()) << cluster.error().message;
  ASSERT_NE(cluster->control, nullptr);
  EXPECT_EQ(cluster->control->controlled_by, "owner/x")
      << "a link: its RayJob, not it, would have to be suspended";
  EXPECT_TRUE(cluster->control->pod_sets.empty());
  EXPECT_EQ(cluster->size, 5);
}

// A RayJob is paused through spec.suspend when KubeRay allows it (it deletes the cluster at the
// end, and the cluster is its own); its pod sets are its cluster spec's.
TEST(DecodeJobControlTest, ARayJobIsPausableWhenKubeRayMaySuspendIt) {
  const char* rayjob = R"({"metadata":{"name":"rj","namespace":"n","uid":"j",
      "annotations":{"taskgov.io/suspensions":"2"}},
    "spec":{"suspend":true%s,"entrypoint":"python train.py","rayClusterSpec":{
      "headGroupSpec":{"template":{"spec":{"containers":[{"name":"h"}]}}},
      "workerGroupSpecs":[{"replicas":3,"template":{"spec":{"containers":[{"name":"w",
        "resources":{"requests":{"nvidia.com/gpu":"4"}}}]}}}]}}})";
  auto with = [&](const std::string& fields) {
    std::string text = rayjob;
    text.replace(text.find("%s"), 2, fields);
    return Decoded(DecodeRayJob, text.c_str());
  };
  common::Result<GangSizeInfo> job = with(R"(,"shutdownAfterJobFinishes":true)");
  ASSERT_TRUE(job.ok()) << job.error().message;
  EXPECT_EQ(job->workload, "owner/j");
  EXPECT_EQ(job->size, 4);
  ASSERT_NE(job->control, nullptr);
  EXPECT_EQ(job->control->kind, "RayJob");
  EXPECT_EQ(job->control->path, "/apis/ray.io/v1/namespaces/n/rayjobs/rj");
  EXPECT_FALSE(job->control->run_policy);
  EXPECT_TRUE(job->control->suspended);
  EXPECT_EQ(job->control->suspensions(), 2);
  ASSERT_EQ(job->control->pod_sets.size(), 2u);
  EXPECT_EQ(job->control->pod_sets[1].count, 3);
  EXPECT_TRUE(job->control->controlled_by.empty());

  for (const std::string& unpausable :
       {std::string(""), std::string(R"(,"shutdownAfterJobFinishes":false)"),
        std::string(
            R"(,"shutdownAfterJobFinishes":true,"clusterSelector":{"ray.io/cluster":"c"})")}) {
    job = with(unpausable);
    ASSERT_TRUE(job.ok()) << job.error().message;
    EXPECT_EQ(job->control, nullptr) << "KubeRay would fail it suspended: " << unpausable;
    EXPECT_EQ(job->size, 4);
  }
  EXPECT_EQ(Decoded(DecodeRayJob, R"({"metadata":{"name":"r","uid":"u"},
    "spec":{"rayClusterSpec":{"workerGroupSpecs":[{"replicas":"2"}]}}})")
                .error()
                .message,
            "spec.rayClusterSpec.workerGroupSpecs[0].replicas: expected a non-negative integer");
}

TEST(DecodeGangSizeTest, AJobSetsReplicatedJobs) {
  // A launcher Job of 1 and 2 worker Jobs of parallelism 4: 9 pods.
  common::Result<GangSizeInfo> set = Decoded(DecodeJobSet, R"({
    "metadata":{"name":"train","namespace":"n","uid":"u"},
    "spec":{"replicatedJobs":[
      {"name":"launcher","template":{"spec":{}}},
      {"name":"workers","replicas":2,"template":{"spec":{"parallelism":4}}}]}})");
  ASSERT_TRUE(set.ok()) << set.error().message;
  EXPECT_EQ(set->workload, "jobset/n/train");
  EXPECT_EQ(set->size, 9);
  EXPECT_EQ(
      Decoded(
          DecodeJobSet,
          R"({"metadata":{"name":"t","namespace":"n"},"spec":{"replicatedJobs":[{"replicas":"2"}]}})")
          .error()
          .message,
      "spec.replicatedJobs[0].replicas: expected a non-negative integer");
}

TEST(DecodeGangSizeTest, APyTorchJobsReplicas) {
  common::Result<GangSizeInfo> job = Decoded(DecodePyTorchJob, R"({
    "metadata":{"name":"p","namespace":"n","uid":"u"},
    "spec":{"pytorchReplicaSpecs":{"Master":{"replicas":1},"Worker":{"replicas":7}}}})");
  ASSERT_TRUE(job.ok()) << job.error().message;
  EXPECT_EQ(job->workload, "owner/u");
  EXPECT_EQ(job->size, 8);
  EXPECT_EQ(Decoded(DecodePyTorchJob,
                    R"({"metadata":{"name":"p","uid":"u"},"spec":{"pytorchReplicaSpecs":[]}})")
                .error()
                .message,
            "spec.pytorchReplicaSpecs: expected an object");
}

// The other kubeflow.org/v1 training jobs: sized and paused as a PyTorchJob is.
TEST(DecodeGangSizeTest, XGBoostPaddleAndJAXJobsAreSizedAndPausable) {
  struct Kind {
    common::Result<GangSizeInfo> (*decode)(const rapidjson::Value&);
    const char* kind;
    const char* field;
    const char* plural;
  };
  for (const Kind& k : {Kind{DecodeXGBoostJob, "XGBoostJob", "xgbReplicaSpecs", "xgboostjobs"},
                        Kind{DecodePaddleJob, "PaddleJob", "paddleReplicaSpecs", "paddlejobs"},
                        Kind{DecodeJAXJob, "JAXJob", "jaxReplicaSpecs", "jaxjobs"}}) {
    SCOPED_TRACE(k.kind);
    const std::string text =
        std::string(R"({"metadata":{"name":"j","namespace":"n","uid":"u"},"spec":{)") +
        R"("runPolicy":{"suspend":true},")" + k.field +
        R"(":{"Master":{"replicas":1,"template":{"spec":{"containers":[{"name":"m"}]}}},)" +
        R"("Worker":{"replicas":3,"template":{"spec":{"containers":[{"name":"w"}]}}}}}})";
    common::Result<GangSizeInfo> job = Decoded(k.decode, text.c_str());
    ASSERT_TRUE(job.ok()) << job.error().message;
    EXPECT_EQ(job->workload, "owner/u");
    EXPECT_EQ(job->size, 4);
    ASSERT_NE(job->control, nullptr);
    EXPECT_EQ(job->control->kind, k.kind);
    EXPECT_TRUE(job->control->run_policy);
    EXPECT_TRUE(job->control->suspended);
    EXPECT_EQ(job->control->path,
              std::string("/apis/kubeflow.org/v1/namespaces/n/") + k.plural + "/j");
  }
}

TEST(DecodeGangSizeTest, TFJobAndMPIJobReplicas) {
  common::Result<GangSizeInfo> tf = Decoded(DecodeTFJob, R"({
    "metadata":{"name":"t","namespace":"n","uid":"tf"},
    "spec":{"tfReplicaSpecs":{"Chief":{},"PS":{"replicas":2},"Worker":{"replicas":4}}}})");
  ASSERT_TRUE(tf.ok()) << tf.error().message;
  EXPECT_EQ(tf->workload, "owner/tf");
  EXPECT_EQ(tf->size, 7);  // a chief without replicas counts 1
  common::Result<GangSizeInfo> mpi = Decoded(DecodeMPIJob, R"({
    "metadata":{"name":"m","namespace":"n","uid":"mpi"},
    "spec":{"mpiReplicaSpecs":{"Launcher":{"replicas":1},"Worker":{"replicas":8}}}})");
  ASSERT_TRUE(mpi.ok()) << mpi.error().message;
  EXPECT_EQ(mpi->workload, "owner/mpi");
  EXPECT_EQ(mpi->size, 9);
  EXPECT_EQ(Decoded(DecodeMPIJob, R"({"metadata":{"name":"m","uid":"u"},
    "spec":{"mpiReplicaSpecs":{"Worker":{"replicas":-1}}}})")
                .error()
                .message,
            "spec.mpiReplicaSpecs.Worker.replicas: expected a non-negative integer");
}

// As Kueue counts a RayCluster's pod sets: the head, and per worker group its replicas (1 when
// absent) times numOfHosts.
TEST(DecodeGangSizeTest, ARayClustersHeadAndWorkerGroups) {
  common::Result<GangSizeInfo> ray = Decoded(DecodeRayCluster, R"({
    "metadata":{"name":"r","namespace":"n","uid":"ray"},
    "spec":{"headGroupSpec":{},"workerGroupSpecs":[{"replicas":3},{},{"replicas":2,"numOfHosts":4}]}})");
  ASSERT_TRUE(ray.ok()) << ray.error().message;
  EXPECT_EQ(ray->workload, "owner/ray");
  EXPECT_EQ(ray->size, 1 + 3 + 1 + 8);
  common::Result<GangSizeInfo> head_only = Decoded(DecodeRayCluster, R"({
    "metadata":{"name":"r","namespace":"n","uid":"ray"},"spec":{"headGroupSpec":{}}})");
  ASSERT_TRUE(head_only.ok());
  EXPECT_EQ(head_only->size, 1);
  EXPECT_EQ(Decoded(DecodeRayCluster, R"({"metadata":{"name":"r","uid":"u"},
    "spec":{"workerGroupSpecs":[{"replicas":1},{"numOfHosts":-2}]}})")
                .error()
                .message,
            "spec.workerGroupSpecs[1].numOfHosts: expected a non-negative integer");
  EXPECT_EQ(Decoded(DecodeRayCluster, R"({"metadata":{"name":"r","uid":"u"},
    "spec":{"workerGroupSpecs":{}}})")
                .error()
                .message,
            "spec.workerGroupSpecs: expected a list");
}

}  // namespace
}  // namespace taskgov::scheduler::kube
