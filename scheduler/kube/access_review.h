#pragma once

// AccessReviewer: asks the Kubernetes API who a bearer token belongs to (authentication.k8s.io/v1
// TokenReview) and whether that user may do something (authorization.k8s.io/v1
// SubjectAccessReview) — the checks a server that serves Kubernetes users does, as the
// kube-apiserver's delegated authentication and authorization do for aggregated API servers.
//
// ApiAccessReviewer sends them through a KubeClient (its identity needs `create` on tokenreviews
// and subjectaccessreviews: the system:auth-delegator ClusterRole).
//
// Thread-safety: ApiAccessReviewer is as thread-safe as the KubeClient (it is).

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/kube/api_error.h"

namespace taskgov::scheduler::kube {

class KubeClient;

// TokenReview's status.user, when status.authenticated, and status.audiences.
struct ReviewedUser {
  std::string username;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;
  // The audiences the token is valid for among those asked (empty: the API server's own; an
  // authenticator that is not audience-aware answers so too).
  std::vector<std::string> audiences;
};

// SubjectAccessReview's spec.resourceAttributes.
struct ResourceAttributes {
  std::string verb;        // e.g. "get"
  std::string group;       // API group ("" for the core group)
  std::string resource;    // e.g. "workloads"
  std::string namespace_;  // "" for all namespaces
};

class AccessReviewer {
 public:
  virtual ~AccessReviewer() = default;
  // The user the token authenticates for one of `audiences` (TokenReview spec.audiences; empty:
  // the API server's audience); nullopt when the API says it does not; an ApiError when the
  // review could not be made.
  [[nodiscard]] virtual ApiResult<std::optional<ReviewedUser>> ReviewToken(
      const std::string& token, const std::vector<std::string>& audiences) = 0;
  // Whether `user` may act on `attributes` (status.allowed); an ApiError when the review could
  // not be made.
  [[nodiscard]] virtual ApiResult<bool> Allowed(const ReviewedUser& user,
                                                const ResourceAttributes& attributes) = 0;
};

class ApiAccessReviewer final : public AccessReviewer {
 public:
  explicit ApiAccessReviewer(KubeClient* client) : client_(client) {}
  ApiResult<std::optional<ReviewedUser>> ReviewToken(
      const std::string& token, const std::vector<std::string>& audiences) override;
  ApiResult<bool> Allowed(const ReviewedUser& user, const ResourceAttributes& attributes) override;

 private:
  KubeClient* const client_;
};

// The request bodies and the decoding of the replies (exposed for tests).
[[nodiscard]] std::string TokenReviewBody(const std::string& token,
                                          const std::vector<std::string>& audiences = {});
[[nodiscard]] std::string SubjectAccessReviewBody(const ReviewedUser& user,
                                                  const ResourceAttributes& attributes);
[[nodiscard]] ApiResult<std::optional<ReviewedUser>> DecodeTokenReview(const std::string& body);
[[nodiscard]] ApiResult<bool> DecodeSubjectAccessReview(const std::string& body);

}  // namespace taskgov::scheduler::kube
