#pragma once
// Exit codes of the dlrig command, documented in the README. The sysexits.h values are used for
// usage and input errors so that scripts can tell them from a command's own verdict.
#include <stdexcept>
#include <string>

namespace dlrig {

enum class ExitCode : int {
  ok = 0,
  warnings = 1,   // doctor: warnings only; fit: does not fit
  failures = 2,   // doctor: at least one failure
  usage = 64,     // bad command line (EX_USAGE)
  bad_input = 65, // a file given to dlrig is missing, malformed or of an unknown version (EX_DATAERR)
  internal = 70,  // a bug in dlrig (EX_SOFTWARE)
  cant_write = 73 // an output file could not be created (EX_CANTCREAT)
};

// Thrown for what a command cannot go on from; caught only at the front door, which prints
// what() and exits with code(). what() names the file or flag, the place and the fix.
class Failure : public std::runtime_error {
public:
  Failure(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode code() const { return code_; }

private:
  ExitCode code_;
};

} // namespace dlrig
