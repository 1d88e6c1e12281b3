#include "scheduler/kube/leader_election.h"

#include <algorithm>

#include "scheduler/common/log.h"
#include "scheduler/common/time_format.h"

namespace taskgov::scheduler::kube {
namespace {

constexpr std::string_view kComponent = "leader-election";

int32_t Seconds(std::chrono::milliseconds d) {
  return static_cast<int32_t>(std::max<int64_t>(1, (d.count() + 999) / 1000));
}

}  // namespace

LeaderElector::LeaderElector(LeaseStore* store, LeaderElectionOptions options,
                             const common::Clock* clock, RandomSource random)
    : store_(store),
      options_(std::move(options)),
      clock_(clock != nullptr ? clock : common::SystemClock::Get()),
      random_(random ? std::move(random) : MakeRandomSource()) {}

LeaderElector::~LeaderElector() { Stop(); }

std::string LeaderElector::leader() const {
  std::lock_guard<std::mutex> lock(mu_);
  return observed_holder_;
}

LeaderElectionStats LeaderElector::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::chrono::milliseconds LeaderElector::Jittered() const {
  const double r = std::clamp(random_(), 0.0, 1.0);
  return options_.retry_period +
         std::chrono::milliseconds(static_cast<int64_t>(
             static_cast<double>(options_.retry_period.count()) * options_.jitter_factor * r));
}

void LeaderElector::Observe(const LeaseRecord& record, common::Clock::SteadyTime now) {
  if (have_observed_ && record.SameSpec(observed_)) {
    observed_.resource_version = record.resource_version;
    return;
  }
  const bool holder_changed =
      !have_observed_ || record.holder_identity != observed_.holder_identity;
  observed_ = record;
  observed_time_ = now;
  have_observed_ = true;
  if (holder_changed) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      observed_holder_ = record.holder_identity;
    }
    if (!record.holder_identity.empty()) {
      common::log::Info(kComponent, "lease holder observed",
                        {{"lease", store_->Describe()}, {"holder", record.holder_identity}});
    }
    if (options_.on_new_leader) options_.on_new_leader(record.holder_identity);
  }
}

bool LeaderElector::TryAcquireOrRenew(std::chrono::milliseconds timeout) {
  const common::Clock::SteadyTime now = clock_->SteadyNow();
  const std::string wall = common::FormatMicroTime(clock_->WallNowMicros());
  auto failed = [&](const ApiError& error, const char* what) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.failed_attempts;
    if (error.status == 409) ++stats_.conflicts;
    common::log::Debug(kComponent, what,
                       {{"lease", store_->Describe()}, {"error", error.ToString()}});
    return false;
  };
  ApiResult<LeaseRecord> current = store_->Get(timeout);
  if (!current.ok()) {
    if (current.error().status != 404) return failed(current.error(), "cannot read the lease");
    LeaseRecord fresh;
    fresh.holder_identity = options_.identity;
    fresh.lease_duration_seconds = Seconds(options_.lease_duration);
    fresh.acquire_time = wall;
    fresh.renew_time = wall;
    fresh.lease_transitions = 0;
    ApiResult<LeaseRecord> created = store_->Create(fresh, timeout);
    if (!created.ok()) return failed(created.error(), "cannot create the lease");
    Observe(*created, now);
    return true;
  }
  Observe(*current, now);
  const LeaseRecord& old = *current;
  const bool mine = old.holder_identity == options_.identity;
  if (!old.holder_identity.empty() && !mine) {
    const auto duration = old.lease_duration_seconds > 0
                              ? std::chrono::milliseconds(old.lease_duration_seconds * 1000LL)
                              : options_.lease_duration;
    if (observed_time_ + duration > now) return false;  // held by another, still valid
  }
  LeaseRecord next;
  next.holder_identity = options_.identity;
  next.lease_duration_seconds = Seconds(options_.lease_duration);
  next.renew_time = wall;
  if (mine && leading_.load(std::memory_order_acquire)) {
    next.acquire_time = old.acquire_time.empty() ? wall : old.acquire_time;
    next.lease_transitions = old.lease_transitions;
  } else {
    next.acquire_time = wall;
    next.lease_transitions = mine ? old.lease_transitions : old.lease_transitions + 1;
  }
  next.resource_version = old.resource_version;
  ApiResult<LeaseRecord> updated = store_->Update(next, timeout);
  if (!updated.ok()) return failed(updated.error(), "cannot update the lease");
  Observe(*updated, now);
  return true;
}

void LeaderElector::StepDown(const std::string& why) {
  serving_.store(false, std::memory_order_release);
  leading_.store(false, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.step_downs;
  }
  common::log::Warn(kComponent, "stopped leading", {{"lease", store_->Describe()}, {"why", why}});
  if (options_.on_stopped_leading) options_.on_stopped_leading();
}

std::chrono::milliseconds LeaderElector::Step() {
  const common::Clock::SteadyTime now = clock_->SteadyNow();
  if (!leading_.load(std::memory_order_acquire)) {
    if (!TryAcquireOrRenew(options_.call_timeout)) return Jittered();
    last_renew_ = now;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.acquisitions;
    }
    leading_.store(true, std::memory_order_release);
    common::log::Info(kComponent, "started leading",
                      {{"lease", store_->Describe()}, {"identity", options_.identity}});
    if (options_.on_started_leading) options_.on_started_leading();
    // Only now may the leader serve: the callback (a resync) has finished. A step-down the
    // callback could not see happens on this thread, after this store.
    serving_.store(true, std::memory_order_release);
    return options_.retry_period;
  }
  const auto deadline = last_renew_ + options_.renew_deadline;
  if (now >= deadline) {
    StepDown("renew deadline passed");
    return Jittered();
  }
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
  if (TryAcquireOrRenew(std::min(options_.call_timeout, left))) {
    last_renew_ = now;
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.renewals;
    return options_.retry_period;
  }
  if (have_observed_ && observed_.holder_identity != options_.identity) {
    StepDown("the lease is held by " + observed_.holder_identity);
    return Jittered();
  }
  const common::Clock::SteadyTime after = clock_->SteadyNow();
  if (after >= deadline) {
    StepDown("renew deadline passed");
    return Jittered();
  }
  return std::min(options_.retry_period,
                  std::chrono::duration_cast<std::chrono::milliseconds>(deadline - after));
}

void LeaderElector::Start() {
  thread_ = std::thread([this] {
    while (true) {
      const std::chrono::milliseconds wait = Step();
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_for(lock, wait, [this] { return stopping_; })) break;
    }
  });
}

void LeaderElector::Release() {
  LeaseRecord released = observed_;
  released.holder_identity.clear();
  released.lease_duration_seconds = 1;
  const std::string wall = common::FormatMicroTime(clock_->WallNowMicros());
  released.renew_time = wall;
  released.acquire_time = wall;
  ApiResult<LeaseRecord> updated = store_->Update(released, options_.call_timeout);
  if (!updated.ok()) {
    common::log::Warn(kComponent, "cannot release the lease",
                      {{"lease", store_->Describe()}, {"error", updated.error().ToString()}});
  } else {
    common::log::Info(kComponent, "released the lease", {{"lease", store_->Describe()}});
  }
}

void LeaderElector::Stop() {
  if (stopped_) return;
  stopped_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (leading_.load(std::memory_order_acquire)) {
    serving_.store(false, std::memory_order_release);
    leading_.store(false, std::memory_order_release);
    if (options_.release_on_stop) Release();
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.step_downs;
    }
    if (options_.on_stopped_leading) options_.on_stopped_leading();
  }
}

}  // namespace taskgov::scheduler::kube
