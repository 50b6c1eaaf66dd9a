#include "dlrig/platform/process.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <iostream>
#include <iterator>
#include <mutex>
#include <optional>
#include <thread>

namespace dlrig {

namespace {

using Clock = std::chrono::steady_clock;

struct Child {
  pid_t pid = -1;
  int fds[2] = {-1, -1}; // stdout, stderr read ends; -1 once closed
  bool reaped = false;
  std::optional<Clock::time_point> exited; // when it was seen to have ended
  int pidfd = -1; // readable when it ends (Linux 5.3+); -1: its end is polled for instead
};

// After a program exits, how long its pipes are still read: what it wrote before exiting is
// already in them, and a process it left running in the background (a daemon started from the
// interpreter's site hooks) that holds them open must not keep the caller to the deadline.
constexpr auto kAfterExit = std::chrono::milliseconds(200);

void close_fd(int &fd) {
  if (fd >= 0)
    ::close(fd);
  fd = -1;
}

// Appends what a read got, keeping sink at most max_output bytes.
void append_capped(std::string &sink, const char *buf, ssize_t got, std::size_t max_output) {
  const std::size_t room = max_output > sink.size() ? max_output - sink.size() : 0;
  sink.append(buf, std::min<std::size_t>(room, static_cast<std::size_t>(got)));
}

// Reads what is left in a pipe without blocking, then closes it.
void drain_and_close(int &fd, std::string &sink, std::size_t max_output) {
  if (fd < 0)
    return;
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  char buf[65536];
  ssize_t got;
  while ((got = ::read(fd, buf, sizeof buf)) > 0 || (got < 0 && errno == EINTR))
    if (got > 0)
      append_capped(sink, buf, got, max_output);
  close_fd(fd);
}

void record_status(ProcessResult &r, int status) {
  if (WIFEXITED(status))
    r.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    r.signal = WTERMSIG(status);
}

// Starts one program with stdout/stderr on pipes, in a process group of its own so that a
// timeout can end everything it started.
bool spawn(const ProcessSpec &spec, Child &child, ProcessResult &result) {
  if (spec.argv.empty()) {
    result.error = "no program given";
    return false;
  }
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    result.error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  if (::pipe2(err, O_CLOEXEC) != 0) {
    result.error = std::string("pipe: ") + std::strerror(errno);
    ::close(out[0]);
    ::close(out[1]);
    return false;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);

  std::vector<std::string> env_s;
  for (const auto &[k, v] : spec.env)
    env_s.push_back(k + "=" + v);
  std::vector<char *> argv, envp;
  for (const auto &a : spec.argv)
    argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  for (auto &e : env_s)
    envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, spec.argv[0].c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) {
    ::close(out[0]);
    ::close(err[0]);
    result.error = spec.argv[0] + ": " + std::strerror(rc);
    return false;
  }
  child.pid = pid;
#ifdef SYS_pidfd_open
  child.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#endif
  child.fds[0] = out[0];
  child.fds[1] = err[0];
  result.started = true;
  return true;
}

} // namespace

std::vector<ProcessResult> run_processes(const std::vector<ProcessSpec> &specs,
                                         std::chrono::milliseconds timeout,
                                         std::size_t max_output) {
  const auto deadline = Clock::now() + timeout;
  std::vector<ProcessResult> results(specs.size());
  std::vector<Child> children(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i)
    if (!spawn(specs[i], children[i], results[i]))
      children[i].reaped = true;

  auto reap = [&](std::size_t i, int flags) {
    int status = 0;
    if (children[i].reaped)
      return;
    pid_t got = ::waitpid(children[i].pid, &status, flags);
    if (got == children[i].pid) {
      record_status(results[i], status);
      children[i].reaped = true;
    } else if (got < 0 && errno != EINTR) {
      children[i].reaped = true; // not our child any more; nothing to wait for
    }
  };

  char buf[65536];
  while (true) {
    std::vector<pollfd> fds;
    std::vector<std::pair<std::size_t, int>> owners;
    bool waiting_exit = false;
    std::optional<Clock::time_point> next_cut; // the soonest end of a kAfterExit
    for (std::size_t i = 0; i < children.size(); ++i) {
      reap(i, WNOHANG);
      auto &c = children[i];
      if (c.reaped && c.pid > 0 && (c.fds[0] >= 0 || c.fds[1] >= 0)) {
        if (!c.exited)
          c.exited = Clock::now();
        if (Clock::now() - *c.exited >= kAfterExit) {
          drain_and_close(c.fds[0], results[i].out, max_output);
          drain_and_close(c.fds[1], results[i].err, max_output);
          ::kill(-c.pid, SIGKILL); // what it left behind in its process group
        } else if (!next_cut || *c.exited + kAfterExit < *next_cut) {
          next_cut = *c.exited + kAfterExit;
        }
      }
      for (int k = 0; k < 2; ++k)
        if (children[i].fds[k] >= 0) {
          fds.push_back({children[i].fds[k], POLLIN, 0});
          owners.emplace_back(i, k);
        }
      // Its end wakes the poll: what it left running may hold its pipes open and silent.
      if (!c.reaped && c.pidfd >= 0) {
        fds.push_back({c.pidfd, POLLIN, 0});
        owners.emplace_back(i, 2);
      } else if (!c.reaped) {
        waiting_exit = true;
      }
      if (!children[i].reaped && children[i].fds[0] < 0 && children[i].fds[1] < 0)
        waiting_exit = true;
    }
    if (fds.empty() && !waiting_exit)
      break;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0)
      break;
    // A child that closed its pipes but has not exited is checked again shortly.
    auto wait_ms = waiting_exit ? std::min<long long>(left.count(), 10) : left.count();
    if (next_cut)
      wait_ms = std::min<long long>(
          wait_ms, std::max<long long>(1, std::chrono::duration_cast<std::chrono::milliseconds>(
                                              *next_cut - Clock::now())
                                              .count()));
    int n = ::poll(fds.data(), fds.size(), static_cast<int>(wait_ms));
    if (n < 0 && errno != EINTR)
      break;
    for (std::size_t j = 0; n > 0 && j < fds.size(); ++j) {
      if (fds[j].revents == 0)
        continue;
      auto [i, k] = owners[j];
      if (k == 2)
        continue; // it ended: reaped at the top of the loop
      ssize_t got = ::read(fds[j].fd, buf, sizeof buf);
      if (got > 0) {
        append_capped(k == 0 ? results[i].out : results[i].err, buf, got, max_output);
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        close_fd(children[i].fds[k]);
      }
    }
  }

  for (std::size_t i = 0; i < children.size(); ++i) {
    auto &c = children[i];
    if (!c.reaped && c.pid > 0) {
      reap(i, WNOHANG);
      if (!c.reaped) {
        ::kill(-c.pid, SIGKILL);
        ::kill(c.pid, SIGKILL); // also when it left its process group
        results[i].timed_out = true;
        int status = 0;
        if (reap_within(c.pid, std::chrono::seconds(1), status)) {
          record_status(results[i], status);
          c.reaped = true;
        }
      }
    }
    if (c.pid > 0 && (c.fds[0] >= 0 || c.fds[1] >= 0))
      ::kill(-c.pid, SIGKILL); // what it left behind still holds the pipes
    close_fd(c.fds[0]);
    close_fd(c.fds[1]);
    close_fd(c.pidfd);
  }
  return results;
}

std::string reexec_self(const std::map<std::string, std::string> &set, const std::string &exe) {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string cmdline{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (!in.eof() && in.fail())
    return "cannot read /proc/self/cmdline";
  std::vector<std::string> args;
  for (std::size_t at = 0; at < cmdline.size();) {
    auto end = cmdline.find('\0', at);
    if (end == std::string::npos)
      end = cmdline.size();
    args.push_back(cmdline.substr(at, end - at));
    at = end + 1;
  }
  if (args.empty())
    return "/proc/self/cmdline is empty";
  std::vector<char *> argv;
  for (auto &a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::map<std::string, std::optional<std::string>> before;
  for (const auto &[name, value] : set) {
    const char *old = std::getenv(name.c_str());
    before[name] = old ? std::optional<std::string>(old) : std::nullopt;
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  std::fflush(nullptr);
  ::execv(exe.c_str(), argv.data());
  const std::string why = exe + ": " + std::strerror(errno);
  for (const auto &[name, value] : before)
    if (value)
      ::setenv(name.c_str(), value->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  return why;
}

bool is_executable_file(const std::string &host_path) {
  struct stat st {};
  return ::stat(host_path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         ::access(host_path.c_str(), X_OK) == 0;
}

ProcessResult run_process(const ProcessSpec &spec, std::chrono::milliseconds timeout,
                          std::size_t max_output) {
  return run_processes({spec}, timeout, max_output).front();
}

bool reap_within(int pid, std::chrono::milliseconds grace, int &status) {
  const auto deadline = Clock::now() + grace;
  auto pause = std::chrono::microseconds(200);
  for (;;) {
    pid_t got = ::waitpid(pid, &status, WNOHANG);
    if (got == pid)
      return true;
    if (got < 0 && errno != EINTR)
      return false; // not a child of this process (reaped already)
    if (Clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(20));
  }
}

// --- ChildWorker ---------------------------------------------------------------------------------

namespace {

// Blocking, whole: the child's side.
bool write_all(int fd, const char *data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL); // a peer gone is an error, not SIGPIPE
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

bool write_frame(int fd, const std::string &bytes) {
  unsigned char head[8];
  std::uint64_t size = bytes.size();
  for (int i = 0; i < 8; ++i)
    head[i] = static_cast<unsigned char>(size >> (8 * i));
  return write_all(fd, reinterpret_cast<const char *>(head), 8) &&
         write_all(fd, bytes.data(), bytes.size());
}

enum class ReadEnd { whole, ended, deadline };

// Reads exactly size bytes, waiting until deadline at most (none: wait as long as it takes).
ReadEnd read_exactly(int fd, char *out, std::size_t size,
                     std::optional<Clock::time_point> deadline) {
  while (size > 0) {
    if (deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now());
      if (left.count() <= 0)
        return ReadEnd::deadline;
      pollfd p{fd, POLLIN, 0};
      int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count() + 1, 1000)));
      if (ready < 0 && errno != EINTR)
        return ReadEnd::ended;
      if (ready <= 0)
        continue;
    }
    ssize_t n = ::read(fd, out, size);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (n <= 0)
      return ReadEnd::ended;
    out += n;
    size -= static_cast<std::size_t>(n);
  }
  return ReadEnd::whole;
}

ReadEnd read_frame(int fd, std::string &out, std::optional<Clock::time_point> deadline) {
  unsigned char head[8];
  if (auto r = read_exactly(fd, reinterpret_cast<char *>(head), 8, deadline); r != ReadEnd::whole)
    return r;
  std::uint64_t size = 0;
  for (int i = 0; i < 8; ++i)
    size |= static_cast<std::uint64_t>(head[i]) << (8 * i);
  if (size > (std::uint64_t{1} << 32))
    return ReadEnd::ended; // not a frame this side wrote
  out.assign(static_cast<std::size_t>(size), '\0');
  return read_exactly(fd, out.data(), out.size(), deadline);
}

std::mutex g_left_mutex;
std::vector<int> g_left; // killed, not yet reaped

void leave_behind(int pid) {
  std::lock_guard lock(g_left_mutex);
  g_left.push_back(pid);
}

} // namespace

static std::atomic<int> g_threads_left{0}; // thread_left_behind

void thread_left_behind() {
  g_threads_left.fetch_add(1, std::memory_order_relaxed);
}

int end_process(int code) {
  if (g_threads_left.load(std::memory_order_relaxed) == 0)
    return code;
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  ::_exit(code);
}

std::size_t children_left_behind() {
  std::lock_guard lock(g_left_mutex);
  std::erase_if(g_left, [](int pid) {
    int status = 0;
    pid_t got = ::waitpid(pid, &status, WNOHANG);
    return got == pid || (got < 0 && errno == ECHILD);
  });
  return g_left.size();
}

[[noreturn]] void serve_child_requests(int fd, const ChildWorker::Handler &handler) {
  int code = 0;
  try {
    std::string request;
    while (read_frame(fd, request, std::nullopt) == ReadEnd::whole)
      if (!write_frame(fd, handler(request))) {
        code = 1;
        break;
      }
  } catch (...) {
    code = 1;
  }
  ::_exit(code);
}

ChildWorker::ChildWorker(Handler handler) : handler_(std::move(handler)) {
  int ends[2] = {-1, -1};
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) {
    start_error_ = std::string("socketpair: ") + std::strerror(errno);
    return;
  }
  std::fflush(nullptr); // what stdio holds would otherwise be written twice
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ends[0]);
    int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd : {0, 1, 2})
      if (null >= 0)
        ::dup2(null, fd);
    serve_child_requests(ends[1], handler_);
  }
  adopt(pid, ends);
}

void ChildWorker::adopt(int pid, const int ends[2]) {
  ::close(ends[1]);
  if (pid < 0) {
    start_error_ = std::string("fork: ") + std::strerror(errno);
    ::close(ends[0]);
    return;
  }
  pid_ = pid;
  fd_ = ends[0];
}

ChildWorker::ChildWorker(const Helper &helper) {
  // Everything the child needs is made before the fork: between fork and exec it calls only
  // async-signal-safe functions.
  std::vector<char *> argv;
  for (const auto &a : helper.argv)
    argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  int ends[2] = {-1, -1};
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) {
    start_error_ = std::string("socketpair: ") + std::strerror(errno);
    return;
  }
  int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    if (ends[1] == 3)
      ::fcntl(3, F_SETFD, 0);         // keep it across exec (dup2 onto itself would not)
    else if (::dup2(ends[1], 3) != 3) // dup2 clears close-on-exec on 3
      ::_exit(127);
    if (null >= 0)
      for (int fd : {0, 1, 2})
        ::dup2(null, fd);
    ::execv(helper.path.c_str(), argv.data());
    ::_exit(127);
  }
  const int fork_errno = errno;
  if (null >= 0)
    ::close(null);
  errno = fork_errno;
  adopt(pid, ends);
}

ChildWorker::~ChildWorker() {
  if (pid_ <= 0)
    return;
  close_fd(fd_);
  if (!stopped_) {
    int status = 0;
    if (!reap_within(pid_, std::chrono::seconds(1), status)) {
      ::kill(pid_, SIGKILL);
      if (!reap_within(pid_, std::chrono::milliseconds(0), status))
        leave_behind(pid_);
    }
  }
}

void ChildWorker::stop(Reply &reply, bool kill_it) {
  if (!stopped_) {
    stopped_ = true;
    if (kill_it)
      ::kill(pid_, SIGKILL); // ends it unless it sleeps in a driver; then it is left behind
    int status = 0;
    if (reap_within(pid_, kill_it ? std::chrono::milliseconds(0) : std::chrono::seconds(1),
                    status)) {
      if (WIFEXITED(status))
        exit_code_ = WEXITSTATUS(status);
      else if (WIFSIGNALED(status))
        signal_ = WTERMSIG(status);
    } else
      leave_behind(pid_);
    close_fd(fd_);
  }
  reply.exit_code = exit_code_;
  reply.signal = signal_;
}

ChildWorker::Reply ChildWorker::ask(const std::string &request, std::chrono::milliseconds timeout) {
  Reply reply;
  if (pid_ <= 0) {
    if (!handler_) { // a helper that could not be started
      reply.exit_code = 127;
      return reply;
    }
    try {
      reply.answer = handler_(request);
      reply.outcome = Outcome::answered;
    } catch (...) {
      reply.exit_code = 1; // as the child would have ended
    }
    return reply;
  }
  if (stopped_) {
    stop(reply, false);
    return reply;
  }
  const auto deadline = Clock::now() + timeout;
  // A request fits the socket's buffer or the child is reading it; a child that neither reads
  // nor answers is caught below.
  if (!write_frame(fd_, request)) {
    stop(reply, true);
    return reply;
  }
  switch (read_frame(fd_, reply.answer, deadline)) {
  case ReadEnd::whole:
    reply.outcome = Outcome::answered;
    return reply;
  case ReadEnd::deadline:
    reply.answer.clear();
    reply.outcome = Outcome::timed_out;
    stop(reply, true);
    return reply;
  case ReadEnd::ended:
    break;
  }
  reply.answer.clear();
  stop(reply, false);
  return reply;
}

} // namespace dlrig
