#pragma once

// ApiError and ApiResult<T>: the outcome of one call to the Kubernetes API server.
//
// An ApiError carries the HTTP status (0 when the request never got an answer: connect failure,
// TLS failure, timeout, dropped connection, cancellation), the API's metav1.Status `reason`
// ("NotFound", "Conflict", "Expired", "TooManyRequests", ...) and message, the Retry-After delay
// when the server sent one, and the `details.causes[].reason` values (e.g. "DisruptionBudget").
// Value types; not synchronised.

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "scheduler/common/result.h"

namespace taskgov::scheduler::kube {

struct ApiError {
  int status = 0;       // HTTP status; 0: no HTTP answer (transport error)
  std::string reason;   // metav1.Status.reason, or a transport reason ("Timeout", ...)
  std::string message;  // what went wrong, for people
  std::string what;     // the request, e.g. "GET /api/v1/pods"
  std::chrono::milliseconds retry_after{0};  // from Retry-After, when present
  std::vector<std::string> causes;           // details.causes[].reason
  bool cancelled = false;                    // the caller cancelled the request

  [[nodiscard]] static ApiError Of(int status, std::string reason, std::string message,
                                   std::string what) {
    ApiError e;
    e.status = status;
    e.reason = std::move(reason);
    e.message = std::move(message);
    e.what = std::move(what);
    return e;
  }
  [[nodiscard]] static ApiError Cancelled(std::string message, std::string what) {
    ApiError e = Of(0, "Cancelled", std::move(message), std::move(what));
    e.cancelled = true;
    return e;
  }

  [[nodiscard]] bool transport() const { return status == 0; }
  [[nodiscard]] bool HasCause(std::string_view cause) const {
    for (const auto& c : causes) {
      if (c == cause) return true;
    }
    return false;
  }
  // "GET /api/v1/pods: 410 Expired: too old resource version: 1 (5)".
  [[nodiscard]] std::string ToString() const {
    std::string out = what;
    if (!out.empty()) out += ": ";
    if (status != 0) {
      out += std::to_string(status);
      out += ' ';
    }
    if (!reason.empty()) {
      out += reason;
      if (!message.empty()) out += ": ";
    }
    out += message;
    return out;
  }
  [[nodiscard]] common::Error ToError() const { return common::Error{ToString()}; }
};

template <typename T>
class [[nodiscard]] ApiResult {
 public:
  ApiResult(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design.
  ApiResult(ApiError error) : v_(std::move(error)) {}  // NOLINT: implicit by design.

  bool ok() const { return v_.index() == 0; }
  const T& value() const& { return std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const ApiError& error() const { return std::get<1>(v_); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, ApiError> v_;
};

}  // namespace taskgov::scheduler::kube
