#pragma once

// ConsoleAccess: who may read the admin API and the console (issues 16 and 36). A request must
// carry "Authorization: Bearer <token>", checked with the Kubernetes API as a delegating server
// does:
//  1. TokenReview for the audience `audience` (spec.audiences): the token must authenticate a
//     user and be issued for that audience (status.audiences names it) — else 401. A token the
//     API server issued for itself is refused: readers make console tokens with
//     `kubectl create token SA --audience taskgov`, so no token handed to the console works
//     against the API server. (An empty audience accepts the API server's own tokens.)
//  2. SubjectAccessReview of `verb` on `group`/`resource` in every namespace: allowed ⇒ the full
//     view; else the same review in each team's namespace, run in parallel on the workers (not
//     one after another): the teams of the namespaces allowed form a team view (other teams'
//     workloads keep their numbers, not their names); none ⇒ 403.
// A review that cannot be made (the API unreachable, an error reply) answers 503, never a view.
//
// Reviews never run on the caller's (an I/O) thread: CheckAsync answers a cached decision at
// once, and otherwise queues the review on `workers` threads of its own and calls `done` from
// one of them. So a slow review delays only the requests that wait for it.
//
// Caches, by the token's SHA-256 (never the token): allowed and forbidden decisions for
// `cache_ttl_ms`, at most `max_cached`; unauthenticated ones (401) for `negative_ttl_ms`, at most
// `max_negative`, in a map of their own — random tokens can fill that one, never evict a reader's
// decision. A full map drops its expired entries, then all of them. Errors are not cached.
// Concurrent checks of one token share one review.
//
// Bounds: a client (the caller's address; behind the API server's service proxy, the API
// server's) may start at most `client_burst` reviews at once and `client_reviews_per_s` after
// that (a token bucket; decisions from the cache cost nothing): beyond, 429. At most
// `max_queued` checks wait for a worker: beyond, 503.
//
// Every request's outcome is counted (stats()).
//
// Thread-safety: every method may be called from any thread; the caches, buckets, queue and
// counters are guarded by one mutex, never held across a review or a `done` call.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

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
  int status = 200;     // 200, 401, 403, 429 or 503
  std::string message;  // why not, for the caller
  ConsoleViewer viewer;
};

struct ConsoleAccessStats {
  uint64_t full = 0;             // allowed every team
  uint64_t team_scoped = 0;      // allowed some teams
  uint64_t unauthenticated = 0;  // 401
  uint64_t forbidden = 0;        // 403
  uint64_t errors = 0;           // 503: a review failed, or too many waited
  uint64_t throttled = 0;        // 429: the client started too many reviews
  uint64_t cache_hits = 0;
};

class ConsoleAccess {
 public:
  struct Options {
    std::string verb = "get";
    std::string group = "taskgov.io";
    std::string resource = "workloads";
    std::string audience = "taskgov";  // "": the API server's own
    int64_t cache_ttl_ms = 10'000;
    size_t max_cached = 4096;
    int64_t negative_ttl_ms = 2'000;
    size_t max_negative = 4096;
    int workers = 4;
    size_t max_queued = 256;
    double client_reviews_per_s = 5;
    double client_burst = 20;
    size_t max_clients = 4096;  // buckets kept; a full set drops the full ones
  };
  // `reviewer` and `clock` outlive this.
  ConsoleAccess(scheduler::kube::AccessReviewer* reviewer, const common::Clock* clock,
                Options options);
  ~ConsoleAccess();  // finishes the reviews under way, answers the queued ones 503
  ConsoleAccess(const ConsoleAccess&) = delete;
  ConsoleAccess& operator=(const ConsoleAccess&) = delete;

  using Done = std::function<void(const AccessDecision&)>;
  // The decision for a request whose Authorization header is `authorization`, from `client`,
  // under `policy` (whose teams' namespaces scope a team view): `done` is called once, on the
  // caller's thread for a decision known at once, else on a worker thread.
  void CheckAsync(std::string_view authorization, std::string_view client,
                  const scheduler::model::Policy& policy, Done done);
  // CheckAsync, waited for (tests, tools).
  [[nodiscard]] AccessDecision Check(std::string_view authorization,
                                     const scheduler::model::Policy& policy,
                                     std::string_view client = "");
  [[nodiscard]] ConsoleAccessStats stats() const;
  [[nodiscard]] const Options& options() const { return options_; }

 private:
  struct Cached {
    AccessDecision decision;
    int64_t expires_ms = 0;
  };
  struct Bucket {
    double tokens = 0;
    int64_t at_ms = 0;
  };
  // The namespaces of each team, copied for a review that outlives the caller's policy.
  using TeamNamespaces = std::vector<std::pair<std::string, std::vector<std::string>>>;
  struct Review;  // one token's review in flight

  // The cached decision for `key`, if fresh (mu_ held).
  const AccessDecision* CachedLocked(const std::string& key, int64_t now);
  bool TakeBucketLocked(const std::string& client, int64_t now);
  void Enqueue(std::function<void()> task);
  void Work();
  // The steps of a review, on workers: the token, then access everywhere, then per namespace.
  void ReviewToken(const std::shared_ptr<Review>& review);
  void ReviewNamespaces(const std::shared_ptr<Review>& review,
                        const scheduler::kube::ReviewedUser& who);
  // Ends `review`: caches and counts the decision, calls every waiter.
  void Finish(const std::shared_ptr<Review>& review, AccessDecision decision);
  void CountLocked(const AccessDecision& decision);

  scheduler::kube::AccessReviewer* const reviewer_;
  const common::Clock* const clock_;
  const Options options_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;
  std::map<std::string, Cached> cache_;                       // by token digest: 200 and 403
  std::map<std::string, Cached> negative_;                    // by token digest: 401
  std::map<std::string, std::shared_ptr<Review>> in_flight_;  // by token digest
  std::unordered_map<std::string, Bucket> buckets_;           // by client
  std::deque<std::function<void()>> queue_;
  size_t queued_checks_ = 0;  // of queue_: checks waiting for their first step
  bool stopping_ = false;
  ConsoleAccessStats stats_;
  std::vector<std::thread> workers_;  // last: they use everything above
};

}  // namespace taskgov::extender
