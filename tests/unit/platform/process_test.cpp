#include "dlrig/platform/process.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

namespace dlrig {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

ProcessSpec sh(const std::string &script) {
  return {{"/bin/sh", "-c", script}, {{"PATH", "/usr/bin:/bin"}}};
}

TEST(Process, CapturesStdoutStderrAndExitCode) {
  auto r = run_process(sh("echo out; echo err >&2; exit 3"), 5s);
  EXPECT_TRUE(r.started);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
}

TEST(Process, PassesOnlyTheGivenEnvironment) {
  ProcessSpec spec{{"/bin/sh", "-c", "echo \"$DLRIG_X-$HOME\""}, {{"DLRIG_X", "given"}}};
  EXPECT_EQ(run_process(spec, 5s).out, "given-\n");
}

TEST(Process, KillsAtTheDeadlineAndNeverWaitsPastIt) {
  auto start = Clock::now();
  // The shell starts a child that would keep the pipe open: the whole group must go.
  auto r = run_process(sh("sleep 30; echo late"), 300ms);
  auto took = Clock::now() - start;
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_FALSE(r.exit_code);
  EXPECT_LT(took, 2s);
}

// A program that exits leaving a background process holding its stdout (a daemon started by an
// interpreter's site hooks): what it printed is kept, its exit code is reported, and the caller
// does not wait for the background process to the deadline (it did: `info --python` took the
// whole --deep-timeout), which is killed with the program's process group.
TEST(Process, AProgramThatExitsIsNotWaitedForPastItThroughWhatItLeftRunning) {
  const std::string marker =
      ::testing::TempDir() + "/dlrig-left-running-" + std::to_string(::getpid());
  std::remove(marker.c_str());
  auto start = Clock::now();
  auto r = run_process(
      sh("echo out; echo err >&2; (sleep 1; echo late; touch " + marker + ") & exit 4"), 10s);
  EXPECT_LT(Clock::now() - start, 900ms);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  std::this_thread::sleep_for(1500ms);
  EXPECT_NE(::access(marker.c_str(), F_OK), 0) << "the background process was left running";
  std::remove(marker.c_str());
}

// A program that leaves its process group (as a daemonising helper does) is out of reach of the
// group's SIGKILL: it was then waited for until it ended by itself, past the deadline.
TEST(Process, KillsAProgramThatLeftItsProcessGroup) {
  auto start = Clock::now();
  auto r =
      run_process({{"/usr/bin/perl", "-e", "setpgrp(0, getpgrp(getppid())); sleep 20"}, {}}, 500ms);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_LT(Clock::now() - start, 5s);
}

// A child that does not end (as one asleep in a driver, which SIGKILL does not reach): reaping
// gives up at its grace instead of waiting.
TEST(Process, ReapingGivesUpOnAChildThatDoesNotEnd) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  int status = 0;
  auto start = Clock::now();
  EXPECT_FALSE(reap_within(pid, 200ms, status));
  auto took = Clock::now() - start;
  EXPECT_GE(took, 200ms);
  EXPECT_LT(took, 2s);
  ::kill(pid, SIGKILL);
  EXPECT_TRUE(reap_within(pid, 5s, status));
  EXPECT_TRUE(WIFSIGNALED(status));
}

// --- ChildWorker ---

TEST(ChildWorker, AnswersEachRequestInTheChildKeepingItsState) {
  int calls = 0;
  ChildWorker w([&calls](const std::string &request) {
    return request + ":" + std::to_string(++calls) + ":" + std::to_string(::getpid());
  });
  ASSERT_TRUE(w.started()) << w.start_error();
  auto a = w.ask("a", 5s);
  auto b = w.ask(std::string(1 << 20, 'b'), 5s); // more than a socket's buffer either way
  ASSERT_EQ(a.outcome, ChildWorker::Outcome::answered);
  ASSERT_EQ(b.outcome, ChildWorker::Outcome::answered);
  EXPECT_EQ(a.answer.substr(0, 4), "a:1:");
  EXPECT_EQ(b.answer.substr((1 << 20), 3), ":2:");
  EXPECT_NE(a.answer.substr(4), std::to_string(::getpid())); // not this process
  EXPECT_EQ(calls, 0);                                       // its state lives in the child
}

TEST(ChildWorker, AnAskPastItsDeadlineReturnsThenAndStopsTheWorker) {
  ChildWorker w([](const std::string &request) {
    if (request == "hang")
      std::this_thread::sleep_for(60s);
    return request;
  });
  ASSERT_EQ(w.ask("fine", 5s).answer, "fine");
  auto start = Clock::now();
  auto r = w.ask("hang", 300ms);
  auto took = Clock::now() - start;
  EXPECT_EQ(r.outcome, ChildWorker::Outcome::timed_out);
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 2s);
  start = Clock::now();
  EXPECT_EQ(w.ask("fine", 5s).outcome, ChildWorker::Outcome::stopped); // not asked again
  EXPECT_LT(Clock::now() - start, 500ms);
}

TEST(ChildWorker, AHandlerThatCrashesOrThrowsStopsOnlyTheChild) {
  ChildWorker crashes([](const std::string &) -> std::string {
    std::raise(SIGSEGV);
    return "";
  });
  auto r = crashes.ask("x", 5s);
  EXPECT_EQ(r.outcome, ChildWorker::Outcome::stopped);
  EXPECT_EQ(r.signal, SIGSEGV);
  ChildWorker throws([](const std::string &) -> std::string { throw std::runtime_error("no"); });
  auto t = throws.ask("x", 5s);
  EXPECT_EQ(t.outcome, ChildWorker::Outcome::stopped);
  EXPECT_EQ(t.exit_code, 1);
  EXPECT_FALSE(t.signal);
}

// ChildWorker(Helper): a program exec'd with the socket as its descriptor 3 (here `cat`, which
// sends each frame back as it came); one that cannot be started, or that stops answering, is
// stopped like a forked child, and a killed one is counted until it has ended.
TEST(ChildWorker, AHelperProgramAnswersOnDescriptorThree) {
  ChildWorker echo(ChildWorker::Helper{"/bin/sh", {"sh", "-c", "exec cat <&3 >&3"}});
  ASSERT_TRUE(echo.started()) << echo.start_error();
  EXPECT_EQ(echo.ask("hello", 5s).answer, "hello");
  EXPECT_EQ(echo.ask(std::string(100000, 'x'), 5s).answer.size(), 100000u);

  ChildWorker missing(ChildWorker::Helper{"/nonexistent/dlrig", {"dlrig"}});
  auto m = missing.ask("open", 5s);
  EXPECT_EQ(m.outcome, ChildWorker::Outcome::stopped);
  EXPECT_EQ(m.exit_code, 127);

  ChildWorker silent(ChildWorker::Helper{"/bin/sh", {"sh", "-c", "exec sleep 60"}});
  auto start = Clock::now();
  EXPECT_EQ(silent.ask("open", 300ms).outcome, ChildWorker::Outcome::timed_out);
  EXPECT_LT(Clock::now() - start, 2s);
  for (int i = 0; i < 100 && children_left_behind() > 0; ++i)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(children_left_behind(), 0u); // sleep ends at SIGKILL and is reaped here
}

TEST(Process, ReportsACrashBySignal) {
  auto r = run_process(sh("kill -SEGV $$"), 5s);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.signal, SIGSEGV);
}

TEST(Process, RunsInParallelUnderOneDeadline) {
  auto start = Clock::now();
  auto rs = run_processes(
      {sh("sleep 0.3; echo a"), sh("sleep 0.3; echo b"), sh("sleep 30"), sh("echo c")}, 2s);
  auto took = Clock::now() - start;
  ASSERT_EQ(rs.size(), 4u);
  EXPECT_EQ(rs[0].out, "a\n");
  EXPECT_EQ(rs[1].out, "b\n");
  EXPECT_TRUE(rs[2].timed_out);
  EXPECT_EQ(rs[3].out, "c\n");
  EXPECT_LT(took, 3s); // not 0.3 + 0.3 + 2 in a row
}

TEST(Process, MissingProgramIsAnErrorNotAnException) {
  auto r = run_process({{"/nonexistent/python3"}, {}}, 1s);
  EXPECT_FALSE(r.started);
  EXPECT_NE(r.error.find("/nonexistent/python3"), std::string::npos);
  auto empty = run_process({{}, {}}, 1s);
  EXPECT_FALSE(empty.started);
}

TEST(Process, CapsTheOutput) {
  auto r = run_process(sh("head -c 100000 /dev/zero"), 5s, 1000);
  EXPECT_EQ(r.out.size(), 1000u);
  EXPECT_EQ(r.exit_code, 0);
}

TEST(Process, ExecutableFileCheck) {
  EXPECT_TRUE(is_executable_file("/bin/sh"));
  EXPECT_FALSE(is_executable_file("/etc/hostname-that-is-not-there"));
  EXPECT_FALSE(is_executable_file("/tmp")); // a folder
}

// A program that cannot be started: reexec_self returns why and leaves the environment as it was
// (`dlrig bench` then goes on in this process; the success path is tests/cli's
// BenchCli.OpenblasFallbackRunsAgainWithItsCore).
TEST(Process, ReexecThatFailsSaysWhyAndRestoresTheEnvironment) {
  ::setenv("DLRIG_REEXEC_KEPT", "before", 1);
  ::unsetenv("DLRIG_REEXEC_NEW");
  auto why = reexec_self({{"DLRIG_REEXEC_KEPT", "after"}, {"DLRIG_REEXEC_NEW", "x"}},
                         "/nonexistent/dlrig");
  EXPECT_NE(why.find("/nonexistent/dlrig"), std::string::npos) << why;
  EXPECT_STREQ(std::getenv("DLRIG_REEXEC_KEPT"), "before");
  EXPECT_EQ(std::getenv("DLRIG_REEXEC_NEW"), nullptr);
  ::unsetenv("DLRIG_REEXEC_KEPT");
}

} // namespace
} // namespace dlrig
