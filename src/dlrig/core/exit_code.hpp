#pragma once
// Exit codes of the dlrig command, documented in the README ("Exit codes"). The sysexits.h values
// are used for usage and input errors so that scripts can tell them from a command's own verdict.
// exit_code_for() is the one place an error's kind becomes an exit code.
#include "dlrig/core/result.hpp"

#include <optional>
#include <stdexcept>
#include <string>

namespace dlrig {

enum class ExitCode : int {
  ok = 0,
  warnings = 1, // doctor: warnings only; fit: does not fit
  failures = 2, // doctor: at least one failure
  usage = 64,   // bad command line, or a combination this build does not support (EX_USAGE)
  bad_input =
      65, // a file given to dlrig is missing, malformed or of an unknown version (EX_DATAERR)
  unavailable = 69, // a vendor library call failed (EX_UNAVAILABLE)
  internal = 70,    // a bug in dlrig (EX_SOFTWARE)
  cant_write = 73,  // an output file could not be created (EX_CANTCREAT)
  io = 74           // reading failed: permission, device error, not a regular file (EX_IOERR)
};

// usage, unsupported -> 64; bad_input, not_found -> 65; vendor -> 69; io -> 74.
constexpr ExitCode exit_code_for(ErrorKind k) {
  switch (k) {
  case ErrorKind::usage:
  case ErrorKind::unsupported:
    return ExitCode::usage;
  case ErrorKind::bad_input:
  case ErrorKind::not_found:
    return ExitCode::bad_input;
  case ErrorKind::vendor:
    return ExitCode::unavailable;
  case ErrorKind::io:
    return ExitCode::io;
  }
  return ExitCode::internal;
}

// Thrown for what a command cannot go on from; caught only at the front door, which prints
// what() and exits with code(). what() names the file or flag, the place and the fix.
class Failure : public std::runtime_error {
public:
  Failure(ExitCode code, const std::string &message) : std::runtime_error(message), code_(code) {}
  explicit Failure(const Error &e) : Failure(exit_code_for(e.kind), e.message) {}
  ExitCode code() const { return code_; }

private:
  ExitCode code_;
};

// The value, or throws Failure with the error's exit code. `as` overrides the kind when the
// caller knows better (a flag's value that a library parser refused is a usage error).
template <class T> T value_or_throw(Result<T> r, std::optional<ErrorKind> as = std::nullopt) {
  if (!r) {
    Error e = r.error();
    if (as)
      e.kind = *as;
    throw Failure(e);
  }
  return std::move(r).value();
}

} // namespace dlrig
