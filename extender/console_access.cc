#include "extender/console_access.h"

#include <openssl/sha.h>

#include <algorithm>
#include <future>
#include <optional>
#include <utility>

#include "scheduler/common/log.h"

namespace taskgov::extender {
namespace {

constexpr std::string_view kComponent = "console";

std::string Digest(const std::string& token) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest);
  return std::string(reinterpret_cast<const char*>(digest), sizeof(digest));
}

// The token of "Bearer <token>" (the scheme case-insensitive, as RFC 7235 says); "" if none.
std::string BearerToken(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size()) return "";
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) return "";
  }
  std::string_view token = authorization.substr(kScheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
  return std::string(token);
}

AccessDecision Refuse(int status, std::string message) {
  AccessDecision d;
  d.status = status;
  d.message = std::move(message);
  d.viewer.all_teams = false;
  return d;
}

// Drops the expired entries of a full cache, then all of them.
template <typename Map>
void MakeRoom(Map* cache, size_t max, int64_t now) {
  if (cache->size() < max) return;
  std::erase_if(*cache, [now](const auto& entry) { return entry.second.expires_ms <= now; });
  if (cache->size() >= max) cache->clear();
}

}  // namespace

struct ConsoleAccess::Review {
  std::string key;
  std::string token;
  TeamNamespaces teams;
  std::vector<Done> waiters;  // guarded by ConsoleAccess::mu_
  // The namespace reviews' tally, guarded by `mu`.
  std::mutex mu;
  size_t pending = 0;
  std::set<std::string> allowed;
  std::optional<std::string> error;
};

ConsoleAccess::ConsoleAccess(scheduler::kube::AccessReviewer* reviewer, const common::Clock* clock,
                             Options options)
    : reviewer_(reviewer), clock_(clock), options_(std::move(options)) {
  for (int i = 0; i < std::max(1, options_.workers); ++i) {
    workers_.emplace_back([this] { Work(); });
  }
}

ConsoleAccess::~ConsoleAccess() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ConsoleAccess::Work() {
  while (true) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();  // a task left when stopping answers 503 at once (it reads stopping_)
  }
}

void ConsoleAccess::Enqueue(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
  }
  work_cv_.notify_one();
}

const AccessDecision* ConsoleAccess::CachedLocked(const std::string& key, int64_t now) {
  for (auto* cache : {&cache_, &negative_}) {
    auto it = cache->find(key);
    if (it != cache->end() && it->second.expires_ms > now) return &it->second.decision;
  }
  return nullptr;
}

bool ConsoleAccess::TakeBucketLocked(const std::string& client, int64_t now) {
  if (buckets_.size() >= options_.max_clients && buckets_.find(client) == buckets_.end()) {
    // Full: forget the clients whose buckets have refilled (they lose nothing).
    std::erase_if(buckets_, [&](const auto& entry) {
      const Bucket& b = entry.second;
      return b.tokens +
                 static_cast<double>(now - b.at_ms) * options_.client_reviews_per_s / 1000.0 >=
             options_.client_burst;
    });
    if (buckets_.size() >= options_.max_clients) buckets_.clear();
  }
  auto [it, inserted] = buckets_.try_emplace(client, Bucket{options_.client_burst, now});
  Bucket& b = it->second;
  b.tokens = std::min(options_.client_burst, b.tokens + static_cast<double>(now - b.at_ms) *
                                                            options_.client_reviews_per_s / 1000.0);
  b.at_ms = now;
  if (b.tokens < 1) return false;
  b.tokens -= 1;
  return true;
}

void ConsoleAccess::CheckAsync(std::string_view authorization, std::string_view client,
                               const scheduler::model::Policy& policy, Done done) {
  const std::string token = BearerToken(authorization);
  std::optional<AccessDecision> now_decision;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t now = clock_->NowMs();
    const std::string key = token.empty() ? "" : Digest(token);
    if (token.empty()) {
      now_decision =
          Refuse(401,
                 "this API needs a Kubernetes bearer token: send \"Authorization: "
                 "Bearer <token>\" (e.g. kubectl create token <serviceaccount>" +
                     (options_.audience.empty() ? std::string(")")
                                                : " --audience " + options_.audience + ")"));
    } else if (const AccessDecision* cached = CachedLocked(key, now)) {
      ++stats_.cache_hits;
      now_decision = *cached;
    } else if (auto it = in_flight_.find(key); it != in_flight_.end()) {
      it->second->waiters.push_back(std::move(done));  // one review serves them all
      return;
    } else if (!TakeBucketLocked(std::string(client), now)) {
      now_decision = Refuse(
          429, "too many token reviews from " + std::string(client) + " (at most " +
                   std::to_string(static_cast<int>(options_.client_burst)) + " at once, then " +
                   std::to_string(options_.client_reviews_per_s) + " a second); retry");
    } else if (stopping_ || queued_checks_ >= options_.max_queued) {
      now_decision = Refuse(503, "too many access reviews waiting; retry");
    } else {
      auto review = std::make_shared<Review>();
      review->key = key;
      review->token = token;
      for (const scheduler::model::Team& team : policy.teams) {
        review->teams.emplace_back(team.name, team.namespaces);
      }
      review->waiters.push_back(std::move(done));
      in_flight_[key] = review;
      ++queued_checks_;
      queue_.push_back([this, review] {
        {
          std::lock_guard<std::mutex> l(mu_);
          --queued_checks_;
        }
        ReviewToken(review);
      });
      work_cv_.notify_one();
      return;
    }
    CountLocked(*now_decision);
  }
  done(*now_decision);
}

AccessDecision ConsoleAccess::Check(std::string_view authorization,
                                    const scheduler::model::Policy& policy,
                                    std::string_view client) {
  std::promise<AccessDecision> decided;
  std::future<AccessDecision> decision = decided.get_future();
  CheckAsync(authorization, client, policy,
             [&decided](const AccessDecision& d) { decided.set_value(d); });
  return decision.get();
}

void ConsoleAccess::ReviewToken(const std::shared_ptr<Review>& review) {
  bool stopping;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping = stopping_;
  }
  if (stopping) return Finish(review, Refuse(503, "shutting down; retry"));
  auto failed = [](const scheduler::kube::ApiError& e) {
    common::log::Warn(kComponent, "access review failed", {{"error", e.message}});
    return Refuse(503, "cannot check access now (" + e.message + "); retry");
  };
  const std::vector<std::string> audiences = options_.audience.empty()
                                                 ? std::vector<std::string>{}
                                                 : std::vector<std::string>{options_.audience};
  const std::string make_one =
      options_.audience.empty()
          ? "get a new one"
          : "the console accepts tokens issued for audience \"" + options_.audience +
                "\" only (not the API server's own, which work elsewhere too): make one with "
                "kubectl create token <serviceaccount> --audience " +
                options_.audience;
  scheduler::kube::ApiResult<std::optional<scheduler::kube::ReviewedUser>> user =
      reviewer_->ReviewToken(review->token, audiences);
  if (!user.ok()) return Finish(review, failed(user.error()));
  if (!user.value()) {
    return Finish(review, Refuse(401,
                                 "the bearer token was not accepted by the Kubernetes API "
                                 "(expired, invalid, or for another audience): " +
                                     make_one));
  }
  const scheduler::kube::ReviewedUser& who = *user.value();
  if (!options_.audience.empty() && std::find(who.audiences.begin(), who.audiences.end(),
                                              options_.audience) == who.audiences.end()) {
    // Authenticated, but not for this audience (an authenticator that knows no audiences):
    // it would be valid for the API server itself.
    return Finish(review, Refuse(401, "the bearer token of \"" + who.username +
                                          "\" is valid for the API server, not for audience \"" +
                                          options_.audience + "\": " + make_one));
  }
  scheduler::kube::ResourceAttributes attributes{options_.verb, options_.group, options_.resource,
                                                 ""};
  scheduler::kube::ApiResult<bool> everywhere = reviewer_->Allowed(who, attributes);
  if (!everywhere.ok()) return Finish(review, failed(everywhere.error()));
  if (everywhere.value()) {
    AccessDecision d;
    d.viewer.user = who.username;
    return Finish(review, std::move(d));
  }
  ReviewNamespaces(review, who);
}

void ConsoleAccess::ReviewNamespaces(const std::shared_ptr<Review>& review,
                                     const scheduler::kube::ReviewedUser& who) {
  std::vector<std::pair<std::string, std::string>> checks;  // (team, namespace)
  for (const auto& [team, namespaces] : review->teams) {
    for (const std::string& ns : namespaces) checks.emplace_back(team, ns);
  }
  const std::string what = options_.verb + " " + options_.resource +
                           (options_.group.empty() ? "" : "." + options_.group);
  const std::string forbidden =
      "user \"" + who.username + "\" may not " + what +
      " in any team's namespace (RBAC: a Role or ClusterRole granting \"" + what + "\")";
  if (checks.empty()) return Finish(review, Refuse(403, forbidden));
  // The namespaces in `workers` slices, each reviewed on a worker of its own: parallel, and a
  // bounded number of tasks per check.
  const size_t slices = std::min(checks.size(), static_cast<size_t>(std::max(1, options_.workers)));
  {
    std::lock_guard<std::mutex> lock(review->mu);
    review->pending = slices;
  }
  auto shared_checks = std::make_shared<std::vector<std::pair<std::string, std::string>>>(checks);
  for (size_t slice = 0; slice < slices; ++slice) {
    Enqueue([this, review, who, shared_checks, slice, slices, forbidden] {
      for (size_t i = slice; i < shared_checks->size(); i += slices) {
        const auto& [team, ns] = (*shared_checks)[i];
        {
          std::lock_guard<std::mutex> lock(review->mu);
          if (review->error || review->allowed.count(team)) continue;
        }
        bool stopping;
        {
          std::lock_guard<std::mutex> lock(mu_);
          stopping = stopping_;
        }
        scheduler::kube::ApiResult<bool> here =
            stopping
                ? scheduler::kube::ApiResult<bool>(false)
                : reviewer_->Allowed(who, {options_.verb, options_.group, options_.resource, ns});
        std::lock_guard<std::mutex> lock(review->mu);
        if (stopping && !review->error) review->error = "shutting down";
        if (!here.ok()) {
          if (!review->error) review->error = here.error().message;
        } else if (here.value()) {
          review->allowed.insert(team);
        }
      }
      AccessDecision d;
      {
        std::lock_guard<std::mutex> lock(review->mu);
        if (--review->pending > 0) return;  // another slice finishes the review
        if (review->error) {
          common::log::Warn(kComponent, "access review failed", {{"error", *review->error}});
          d = Refuse(503, "cannot check access now (" + *review->error + "); retry");
        } else if (review->allowed.empty()) {
          d = Refuse(403, forbidden);
        } else {
          d.viewer.user = who.username;
          d.viewer.all_teams = false;
          d.viewer.teams = review->allowed;
        }
      }
      Finish(review, std::move(d));
    });
  }
}

void ConsoleAccess::Finish(const std::shared_ptr<Review>& review, AccessDecision decision) {
  std::vector<Done> waiters;
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_.erase(review->key);
    const int64_t now = clock_->NowMs();
    if (decision.status == 200 || decision.status == 403) {
      MakeRoom(&cache_, options_.max_cached, now);
      cache_[review->key] = Cached{decision, now + options_.cache_ttl_ms};
    } else if (decision.status == 401) {
      MakeRoom(&negative_, options_.max_negative, now);
      negative_[review->key] = Cached{decision, now + options_.negative_ttl_ms};
    }
    for (size_t i = 0; i < review->waiters.size(); ++i) CountLocked(decision);
    waiters = std::move(review->waiters);
  }
  for (const Done& done : waiters) done(decision);
}

void ConsoleAccess::CountLocked(const AccessDecision& d) {
  switch (d.status) {
    case 200:
      ++(d.viewer.all_teams ? stats_.full : stats_.team_scoped);
      break;
    case 401:
      ++stats_.unauthenticated;
      break;
    case 403:
      ++stats_.forbidden;
      break;
    case 429:
      ++stats_.throttled;
      break;
    default:
      ++stats_.errors;
  }
}

ConsoleAccessStats ConsoleAccess::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace taskgov::extender
