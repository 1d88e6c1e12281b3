#include "extender/console_access.h"

#include <openssl/sha.h>

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

}  // namespace

ConsoleAccess::ConsoleAccess(scheduler::kube::AccessReviewer* reviewer, const common::Clock* clock,
                             Options options)
    : reviewer_(reviewer), clock_(clock), options_(std::move(options)) {}

AccessDecision ConsoleAccess::Check(std::string_view authorization,
                                    const scheduler::model::Policy& policy) {
  const std::string token = BearerToken(authorization);
  if (token.empty()) {
    AccessDecision d = Refuse(401,
                              "this API needs a Kubernetes bearer token: send \"Authorization: "
                              "Bearer <token>\" (e.g. kubectl create token <serviceaccount>)");
    Count(d);
    return d;
  }
  const std::string key = Digest(token);
  const int64_t now = clock_->NowMs();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end() && it->second.expires_ms > now) {
      ++stats_.cache_hits;
      CountLocked(it->second.decision);
      return it->second.decision;
    }
  }
  AccessDecision d = Review(token, policy);
  Count(d);
  if (d.status == 503) return d;
  std::lock_guard<std::mutex> lock(mu_);
  if (cache_.size() >= options_.max_cached) {
    std::erase_if(cache_, [now](const auto& entry) { return entry.second.expires_ms <= now; });
    if (cache_.size() >= options_.max_cached) cache_.clear();
  }
  cache_[key] = Cached{d, now + options_.cache_ttl_ms};
  return d;
}

AccessDecision ConsoleAccess::Review(const std::string& token,
                                     const scheduler::model::Policy& policy) {
  auto failed = [](const scheduler::kube::ApiError& e) {
    common::log::Warn(kComponent, "access review failed", {{"error", e.message}});
    return Refuse(503, "cannot check access now (" + e.message + "); retry");
  };
  scheduler::kube::ApiResult<std::optional<scheduler::kube::ReviewedUser>> user =
      reviewer_->ReviewToken(token);
  if (!user.ok()) return failed(user.error());
  if (!user.value()) {
    return Refuse(401,
                  "the bearer token was not accepted by the Kubernetes API (expired or "
                  "invalid): get a new one");
  }
  const scheduler::kube::ReviewedUser& who = *user.value();
  scheduler::kube::ResourceAttributes attributes{options_.verb, options_.group, options_.resource,
                                                 ""};
  scheduler::kube::ApiResult<bool> everywhere = reviewer_->Allowed(who, attributes);
  if (!everywhere.ok()) return failed(everywhere.error());
  AccessDecision d;
  d.viewer.user = who.username;
  if (everywhere.value()) return d;
  d.viewer.all_teams = false;
  for (const scheduler::model::Team& team : policy.teams) {
    for (const std::string& ns : team.namespaces) {
      attributes.namespace_ = ns;
      scheduler::kube::ApiResult<bool> here = reviewer_->Allowed(who, attributes);
      if (!here.ok()) return failed(here.error());
      if (here.value()) {
        d.viewer.teams.insert(team.name);
        break;
      }
    }
  }
  if (d.viewer.teams.empty()) {
    const std::string what = options_.verb + " " + options_.resource +
                             (options_.group.empty() ? "" : "." + options_.group);
    return Refuse(403, "user \"" + who.username + "\" may not " + what +
                           " in any team's namespace (RBAC: a Role or ClusterRole granting \"" +
                           what + "\")");
  }
  return d;
}

void ConsoleAccess::Count(const AccessDecision& d) {
  std::lock_guard<std::mutex> lock(mu_);
  CountLocked(d);
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
    default:
      ++stats_.errors;
  }
}

ConsoleAccessStats ConsoleAccess::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace taskgov::extender
