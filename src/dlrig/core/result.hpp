#pragma once
// Result<T>: a value or the reason there is none. Used for expected failures (probing, parsing,
// vendor calls); exceptions are kept for what a command cannot go on from (see exit_code.hpp).
#include <string>
#include <utility>
#include <variant>

namespace dlrig {

struct Error {
  std::string message; // what went wrong, in words a user can act on
};

template <class T> class Result {
public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error error) : v_(std::move(error)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  const T& value() const& { return std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  const Error& error() const { return std::get<1>(v_); }
  T value_or(T fallback) const { return ok() ? value() : std::move(fallback); }

private:
  std::variant<T, Error> v_;
};

inline Error make_error(std::string message) { return Error{std::move(message)}; }

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
