// `dlrig bench nccl.* --rank` (docs/bench.md, "Multi-node"): two dlrig processes on localhost,
// rank 0 from the flags and rank 1 from torchrun's environment, complete every collective through
// the fake NCCL (tests/fake_nccl: the processes exchange the data through files under the unique
// id); a rendezvous that times out (exit 69), a peer that sends junk, ranks whose nranks differ
// and two ranks on one GPU (exit 65), a communicator NCCL refuses (exit 69); a rank that is killed
// or fails mid-run, or NCCL's asynchronous error, stops the job on every rank (exit 2) where NCCL
// alone would wait for ever.
#include "support/cli.hpp"

#include "dlrig/platform/tcp.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <future>
#include <map>

namespace dlrig::test {
namespace {

using nlohmann::json;

// A port nothing listens on now (the kernel's choice for port 0, released again).
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

std::vector<std::string> fakes(const std::string &meeting,
                               const std::string &nccl_scenario = "nvlink.json",
                               const std::string &cuda_scenario = "two_gpus.json") {
  return {std::string("DLRIG_CUDA_LIBRARY=") + DLRIG_FAKE_CUDA,
          "DLRIG_FAKE_CUDA_SCENARIO=" + fixture("fake_cuda/" + cuda_scenario),
          // A collective whose other ranks never come: the fake libcuda's waits give up after
          // this long (real CUDA waits for ever), so a rank that missed the job's end fails late.
          "DLRIG_FAKE_CUDA_HOLD_S=60", std::string("DLRIG_NCCL_LIBRARY=") + DLRIG_FAKE_NCCL,
          "DLRIG_FAKE_NCCL_SCENARIO=" + fixture("fake_nccl/" + nccl_scenario),
          "DLRIG_FAKE_NCCL_DIR=" + scratch(meeting).string(), "DLRIG_BENCH_SMALL=1",
          "DLRIG_FAKE_NCCL_WAIT_S=20"};
}

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Rank 0 and rank 1 of one job, started together: their runs in rank order.
struct Ranks {
  CliRun r0, r1;
};
Ranks two_ranks(const std::vector<std::string> &args0, const std::vector<std::string> &env0,
                const std::vector<std::string> &args1, const std::vector<std::string> &env1) {
  auto rank0 = std::async(std::launch::async, [&] { return run_dlrig(args0, env0); });
  auto rank1 = std::async(std::launch::async, [&] { return run_dlrig(args1, env1); });
  CliRun r0 = rank0.get();
  return {std::move(r0), rank1.get()};
}

TEST(BenchNcclRanksCli, TwoProcessesCompleteEveryCollectiveAndRankZeroReports) {
  const int port = free_port();
  const std::string db = scratch("ranks.db").string();
  // Rank 1 as torchrun starts it: no flags, its environment.
  const auto [r0, r1] =
      two_ranks({"bench", "--quick", "--json", "--db", db, "nccl", "--rank", "0", "--nranks", "2",
                 "--rendezvous", "127.0.0.1:" + std::to_string(port)},
                fakes("meet_ok"), {"bench", "--quick", "--json", "nccl"},
                with({"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_ADDR=127.0.0.1",
                      "MASTER_PORT=" + std::to_string(port - 1)},
                     fakes("meet_ok")));
  ASSERT_EQ(r0.exit_code, 0) << r0.err << "\n--- rank 1:\n" << r1.err;
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  const json results = json::parse(r0.out).at("results");
  ASSERT_EQ(results.size(), 5u);
  for (const auto &r : results) {
    ASSERT_EQ(r["status"], "measured") << r.dump();
    EXPECT_EQ(r["config"], "2 ranks 1 MiB");
    const auto &d = r["details"];
    EXPECT_EQ(d["ranks"], 2);
    EXPECT_EQ(d["processes"], 2);
    EXPECT_EQ(d["this_rank"], 0);
    EXPECT_EQ(d["samples_fixed"], 5);
    EXPECT_EQ(d["gpus"].size(), 1u); // this rank's GPU
    EXPECT_EQ(d["gpus"][0]["gpu"], 0);
  }
  auto busbw = [&](const std::string &id) {
    for (const auto &r : results)
      if (r["id"] == id)
        return r["rate"]["median"].get<double>();
    return 0.0;
  };
  // The scenario's bus bandwidths through nccl-tests' formulas, across two processes.
  EXPECT_NEAR(busbw("nccl.all_reduce"), 180, 1.8);
  EXPECT_NEAR(busbw("nccl.sendrecv"), 40, 0.4);
  // Rank 1: nothing on stdout, one line per result on stderr, nothing stored.
  EXPECT_EQ(r1.out, "");
  EXPECT_NE(r1.err.find("bench: rank 1 of 2: nccl.all_reduce 2 ranks 1 MiB: measured"),
            std::string::npos)
      << r1.err;
  EXPECT_NE(r1.err.find("torchrun's environment"), std::string::npos) << r1.err;
  auto h = run_dlrig({"bench", "history", "nccl.all_reduce", "--db", db, "--json"});
  ASSERT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(json::parse(h.out)["results"].size(), 1u);
}

// The job's time is the slowest rank's per sample (the ranks' times reduced with ncclMax after
// the timed loop): rank 1's stream takes twice as long, so both ranks report half the scenario's
// busbw, and rank 0 keeps its own median beside it. Rank 1 runs under srun's variables.
TEST(BenchNcclRanksCli, TheJobsTimeIsTheSlowestRanks) {
  const int port = free_port();
  const std::string at = "127.0.0.1:" + std::to_string(port);
  // Rank 1 as srun starts it: --rendezvous alone, the rank and size from Slurm's variables.
  const auto [r0, r1] =
      two_ranks({"bench", "--quick", "--json", "--db", scratch("ranks_s.db").string(),
                 "nccl.all_reduce", "--rank", "0", "--nranks", "2", "--rendezvous", at},
                fakes("meet_s", "slow_rank1.json"),
                {"bench", "--quick", "nccl.all_reduce", "--rendezvous", at},
                with({"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LOCALID=1"},
                     fakes("meet_s", "slow_rank1.json")));
  ASSERT_EQ(r0.exit_code, 0) << r0.err << "\n--- rank 1:\n" << r1.err;
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  const json r = json::parse(r0.out).at("results").at(0);
  ASSERT_EQ(r["status"], "measured") << r.dump();
  EXPECT_NEAR(r["rate"]["median"].get<double>(), 90, 0.9) << r.dump();
  // Rank 0's own interval: the scenario's 180 GB/s busbw over 1 MiB, 2 x (2 - 1) / 2 of it.
  const double own = 1024.0 * 1024 * 1.0 / 180e9;
  EXPECT_NEAR(r["details"]["this_rank_median_s"].get<double>(), own, own * 0.01) << r.dump();
  EXPECT_NE(r["details"]["timing"].get<std::string>().find("slowest rank"), std::string::npos);
  EXPECT_NE(r1.err.find("measured, 90 GB/s busbw median (each sample the slowest rank's)"),
            std::string::npos)
      << r1.err;
  EXPECT_NE(r1.err.find("Slurm (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID) with --rendezvous"),
            std::string::npos)
      << r1.err;
}

TEST(BenchNcclRanksCli, EachRankVerifiesItsOwnOutputAndExitsTwoWhenItIsWrong) {
  const int port = free_port();
  const std::string at = "127.0.0.1:" + std::to_string(port);
  // Rank 1 (GPU 1: no LOCAL_RANK, rank modulo the GPUs) damages its own result before verifying
  // it (the test hook): only rank 1 fails.
  const auto [r0, r1] = two_ranks(
      {"bench", "--quick", "--json", "--db", scratch("ranks_w.db").string(), "nccl.all_reduce",
       "--rank", "0", "--nranks", "2", "--rendezvous", at},
      fakes("meet_w"),
      {"bench", "--quick", "nccl.all_reduce", "--rank", "1", "--nranks", "2", "--rendezvous", at},
      with({"DLRIG_BENCH_CORRUPT=1"}, fakes("meet_w")));
  EXPECT_EQ(r0.exit_code, 0) << r0.err;
  EXPECT_EQ(r1.exit_code, 2) << r1.err;
  EXPECT_NE(r1.err.find("rank 1 of 2: nccl.all_reduce 2 ranks 1 MiB: wrong: "), std::string::npos)
      << r1.err;
  EXPECT_NE(r1.err.find("rank 1 (GPU 1) element 0"), std::string::npos) << r1.err;
}

TEST(BenchNcclRanksCli, ARendezvousThatTimesOutExits69) {
  const int port = free_port();
  auto alone = run_dlrig({"bench", "nccl.all_reduce", "--rank", "1", "--nranks", "2",
                          "--rendezvous", "127.0.0.1:" + std::to_string(port)},
                         with({"DLRIG_RENDEZVOUS_TIMEOUT_S=1"}, fakes("meet_t1")));
  EXPECT_EQ(alone.exit_code, 69) << alone.err;
  EXPECT_NE(alone.err.find("rendezvous with rank 0 at 127.0.0.1:" + std::to_string(port) +
                           " timed out after 1 s"),
            std::string::npos)
      << alone.err;
  auto root = run_dlrig({"bench", "nccl.all_reduce", "--rank", "0", "--nranks", "3", "--rendezvous",
                         "127.0.0.1:" + std::to_string(port)},
                        with({"DLRIG_RENDEZVOUS_TIMEOUT_S=1"}, fakes("meet_t0")));
  EXPECT_EQ(root.exit_code, 69) << root.err;
  EXPECT_NE(root.err.find("timed out after 1 s waiting for rank 1, 2"), std::string::npos)
      << root.err;
}

TEST(BenchNcclRanksCli, JunkFromAPeerExits65) {
  // A rank 1 whose "rank 0" is something else: it answers junk.
  const int port = free_port();
  auto listener = tcp::listen_on(port);
  ASSERT_TRUE(listener) << listener.error().message;
  auto rank1 = std::async(std::launch::async, [&] {
    return run_dlrig({"bench", "nccl.all_reduce", "--rank", "1", "--nranks", "2", "--rendezvous",
                      "127.0.0.1:" + std::to_string(port)},
                     with({"DLRIG_RENDEZVOUS_TIMEOUT_S=20"}, fakes("meet_j1")));
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  auto peer = tcp::accept_one(*listener, deadline);
  ASSERT_TRUE(peer) << peer.error().message;
  auto hello = peer->read_line(4096, deadline);
  ASSERT_TRUE(hello) << hello.error().message;
  EXPECT_EQ(hello->rfind("dlrig-nccl-rendezvous 2 rank=1 nranks=2 gpu=", 0), 0u) << *hello;
  EXPECT_NE(hello->find(" plan=nccl.all_reduce"), std::string::npos) << *hello;
  ASSERT_TRUE(peer->send_all("HTTP/1.1 400 Bad Request\r\n"));
  auto r1 = rank1.get();
  EXPECT_EQ(r1.exit_code, 65) << r1.err;
  EXPECT_NE(r1.err.find("is not a dlrig rank 0"), std::string::npos) << r1.err;

  // A rank 0 reached by something that is not a rank.
  const int port0 = free_port();
  auto rank0 = std::async(std::launch::async, [&] {
    return run_dlrig({"bench", "nccl.all_reduce", "--rank", "0", "--nranks", "2", "--rendezvous",
                      "127.0.0.1:" + std::to_string(port0)},
                     with({"DLRIG_RENDEZVOUS_TIMEOUT_S=20"}, fakes("meet_j0")));
  });
  auto junk = tcp::connect_to("127.0.0.1", port0, deadline);
  ASSERT_TRUE(junk) << junk.error().message;
  ASSERT_TRUE(junk->send_all("GET / HTTP/1.1\r\n"));
  auto answer = junk->read_line(4096, deadline);
  ASSERT_TRUE(answer) << answer.error().message;
  EXPECT_EQ(answer->rfind("error ", 0), 0u) << *answer;
  auto r0 = rank0.get();
  EXPECT_EQ(r0.exit_code, 65) << r0.err;
  EXPECT_NE(r0.err.find("not a dlrig rank's hello"), std::string::npos) << r0.err;
}

TEST(BenchNcclRanksCli, RanksWhoseNranksDifferExit65) {
  const int port = free_port();
  const std::string at = "127.0.0.1:" + std::to_string(port);
  const auto [r0, r1] =
      two_ranks({"bench", "nccl.all_reduce", "--rank", "0", "--nranks", "2", "--rendezvous", at},
                with({"DLRIG_RENDEZVOUS_TIMEOUT_S=20"}, fakes("meet_m")),
                {"bench", "nccl.all_reduce", "--rank", "1", "--nranks", "3", "--rendezvous", at},
                with({"DLRIG_RENDEZVOUS_TIMEOUT_S=20"}, fakes("meet_m")));
  EXPECT_EQ(r0.exit_code, 65) << r0.err;
  EXPECT_NE(r0.err.find("was started with 3 ranks, rank 0 with 2"), std::string::npos) << r0.err;
  EXPECT_EQ(r1.exit_code, 65) << r1.err;
  EXPECT_NE(r1.err.find("refused this rank"), std::string::npos) << r1.err;
  // Flags for a benchmark that is not nccl.*, or half the flags: usage.
  auto gemm =
      run_dlrig({"bench", "gpu.gemm.bf16", "--rank", "0", "--nranks", "2", "--rendezvous", at});
  EXPECT_EQ(gemm.exit_code, 64) << gemm.err;
  auto half = run_dlrig({"bench", "nccl.all_reduce", "--rank", "0"});
  EXPECT_EQ(half.exit_code, 64) << half.err;
  EXPECT_NE(half.err.find("go together"), std::string::npos) << half.err;
}

// Two ranks on one GPU (seen on an H100: NCCL's ncclCommInitRank answered ncclInvalidUsage and
// every collective failed with exit 0): rank 0 refuses the second rank at the rendezvous, naming
// the GPU and the fix, and both exit 65 before NCCL is asked.
TEST(BenchNcclRanksCli, TwoRanksOnOneGpuAreRefusedAtTheRendezvous) {
  const int port = free_port();
  const std::string at = "127.0.0.1:" + std::to_string(port);
  const auto [r0, r1] = two_ranks(
      {"bench", "--json", "nccl.all_reduce", "--rank", "0", "--nranks", "2", "--rendezvous", at},
      with({"DLRIG_RENDEZVOUS_TIMEOUT_S=20"}, fakes("meet_dup")),
      {"bench", "nccl.all_reduce", "--rank", "1", "--nranks", "2", "--rendezvous", at},
      with({"LOCAL_RANK=0", "DLRIG_RENDEZVOUS_TIMEOUT_S=20"}, fakes("meet_dup")));
  EXPECT_EQ(r0.exit_code, 65) << r0.err;
  EXPECT_NE(r0.err.find("and rank 0 would both drive GPU 0000:"), std::string::npos) << r0.err;
  EXPECT_NE(r0.err.find("NCCL allows one rank per GPU"), std::string::npos) << r0.err;
  EXPECT_NE(r0.err.find("LOCAL_RANK"), std::string::npos) << r0.err;
  EXPECT_EQ(r0.out, ""); // nothing ran
  EXPECT_EQ(r1.exit_code, 65) << r1.err;
  EXPECT_NE(r1.err.find("refused this rank"), std::string::npos) << r1.err;
  // NCCL was never asked (the fake NCCL would have printed "Duplicate GPU detected").
  EXPECT_EQ(r1.err.find("Duplicate GPU"), std::string::npos) << r1.err;
}

// A communicator NCCL refuses leaves a rank nothing to run: exit 69 naming the call, no results
// (on the H100 every size failed in turn and the job exited 0).
TEST(BenchNcclRanksCli, ACommunicatorNcclRefusesExits69) {
  auto r = run_dlrig({"bench", "--json", "nccl.all_reduce", "--rank", "0", "--nranks", "1",
                      "--rendezvous", "127.0.0.1:" + std::to_string(free_port())},
                     fakes("meet_refused", "init_rank_fails.json"));
  EXPECT_EQ(r.exit_code, 69) << r.err;
  EXPECT_NE(r.err.find("rank 0 of 1: ncclCommInitRank"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

// NCCL_DEBUG makes NCCL write its log to standard output (seen on an H100: "NCCL version ..."
// ahead of --json's document). With standard error a pipe dlrig sends NCCL's log there; with
// standard error a regular file (which NCCL's fopen "w" would empty) it says what to set; a
// NCCL_DEBUG_FILE of the user's own is left alone.
TEST(BenchNcclRanksCli, NcclsDebugLogStaysOutOfTheResults) {
  const std::string db = scratch("nccl_debug.db").string();
  auto args = [&] {
    return std::vector<std::string>{"bench",
                                    "--quick",
                                    "--json",
                                    "--db",
                                    db,
                                    "nccl.all_reduce",
                                    "--rank",
                                    "0",
                                    "--nranks",
                                    "1",
                                    "--rendezvous",
                                    "127.0.0.1:" + std::to_string(free_port())};
  };
  const auto env = with({"NCCL_DEBUG=WARN"}, fakes("meet_debug"));
  auto piped = run_dlrig_with(args(), env, true);
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(json::parse(piped.out)["results"].size(), 1u); // the whole of stdout is the document
  EXPECT_NE(piped.err.find("NCCL version 22109 (fake NCCL)"), std::string::npos) << piped.err;
  EXPECT_EQ(piped.err.find("NCCL_DEBUG is set"), std::string::npos) << piped.err;

  auto to_file = run_dlrig(args(), env);
  EXPECT_NE(to_file.err.find("NCCL_DEBUG is set, so NCCL writes its log to standard output"),
            std::string::npos)
      << to_file.err;
  EXPECT_NE(to_file.err.find("set NCCL_DEBUG_FILE"), std::string::npos) << to_file.err;

  const std::string own = scratch("nccl-own.log").string();
  auto theirs = run_dlrig_with(args(), with({"NCCL_DEBUG_FILE=" + own}, env), true);
  ASSERT_EQ(theirs.exit_code, 0) << theirs.err;
  EXPECT_EQ(json::parse(theirs.out)["results"].size(), 1u);
  EXPECT_EQ(theirs.err.find("NCCL version"), std::string::npos) << theirs.err;
  std::ifstream log(own);
  std::string line;
  std::getline(log, line);
  EXPECT_EQ(line, "NCCL version 22109 (fake NCCL)");
}

// The results of a run's --json output, by id.
std::map<std::string, json> by_id(const CliRun &r) {
  std::map<std::string, json> out;
  const json all = json::parse(r.out);
  for (const auto &x : all.at("results"))
    out[x["id"].get<std::string>()] = x;
  return out;
}

// Rank 1 is killed (SIGKILL) at its 31st collective, inside nccl.all_gather: where NCCL would
// leave rank 0 inside that collective for ever (the fake libcuda gives up after 60 s), rank 0
// sees rank 1's connection close, aborts its communicator and fails the rest naming rank 1; what
// it measured before stays printed and stored.
TEST(BenchNcclRanksCli, ARankKilledMidRunStopsTheJob) {
  const int port = free_port();
  const std::string at = "127.0.0.1:" + std::to_string(port);
  const std::string db = scratch("ranks_killed.db").string();
  const auto started = std::chrono::steady_clock::now();
  const auto [r0, r1] =
      two_ranks({"bench", "--quick", "--json", "--db", db, "nccl", "--rank", "0", "--nranks", "2",
                 "--rendezvous", at},
                fakes("meet_killed", "rank1_killed.json"),
                {"bench", "--quick", "nccl", "--rank", "1", "--nranks", "2", "--rendezvous", at},
                fakes("meet_killed", "rank1_killed.json"));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_NE(r1.exit_code, 0) << r1.err;
  EXPECT_NE(r1.err.find("rank 1 killed at operation 30"), std::string::npos) << r1.err;
  EXPECT_EQ(r0.exit_code, 2) << r0.err;
  const auto results = by_id(r0);
  ASSERT_EQ(results.size(), 5u) << r0.out;
  EXPECT_EQ(results.at("nccl.all_reduce")["status"], "measured") << r0.out;
  for (const char *id :
       {"nccl.all_gather", "nccl.reduce_scatter", "nccl.broadcast", "nccl.sendrecv"}) {
    const json &r = results.at(id);
    EXPECT_EQ(r["status"], "failed") << r.dump();
    const std::string why = r["reason"].get<std::string>();
    EXPECT_NE(why.find("the job stopped: rank 1 (127.0.0.1:"), std::string::npos) << why;
    EXPECT_NE(why.find("closed its connection before finishing its run"), std::string::npos) << why;
    EXPECT_NE(why.find("aborted its NCCL communicator"), std::string::npos) << why;
  }
  EXPECT_NE(r0.err.find("bench: the job stopped: rank 1 ("), std::string::npos) << r0.err;
  EXPECT_EQ(r0.err.find("fake libcuda"), std::string::npos) << r0.err; // no wait gave up
  EXPECT_LT(seconds, 50) << r0.err;
  auto h = run_dlrig({"bench", "history", "nccl.all_reduce", "--db", db, "--json"});
  ASSERT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(json::parse(h.out)["results"].size(), 1u); // measured before the stop, kept
}

// Rank 1 dies as it enters the call that makes its communicator, under `env`: rank 0 watches rank
// 1's connection meanwhile, names rank 1, says what became of its own call (`after`) and exits 69
// (nothing ran) within seconds, long before the fake's own give-up.
void expect_rank1_killed_at_init(const std::vector<std::string> &env, const std::string &after) {
  const int port = free_port();
  const std::string at = "127.0.0.1:" + std::to_string(port);
  const auto started = std::chrono::steady_clock::now();
  const auto [r0, r1] = two_ranks(
      {"bench", "--quick", "--json", "nccl.all_reduce", "--rank", "0", "--nranks", "2",
       "--rendezvous", at},
      env,
      {"bench", "--quick", "nccl.all_reduce", "--rank", "1", "--nranks", "2", "--rendezvous", at},
      env);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_NE(r1.exit_code, 0) << r1.err;
  EXPECT_NE(r1.err.find("rank 1 killed in ncclCommInitRank"), std::string::npos) << r1.err;
  EXPECT_EQ(r0.exit_code, 69) << r0.err;
  EXPECT_NE(r0.err.find("the job stopped: rank 1 (127.0.0.1:"), std::string::npos) << r0.err;
  EXPECT_NE(r0.err.find("closed its connection before finishing its run"), std::string::npos)
      << r0.err;
  EXPECT_NE(r0.err.find(after), std::string::npos) << r0.err;
  EXPECT_EQ(r0.err.find("never met"), std::string::npos) << r0.err; // not the fake's give-up
  EXPECT_EQ(r0.out, "");
  EXPECT_LT(seconds, 15) << r0.err;
}

// NCCL's bootstrap would leave rank 0 inside ncclCommInitRankConfig for ever (the fake gives up
// after DLRIG_FAKE_NCCL_WAIT_S, 20 s). The communicator is non-blocking, so rank 0 polls it and
// aborts it.
TEST(BenchNcclRanksCli, ARankThatDiesBeforeTheCommunicatorExistsStopsTheJob) {
  expect_rank1_killed_at_init(fakes("meet_init_killed", "rank1_killed_at_init.json"),
                              "aborted its NCCL communicator");
}

// Ranks that met at the rendezvous but whose NCCL connections are never made (rank 1's stay in
// progress: the wrong interface, a firewall between the nodes) would wait inside NCCL for ever:
// the communicator's creation (`call`) is bounded by DLRIG_RENDEZVOUS_TIMEOUT_S, and both ranks
// exit 69 naming the likely causes, long before the fake's own give-up.
void expect_init_times_out(const std::vector<std::string> &env, const std::string &call) {
  const int port = free_port();
  const std::string at = "127.0.0.1:" + std::to_string(port);
  const auto started = std::chrono::steady_clock::now();
  const auto [r0, r1] = two_ranks(
      {"bench", "--quick", "--json", "nccl.all_reduce", "--rank", "0", "--nranks", "2",
       "--rendezvous", at},
      with({"DLRIG_RENDEZVOUS_TIMEOUT_S=2"}, env),
      {"bench", "--quick", "nccl.all_reduce", "--rank", "1", "--nranks", "2", "--rendezvous", at},
      with({"DLRIG_RENDEZVOUS_TIMEOUT_S=2"}, env));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(r0.exit_code, 69) << r0.err;
  EXPECT_EQ(r1.exit_code, 69) << r1.err;
  // Whichever rank gives up first tells the other.
  const std::string both = r0.err + r1.err;
  EXPECT_NE(both.find(call + " did not finish within 2 s although every rank had met at the "
                             "rendezvous"),
            std::string::npos)
      << both;
  EXPECT_NE(both.find("NCCL_SOCKET_IFNAME"), std::string::npos) << both;
  EXPECT_EQ(both.find("never met"), std::string::npos) << both; // not the fake's own give-up
  EXPECT_EQ(r0.out, "");
  EXPECT_LT(seconds, 15) << both;
}

TEST(BenchNcclRanksCli, ACommunicatorThatIsNeverMadeTimesOutNamingTheNetwork) {
  expect_init_times_out(fakes("meet_never_joins", "rank1_never_joins.json"),
                        "ncclCommInitRankConfig");
}

// An NCCL before 2.14 (no ncclCommInitRankConfig) makes a job's communicator with the blocking
// ncclCommInitRank, on a thread of its own with the rank's GPU current (the fake libcuda's current
// context is per thread, as CUDA's): the job runs as with a newer NCCL.
std::vector<std::string> before_2_14(const std::string &meeting, const std::string &scenario) {
  return with({std::string("DLRIG_NCCL_LIBRARY=") + DLRIG_FAKE_NCCL_BEFORE_2_14},
              fakes(meeting, scenario));
}

TEST(BenchNcclRanksCli, AnNcclBefore2_14MakesTheCommunicatorWithTheBlockingCall) {
  const int port = free_port();
  const std::string at = "127.0.0.1:" + std::to_string(port);
  const auto [r0, r1] = two_ranks(
      {"bench", "--quick", "--json", "--db", scratch("ranks_old.db").string(), "nccl.all_reduce",
       "nccl.sendrecv", "--rank", "0", "--nranks", "2", "--rendezvous", at},
      before_2_14("meet_old", "before_2_14.json"),
      {"bench", "--quick", "nccl.all_reduce", "nccl.sendrecv", "--rank", "1", "--nranks", "2",
       "--rendezvous", at},
      before_2_14("meet_old", "before_2_14.json"));
  ASSERT_EQ(r0.exit_code, 0) << r0.err << "\n--- rank 1:\n" << r1.err;
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  const json results = json::parse(r0.out).at("results");
  ASSERT_EQ(results.size(), 2u);
  for (const json &r : results) {
    EXPECT_EQ(r["status"], "measured") << r.dump();
    EXPECT_EQ(r["details"]["processes"], 2);
  }
}

// With that blocking call, a rank that dies as the communicator is made would leave the others
// inside NCCL's bootstrap for ever: they watch the rendezvous's connections meanwhile and stop,
// saying the call is left behind (the fake's blocking bootstrap gives up only after 60 s here).
TEST(BenchNcclRanksCli, ARankThatDiesInsideABlockingInitStopsTheJob) {
  expect_rank1_killed_at_init(
      with({"DLRIG_FAKE_NCCL_WAIT_S=60"},
           before_2_14("meet_old_killed", "before_2_14_rank1_killed_at_init.json")),
      "ncclCommInitRank could not be interrupted (NCCL before 2.14");
}

// ... and ranks whose blocking init never connects stop after DLRIG_RENDEZVOUS_TIMEOUT_S.
TEST(BenchNcclRanksCli, ABlockingInitThatNeverConnectsTimesOut) {
  expect_init_times_out(with({"DLRIG_FAKE_NCCL_WAIT_S=60"},
                             before_2_14("meet_old_never", "before_2_14_rank1_never_joins.json")),
                        "ncclCommInitRank");
}

// On that blocking communicator a first send and receive connect the two ranks inside
// ncclGroupEnd (NCCL makes point-to-point connections when they are first used), where a rank
// that died leaves the other for ever: the call runs on a thread of its own while the rank watches
// the rendezvous's connections, and the job stops saying the call is left behind (the fake's
// blocking connection gives up only after 60 s here). The all-reduce before it is kept. Rank 0's
// ncclSend is still running as the job stops (the fake's watch_send_buffer holds it 3 s, and rank
// 1 dies only once it has started): the
// call left behind keeps its buffers, which the fake checks (it killed rank 0, exit 134, when
// they were freed under it; a thread that read the benchmark's gone frame crashed it, 139).
TEST(BenchNcclRanksCli, ARankThatDiesAsAFirstSendrecvConnectsStopsTheJob) {
  const int port = free_port();
  const std::string at = "127.0.0.1:" + std::to_string(port);
  const std::string db = scratch("ranks_old_connect.db").string();
  const auto env =
      with({"DLRIG_FAKE_NCCL_WAIT_S=60"},
           before_2_14("meet_old_connect", "before_2_14_rank1_killed_at_connect.json"));
  const auto started = std::chrono::steady_clock::now();
  const auto [r0, r1] =
      two_ranks({"bench", "--quick", "--json", "--db", db, "nccl.all_reduce", "nccl.sendrecv",
                 "--rank", "0", "--nranks", "2", "--rendezvous", at},
                env,
                {"bench", "--quick", "nccl.all_reduce", "nccl.sendrecv", "--rank", "1", "--nranks",
                 "2", "--rendezvous", at},
                env);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_NE(r1.exit_code, 0) << r1.err;
  EXPECT_NE(r1.err.find("rank 1 killed connecting to rank 0"), std::string::npos) << r1.err;
  EXPECT_EQ(r0.exit_code, 2) << r0.err;
  const auto results = by_id(r0);
  ASSERT_EQ(results.size(), 2u) << r0.out;
  EXPECT_EQ(results.at("nccl.all_reduce")["status"], "measured") << r0.out;
  const json &r = results.at("nccl.sendrecv");
  EXPECT_EQ(r["status"], "failed") << r.dump();
  const std::string why = r["reason"].get<std::string>();
  EXPECT_NE(why.find("the job stopped: rank 1 (127.0.0.1:"), std::string::npos) << why;
  EXPECT_NE(why.find("closed its connection before finishing its run"), std::string::npos) << why;
  EXPECT_NE(why.find("this rank's ncclGroupEnd could not be interrupted (NCCL before 2.14 has no "
                     "non-blocking communicator) and ends with the process"),
            std::string::npos)
      << why;
  EXPECT_EQ(r0.err.find("never made"), std::string::npos) << r0.err; // not the fake's give-up
  EXPECT_LT(seconds, 15) << r0.err;
  auto h = run_dlrig({"bench", "history", "nccl.all_reduce", "--db", db, "--json"});
  ASSERT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(json::parse(h.out)["results"].size(), 1u); // measured before the stop, kept
}

// ... and ranks whose first send and receive never connect (both alive: the wrong interface, a
// firewall) stop after DLRIG_RENDEZVOUS_TIMEOUT_S, naming the likely causes.
TEST(BenchNcclRanksCli, ABlockingFirstSendrecvThatNeverConnectsTimesOut) {
  const int port = free_port();
  const std::string at = "127.0.0.1:" + std::to_string(port);
  const auto env =
      with({"DLRIG_FAKE_NCCL_WAIT_S=60", "DLRIG_RENDEZVOUS_TIMEOUT_S=2"},
           before_2_14("meet_old_no_connect", "before_2_14_rank1_never_connects.json"));
  const auto started = std::chrono::steady_clock::now();
  const auto [r0, r1] = two_ranks(
      {"bench", "--quick", "--json", "--db", scratch("ranks_old_no_connect.db").string(),
       "nccl.sendrecv", "--rank", "0", "--nranks", "2", "--rendezvous", at},
      env,
      {"bench", "--quick", "nccl.sendrecv", "--rank", "1", "--nranks", "2", "--rendezvous", at},
      env);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(r0.exit_code, 2) << r0.err << "\n--- rank 1:\n" << r1.err;
  EXPECT_EQ(r1.exit_code, 2) << r1.err;
  const std::string both = r0.err + r1.err;
  EXPECT_NE(both.find("ncclGroupEnd did not finish within 2 s although every rank had met at the "
                      "rendezvous"),
            std::string::npos)
      << both;
  EXPECT_NE(both.find("NCCL_SOCKET_IFNAME"), std::string::npos) << both;
  EXPECT_EQ(both.find("never made"), std::string::npos) << both; // not the fake's give-up
  EXPECT_LT(seconds, 15) << both;
}

// Rank 1 cannot allocate its buffers (out of memory on its GPU): it stops the job and tells rank
// 0, which is already waiting inside the first collective; both exit 2 naming rank 1's failure.
TEST(BenchNcclRanksCli, ARankThatFailsAConfigurationStopsTheJob) {
  const int port = free_port();
  const std::string at = "127.0.0.1:" + std::to_string(port);
  const auto [r0, r1] = two_ranks(
      {"bench", "--quick", "--json", "--db", scratch("ranks_oom.db").string(), "nccl.all_reduce",
       "nccl.broadcast", "--rank", "0", "--nranks", "2", "--rendezvous", at},
      fakes("meet_oom", "nvlink.json", "two_gpus_gpu1_out_of_memory.json"),
      {"bench", "--quick", "nccl.all_reduce", "nccl.broadcast", "--rank", "1", "--nranks", "2",
       "--rendezvous", at},
      fakes("meet_oom", "nvlink.json", "two_gpus_gpu1_out_of_memory.json"));
  EXPECT_EQ(r0.exit_code, 2) << r0.err << "\n--- rank 1:\n" << r1.err;
  EXPECT_EQ(r1.exit_code, 2) << r1.err;
  const auto results = by_id(r0);
  ASSERT_EQ(results.size(), 2u) << r0.out;
  for (const auto &[id, r] : results) {
    EXPECT_EQ(r["status"], "failed") << r.dump();
    const std::string why = r["reason"].get<std::string>();
    EXPECT_NE(why.find("the job stopped: rank 1 failed nccl.all_reduce 2 ranks 1 MiB: "),
              std::string::npos)
        << why;
    EXPECT_NE(why.find("out of memory"), std::string::npos) << why;
  }
  EXPECT_NE(r1.err.find("rank 1 of 2: the job stopped: rank 1 failed nccl.all_reduce"),
            std::string::npos)
      << r1.err;
  EXPECT_EQ(r0.err.find("fake libcuda"), std::string::npos) << r0.err;
}

// NCCL's asynchronous error (ncclCommGetAsyncError; its network transport reports
// ncclRemoteError when a peer's connection drops): rank 0 stops the job at its 31st collective
// and rank 1, waiting for rank 0's data, hears it from rank 0.
TEST(BenchNcclRanksCli, NcclsAsynchronousErrorStopsTheJob) {
  const int port = free_port();
  const std::string at = "127.0.0.1:" + std::to_string(port);
  const auto [r0, r1] =
      two_ranks({"bench", "--quick", "--json", "--db", scratch("ranks_async.db").string(), "nccl",
                 "--rank", "0", "--nranks", "2", "--rendezvous", at},
                fakes("meet_async", "async_error_rank0.json"),
                {"bench", "--quick", "nccl", "--rank", "1", "--nranks", "2", "--rendezvous", at},
                fakes("meet_async", "async_error_rank0.json"));
  EXPECT_EQ(r0.exit_code, 2) << r0.err << "\n--- rank 1:\n" << r1.err;
  EXPECT_EQ(r1.exit_code, 2) << r1.err;
  const auto results = by_id(r0);
  EXPECT_EQ(results.at("nccl.all_reduce")["status"], "measured") << r0.out;
  const std::string why = results.at("nccl.all_gather")["reason"].get<std::string>();
  EXPECT_NE(why.find("the job stopped: rank 0: NCCL reported ncclRemoteError (6): remote process "
                     "exited or there was a network error on its communicator "
                     "(ncclCommGetAsyncError)"),
            std::string::npos)
      << why;
  EXPECT_NE(r1.err.find("rank 1 of 2: the job stopped: rank 0: NCCL reported ncclRemoteError"),
            std::string::npos)
      << r1.err;
  EXPECT_EQ(r1.err.find("fake libcuda"), std::string::npos) << r1.err;
}

// Three ranks, rank 2 killed at its fourth collective: rank 0 sees its connection close and
// passes the stop on to rank 1, which only talks to rank 0.
TEST(BenchNcclRanksCli, RankZeroPassesTheStopOnToTheOtherRanks) {
  const int port = free_port();
  const std::string at = "127.0.0.1:" + std::to_string(port);
  auto env = [&] { return fakes("meet_three", "rank2_killed.json", "three_gpus.json"); };
  auto rank = [&](int r) {
    std::vector<std::string> args = {"bench",  "--quick",         "nccl.all_reduce",
                                     "--rank", std::to_string(r), "--nranks",
                                     "3",      "--rendezvous",    at};
    if (r == 0)
      args.insert(args.begin() + 2, {"--json", "--db", scratch("ranks_three.db").string()});
    return std::async(std::launch::async, [args, e = env()] { return run_dlrig(args, e); });
  };
  auto f0 = rank(0), f1 = rank(1), f2 = rank(2);
  const CliRun r0 = f0.get(), r1 = f1.get(), r2 = f2.get();
  EXPECT_NE(r2.exit_code, 0) << r2.err;
  EXPECT_EQ(r0.exit_code, 2) << r0.err;
  EXPECT_EQ(r1.exit_code, 2) << r1.err;
  const std::string why = by_id(r0).at("nccl.all_reduce")["reason"].get<std::string>();
  EXPECT_NE(why.find("the job stopped: rank 2 (127.0.0.1:"), std::string::npos) << why;
  EXPECT_NE(r1.err.find("rank 1 of 3: the job stopped: rank 2 (127.0.0.1:"), std::string::npos)
      << r1.err;
  EXPECT_EQ(r1.err.find("fake libcuda"), std::string::npos) << r1.err;
}

// GPU 1 has 1 MiB free, a 1 MiB collective needs 2: the size is skipped, not shrunk. Alone that
// would leave rank 0 inside the collective; the ranks vote first, so both skip it and the job
// ends normally, rank 0 naming the rank that lacked memory.
TEST(BenchNcclRanksCli, ASizeOneRankCannotHoldIsSkippedByEveryRank) {
  const int port = free_port();
  const std::string at = "127.0.0.1:" + std::to_string(port);
  const auto env = fakes("meet_free", "nvlink.json", "two_gpus_little_free.json");
  const auto [r0, r1] = two_ranks(
      {"bench", "--quick", "--json", "--db", scratch("ranks_free.db").string(), "nccl.all_reduce",
       "nccl.sendrecv", "--rank", "0", "--nranks", "2", "--rendezvous", at},
      env,
      {"bench", "--quick", "nccl.all_reduce", "nccl.sendrecv", "--rank", "1", "--nranks", "2",
       "--rendezvous", at},
      env);
  EXPECT_EQ(r0.exit_code, 0) << r0.err << "\n--- rank 1:\n" << r1.err;
  EXPECT_EQ(r1.exit_code, 0) << r1.err;
  const auto results = by_id(r0);
  ASSERT_EQ(results.size(), 2u) << r0.out;
  for (const auto &[id, r] : results) {
    EXPECT_EQ(r["status"], "skipped") << r.dump();
    EXPECT_NE(r["reason"].get<std::string>().find("rank 1 has too little free device memory for "
                                                  "this size"),
              std::string::npos)
        << r.dump();
  }
  EXPECT_NE(r1.err.find("rank 1 of 2: nccl.all_reduce 2 ranks 1 MiB: skipped: needs 2097152 B "
                        "(2.0 MiB) of device memory on GPU 1"),
            std::string::npos)
      << r1.err;
  // One process driving both GPUs: skipped with the same reason.
  auto one = run_dlrig(
      {"bench", "--quick", "--json", "--db", scratch("free_one.db").string(), "nccl.all_reduce"},
      env);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const json r = by_id(one).at("nccl.all_reduce");
  EXPECT_EQ(r["status"], "skipped") << r.dump();
  EXPECT_NE(r["reason"].get<std::string>().find("of device memory on GPU 1"), std::string::npos)
      << r.dump();
}

// Ctrl-C on rank 0 (the fake libcuda raises SIGINT during nccl.all_reduce): rank 0 finishes that
// configuration, starts no other and exits 130 as a single run does; rank 1, already waiting in
// nccl.all_gather, is told and stops instead of waiting for rank 0 for ever.
TEST(BenchNcclRanksCli, CtrlCOnRankZeroStopsTheJob) {
  const int port = free_port();
  const std::string at = "127.0.0.1:" + std::to_string(port);
  const auto env = fakes("meet_int", "nvlink.json", "two_gpus_interrupt_gpu0.json");
  const auto [r0, r1] = two_ranks(
      {"bench", "--quick", "--json", "--db", scratch("ranks_int.db").string(), "nccl.all_reduce",
       "nccl.all_gather", "nccl.broadcast", "--rank", "0", "--nranks", "2", "--rendezvous", at},
      env,
      {"bench", "--quick", "nccl.all_reduce", "nccl.all_gather", "nccl.broadcast", "--rank", "1",
       "--nranks", "2", "--rendezvous", at},
      env);
  EXPECT_EQ(r0.exit_code, 130) << r0.err;
  EXPECT_EQ(r1.exit_code, 2) << r1.err;
  const auto results = by_id(r0);
  ASSERT_EQ(results.size(), 1u) << r0.out;
  EXPECT_EQ(results.at("nccl.all_reduce")["status"], "measured") << r0.out;
  EXPECT_NE(r1.err.find("rank 1 of 2: nccl.all_gather 2 ranks 1 MiB: failed: the job stopped: "
                        "rank 0 was interrupted before the end of its run"),
            std::string::npos)
      << r1.err;
  EXPECT_EQ(r1.err.find("fake libcuda"), std::string::npos) << r1.err;
}

} // namespace
} // namespace dlrig::test
