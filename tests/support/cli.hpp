#pragma once
// Runs the real dlrig binary for CLI tests and captures what it prints.
#include <filesystem>
#include <string>
#include <vector>

namespace dlrig::test {

struct CliRun {
  int exit_code = -1;
  std::string out; // stdout
  std::string err; // stderr
};

// Runs build/dlrig with args. env holds "NAME=value" entries added to a minimal environment
// (PATH=/usr/bin:/bin, no NVML unless DLRIG_NVML_LIBRARY is given).
CliRun run_dlrig(const std::vector<std::string> &args, const std::vector<std::string> &env = {});
// The same, with dlrig's standard error a pipe instead of a file when stderr_is_pipe.
CliRun run_dlrig_with(const std::vector<std::string> &args, const std::vector<std::string> &env,
                      bool stderr_is_pipe);

// Runs build/dlrig with its standard output a terminal (a pseudo-terminal `columns` wide, as
// TIOCGWINSZ tells it), as a user in a shell runs it; standard error goes to a file. Carriage
// returns the terminal adds are removed from `out`. env as for run_dlrig.
CliRun run_dlrig_in_terminal(const std::vector<std::string> &args, unsigned short columns,
                             const std::vector<std::string> &env = {});

// build/dlrig's argv and environment as posix_spawn()/execve() take them, for a test that starts
// it itself (to signal it): args after the binary; env's entries first (the first of two
// same-named entries is the one getenv sees), then `more`, then PATH=/usr/bin:/bin, no NVML
// (DLRIG_NVML_LIBRARY names no file) and sanitizer_options(). Keep it alive while they are used.
struct Exec {
  std::vector<std::string> argv_s, env_s;
  std::vector<char *> argv, envp;
  Exec(const std::vector<std::string> &args, const std::vector<std::string> &env,
       const std::vector<std::string> &more = {});
};

// "NAME=value" for each sanitizer setting in this test process's environment (ASAN_OPTIONS,
// LSAN_OPTIONS, UBSAN_OPTIONS, TSAN_OPTIONS): a dlrig the tests start with an environment of their
// own gets them too, so under scripts/sanitize.sh it reports as the script asks.
std::vector<std::string> sanitizer_options();

// A path in this test process's scratch folder, removed when the process exits: ctest runs the
// tests in parallel processes, and a file one of them rewrites must not be read half-written by
// another. The folder exists; the file is the caller's to write.
std::filesystem::path scratch(const std::string &name);

// Writes `bytes` as the whole of the file at `path` (a test's hand-made input).
void write_bytes(const std::filesystem::path &path, const std::vector<unsigned char> &bytes);

// The lines of a text (without their newlines), and its words (split at white space).
std::vector<std::string> lines_of(const std::string &text);
std::vector<std::string> words_of(const std::string &text);

// Path of a fixture machine under tests/data/.
std::string fixture(const std::string &name);

} // namespace dlrig::test
