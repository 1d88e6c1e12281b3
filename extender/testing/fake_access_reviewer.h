#pragma once

// FakeAccessReviewer: an AccessReviewer for tests of the console's access checks. Token
// "t-<user>" authenticates <user>; `allowed` holds "<user>@<namespace>" ("<user>@" for every
// namespace and cluster-wide reviews); `down` makes every review fail as an unreachable API
// would. Counts the reviews. Not thread-safe.

#include <set>
#include <string>

#include "scheduler/kube/access_review.h"

namespace taskgov::extender::testing {

class FakeAccessReviewer final : public scheduler::kube::AccessReviewer {
 public:
  scheduler::kube::ApiResult<std::optional<scheduler::kube::ReviewedUser>> ReviewToken(
      const std::string& token) override {
    ++token_reviews;
    if (down) return Unreachable();
    if (!token.starts_with("t-")) return std::optional<scheduler::kube::ReviewedUser>();
    return std::optional<scheduler::kube::ReviewedUser>(
        scheduler::kube::ReviewedUser{token.substr(2), "", {}, {}});
  }
  scheduler::kube::ApiResult<bool> Allowed(
      const scheduler::kube::ReviewedUser& user,
      const scheduler::kube::ResourceAttributes& attributes) override {
    ++access_reviews;
    last = attributes;
    if (down) return Unreachable();
    return allowed.count(user.username + "@" + attributes.namespace_) > 0;
  }

  std::set<std::string> allowed;
  bool down = false;
  int token_reviews = 0;
  int access_reviews = 0;
  scheduler::kube::ResourceAttributes last;  // of the last access review

 private:
  static scheduler::kube::ApiError Unreachable() {
    scheduler::kube::ApiError e;
    e.reason = "Timeout";
    e.message = "connect timed out";
    return e;
  }
};

}  // namespace taskgov::extender::testing
