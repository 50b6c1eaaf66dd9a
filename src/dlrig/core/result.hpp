#pragma once
// Result<T>: a value or the reason there is none. Used for expected failures (probing, parsing,
// vendor calls); exceptions are kept for what a command cannot go on from (see exit_code.hpp).
// An Error carries a kind, so the front door maps it to an exit code without looking at the
// inputs again (exit_code_for in exit_code.hpp is the one place that mapping lives).
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace dlrig {

enum class ErrorKind {
  usage,       // the command line asks for something wrong or contradictory
  bad_input,   // a file given to dlrig is malformed, of an unknown version or out of range
  not_found,   // a file, folder or name given to dlrig does not exist
  unsupported, // well-formed, but this build or this model cannot do it
  vendor,      // a vendor library call failed (call and code below)
  io           // reading or writing failed (permission, device error, not a regular file)
};

struct Error {
  std::string message; // what went wrong, in words a user can act on
  ErrorKind kind = ErrorKind::bad_input;
  std::string call;         // vendor: the library call that failed, e.g. "nvmlInit_v2"
  std::optional<long> code; // vendor: its numeric return code
};

template <class T> class Result {
public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error error) : v_(std::move(error)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  const T &value() const & { return std::get<0>(v_); }
  T &value() & { return std::get<0>(v_); }
  T &&value() && { return std::get<0>(std::move(v_)); }
  const T &operator*() const & { return value(); }
  T &operator*() & { return value(); }
  const T *operator->() const { return &value(); }
  T *operator->() { return &value(); }
  const Error &error() const { return std::get<1>(v_); }
  T value_or(T fallback) const { return ok() ? value() : std::move(fallback); }

private:
  std::variant<T, Error> v_;
};

inline Error make_error(std::string message) {
  return Error{std::move(message)};
}
inline Error make_error(ErrorKind kind, std::string message) {
  return Error{std::move(message), kind};
}
inline Error vendor_error(std::string call, long code, std::string message) {
  return Error{std::move(message), ErrorKind::vendor, std::move(call), code};
}
// The same error with its message prefixed ("FILE: ") and its kind kept.
inline Error prefixed(std::string prefix, Error e) {
  e.message = std::move(prefix) + e.message;
  return e;
}

inline std::string_view to_string(ErrorKind k) {
  switch (k) {
  case ErrorKind::usage:
    return "usage";
  case ErrorKind::bad_input:
    return "bad_input";
  case ErrorKind::not_found:
    return "not_found";
  case ErrorKind::unsupported:
    return "unsupported";
  case ErrorKind::vendor:
    return "vendor";
  case ErrorKind::io:
    return "io";
  }
  return "bad_input";
}

} // namespace dlrig

// DLRIG_TRY(var, expr): evaluates expr (a Result); on error returns that error from the enclosing
// function (whose return type must be constructible from Error), else binds the value to var.
#define DLRIG_CONCAT_INNER(a, b) a##b
#define DLRIG_CONCAT(a, b) DLRIG_CONCAT_INNER(a, b)
#define DLRIG_TRY(var, expr)                                                                       \
  auto DLRIG_CONCAT(dlrig_try_, __LINE__) = (expr);                                                \
  if (!DLRIG_CONCAT(dlrig_try_, __LINE__))                                                         \
    return DLRIG_CONCAT(dlrig_try_, __LINE__).error();                                             \
  var = std::move(DLRIG_CONCAT(dlrig_try_, __LINE__)).value()
