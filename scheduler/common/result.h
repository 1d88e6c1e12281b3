#pragma once

// Result<T> and Status: the project's error values for untrusted input and I/O.
//
// A Result holds either a value or an Error whose message a person can act on ("what and
// where"). Nothing on the request or watch paths throws; callers check ok() and pass the error
// on, adding context with Error::Wrap. Thread-safety: plain values, no shared state.

#include <string>
#include <utility>
#include <variant>

namespace taskgov::common {

struct Error {
  std::string message;

  // Returns a copy whose message is prefixed by `context: `.
  [[nodiscard]] Error Wrap(std::string_view context) const {
    std::string wrapped(context);
    wrapped += ": ";
    wrapped += message;
    return Error{std::move(wrapped)};
  }
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design.
  Result(Error error) : v_(std::move(error)) {}  // NOLINT: implicit by design.

  bool ok() const { return v_.index() == 0; }
  const T& value() const& { return std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const Error& error() const { return std::get<1>(v_); }

  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, Error> v_;
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT: implicit by design.
  static Status Ok() { return Status(); }

  bool ok() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

}  // namespace taskgov::common
