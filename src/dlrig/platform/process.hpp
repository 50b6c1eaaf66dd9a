#pragma once
// The seam for running other programs (the --deep software probe runs Python interpreters).
// Programs are started with an argv (no shell), their stdout and stderr are captured, and a
// program still running at the deadline is killed together with its process group: a caller
// never waits past the deadline it gives. Not thread-safe with respect to SIGCHLD handlers that
// reap children of other callers.
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dlrig {

struct ProcessSpec {
  std::vector<std::string> argv;          // argv[0] is the path of the program (not searched)
  std::map<std::string, std::string> env; // the whole environment of the program
};

struct ProcessResult {
  bool started = false;         // false: the program could not be started (see error)
  bool timed_out = false;       // killed at the deadline
  std::optional<int> exit_code; // when it exited by itself
  std::optional<int> signal;    // when a signal ended it (SIGKILL after a timeout included)
  std::string out;              // stdout, at most max_output bytes
  std::string err;              // stderr, at most max_output bytes
  std::string error;            // why it could not be started
};

// Starts every program at once and waits for all of them, at most `timeout` in all; each one
// still running then is killed (SIGKILL to its process group) and reported timed_out. Results
// come in the order of specs.
std::vector<ProcessResult> run_processes(const std::vector<ProcessSpec> &specs,
                                         std::chrono::milliseconds timeout,
                                         std::size_t max_output = 1 << 20);

// Whether host_path names a regular file this process may execute.
bool is_executable_file(const std::string &host_path);

// Replaces this process with a fresh run of the same program (`exe`, by default
// /proc/self/exe) with the same arguments (/proc/self/cmdline) and `set` added to its
// environment. Flushes stdio first. Returns only when that failed, with the reason in words; the
// environment is then as it was. Not thread-safe (it changes the environment).
std::string reexec_self(const std::map<std::string, std::string> &set,
                        const std::string &exe = "/proc/self/exe");

// One program; the same contract.
ProcessResult run_process(const ProcessSpec &spec, std::chrono::milliseconds timeout,
                          std::size_t max_output = 1 << 20);

} // namespace dlrig
