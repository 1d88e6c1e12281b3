// LeaderElector against the fake API server's Lease endpoints, driven step by step with a fake
// clock: acquire, renew, expiry judged from local observation, optimistic-concurrency conflicts,
// step-down, takeover and release; plus one run on real threads.

#include "scheduler/kube/leader_election.h"

#include <gtest/gtest.h>

#include <condition_variable>

#include "scheduler/common/clock.h"
#include "scheduler/common/time_format.h"
#include "scheduler/kube/client.h"
#include "scheduler/kube/testing/fake_apiserver.h"
#include "scheduler/kube/testing/test_support.h"

namespace taskgov::scheduler::kube {
namespace {

using scheduler::kube::testing::FakeApiServer;
using scheduler::kube::testing::FaultRule;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kNs[] = "kube-system";
constexpr char kName[] = "taskgov";

struct Events {
  std::mutex mu;
  std::condition_variable cv;
  int started = 0;
  int stopped = 0;
  std::vector<std::string> leaders;

  bool WaitStarted(int n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, seconds(20), [&] { return started >= n; });
  }
};

class LeaderElectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start().ok());
    auto client = KubeClient::Create(testing::HttpConfig(server_.port()));
    ASSERT_TRUE(client.ok());
    client_ = std::move(*client);
    store_ = std::make_unique<ApiLeaseStore>(client_.get(), kNs, kName);
  }

  LeaderElectionOptions Options(const std::string& identity, Events* events) {
    LeaderElectionOptions options;
    options.identity = identity;
    options.on_started_leading = [events] {
      std::lock_guard<std::mutex> lock(events->mu);
      ++events->started;
      events->cv.notify_all();
    };
    options.on_stopped_leading = [events] {
      std::lock_guard<std::mutex> lock(events->mu);
      ++events->stopped;
    };
    options.on_new_leader = [events](const std::string& who) {
      std::lock_guard<std::mutex> lock(events->mu);
      events->leaders.push_back(who);
    };
    return options;
  }

  std::unique_ptr<LeaderElector> Elector(const std::string& identity, Events* events,
                                         LeaseStore* store = nullptr) {
    return std::make_unique<LeaderElector>(store != nullptr ? store : store_.get(),
                                           Options(identity, events), &clock_, [] { return 0.0; });
  }

  LeaseRecord Lease() {
    std::optional<std::string> json = server_.Get("leases", kNs, kName);
    EXPECT_TRUE(json.has_value());
    common::Result<LeaseRecord> record = DecodeLease(json.value_or("{}"));
    EXPECT_TRUE(record.ok());
    return record.ok() ? *record : LeaseRecord{};
  }

  void PutLease(const LeaseRecord& record) {
    LeaseRecord copy = record;
    copy.resource_version.clear();
    ASSERT_TRUE(server_.Upsert("leases", EncodeLease(kNs, kName, copy)).ok());
  }

  FakeApiServer server_;
  std::unique_ptr<KubeClient> client_;
  std::unique_ptr<ApiLeaseStore> store_;
  common::FakeClock clock_;
};

TEST_F(LeaderElectionTest, AcquiresAnAbsentLeaseThenRenewsIt) {
  Events events;
  auto a = Elector("replica-a", &events);
  EXPECT_FALSE(a->is_leader());
  EXPECT_EQ(a->Step(), seconds(2));
  EXPECT_TRUE(a->is_leader());
  EXPECT_EQ(events.started, 1);
  LeaseRecord lease = Lease();
  EXPECT_EQ(lease.holder_identity, "replica-a");
  EXPECT_EQ(lease.lease_duration_seconds, 15);
  EXPECT_EQ(lease.acquire_time, common::FormatMicroTime(clock_.WallNowMicros()));
  EXPECT_EQ(lease.renew_time, lease.acquire_time);
  EXPECT_EQ(lease.lease_transitions, 0);
  const std::string acquired = lease.acquire_time;
  const std::string first_version = lease.resource_version;

  clock_.Advance(seconds(2));
  EXPECT_EQ(a->Step(), seconds(2));
  EXPECT_TRUE(a->is_leader());
  lease = Lease();
  EXPECT_EQ(lease.renew_time, common::FormatMicroTime(clock_.WallNowMicros()));
  EXPECT_EQ(lease.acquire_time, acquired);
  EXPECT_EQ(lease.lease_transitions, 0);
  std::vector<std::string> writes = server_.lease_writes();
  ASSERT_EQ(writes.size(), 2u);
  EXPECT_EQ(writes[0].rfind("POST ", 0), 0u);
  EXPECT_EQ(writes[1].rfind("PUT ", 0), 0u);
  // The update carried the version it read (optimistic concurrency).
  bool conditional = false;
  for (const auto& r : server_.requests()) {
    if (r.method == "PUT" &&
        r.body.find("\"resourceVersion\":\"" + first_version + "\"") != std::string::npos) {
      conditional = true;
    }
  }
  EXPECT_TRUE(conditional);
  EXPECT_EQ(a->stats().acquisitions, 1u);
  EXPECT_EQ(a->stats().renewals, 1u);
  EXPECT_EQ(events.leaders, std::vector<std::string>{"replica-a"});
}

TEST_F(LeaderElectionTest, ExpiryIsJudgedFromLocalObservationNotRemoteTimestamps) {
  LeaseRecord other;
  other.holder_identity = "replica-other";
  other.lease_duration_seconds = 15;
  other.acquire_time = "2000-01-01T00:00:00.000000Z";  // a clock far behind ours
  other.renew_time = "2000-01-01T00:00:00.000000Z";
  other.lease_transitions = 4;
  PutLease(other);
  Events events;
  auto b = Elector("replica-b", &events);
  (void)b->Step();
  EXPECT_FALSE(b->is_leader());  // just observed: valid for 15 s from now, whatever it says
  EXPECT_EQ(b->leader(), "replica-other");
  clock_.Advance(seconds(10));
  // The holder renews: the record changed, so the 15 s start again from this observation.
  other.renew_time = "2000-01-01T00:00:10.000000Z";
  PutLease(other);
  (void)b->Step();
  EXPECT_FALSE(b->is_leader());
  clock_.Advance(seconds(14));
  (void)b->Step();
  EXPECT_FALSE(b->is_leader());
  clock_.Advance(seconds(1));  // 15 s since the last observed change; the holder went quiet
  (void)b->Step();
  EXPECT_TRUE(b->is_leader());
  LeaseRecord lease = Lease();
  EXPECT_EQ(lease.holder_identity, "replica-b");
  EXPECT_EQ(lease.lease_transitions, 5);
  EXPECT_EQ(lease.acquire_time, common::FormatMicroTime(clock_.WallNowMicros()));
  EXPECT_EQ(events.leaders, (std::vector<std::string>{"replica-other", "replica-b"}));
}

// A LeaseStore whose reads race with another writer: after each Get, the lease is rewritten.
class RacingStore final : public LeaseStore {
 public:
  RacingStore(LeaseStore* inner, FakeApiServer* server) : inner_(inner), server_(server) {}
  ApiResult<LeaseRecord> Get(std::chrono::milliseconds timeout) override {
    ApiResult<LeaseRecord> got = inner_->Get(timeout);
    LeaseRecord sneaky;
    sneaky.holder_identity = "replica-sneaky";
    sneaky.lease_duration_seconds = 15;
    sneaky.lease_transitions = 9;
    EXPECT_TRUE(server_->Upsert("leases", EncodeLease(kNs, kName, sneaky)).ok());
    return got;
  }
  ApiResult<LeaseRecord> Create(const LeaseRecord& r, std::chrono::milliseconds t) override {
    return inner_->Create(r, t);
  }
  ApiResult<LeaseRecord> Update(const LeaseRecord& r, std::chrono::milliseconds t) override {
    return inner_->Update(r, t);
  }
  std::string Describe() const override { return inner_->Describe(); }

 private:
  LeaseStore* inner_;
  FakeApiServer* server_;
};

TEST_F(LeaderElectionTest, AConcurrentWriterMakesTheUpdateFailWithConflict) {
  LeaseRecord released;  // nobody holds it: free to take
  released.lease_duration_seconds = 1;
  PutLease(released);
  RacingStore racing(store_.get(), &server_);
  Events events;
  auto b = Elector("replica-b", &events, &racing);
  (void)b->Step();
  EXPECT_FALSE(b->is_leader());
  EXPECT_EQ(b->stats().conflicts, 1u);
  EXPECT_EQ(events.started, 0);
  EXPECT_EQ(Lease().holder_identity, "replica-sneaky");  // the other writer's record stands
  bool saw_409 = false;
  for (const auto& r : server_.requests()) saw_409 |= r.method == "PUT" && r.status == 409;
  EXPECT_TRUE(saw_409);
}

// A new leader serves only once its resync (on_started_leading) has finished, and stops serving
// before on_stopped_leading runs.
TEST_F(LeaderElectionTest, ServesOnlyAfterTheResyncCallbackReturned) {
  Events events;
  LeaderElectionOptions options = Options("replica-a", &events);
  LeaderElector* self = nullptr;
  bool leader_during_resync = false;
  bool serving_during_resync = true;
  bool serving_during_step_down = true;
  options.on_started_leading = [&] {
    leader_during_resync = self->is_leader();
    serving_during_resync = self->is_serving();
  };
  options.on_stopped_leading = [&] { serving_during_step_down = self->is_serving(); };
  LeaderElector a(store_.get(), options, &clock_, [] { return 0.0; });
  self = &a;
  EXPECT_FALSE(a.is_serving());
  (void)a.Step();
  EXPECT_TRUE(leader_during_resync);
  EXPECT_FALSE(serving_during_resync);
  EXPECT_TRUE(a.is_serving());

  LeaseRecord other = Lease();  // another replica takes the lease
  other.holder_identity = "replica-b";
  PutLease(other);
  clock_.Advance(seconds(2));
  (void)a.Step();
  EXPECT_FALSE(a.is_leader());
  EXPECT_FALSE(a.is_serving());
  EXPECT_FALSE(serving_during_step_down);
}

TEST_F(LeaderElectionTest, StepsDownWhenRenewalFailsPastTheRenewDeadline) {
  Events events;
  auto a = Elector("replica-a", &events);
  (void)a->Step();
  ASSERT_TRUE(a->is_leader());
  FaultRule broken;
  broken.method = "PUT";
  broken.path_prefix = "/apis/coordination.k8s.io/";
  broken.status = 500;
  broken.times = -1;
  server_.AddFault(broken);
  for (int t = 2; t <= 8; t += 2) {
    clock_.Advance(seconds(2));
    EXPECT_EQ(a->Step(), seconds(2)) << "at +" << t << " s";
    EXPECT_TRUE(a->is_leader()) << "at +" << t << " s";  // still within the renew deadline
  }
  clock_.Advance(seconds(1));
  EXPECT_EQ(a->Step(), seconds(1));  // one second left before the deadline: wake up then
  EXPECT_TRUE(a->is_leader());
  clock_.Advance(seconds(1));  // 10 s since the last renewal
  (void)a->Step();
  EXPECT_FALSE(a->is_leader());
  EXPECT_EQ(events.stopped, 1);
  EXPECT_EQ(a->stats().step_downs, 1u);
}

TEST_F(LeaderElectionTest, ALeaderThatSeesAnotherHolderStepsDownAtOnce) {
  Events events;
  auto a = Elector("replica-a", &events);
  (void)a->Step();
  ASSERT_TRUE(a->is_leader());
  LeaseRecord taken = Lease();
  taken.holder_identity = "replica-b";
  PutLease(taken);
  clock_.Advance(seconds(2));
  (void)a->Step();
  EXPECT_FALSE(a->is_leader());
  EXPECT_EQ(events.stopped, 1);
}

TEST_F(LeaderElectionTest, AFollowerTakesOverAfterTheLeaseExpires) {
  Events a_events, b_events;
  auto a = Elector("replica-a", &a_events);
  auto b = Elector("replica-b", &b_events);
  (void)a->Step();
  ASSERT_TRUE(a->is_leader());
  (void)b->Step();
  EXPECT_FALSE(b->is_leader());
  // replica-a hangs: no more renewals.
  clock_.Advance(seconds(14));
  (void)b->Step();
  EXPECT_FALSE(b->is_leader());
  clock_.Advance(seconds(1));
  (void)b->Step();
  EXPECT_TRUE(b->is_leader());
  EXPECT_EQ(Lease().lease_transitions, 1);
  // replica-a wakes up, sees the new holder and steps down.
  (void)a->Step();
  EXPECT_FALSE(a->is_leader());
  EXPECT_EQ(a_events.stopped, 1);
  EXPECT_EQ(Lease().holder_identity, "replica-b");
}

TEST_F(LeaderElectionTest, StopReleasesTheLeaseSoASuccessorNeedNotWait) {
  Events a_events, b_events;
  auto a = Elector("replica-a", &a_events);
  auto b = Elector("replica-b", &b_events);
  (void)a->Step();
  (void)b->Step();
  ASSERT_TRUE(a->is_leader());
  a->Stop();
  EXPECT_FALSE(a->is_leader());
  EXPECT_EQ(a_events.stopped, 1);
  LeaseRecord released = Lease();
  EXPECT_EQ(released.holder_identity, "");
  EXPECT_EQ(released.lease_duration_seconds, 1);
  (void)b->Step();  // no time has passed
  EXPECT_TRUE(b->is_leader());
  EXPECT_EQ(Lease().lease_transitions, 1);
}

TEST_F(LeaderElectionTest, RunsOnItsOwnThreadAndHandsOverOnStop) {
  Events a_events, b_events;
  LeaderElectionOptions a_options = Options("replica-a", &a_events);
  LeaderElectionOptions b_options = Options("replica-b", &b_events);
  for (auto* o : {&a_options, &b_options}) {
    o->lease_duration = seconds(5);
    o->renew_deadline = seconds(3);
    o->retry_period = milliseconds(50);
  }
  LeaderElector a(store_.get(), a_options);
  LeaderElector b(store_.get(), b_options);
  a.Start();
  ASSERT_TRUE(a_events.WaitStarted(1));
  EXPECT_TRUE(a.is_leader());
  b.Start();
  ASSERT_TRUE(server_.WaitFor([&] { return b.leader() == "replica-a"; }, seconds(20)));
  EXPECT_FALSE(b.is_leader());
  a.Stop();  // releases
  ASSERT_TRUE(b_events.WaitStarted(1));
  EXPECT_TRUE(b.is_leader());
  EXPECT_FALSE(a.is_leader());
  b.Stop();
  EXPECT_EQ(Lease().holder_identity, "");
}

}  // namespace
}  // namespace taskgov::scheduler::kube
