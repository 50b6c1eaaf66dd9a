#pragma once
// The seam for running other programs (the --deep software probe runs Python interpreters).
// Programs are started with an argv (no shell), their stdout and stderr are captured, and a
// program still running at the deadline is killed together with its process group: a caller
// never waits past the deadline it gives. Not thread-safe with respect to SIGCHLD handlers that
// reap children of other callers.
#include <chrono>
#include <functional>
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

// Reaps pid (a child of this process) if it ends within `grace`, polling, never blocking past
// it: a process asleep in a driver (uninterruptible sleep: a GPU fallen off the bus) does not
// end even at SIGKILL, and waiting for it would hang the caller. True when reaped; status then
// holds what waitpid gave. A child left unreaped stays a zombie until this process exits.
bool reap_within(int pid, std::chrono::milliseconds grace, int &status);

// A function served by a child process of this one (fork, no exec), asked over a socket with a
// deadline: a call that stops answering (NVML on a GPU fallen off the bus sleeps in the driver,
// where no signal reaches it) can neither hold the caller past the deadline nor keep it from
// exiting, and a call that crashes cannot take the caller with it. The child's standard streams
// are /dev/null (a child stuck holding the caller's stdout would keep `dlrig ... | jq` waiting).
//
// The handler runs in the child with a copy of everything the caller had at the fork, so what it
// keeps between requests (an open library) lives there. Start it while the caller has one
// thread: fork copies only the calling thread. When no pipe or process can be made, the handler
// runs in this process instead, without a deadline (started() false says so).
//
// After one ask() that timed out or found the child gone, the worker is stopped: the child was
// killed (SIGKILL, never waited for) and every later ask() answers `stopped` at once. Not
// thread-safe: one caller at a time.
//
// ChildWorker(Helper) starts a program instead (fork, then exec at once: safe from a process with
// many threads, where a forked copy may find a lock another thread held), with the socket as its
// descriptor 3; the program answers through serve_child_requests(3, handler). With no child the
// helper's requests answer `stopped`.
class ChildWorker {
public:
  using Handler = std::function<std::string(const std::string &request)>;
  struct Helper {
    std::string path;              // the program (dlrig itself: /proc/self/exe)
    std::vector<std::string> argv; // its arguments, argv[0] included
  };
  enum class Outcome { answered, timed_out, stopped };
  struct Reply {
    Outcome outcome = Outcome::stopped;
    std::string answer;           // answered: what the handler returned
    std::optional<int> exit_code; // stopped: how the child ended, when it was seen to end
    std::optional<int> signal;
  };

  explicit ChildWorker(Handler handler);
  explicit ChildWorker(const Helper &helper);
  ChildWorker(const ChildWorker &) = delete;
  ChildWorker &operator=(const ChildWorker &) = delete;
  // Closes the request pipe (the child then exits), reaps the child within a second, else kills
  // it and leaves it: never blocks longer.
  ~ChildWorker();

  bool started() const { return pid_ > 0; }
  const std::string &start_error() const { return start_error_; } // why no child, if none
  // Sends request and waits at most timeout for the answer. A handler that throws ends the
  // child (stopped, exit code 1; without a child, that one answer is `stopped` the same way).
  Reply ask(const std::string &request, std::chrono::milliseconds timeout);

private:
  void stop(Reply &reply, bool kill_it);
  // After the fork: keeps ends[0] and the child (or, pid < 0, the fork's errno as start_error).
  void adopt(int pid, const int ends[2]);
  Handler handler_;
  int pid_ = -1;
  int fd_ = -1; // a socket to the child: each request and answer is its length (8 bytes,
                // little-endian) then its bytes
  bool stopped_ = false;
  std::optional<int> exit_code_, signal_;
  std::string start_error_;
};

// The helper's side of ChildWorker(Helper): answers each request on fd with handler until the
// caller closes its end, then ends the process (exit 0; 1 when the handler threw).
[[noreturn]] void serve_child_requests(int fd, const ChildWorker::Handler &handler);

// Children that ChildWorker killed but could not reap (asleep in a driver, where SIGKILL waits
// until the driver lets go): reaps those that have ended since and returns how many are left. A
// caller about to start another child for the same driver can wait until none is.
std::size_t children_left_behind();

// A thread left inside a library call that cannot be interrupted (a blocking ncclCommInitRank
// whose peers are gone): counted, so that the process then ends through end_process without
// running the libraries' and the C++ runtime's exit handlers under that thread.
void thread_left_behind();

// Returns code, or, when a thread was left behind, flushes standard output and error and ends the
// process with _exit(code) at once.
int end_process(int code);

} // namespace dlrig
