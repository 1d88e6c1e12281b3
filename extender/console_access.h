#pragma once

// ConsoleAccess: who may read the admin API and the console (issue 16). A request must carry
// "Authorization: Bearer <token>", checked with the Kubernetes API as a delegating server does:
//  1. TokenReview: the token must authenticate a user — else 401;
//  2. SubjectAccessReview of `verb` on `group`/`resource` in every namespace: allowed ⇒ the full
//     view; else the same review in each team's namespaces: the teams of the namespaces allowed
//     form a team view (other teams' workloads keep their numbers, not their names); none ⇒ 403.
// A review that cannot be made (the API unreachable, an error reply) answers 503, never a view.
// Decisions are cached per token (by its SHA-256, not the token) for `cache_ttl_ms`, allowed and
// refused alike, at most `max_cached` of them (when full, the expired go, then all); errors are
// not cached.
// Every request's outcome is counted, from the cache or not (stats()).
//
// Thread-safety: Check may be called from any thread; the cache and the counters are guarded by
// one mutex, never held across a review.

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "scheduler/common/clock.h"
#include "scheduler/kube/access_review.h"
#include "scheduler/model/policy.h"

namespace taskgov::extender {

// What a caller may see.
struct ConsoleViewer {
  std::string user;       // "" when access is not checked
  bool all_teams = true;  // false: only `teams` by name
  std::set<std::string> teams;
  [[nodiscard]] bool Sees(std::string_view team) const {
    return all_teams || teams.count(std::string(team)) > 0;
  }
};

struct AccessDecision {
  int status = 200;     // 200, 401, 403 or 503
  std::string message;  // why not, for the caller
  ConsoleViewer viewer;
};

struct ConsoleAccessStats {
  uint64_t full = 0;             // allowed every team
  uint64_t team_scoped = 0;      // allowed some teams
  uint64_t unauthenticated = 0;  // 401
  uint64_t forbidden = 0;        // 403
  uint64_t errors = 0;           // 503: a review failed
  uint64_t cache_hits = 0;
};

class ConsoleAccess {
 public:
  struct Options {
    std::string verb = "get";
    std::string group = "taskgov.io";
    std::string resource = "workloads";
    int64_t cache_ttl_ms = 10'000;
    size_t max_cached = 4096;
  };
  // `reviewer` and `clock` outlive this.
  ConsoleAccess(scheduler::kube::AccessReviewer* reviewer, const common::Clock* clock,
                Options options);

  // The decision for a request whose Authorization header is `authorization`, under `policy`
  // (whose teams' namespaces scope a team view).
  [[nodiscard]] AccessDecision Check(std::string_view authorization,
                                     const scheduler::model::Policy& policy);
  [[nodiscard]] ConsoleAccessStats stats() const;
  [[nodiscard]] const Options& options() const { return options_; }

 private:
  AccessDecision Review(const std::string& token, const scheduler::model::Policy& policy);
  void Count(const AccessDecision& decision);
  void CountLocked(const AccessDecision& decision);  // mu_ held

  scheduler::kube::AccessReviewer* const reviewer_;
  const common::Clock* const clock_;
  const Options options_;

  mutable std::mutex mu_;
  struct Cached {
    AccessDecision decision;
    int64_t expires_ms = 0;
  };
  std::map<std::string, Cached> cache_;  // by token digest; guarded by mu_
  ConsoleAccessStats stats_;             // guarded by mu_
};

}  // namespace taskgov::extender
