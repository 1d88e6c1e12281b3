#pragma once

// FakeAccessReviewer: an AccessReviewer for tests of the console's access checks. Token
// "t-<user>" authenticates <user> for the audience `audience` (status.audiences names it when
// asked for it); "api-<user>" authenticates <user> for the API server's audience only (as a
// kubeconfig's token does); "s-<user>" authenticates <user> whatever the audience, naming none
// (a static token: its authenticator knows no audiences); `allowed` holds "<user>@<namespace>"
// ("<user>@" for every namespace and cluster-wide reviews); `down` makes every review fail as an
// unreachable API would. A token in `held` waits in its TokenReview until Release() (a slow API
// server); every review waits `review_delay` first. Counts the reviews, and the most access reviews
// it ever had in flight at once. Thread-safe: the console reviews on its own worker threads.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "scheduler/kube/access_review.h"

namespace taskgov::extender::testing {

class FakeAccessReviewer final : public scheduler::kube::AccessReviewer {
 public:
  scheduler::kube::ApiResult<std::optional<scheduler::kube::ReviewedUser>> ReviewToken(
      const std::string& token, const std::vector<std::string>& audiences) override {
    ++token_reviews;
    {
      std::unique_lock<std::mutex> lock(mu_);
      last_audiences_ = audiences;
      // Bounded: a test that forgets to release fails, it does not hang.
      cv_.wait_for(lock, std::chrono::seconds(20), [&] { return held.count(token) == 0; });
    }
    if (review_delay.count() > 0) std::this_thread::sleep_for(review_delay);
    if (down) return Unreachable();
    scheduler::kube::ReviewedUser user;
    if (token.starts_with("t-")) {
      user.username = token.substr(2);
      if (std::find(audiences.begin(), audiences.end(), audience) == audiences.end()) {
        return std::optional<scheduler::kube::ReviewedUser>();  // issued for another audience
      }
      user.audiences = {audience};
    } else if (token.starts_with("s-")) {  // an authenticator that knows no audiences
      user.username = token.substr(2);
    } else if (token.starts_with("api-")) {
      user.username = token.substr(4);
      if (!audiences.empty()) return std::optional<scheduler::kube::ReviewedUser>();
    } else {
      return std::optional<scheduler::kube::ReviewedUser>();
    }
    return std::optional<scheduler::kube::ReviewedUser>(std::move(user));
  }
  scheduler::kube::ApiResult<bool> Allowed(
      const scheduler::kube::ReviewedUser& user,
      const scheduler::kube::ResourceAttributes& attributes) override {
    ++access_reviews;
    const int now = ++in_flight_;
    int seen = max_in_flight.load();
    while (now > seen && !max_in_flight.compare_exchange_weak(seen, now)) {
    }
    if (review_delay.count() > 0) std::this_thread::sleep_for(review_delay);
    --in_flight_;
    std::lock_guard<std::mutex> lock(mu_);
    last = attributes;
    if (down) return Unreachable();
    return allowed.count(user.username + "@" + attributes.namespace_) > 0;
  }

  // Lets the held token's reviews go on.
  void Release(const std::string& token) {
    std::lock_guard<std::mutex> lock(mu_);
    held.erase(token);
    cv_.notify_all();
  }
  std::vector<std::string> last_audiences() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_audiences_;
  }

  // Set before the reviews run (not guarded).
  std::set<std::string> allowed;
  std::set<std::string> held;
  std::string audience = "taskgov";
  std::chrono::milliseconds review_delay{0};
  std::atomic<bool> down{false};
  std::atomic<int> token_reviews{0};
  std::atomic<int> access_reviews{0};
  std::atomic<int> max_in_flight{0};
  scheduler::kube::ResourceAttributes last;  // of the last access review

 private:
  static scheduler::kube::ApiError Unreachable() {
    scheduler::kube::ApiError e;
    e.reason = "Timeout";
    e.message = "connect timed out";
    return e;
  }
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> last_audiences_;
  std::atomic<int> in_flight_{0};
};

}  // namespace taskgov::extender::testing
