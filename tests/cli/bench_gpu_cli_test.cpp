// `dlrig bench` GPU families through the real binary and the fake libcuda (tests/fake_cuda), one
// scenario per run (tests/data/fake_cuda): the runner, skips with their reasons, verification
// failures (exit 2), faults (a lost GPU keeps the results so far, exit 2), Ctrl-C (exit 130,
// device memory freed), the results database.
#include "support/cli.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>

#include <filesystem>
#include <fstream>

namespace dlrig::test {
namespace {

using nlohmann::json;

// The fake libcuda with `scenario`, and the fake cuBLASLt with its H100 scenario (a test that
// wants another puts its own DLRIG_CUBLASLT_* entries first: the first entry of a name wins).
std::vector<std::string> fake_cuda(const std::string &scenario) {
  return {std::string("DLRIG_CUDA_LIBRARY=") + DLRIG_FAKE_CUDA,
          "DLRIG_FAKE_CUDA_SCENARIO=" + fixture("fake_cuda/" + scenario),
          std::string("DLRIG_CUBLASLT_LIBRARY=") + DLRIG_FAKE_CUBLASLT,
          "DLRIG_FAKE_CUBLASLT_SCENARIO=" + fixture("fake_cublaslt/h100.json")};
}

std::vector<std::string> fake_nccl(const std::string &scenario) {
  return {std::string("DLRIG_NCCL_LIBRARY=") + DLRIG_FAKE_NCCL,
          "DLRIG_FAKE_NCCL_SCENARIO=" + fixture("fake_nccl/" + scenario)};
}

std::vector<std::string> fake_blas(const std::string &scenario) {
  return {"DLRIG_FAKE_CUBLASLT_SCENARIO=" + fixture("fake_cublaslt/" + scenario)};
}

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct GpuRun {
  CliRun run;
  json results = json::array();
  std::string db;
};

GpuRun bench(const std::string &scenario, const std::vector<std::string> &names,
             std::vector<std::string> extra_env = {}, bool small = true) {
  GpuRun g;
  g.db = scratch("gpu_" + scenario + ".db").string();
  std::filesystem::remove(g.db);
  std::vector<std::string> args{"bench", "--quick", "--json", "--db", g.db};
  args.insert(args.end(), names.begin(), names.end());
  auto env = extra_env;
  auto fakes = fake_cuda(scenario);
  env.insert(env.end(), fakes.begin(), fakes.end());
  if (small)
    env.push_back("DLRIG_BENCH_SMALL=1");
  g.run = run_dlrig(args, env);
  if (!g.run.out.empty())
    g.results = json::parse(g.run.out).at("results");
  return g;
}

const json *result(const GpuRun &g, const std::string &id) {
  for (auto &r : g.results)
    if (r["id"] == id)
      return &r;
  return nullptr;
}

TEST(BenchGpuCli, ListSaysWhyEveryGpuBenchmarkCannotRunWithoutADriver) {
  auto r =
      run_dlrig({"bench", "--list", "--json"}, {"DLRIG_CUDA_LIBRARY=libdlrig-absent-cuda.so.1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int gpu = 0;
  const json list = json::parse(r.out);
  for (auto &b : list.at("benchmarks"))
    if (b["family"].get<std::string>().rfind("gpu.", 0) == 0) {
      ++gpu;
      EXPECT_FALSE(b["can_run"].get<bool>()) << b.dump();
      EXPECT_EQ(b["reason"], "no NVIDIA driver (libdlrig-absent-cuda.so.1 not found)");
    }
  EXPECT_EQ(gpu, 21);
  auto table = run_dlrig({"bench", "--list"}, {"DLRIG_CUDA_LIBRARY=libdlrig-absent-cuda.so.1"});
  EXPECT_NE(table.out.find("no: no NVIDIA driver"), std::string::npos) << table.out;
}

TEST(BenchGpuCli, ListWithOneFakeGpuSaysP2pNeedsTwo) {
  auto r = run_dlrig({"bench", "--list", "--json"}, fake_cuda("one_gpu.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json list = json::parse(r.out);
  int gpu = 0;
  for (auto &b : list.at("benchmarks")) {
    gpu += b["family"].get<std::string>().rfind("gpu.", 0) == 0;
    if (b["family"] == "gpu.p2p") {
      EXPECT_EQ(b["reason"], "needs 2 GPUs, 1 here");
    } else if (b["id"] == "gpu.gemm.mxfp8") { // an H100: MXFP8 is Blackwell's
      EXPECT_FALSE(b["can_run"].get<bool>()) << b.dump();
    } else if (b["family"].get<std::string>().rfind("gpu.", 0) == 0) {
      EXPECT_TRUE(b["can_run"].get<bool>()) << b.dump();
    }
  }
  EXPECT_EQ(gpu, 21);
}

// NVML that does not answer at the probe (a GPU or the driver has stopped responding): cuInit
// would hang on the same GPU, so every GPU benchmark is skipped with that reason before the
// driver is opened, in --list and in a run, and the host's benchmarks still run.
TEST(BenchGpuCli, NvmlThatDoesNotAnswerSkipsEveryGpuBenchmark) {
  auto scenario = json::parse(std::ifstream(fixture("fake_cuda/nvml_h100_xid.json")));
  scenario["hang_ms"] = {{"nvmlInit_v2", 120000}};
  auto path = scratch("nvml-hang-bench.json").string();
  std::ofstream(path) << scenario.dump();
  auto env = with(fake_cuda("one_gpu.json"), {std::string("DLRIG_NVML_LIBRARY=") + DLRIG_FAKE_NVML,
                                              "DLRIG_FAKE_NVML_SCENARIO=" + path});
  const std::string why = "NVML did not answer when the machine was probed (doctor: "
                          "gpu.nvml-not-responding)";
  const auto start = std::chrono::steady_clock::now();
  auto list = run_dlrig({"bench", "--list", "--json", "--nvml-timeout", "0.5"}, env);
  ASSERT_EQ(list.exit_code, 0) << list.err;
  int gpu = 0;
  const json listed = json::parse(list.out);
  for (auto &b : listed.at("benchmarks"))
    if (b["family"].get<std::string>().rfind("gpu.", 0) == 0 ||
        b["family"].get<std::string>() == "nccl") {
      ++gpu;
      EXPECT_FALSE(b["can_run"].get<bool>()) << b.dump();
      EXPECT_EQ(b["reason"].get<std::string>().rfind(why, 0), 0u) << b.dump();
    }
  EXPECT_GE(gpu, 21);
  env.push_back("DLRIG_BENCH_SMALL=1");
  auto db = scratch("nvml-hang-bench.db").string();
  std::filesystem::remove(db);
  auto r = run_dlrig({"bench", "--quick", "--json", "--nvml-timeout", "0.5", "--db", db,
                      "gpu.memory", "gpu.launch", "cpu.stream"},
                     env);
  ASSERT_FALSE(r.out.empty()) << r.err;
  int skipped = 0, measured = 0;
  const json results = json::parse(r.out);
  for (auto &res : results.at("results")) {
    if (res["id"].get<std::string>().rfind("gpu.", 0) == 0) {
      ++skipped;
      EXPECT_EQ(res["status"], "skipped") << res.dump();
      EXPECT_EQ(res["reason"].get<std::string>().rfind(why, 0), 0u) << res.dump();
    } else {
      measured += res["status"] == "measured";
    }
  }
  EXPECT_GE(skipped, 2);
  EXPECT_GE(measured, 1) << r.out;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
}

TEST(BenchGpuCli, EveryFamilyRunsEndToEndAndIsStored) {
  // A cuBLASLt with outer-vector and block scales (12.9+), so gpu.gemm.fp8_rowwise and
  // gpu.gemm.fp8_block run too; gpu.gemm.mxfp8 needs a Blackwell GPU.
  auto g = bench("one_gpu.json", {"gpu"}, fake_blas("h100_blockwise.json"));
  ASSERT_EQ(g.run.exit_code, 0) << g.run.err;
  int measured = 0;
  for (auto &r : g.results) {
    if (r["family"] == "gpu.p2p") {
      EXPECT_EQ(r["status"], "skipped");
      EXPECT_EQ(r["reason"], "needs 2 GPUs, 1 here");
      continue;
    }
    if (r["id"] == "gpu.gemm.mxfp8") {
      EXPECT_EQ(r["status"], "skipped");
      EXPECT_NE(r["reason"].get<std::string>().find("compute capability 10.0 or later only"),
                std::string::npos)
          << r.dump();
      continue;
    }
    ASSERT_EQ(r["status"], "measured") << r.dump();
    ++measured;
    EXPECT_EQ(r["details"]["name"], "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(r["details"]["driver_version"], 12040);
    EXPECT_EQ(r["details"]["resolved_by"], "cuGetProcAddress_v2");
  }
  EXPECT_EQ(measured, 26);
  // Host-timed against the fake's busy wait for 1 MiB at 12 GB/s (87 us): the machine's load
  // shows, the order of magnitude must not.
  double pageable = result(g, "gpu.h2d.pageable")->at("rate").at("median").get<double>();
  EXPECT_GT(pageable, 6);
  EXPECT_LT(pageable, 12.5);
  EXPECT_NE(g.run.err.find("bench: gpu.memory.copy"), std::string::npos) << g.run.err;
  auto h = run_dlrig({"bench", "history", "gpu.memory.copy", "--db", g.db, "--json"});
  ASSERT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(json::parse(h.out)["results"].size(), 1u);
}

TEST(BenchGpuCli, ACorruptedCopyIsWrongAndExitsTwo) {
  auto g = bench("corrupt_dtod.json", {"gpu.memory", "gpu.h2d"});
  EXPECT_EQ(g.run.exit_code, 2) << g.run.err;
  EXPECT_EQ(result(g, "gpu.memory.copy")->at("status"), "wrong");
  EXPECT_NE(result(g, "gpu.memory.copy")->at("reason").get<std::string>().find("byte"),
            std::string::npos);
  EXPECT_EQ(result(g, "gpu.memory.triad")->at("status"), "measured");
  EXPECT_EQ(result(g, "gpu.h2d.pinned")->at("status"), "measured");
  auto hook = bench("one_gpu.json", {"gpu.d2h.pinned"}, {"DLRIG_BENCH_CORRUPT=1"});
  EXPECT_EQ(hook.run.exit_code, 2) << hook.run.err;
}

// A GPU that fails mid-run (`scenario`: lost after some calls with `error`): the results before the
// fault are measured and stored, the benchmark in progress fails with the driver's words, every
// later one on that GPU is skipped with the reason, the fault is reported and dlrig exits 2.
void expect_fault_mid_run(const std::string &scenario, const std::string &error) {
  auto g = bench(scenario, {"gpu"});
  EXPECT_EQ(g.run.exit_code, 2) << g.run.err;
  EXPECT_NE(g.run.err.find("bench: GPU fault: GPU 0 (NVIDIA H100 80GB HBM3) failed"),
            std::string::npos)
      << g.run.err;
  bool lost = false;
  int measured_before = 0, skipped_after = 0;
  for (auto &r : g.results) {
    auto status = r["status"].get<std::string>();
    if (!lost && status == "measured")
      ++measured_before;
    else if (!lost) {
      ASSERT_EQ(status, "failed") << r.dump();
      EXPECT_NE(r["reason"].get<std::string>().find(error), std::string::npos) << r.dump();
      lost = true;
    } else {
      ASSERT_EQ(status, "skipped") << r.dump(); // nothing runs on it after
      EXPECT_NE(r["reason"].get<std::string>().find("is not used again in this run"),
                std::string::npos)
          << r.dump();
      ++skipped_after;
    }
  }
  EXPECT_TRUE(lost);
  EXPECT_GE(measured_before, 1);
  EXPECT_GE(skipped_after, 1);
  auto h = run_dlrig({"bench", "show", "1", "--db", g.db, "--json"});
  ASSERT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(json::parse(h.out)["results"].size(), g.results.size());
}

TEST(BenchGpuCli, ALostGpuKeepsTheResultsSoFarSkipsTheRestAndExitsTwo) {
  expect_fault_mid_run("lost.json", "CUDA_ERROR_UNKNOWN");
}

TEST(BenchGpuCli, AnEccErrorMidRunStopsThatGpuLikeALostOne) {
  expect_fault_mid_run("ecc_mid_run.json", "CUDA_ERROR_ECC_UNCORRECTABLE");
}

// An Xid NVML raises for the GPU stops its benchmarks before the next configuration even when
// CUDA has not answered an error: every one on it is skipped naming the Xid, and dlrig exits 2.
TEST(BenchGpuCli, AnXidFromNvmlStopsThatGpu) {
  auto g = bench("one_gpu.json", {"gpu.memory.copy", "gpu.launch"},
                 {std::string("DLRIG_NVML_LIBRARY=") + DLRIG_FAKE_NVML,
                  "DLRIG_FAKE_NVML_SCENARIO=" + fixture("fake_cuda/nvml_h100_xid.json")});
  EXPECT_EQ(g.run.exit_code, 2) << g.run.err;
  EXPECT_NE(g.run.err.find("NVML reported Xid 79"), std::string::npos) << g.run.err;
  ASSERT_FALSE(g.results.empty());
  for (auto &r : g.results) {
    EXPECT_EQ(r["status"], "skipped") << r.dump();
    EXPECT_NE(r["reason"].get<std::string>().find("Xid 79"), std::string::npos) << r.dump();
  }
  // Without the Xid the same run measures.
  auto calm = bench("one_gpu.json", {"gpu.memory.copy"},
                    {std::string("DLRIG_NVML_LIBRARY=") + DLRIG_FAKE_NVML,
                     "DLRIG_FAKE_NVML_SCENARIO=" + fixture("fake_cuda/nvml_h100_hot.json")});
  EXPECT_EQ(calm.run.exit_code, 0) << calm.run.err;
}

TEST(BenchGpuCli, CtrlCDuringAGpuBenchmarkFreesDeviceMemoryKeepsResultsAndExits130) {
  auto log = scratch("fake_cuda_interrupt_log.json");
  std::filesystem::remove(log);
  auto g = bench("interrupt.json", {"gpu"}, {"DLRIG_FAKE_CUDA_LOG=" + log.string()});
  EXPECT_EQ(g.run.exit_code, 130) << g.run.err;
  EXPECT_NE(g.run.err.find("interrupted; the results above are stored"), std::string::npos)
      << g.run.err;
  ASSERT_GE(g.results.size(), 1u);
  for (auto &r : g.results)
    EXPECT_EQ(r["status"], "measured") << r.dump(); // the one in progress finished
  auto h = run_dlrig({"bench", "show", "1", "--db", g.db, "--json"});
  ASSERT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(json::parse(h.out)["results"].size(), g.results.size());
  std::ifstream in(log);
  ASSERT_TRUE(in) << "the fake libcuda wrote no log at " << log;
  auto left = json::parse(in);
  EXPECT_EQ(left["device_allocations"], 0) << left.dump();
  EXPECT_EQ(left["device_bytes"], 0) << left.dump();
}

// Ctrl-C during a --long configuration (60 s of samples, 100000 at most) ends its sampling at
// the next sample instead of running on for the minute: the result is kept and says so.
TEST(BenchGpuCli, CtrlCCutsALongConfigurationShortAndKeepsItsSamples) {
  const auto db = scratch("gpu_interrupt_long.db").string();
  std::filesystem::remove(db);
  auto env = fake_cuda("interrupt_long.json"); // SIGINT at the device's 400th call
  env.push_back("DLRIG_BENCH_SMALL=1");
  auto r =
      run_dlrig({"bench", "--long", "--json", "--db", db, "gpu.memory.copy", "gpu.launch"}, env);
  EXPECT_EQ(r.exit_code, 130) << r.err;
  const auto results = json::parse(r.out).at("results");
  ASSERT_EQ(results.size(), 1u) << r.out; // gpu.launch never started
  const auto &copy = results[0];
  EXPECT_EQ(copy["status"], "measured") << copy.dump();
  const int samples = copy["seconds"]["samples"].get<int>();
  EXPECT_GE(samples, 1);
  EXPECT_LT(samples, 1000) << "sampling went on after Ctrl-C";
  EXPECT_EQ(copy["details"].value("interrupted", ""),
            "cut short by Ctrl-C (SIGINT/SIGTERM) after " + std::to_string(samples) +
                " samples, before the stopping rule was met")
      << copy.dump();
  EXPECT_NE(r.err.find("(cut short by Ctrl-C)"), std::string::npos) << r.err;
}

// An Xid NVML raises in the middle of a --long configuration (60 s of samples) ends it at its next
// sample, failed naming the Xid, instead of running on for the rest of the minute on a GPU that
// has fallen off the bus (CUDA itself answers no error here).
TEST(BenchGpuCli, AnXidDuringALongConfigurationEndsItAtOnce) {
  auto scenario = json::parse(std::ifstream(fixture("fake_cuda/nvml_h100_xid.json")));
  scenario["gpus"][0]["timeline"] = json::parse(R"([{"ms": 1500}, {"xid": 79}])");
  const auto path = scratch("nvml-xid-mid-run.json").string();
  std::ofstream(path) << scenario.dump();
  const auto db = scratch("gpu_xid_long.db").string();
  std::filesystem::remove(db);
  auto env = with(fake_cuda("one_gpu.json"), {std::string("DLRIG_NVML_LIBRARY=") + DLRIG_FAKE_NVML,
                                              "DLRIG_FAKE_NVML_SCENARIO=" + path});
  env.push_back("DLRIG_BENCH_SMALL=1");
  const auto start = std::chrono::steady_clock::now();
  auto r = run_dlrig({"bench", "--long", "--json", "--db", db, "gpu.memory.copy"}, env);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 2) << r.err;
  const auto results = json::parse(r.out).at("results");
  ASSERT_EQ(results.size(), 1u) << r.out;
  EXPECT_EQ(results[0]["status"], "failed") << results[0].dump();
  EXPECT_NE(results[0]["reason"].get<std::string>().find(
                "NVML reported Xid 79 (NVIDIA's Xid catalogue: "
                "https://docs.nvidia.com/deploy/xid-errors/index.html); raised while this "
                "configuration ran, so its result is not kept"),
            std::string::npos)
      << results[0].dump();
  // The Xid comes 1.5 s in; the configuration's rule asks for 60 s of samples.
  EXPECT_LT(took, 30) << "sampling went on after the Xid";
}

TEST(BenchGpuCli, ALaunchFailureFailsThatGpuWithTheDriversWords) {
  auto g = bench("launch_failure.json", {"gpu.launch", "gpu.memory"});
  ASSERT_EQ(g.run.exit_code, 2) << g.run.err; // a launch failure is sticky: the GPU is lost
  auto first = g.results.at(0);
  EXPECT_EQ(first["status"], "failed");
  EXPECT_NE(first["reason"].get<std::string>().find("CUDA_ERROR_LAUNCH_FAILED"), std::string::npos)
      << first.dump();
  for (auto &r : g.results)
    EXPECT_NE(r["status"], "measured") << r.dump();
}

TEST(BenchGpuCli, KernelsThatDoNotJitFailWithTheLogAndCopiesStillRun) {
  auto g = bench("jit_error.json", {"gpu.memory"});
  ASSERT_EQ(g.run.exit_code, 0) << g.run.err;
  EXPECT_EQ(result(g, "gpu.memory.copy")->at("status"), "measured");
  EXPECT_EQ(result(g, "gpu.memory.copy")->at("details").at("timing"), "CUDA events");
  auto triad = *result(g, "gpu.memory.triad");
  EXPECT_EQ(triad["status"], "failed");
  EXPECT_NE(triad["reason"].get<std::string>().find("Unsupported .version 7.0"), std::string::npos)
      << triad.dump();
}

TEST(BenchGpuCli, MissingSymbolsSkipWithTheSymbolsName) {
  auto peer = bench("missing_peer_symbol.json", {"gpu.p2p", "gpu.h2d.pinned"});
  ASSERT_EQ(peer.run.exit_code, 0) << peer.run.err;
  EXPECT_EQ(result(peer, "gpu.p2p.unidir")->at("status"), "skipped");
  EXPECT_NE(
      result(peer, "gpu.p2p.unidir")->at("reason").get<std::string>().find("cuMemcpyPeerAsync"),
      std::string::npos);
  EXPECT_EQ(result(peer, "gpu.h2d.pinned")->at("status"), "measured");
  auto core = bench("missing_core_symbol.json", {"gpu.memory.copy"});
  ASSERT_EQ(core.run.exit_code, 0) << core.run.err;
  EXPECT_EQ(core.results.at(0)["status"], "skipped");
  EXPECT_NE(core.results.at(0)["reason"].get<std::string>().find("lacks cuMemAlloc_v2"),
            std::string::npos)
      << core.results.dump();
}

TEST(BenchGpuCli, WithoutCuGetProcAddressTheVersionedNamesAreUsed) {
  auto g = bench("no_proc_address.json", {"gpu.memory.copy"});
  ASSERT_EQ(g.run.exit_code, 0) << g.run.err;
  EXPECT_EQ(g.results.at(0)["status"], "measured");
  EXPECT_EQ(g.results.at(0)["details"]["resolved_by"], "dlsym");
}

TEST(BenchGpuCli, ABusyGpuGetsBuffersSizedFromItsFreeMemoryAndSaysSo) {
  // 100 MiB free of 80 GiB: two buffers of 64 MiB (--quick) are halved until they fit in 90 % of
  // it.
  auto g = bench("out_of_memory.json", {"gpu.memory.copy"}, {}, false);
  ASSERT_EQ(g.run.exit_code, 0) << g.run.err;
  auto r = g.results.at(0);
  ASSERT_EQ(r["status"], "measured") << r.dump();
  EXPECT_EQ(r["details"]["note"], "100 MiB of 80 GiB free (other processes hold the rest) for 2 "
                                  "buffers of 64 MiB: stepped down to 32 MiB")
      << r.dump();
}

TEST(BenchGpuCli, OutOfMemoryStepsDownAndSaysSo) {
  // The same GPU when cuMemGetInfo does not answer: the allocations fail and step down.
  auto g = bench("out_of_memory_no_info.json", {"gpu.memory.copy"}, {}, false);
  ASSERT_EQ(g.run.exit_code, 0) << g.run.err;
  auto r = g.results.at(0);
  ASSERT_EQ(r["status"], "measured") << r.dump();
  EXPECT_EQ(r["details"]["note"], "out of memory for 2 buffers of 64 MiB: stepped down to 32 MiB")
      << r.dump();
}

TEST(BenchGpuCli, NotSupportedFailsOneBenchmarkOnly) {
  auto g = bench("not_supported.json", {"gpu.memory"});
  ASSERT_EQ(g.run.exit_code, 0) << g.run.err;
  EXPECT_EQ(result(g, "gpu.memory.copy")->at("status"), "failed");
  EXPECT_NE(result(g, "gpu.memory.copy")
                ->at("reason")
                .get<std::string>()
                .find("CUDA_ERROR_NOT_SUPPORTED"),
            std::string::npos);
  EXPECT_EQ(result(g, "gpu.memory.triad")->at("status"), "measured");
}

TEST(BenchGpuCli, NoDeviceAndABrokenScenarioAreSkips) {
  auto none = bench("no_device.json", {"gpu.launch.sync"});
  ASSERT_EQ(none.run.exit_code, 0) << none.run.err;
  EXPECT_EQ(none.results.at(0)["status"], "skipped");
  EXPECT_NE(none.results.at(0)["reason"].get<std::string>().find("no CUDA device"),
            std::string::npos);
  auto broken = bench("broken.json", {"gpu.launch.sync"});
  ASSERT_EQ(broken.run.exit_code, 0) << broken.run.err;
  EXPECT_EQ(broken.results.at(0)["status"], "skipped");
  EXPECT_NE(broken.results.at(0)["reason"].get<std::string>().find("did not initialise"),
            std::string::npos)
      << broken.results.dump();
}

TEST(BenchGpuCli, TheLinkIsReadThroughNvmlWhileACopyRuns) {
  auto g = bench("one_gpu.json", {"gpu.h2d.pinned"},
                 {std::string("DLRIG_NVML_LIBRARY=") + DLRIG_FAKE_NVML,
                  "DLRIG_FAKE_NVML_SCENARIO=" + fixture("fake_cuda/nvml_gen1.json")});
  ASSERT_EQ(g.run.exit_code, 0) << g.run.err;
  auto r = g.results.at(0);
  ASSERT_EQ(r["status"], "measured") << r.dump();
  EXPECT_EQ(r["details"]["link_during_transfer"]["gen"], 1);
  EXPECT_EQ(r["details"]["link_during_transfer"]["gen_max"], 5);
  EXPECT_NE(r["details"]["link_note"].get<std::string>().find("Gen1 x16 during the copy"),
            std::string::npos)
      << r.dump();
  auto without = bench("one_gpu.json", {"gpu.h2d.pinned"});
  EXPECT_TRUE(without.results.at(0)["details"]["link_during_transfer"].is_null());
  EXPECT_NE(without.results.at(0)["details"]["link_note"].get<std::string>().find("NVML"),
            std::string::npos);
}

TEST(BenchGpuCli, PeerCopiesThatCorruptDataAreWrong) {
  auto g = bench("two_gpus_corrupt_peer.json", {"gpu.p2p.unidir"});
  EXPECT_EQ(g.run.exit_code, 2) << g.run.err;
  auto r = g.results.at(0); // gpu0 -> gpu1: the corrupting side
  EXPECT_EQ(r["status"], "wrong");
  EXPECT_NE(r["reason"].get<std::string>().find("GeForce"), std::string::npos) << r.dump();
}

// ---- gpu.gemm through the fake cuBLASLt (tests/fake_cublaslt) ----------------------------------

TEST(BenchGpuCli, GemmRunsEveryPrecisionVerifiedAndStored) {
  auto g = bench("one_gpu.json", {"gpu.gemm"});
  ASSERT_EQ(g.run.exit_code, 0) << g.run.err;
  // 8 precisions x (a square and a non-square shape), and MXFP8 skipped once: it is Blackwell's,
  // and this is an H100.
  ASSERT_EQ(g.results.size(), 17u);
  for (auto &r : g.results) {
    if (r["id"] == "gpu.gemm.mxfp8") {
      EXPECT_EQ(r["status"], "skipped") << r.dump();
      continue;
    }
    // This cuBLASLt (12.4) has no outer-vector or block scales.
    if (r["id"] == "gpu.gemm.fp8_rowwise" || r["id"] == "gpu.gemm.fp8_block") {
      EXPECT_EQ(r["status"], "skipped") << r.dump();
      EXPECT_NE(r["reason"].get<std::string>().find(
                    "cuBLASLt 12.4.5 (" + std::string(DLRIG_FAKE_CUBLASLT) + ") refused " +
                    (r["id"] == "gpu.gemm.fp8_block" ? "128-element block" : "per-row") +
                    " FP8 scales (CUBLASLT_MATMUL_DESC_A_SCALE_MODE"),
                std::string::npos)
          << r.dump();
      EXPECT_NE(r["reason"].get<std::string>().find("cuBLAS 12.9 or later"), std::string::npos);
      continue;
    }
    ASSERT_EQ(r["status"], "measured") << r.dump();
    const auto &d = r["details"];
    EXPECT_EQ(d["cublaslt_version"], "12.4.5");
    EXPECT_EQ(d["cublaslt_cuda"], "12.4");
    EXPECT_EQ(d["cublaslt_found_in"], "DLRIG_CUBLASLT_LIBRARY");
    // FP32, TF32, FP16 and BF16 try two layouts (TN and torch.matmul's NN), 3 candidates each;
    // at equal speed the first layout's is kept.
    // fp8_rowwise and fp8_block skipped
    const bool two = d["precision"] != "fp8" && d["precision"] != "int8";
    EXPECT_EQ(d["candidates_returned"], two ? 6 : 3);
    ASSERT_EQ(d["layout_trials"].size(), two ? 2u : 1u);
    for (const auto &t : d["layout_trials"]) { // each layout's candidates and trial medians
      EXPECT_EQ(t["candidates_timed"], 3);
      EXPECT_EQ(t["best_rank"], 1);
      EXPECT_NEAR(t["first_candidate_s"].get<double>() / t["best_s"].get<double>(), 1 / 0.9, 1e-3);
    }
    EXPECT_EQ(d["layout_trials"][0]["layout"], d["layout"]);
    // The card rests as long as the trials ran, at most a second, before the samples.
    EXPECT_GE(d["rest_before_samples_s"].get<double>(), 0);
    EXPECT_LE(d["rest_before_samples_s"].get<double>(), 1);
    EXPECT_EQ(d["layout"], "TN (A transposed, B not; column-major)");
    EXPECT_EQ(d["algorithm_rank"], 1); // the scenario's second candidate is the fastest
    EXPECT_NEAR(d["gain_over_first_candidate"].get<double>(), 1 / 0.9 - 1, 1e-3);
    EXPECT_EQ(d["verified_entries"], 64);
  }
  auto rate = [&](const std::string &id) {
    return result(g, id)->at("rate").at("median").get<double>();
  };
  EXPECT_NEAR(rate("gpu.gemm.bf16"), 790, 790 * 0.01); // the scenario's rate at factor 1.0
  EXPECT_NEAR(rate("gpu.gemm.fp32"), 51, 51 * 0.01);
  EXPECT_NEAR(rate("gpu.gemm.int8"), 1500, 1500 * 0.01);
  EXPECT_EQ(result(g, "gpu.gemm.int8")->at("rate_unit"), "TOP/s");
  EXPECT_EQ(result(g, "gpu.gemm.bf16")->at("rate_unit"), "TFLOP/s");
  EXPECT_EQ(result(g, "gpu.gemm.bf16")->at("config"), "gpu0 256x256x256");
  auto h = run_dlrig({"bench", "history", "gpu.gemm.fp8", "--db", g.db, "--json"});
  ASSERT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(json::parse(h.out)["results"].size(), 2u);
  auto table = run_dlrig({"bench", "show", "1", "--db", g.db});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("gpu.gemm.bf16"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("TFLOP/s"), std::string::npos) << table.out;
}

// A library whose kernels for torch.matmul's layout (NN: row-major operands) are faster: that
// layout is kept, and D, now row-major, is read and verified as such.
TEST(BenchGpuCli, GemmKeepsTheFasterLayout) {
  auto g =
      bench("one_gpu.json", {"gpu.gemm.bf16", "gpu.gemm.fp8"}, fake_blas("h100_nn_faster.json"));
  ASSERT_EQ(g.run.exit_code, 0) << g.run.err;
  for (auto &r : g.results) {
    ASSERT_EQ(r["status"], "measured") << r.dump();
    const auto &d = r["details"];
    if (d["precision"] == "bf16") {
      EXPECT_EQ(d["layout"], "NN (row-major operands, as torch.matmul calls cuBLAS)") << r.dump();
      EXPECT_NEAR(r["rate"]["median"].get<double>(), 790 * 1.2, 790 * 1.2 * 0.01) << r.dump();
    } else { // FP8 runs in TN only
      EXPECT_EQ(d["layout"], "TN (A transposed, B not; column-major)") << r.dump();
      EXPECT_NEAR(r["rate"]["median"].get<double>(), 1400, 14) << r.dump();
    }
  }
  // The same with D damaged: the NN result's verification reads D where NN writes it.
  auto bad = bench("one_gpu.json", {"gpu.gemm.bf16"},
                   with(fake_blas("h100_nn_faster.json"), {"DLRIG_BENCH_CORRUPT=1"}));
  EXPECT_EQ(bad.run.exit_code, 2) << bad.run.err;
}

TEST(BenchGpuCli, GemmNotSupportedSkipsAndAWrongResultExitsTwo) {
  auto g = bench("one_gpu.json", {"gpu.gemm"}, fake_blas("faults.json"));
  EXPECT_EQ(g.run.exit_code, 2) << g.run.err;
  auto fp8 = *result(g, "gpu.gemm.fp8");
  EXPECT_EQ(fp8["status"], "skipped");
  EXPECT_NE(fp8["reason"].get<std::string>().find("cuBLASLt has no algorithm for fp8 256x256x256"),
            std::string::npos)
      << fp8.dump();
  EXPECT_NE(fp8["reason"].get<std::string>().find("CUBLAS_STATUS_NOT_SUPPORTED"),
            std::string::npos);
  auto int8 = *result(g, "gpu.gemm.int8");
  EXPECT_EQ(int8["status"], "skipped");
  EXPECT_NE(int8["reason"].get<std::string>().find("refused every candidate"), std::string::npos)
      << int8.dump();
  auto bf16 = *result(g, "gpu.gemm.bf16");
  EXPECT_EQ(bf16["status"], "wrong");
  EXPECT_NE(bf16["reason"].get<std::string>().find("host reference"), std::string::npos)
      << bf16.dump();
  EXPECT_EQ(result(g, "gpu.gemm.fp16")->at("status"), "measured");
  auto hook = bench("one_gpu.json", {"gpu.gemm.fp32"}, {"DLRIG_BENCH_CORRUPT=1"});
  EXPECT_EQ(hook.run.exit_code, 2) << hook.run.err;
  EXPECT_EQ(hook.results.at(0)["status"], "wrong");
}

TEST(BenchGpuCli, Fp8RunsWithPerTensorScalesThatTheReferenceApplies) {
  auto g = bench("one_gpu.json", {"gpu.gemm.fp8"});
  ASSERT_EQ(g.run.exit_code, 0) << g.run.err;
  for (auto &r : g.results) {
    ASSERT_EQ(r["status"], "measured") << r.dump();
    const auto &s = r["details"]["fp8_scales"];
    EXPECT_EQ(s["granularity"], "per tensor");
    EXPECT_TRUE(s["d_scale"].is_null()); // BF16 D
    for (const char *t : {"a", "b"}) {
      const double amax = s[std::string(t) + "_amax"].get<double>();
      const double scale = s[std::string(t) + "_scale"].get<double>();
      EXPECT_GT(amax, 2) << s.dump();
      EXPECT_NEAR(scale, amax / 448, 1e-6 * scale) << s.dump();
      EXPECT_LT(scale, 0.05) << s.dump(); // far from a unit scale
    }
    EXPECT_NE(s["a_scale"], s["b_scale"]);
  }
  // A library that takes the scale pointers but computes as if they were 1 is off by their
  // product (about 1e-4): wrong, exit 2; the other precisions are untouched.
  auto ignored =
      bench("one_gpu.json", {"gpu.gemm.fp8", "gpu.gemm.bf16"}, fake_blas("ignores_scales.json"));
  EXPECT_EQ(ignored.run.exit_code, 2) << ignored.run.err;
  auto fp8 = *result(ignored, "gpu.gemm.fp8");
  EXPECT_EQ(fp8["status"], "wrong") << fp8.dump();
  EXPECT_NE(fp8["reason"].get<std::string>().find("host reference"), std::string::npos)
      << fp8.dump();
  EXPECT_EQ(result(ignored, "gpu.gemm.bf16")->at("status"), "measured");
}

// An FP8 family with vector or block scales on the fake GPU `device` through the fake cuBLASLt's
// `scenario`: both configurations measured in the TN layout at the scenario's `rate` (TFLOP/s)
// and stored, A's scales spread with the largest scale_of(amax) (amax / 448 unless said), `check`
// given each result's details and fp8_scales; with the scales ignored, wrong (exit 2).
void expect_scaled_fp8(
    const std::string &precision, const std::string &scenario,
    const std::function<void(const json &, const json &)> &check,
    const std::string &device = "one_gpu.json", double rate = 1400,
    const std::function<double(double)> &scale_of = [](double amax) { return amax / 448; }) {
  const std::string id = "gpu.gemm." + precision;
  auto g = bench(device, {id}, fake_blas(scenario));
  ASSERT_EQ(g.run.exit_code, 0) << g.run.err;
  ASSERT_EQ(g.results.size(), 2u);
  for (const auto &r : g.results) {
    ASSERT_EQ(r["status"], "measured") << r.dump();
    const auto &d = r["details"];
    EXPECT_EQ(d["precision"], precision);
    EXPECT_EQ(d["layout"], "TN (A transposed, B not; column-major)");
    const auto &s = d["fp8_scales"];
    EXPECT_LT(s["a_scale"]["min"].get<double>(), s["a_scale"]["max"].get<double>()) << s.dump();
    EXPECT_NEAR(s["a_scale"]["max"].get<double>(), scale_of(s["a_amax"].get<double>()), 1e-6)
        << s.dump();
    check(d, s);
  }
  EXPECT_NEAR(result(g, id)->at("rate").at("median").get<double>(), rate, rate * 0.01);
  auto h = run_dlrig({"bench", "history", id, "--db", g.db, "--json"});
  ASSERT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(json::parse(h.out)["results"].size(), 2u);
  auto ignored = bench(device, {id}, fake_blas("ignores_scales.json"));
  EXPECT_EQ(ignored.run.exit_code, 2) << ignored.run.err;
  EXPECT_EQ(result(ignored, id)->at("status"), "wrong");
}

// Row-wise FP8 (a scale per row of A and per column of B, cuBLASLt's outer-vector mode): each
// row's largest value on 448, the scales handed to cuBLASLt as vectors and applied entry by entry
// in the reference; a library that ignores them is wrong (exit 2).
TEST(BenchGpuCli, Fp8RowWiseScalesAreHandedOverAndVerifiedPerRowAndColumn) {
  expect_scaled_fp8("fp8_rowwise", "h100_rowwise.json", [](const json &d, const json &s) {
    EXPECT_NE(s["granularity"].get<std::string>().find("per row of A and per column of B"),
              std::string::npos)
        << s.dump();
    EXPECT_EQ(s["a_scale"]["count"], d["m"]) << s.dump();
    EXPECT_EQ(s["b_scale"]["count"], d["n"]) << s.dump();
  });
}

// Block FP8 (DeepSeek-V3's recipe: a scale per 1 x 128 block of A and 128 x 128 block of B,
// cuBLASLt's VEC128_32F and BLK128x128_32F): each block's largest value on 448, the scales
// handed over in cuBLAS's layouts (the fake reads them there and applies them per k-block), the
// reference applies them per k-block, and the result is stored; a library that ignores them is
// wrong (exit 2).
TEST(BenchGpuCli, Fp8BlockScalesAreHandedOverAndVerifiedPerBlock) {
  expect_scaled_fp8("fp8_block", "h100_blockwise.json", [](const json &d, const json &s) {
    EXPECT_EQ(d["verified_entries"], 64);
    const std::string granularity = s["granularity"];
    EXPECT_NE(granularity.find("per 1 x 128 block of A"), std::string::npos) << s.dump();
    EXPECT_NE(granularity.find("CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F"), std::string::npos);
    EXPECT_NE(granularity.find("per 128 x 128 block of B"), std::string::npos);
    EXPECT_NE(granularity.find("CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F"), std::string::npos);
    EXPECT_NE(s["rule"].get<std::string>().find("sum over k-blocks kb of a_scale[i, kb] * "
                                                "b_scale[kb, j / 128]"),
              std::string::npos)
        << s.dump();
    const auto m = d["m"].get<std::uint64_t>(), n = d["n"].get<std::uint64_t>(),
               k = d["k"].get<std::uint64_t>();
    const std::uint64_t kb = (k + 127) / 128, nb = (n + 127) / 128;
    EXPECT_EQ(s["a_scale"]["count"], m * kb) << s.dump();
    EXPECT_EQ(s["a_scale"]["floats"], m * kb);
    EXPECT_EQ(s["b_scale"]["count"], nb * kb) << s.dump();
    EXPECT_EQ(s["b_scale"]["floats"], nb * ((kb + 3) / 4 * 4)); // k-blocks padded to 4
    EXPECT_NEAR(s["b_scale"]["max"].get<double>(), s["b_amax"].get<double>() / 448, 1e-6);
    EXPECT_EQ(s["d_scale"], nullptr);
  });
}

// The family `id` on the fake GPU `device` through each fake cuBLASLt scenario in `misreads` (a
// library that reads the scales otherwise than documented): every configuration wrong against
// the host reference, exit 2.
void expect_misread_scales_wrong(const std::string &device, const std::string &id,
                                 const std::vector<std::string> &misreads) {
  for (const std::string &scenario : misreads) {
    auto g = bench(device, {id}, fake_blas(scenario));
    EXPECT_EQ(g.run.exit_code, 2) << scenario << g.run.err;
    ASSERT_EQ(g.results.size(), 2u) << scenario;
    for (const auto &r : g.results) {
      EXPECT_EQ(r["status"], "wrong") << scenario << r.dump();
      EXPECT_NE(r["reason"].get<std::string>().find("host reference"), std::string::npos)
          << r.dump();
    }
  }
}

// A library that reads the block scales as one scale per tensor (their first float), or A's
// 1 x 128 scales k-major instead of m-major, computes a different D: wrong, exit 2.
TEST(BenchGpuCli, Fp8BlockScalesAppliedPerTensorOrInTheWrongLayoutAreWrong) {
  expect_misread_scales_wrong("one_gpu.json", "gpu.gemm.fp8_block",
                              {"block_scales_as_tensor.json", "block_scales_k_major.json"});
}

// A family whose scale modes cuBLAS runs on other GPUs only, on the fake GPU `device` (with a
// cuBLASLt 12.9 that has the 128-element block modes but not MXFP8's, so a refusal would read
// otherwise): `id` skipped for `reason` before cuBLASLt is asked, `other` (an FP8 family this GPU
// runs) measured, and `bench --list` says `id` cannot run, for the same reason.
void expect_skipped_off_its_gpus(const std::string &device, const std::string &id,
                                 const std::string &other, const std::string &reason) {
  auto g = bench(device, {id, other}, fake_blas("h100_blockwise.json"));
  ASSERT_EQ(g.run.exit_code, 0) << g.run.err;
  EXPECT_EQ(result(g, id)->at("status"), "skipped");
  EXPECT_EQ(result(g, id)->at("reason"), reason);
  EXPECT_EQ(result(g, other)->at("status"), "measured");
  auto list = run_dlrig({"bench", "--list", "--json"}, fake_cuda(device));
  ASSERT_EQ(list.exit_code, 0) << list.err;
  int listed = 0;
  const json benchmarks = json::parse(list.out).at("benchmarks");
  for (const auto &b : benchmarks)
    if (b["id"] == id) {
      ++listed;
      EXPECT_FALSE(b["can_run"].get<bool>()) << b.dump();
      EXPECT_EQ(b["reason"], reason);
    }
  EXPECT_EQ(listed, 1);
}

// A cuBLASLt 12.4 (the fake's h100.json) refuses the scale mode `mode` of the family `id` on the
// fake GPU `device`: both configurations skipped naming its version and the cuBLAS `since` that
// brought `what`, and the run goes on (exit 0).
void expect_old_cublaslt_skips(const std::string &device, const std::string &id,
                               const std::string &what, const std::string &mode,
                               const std::string &since) {
  auto g = bench(device, {id}, fake_blas("h100.json"));
  ASSERT_EQ(g.run.exit_code, 0) << g.run.err;
  ASSERT_EQ(g.results.size(), 2u);
  for (const auto &r : g.results) {
    EXPECT_EQ(r["status"], "skipped") << r.dump();
    EXPECT_EQ(r["reason"], "cuBLASLt 12.4.5 (" + std::string(DLRIG_FAKE_CUBLASLT) + ") refused " +
                               what + " (CUBLASLT_MATMUL_DESC_A_SCALE_MODE = " + mode +
                               ": CUBLAS_STATUS_INVALID_VALUE (7): an invalid numeric value was "
                               "used as an argument); they need cuBLAS " +
                               since + " or later")
        << r.dump();
  }
}

// cuBLAS runs the 128-element block modes on compute capability 9.0 only: a B200 (10.0) skips
// them with the reason, before any cuBLASLt call, and still runs per-tensor FP8.
TEST(BenchGpuCli, Fp8BlockOffHopperSkipsWithTheComputeCapabilityItNeeds) {
  expect_skipped_off_its_gpus(
      "b200.json", "gpu.gemm.fp8_block", "gpu.gemm.fp8",
      "cuBLAS runs 128-element block FP8 scales (CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F on "
      "A, CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F on B) on compute capability 9.0 only "
      "(its Scaling Mode Support Overview, "
      "https://docs.nvidia.com/cuda/cublas/#narrow-precision-data-types-usage); GPU 0 "
      "(NVIDIA B200) is 10.0, where cuBLAS's block-scaled FP8 is MXFP8 "
      "(CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0, gpu.gemm.mxfp8)");
}

// A cuBLASLt before 12.9 refuses the block scale modes: skipped with its version and what they
// need, and the run goes on (exit 0).
TEST(BenchGpuCli, Fp8BlockOnACublasLtBefore129SkipsNamingItsVersion) {
  expect_old_cublaslt_skips("one_gpu.json", "gpu.gemm.fp8_block", "128-element block FP8 scales",
                            "CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F", "12.9");
}

// MXFP8 (OCP MX: a UE8M0 power of two per 32 elements along k of each row of A and column of B,
// cuBLASLt's VEC32_UE8M0) on a B200 through a cuBLASLt 12.8: each block's scale 2^(floor(log2
// amax) - 8), the scales handed over in cuBLAS's tiled 128 x 4 layout (the fake decodes them from
// the docs and applies them per 32-element k-block), the reference applies them per k-block, and
// the result is stored; a library that ignores them is wrong (exit 2).
TEST(BenchGpuCli, Mxfp8ScalesAreHandedOverAndVerifiedPerBlock) {
  expect_scaled_fp8(
      "mxfp8", "b200_mxfp8.json",
      [](const json &d, const json &s) {
        EXPECT_EQ(d["verified_entries"], 64);
        EXPECT_EQ(d["name"], "NVIDIA B200");
        EXPECT_EQ(d["cublaslt_version"], "12.8.0");
        const std::string granularity = s["granularity"];
        EXPECT_NE(granularity.find("per 32 elements along k of each row of A and column of B"),
                  std::string::npos)
            << s.dump();
        EXPECT_NE(granularity.find("CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0"), std::string::npos);
        EXPECT_NE(s["rule"].get<std::string>().find("X = 2^(floor(log2(amax(block))) - 8)"),
                  std::string::npos)
            << s.dump();
        const auto m = d["m"].get<std::uint64_t>(), n = d["n"].get<std::uint64_t>(),
                   k = d["k"].get<std::uint64_t>();
        const std::uint64_t kb = k / 32, kb4 = (kb + 3) / 4 * 4;
        EXPECT_EQ(s["a_scale"]["count"], m * kb) << s.dump();
        EXPECT_EQ(s["a_scale"]["bytes"], (m + 127) / 128 * 128 * kb4);
        EXPECT_EQ(s["b_scale"]["count"], n * kb) << s.dump();
        EXPECT_EQ(s["b_scale"]["bytes"], (n + 127) / 128 * 128 * kb4);
        for (const char *t : {"a", "b"}) // powers of two
          for (const char *end : {"min", "max"}) {
            const double x = s[std::string(t) + "_scale"][end].get<double>();
            EXPECT_EQ(x, std::ldexp(1.0, std::ilogb(x))) << s.dump();
          }
        EXPECT_EQ(s["b_scale"]["max"].get<double>(),
                  std::ldexp(1.0, std::ilogb(s["b_amax"].get<double>()) - 8));
        EXPECT_EQ(s["d_scale"], nullptr);
      },
      "b200.json", 4500, [](double amax) { return std::ldexp(1.0, std::ilogb(amax) - 8); });
}

// A library that reads the MX scales as a plain row-major m x L matrix instead of cuBLAS's tiles,
// or takes their first byte as one scale per tensor, computes a different D: wrong, exit 2.
TEST(BenchGpuCli, Mxfp8ScalesReadRowMajorOrPerTensorAreWrong) {
  expect_misread_scales_wrong("b200.json", "gpu.gemm.mxfp8",
                              {"mx_scales_row_major.json", "mx_scales_as_tensor.json"});
}

// cuBLAS runs VEC32_UE8M0 on compute capability 10.0 and later only: an H100 (9.0) skips it with
// the reason before cuBLASLt is asked, and still runs the 128-element blocks.
TEST(BenchGpuCli, Mxfp8OffBlackwellSkipsWithTheComputeCapabilityItNeeds) {
  expect_skipped_off_its_gpus(
      "one_gpu.json", "gpu.gemm.mxfp8", "gpu.gemm.fp8_block",
      "cuBLAS runs 32-element MXFP8 block scales (CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0 "
      "on A, CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0 on B) on compute capability 10.0 or "
      "later only (its Scaling Mode Support Overview, "
      "https://docs.nvidia.com/cuda/cublas/#narrow-precision-data-types-usage); GPU 0 "
      "(NVIDIA H100 80GB HBM3) is 9.0, where cuBLAS's block-scaled FP8 is 128-element "
      "blocks (gpu.gemm.fp8_block)");
}

// A cuBLASLt before 12.8 refuses VEC32_UE8M0: on a B200 it is skipped with its version and what
// it needs, and the run goes on (exit 0).
TEST(BenchGpuCli, Mxfp8OnACublasLtBefore128SkipsNamingItsVersion) {
  expect_old_cublaslt_skips("b200.json", "gpu.gemm.mxfp8", "32-element MXFP8 block scales",
                            "CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0", "12.8");
}

TEST(BenchGpuCli, Fp8OnAnAmpereGpuSkipsWithTheComputeCapabilityItNeeds) {
  auto g = bench("a100.json", {"gpu.gemm.fp8", "gpu.gemm.bf16"});
  ASSERT_EQ(g.run.exit_code, 0) << g.run.err;
  auto fp8 = *result(g, "gpu.gemm.fp8");
  EXPECT_EQ(fp8["status"], "skipped");
  EXPECT_EQ(fp8["reason"], "FP8 tensor cores need compute capability >= 8.9; GPU 0 (NVIDIA "
                           "A100-SXM4-80GB) is "
                           "8.0 (Ampere; data/archs.csv)");
  auto bf16 = *result(g, "gpu.gemm.bf16");
  EXPECT_EQ(bf16["status"], "measured") << bf16.dump();
  EXPECT_NEAR(bf16["peak"].get<double>(), 312, 0.5) << bf16.dump(); // A100 SXM4 dense BF16
}

TEST(BenchGpuCli, GemmSkipsWhenCublasLtCannotBeUsed) {
  auto newer = bench("one_gpu.json", {"gpu.gemm.bf16"}, fake_blas("cuda13.json"));
  ASSERT_EQ(newer.run.exit_code, 0) << newer.run.err;
  EXPECT_EQ(newer.results.at(0)["status"], "skipped");
  EXPECT_NE(newer.results.at(0)["reason"].get<std::string>().find(
                "is built for CUDA 13.0 and needs a CUDA 13 driver; this driver runs CUDA 12.4"),
            std::string::npos)
      << newer.results.dump();
  auto old = bench("one_gpu.json", {"gpu.gemm.bf16"},
                   {std::string("DLRIG_CUBLASLT_LIBRARY=") + DLRIG_FAKE_CUBLASLT_OLD});
  ASSERT_EQ(old.run.exit_code, 0) << old.run.err;
  EXPECT_EQ(old.results.at(0)["status"], "skipped");
  EXPECT_NE(
      old.results.at(0)["reason"].get<std::string>().find("lacks cublasLtMatmulAlgoGetHeuristic"),
      std::string::npos)
      << old.results.dump();
  auto absent = bench("one_gpu.json", {"gpu.gemm.bf16"},
                      {"DLRIG_CUBLASLT_LIBRARY=libdlrig-absent-cublasLt.so.12"});
  EXPECT_EQ(absent.results.at(0)["reason"],
            "cuBLASLt not found (tried libdlrig-absent-cublasLt.so.12)");
  auto create = bench("one_gpu.json", {"gpu.gemm.bf16"}, fake_blas("create_fails.json"));
  ASSERT_EQ(create.run.exit_code, 0) << create.run.err;
  EXPECT_EQ(create.results.at(0)["status"], "failed");
  EXPECT_NE(create.results.at(0)["reason"].get<std::string>().find("CUBLAS_STATUS_ALLOC_FAILED"),
            std::string::npos)
      << create.results.dump();
}

TEST(BenchGpuCli, GemmOutOfMemoryStepsDownAndSaysSo) {
  // cuMemGetInfo does not answer, so the allocations decide: they fail and step down.
  auto g = bench("gemm_out_of_memory_no_info.json", {"gpu.gemm.fp32"});
  ASSERT_EQ(g.run.exit_code, 0) << g.run.err;
  auto r = g.results.at(0);
  ASSERT_EQ(r["status"], "measured") << r.dump();
  EXPECT_EQ(r["details"]["note"], "out of memory for 256x256x256: stepped down to 128x128x128");
  EXPECT_EQ(r["details"]["m"], 128);
}

// ---- free memory: a configuration the GPU cannot hold is skipped, naming the bytes ----------

TEST(BenchGpuCli, AGemmShapeTheFreeMemoryCannotHoldIsSkippedNamingTheBytes) {
  // 35012608 B free: 256^3 in FP32 needs the 32 MiB workspace, the 1 MiB L2 flush and 4 x 256 KiB
  // (A, B in both layouts, D).
  auto g = bench("gemm_out_of_memory.json", {"gpu.gemm.fp32"});
  ASSERT_EQ(g.run.exit_code, 0) << g.run.err;
  ASSERT_EQ(g.results.size(), 2u) << g.results.dump();
  for (auto &r : g.results)
    EXPECT_EQ(r["status"], "skipped") << r.dump();
  EXPECT_EQ(g.results.at(0)["reason"],
            "needs 35651584 B (34.0 MiB) of device memory on GPU 0 (NVIDIA H100 80GB HBM3) for "
            "fp32 256x256x256 (A, B in both layouts, D, the 32 MiB workspace and the 1 MiB L2 "
            "flush); 35012608 B (33.4 MiB) of 80.0 GiB free, and a tenth of that stays for the "
            "driver and other processes");
}

TEST(BenchGpuCli, TransfersTheFreeMemoryCannotHoldAreSkippedNamingTheBytes) {
  // 1 MiB free: a 1 MiB buffer does not fit in 90 % of it.
  auto g = bench("little_free.json", {"gpu.h2d.pinned", "gpu.d2h.pageable", "gpu.bidir"});
  ASSERT_EQ(g.run.exit_code, 0) << g.run.err;
  ASSERT_EQ(g.results.size(), 3u) << g.results.dump();
  for (auto &r : g.results)
    EXPECT_EQ(r["status"], "skipped") << r.dump();
  EXPECT_EQ(result(g, "gpu.h2d.pinned")->at("reason"),
            "needs 1048576 B (1.0 MiB) of device memory on GPU 0 (NVIDIA H100 80GB HBM3) for a "
            "buffer of 1 MiB; 1048576 B (1.0 MiB) of 80.0 GiB free, and a tenth of that stays for "
            "the driver and other processes");
  EXPECT_NE(result(g, "gpu.bidir.pinned")
                ->at("reason")
                .get<std::string>()
                .find("needs 2097152 B (2.0 MiB) of device memory on GPU 0 (NVIDIA H100 80GB "
                      "HBM3) for 2 buffers of 1 MiB"),
            std::string::npos);
  // The same sizes on a GPU with its memory free are measured.
  auto free = bench("one_gpu.json", {"gpu.h2d.pinned"});
  ASSERT_EQ(free.run.exit_code, 0) << free.run.err;
  EXPECT_EQ(free.results.at(0)["status"], "measured") << free.results.dump();
}

TEST(BenchGpuCli, PeerCopiesToAGpuWithoutFreeMemoryAreSkippedNamingTheBytes) {
  // GPU 1 has 1 MiB free: every pair touches it.
  auto g = bench("two_gpus_little_free.json", {"gpu.p2p"});
  ASSERT_EQ(g.run.exit_code, 0) << g.run.err;
  ASSERT_EQ(g.results.size(), 3u) << g.results.dump(); // 0->1, 1->0, 0<->1
  for (auto &r : g.results) {
    EXPECT_EQ(r["status"], "skipped") << r.dump();
    EXPECT_NE(r["reason"].get<std::string>().find("of device memory on GPU 1"), std::string::npos)
        << r.dump();
  }
  EXPECT_EQ(g.results.at(0)["reason"],
            "needs 1048576 B (1.0 MiB) of device memory on GPU 1 (NVIDIA H100 80GB HBM3) for a "
            "buffer of 1 MiB (receive); 1048576 B (1.0 MiB) of 80.0 GiB free, and a tenth of that "
            "stays for the driver and other processes");
}

// ---- gpu.gemm's floor (the rule itself: GpuBench.GemmFloor* in tests/unit/bench/gpu_test.cpp)

TEST(BenchGpuCli, AGemmBelowItsExpectationExitsOneWithTheMessage) {
  // DLRIG_BENCH_SMALL's shapes carry no floor of their own: the hook sets the one the rule gives
  // an H100 SXM5's bf16 at 4096^3 (half of 989.5), so the slow and the fast fake show the exit.
  const std::string floor = "DLRIG_BENCH_EXPECT=gpu.gemm.bf16=494.75";
  auto fast = bench("one_gpu.json", {"gpu.gemm.bf16"}, {floor});
  ASSERT_EQ(fast.run.exit_code, 0) << fast.run.err;
  EXPECT_EQ(fast.results.at(0)["expectation"]["met"], true) << fast.results.dump();
  auto slow = bench("one_gpu.json", {"gpu.gemm.bf16"},
                    {floor, "DLRIG_FAKE_CUBLASLT_SCENARIO=" + fixture("fake_cublaslt/slow.json")});
  EXPECT_EQ(slow.run.exit_code, 1) << slow.run.err;
  EXPECT_EQ(slow.results.at(0)["expectation"]["met"], false) << slow.results.dump();
  EXPECT_NE(slow.run.err.find("BELOW the expected 495"), std::string::npos) << slow.run.err;
  // Without the hook the small shapes are measured with no floor (never a guessed one).
  auto plain = bench("one_gpu.json", {"gpu.gemm.bf16"});
  ASSERT_EQ(plain.run.exit_code, 0) << plain.run.err;
  EXPECT_TRUE(plain.results.at(0)["expectation"].is_null()) << plain.results.dump();
}

// ---- nccl.* through the fake NCCL (tests/fake_nccl)
// ----------------------------------------------

TEST(BenchGpuCli, NcclCollectivesReportBusBandwidthAndAreVerified) {
  auto g = bench("two_gpus.json", {"nccl"}, fake_nccl("nvlink.json"));
  ASSERT_EQ(g.run.exit_code, 0) << g.run.err;
  ASSERT_EQ(g.results.size(), 5u);
  for (auto &r : g.results) {
    ASSERT_EQ(r["status"], "measured") << r.dump();
    EXPECT_EQ(r["details"]["ranks"], 2);
    EXPECT_EQ(r["details"]["nccl_version"], "2.21.9");
    EXPECT_EQ(r["details"]["nccl_found_in"], "DLRIG_NCCL_LIBRARY");
    EXPECT_EQ(r["config"], "2 GPUs 1 MiB");
  }
  auto busbw = [&](const std::string &id) {
    return result(g, id)->at("rate").at("median").get<double>();
  };
  // The scenario's bus bandwidths come back through nccl-tests' formulas.
  EXPECT_NEAR(busbw("nccl.all_reduce"), 180, 1.8);
  EXPECT_NEAR(busbw("nccl.all_gather"), 170, 1.7);
  EXPECT_NEAR(busbw("nccl.sendrecv"), 40, 0.4);
  const auto &ag = result(g, "nccl.all_gather")->at("details");
  EXPECT_DOUBLE_EQ(ag["busbw_factor"].get<double>(), 0.5); // (n - 1) / n for two GPUs
  EXPECT_NEAR(ag["algbw_gbs_median"].get<double>(), 340, 3.4);
  EXPECT_DOUBLE_EQ(result(g, "nccl.all_reduce")->at("details")["busbw_factor"].get<double>(), 1);
}

TEST(BenchGpuCli, NcclSkipsWithOneGpuOrWithoutTheLibrary) {
  auto one = bench("one_gpu.json", {"nccl.all_reduce"}, fake_nccl("nvlink.json"));
  ASSERT_EQ(one.run.exit_code, 0) << one.run.err;
  EXPECT_EQ(one.results.at(0)["reason"], "needs 2 GPUs, 1 here");
  auto none =
      bench("two_gpus.json", {"nccl.all_reduce"}, {"DLRIG_NCCL_LIBRARY=libdlrig-absent-nccl.so.2"});
  ASSERT_EQ(none.run.exit_code, 0) << none.run.err;
  EXPECT_EQ(none.results.at(0)["status"], "skipped");
  EXPECT_EQ(none.results.at(0)["reason"], "NCCL not found (tried libdlrig-absent-nccl.so.2)");
}

TEST(BenchGpuCli, NcclWrongDataExitsTwoAndAFailedCallFailsThatCollective) {
  auto g = bench("two_gpus.json", {"nccl"}, fake_nccl("faults.json"));
  EXPECT_EQ(g.run.exit_code, 2) << g.run.err;
  auto ag = *result(g, "nccl.all_gather");
  EXPECT_EQ(ag["status"], "wrong");
  EXPECT_NE(ag["reason"].get<std::string>().find("rank 0 (GPU 0) element 0"), std::string::npos)
      << ag.dump();
  auto bc = *result(g, "nccl.broadcast"); // the scenario has no rate for it
  EXPECT_EQ(bc["status"], "failed");
  EXPECT_NE(bc["reason"].get<std::string>().find("ncclInvalidUsage"), std::string::npos)
      << bc.dump();
  EXPECT_EQ(result(g, "nccl.all_reduce")->at("status"), "measured");
  auto init =
      bench("two_gpus.json", {"nccl.all_reduce", "nccl.sendrecv"}, fake_nccl("init_fails.json"));
  ASSERT_EQ(init.run.exit_code, 0) << init.run.err;
  for (auto &r : init.results) {
    EXPECT_EQ(r["status"], "failed") << r.dump();
    EXPECT_NE(r["reason"].get<std::string>().find("ncclCommInitAll: ncclSystemError (2)"),
              std::string::npos)
        << r.dump();
  }
  auto hook = bench("two_gpus.json", {"nccl.all_reduce"}, [] {
    auto e = fake_nccl("nvlink.json");
    e.push_back("DLRIG_BENCH_CORRUPT=1");
    return e;
  }());
  EXPECT_EQ(hook.run.exit_code, 2) << hook.run.err;
}

std::vector<std::string> fake_nvml(const std::string &scenario) {
  return {std::string("DLRIG_NVML_LIBRARY=") + DLRIG_FAKE_NVML,
          "DLRIG_FAKE_NVML_SCENARIO=" + fixture("fake_cuda/" + scenario)};
}

// Every collective carries NVML's readings of every GPU taking part, read while it ran: GPU 0 is
// cool, GPU 1 reports HW thermal slowdown in every reading, so the collective is throttled.
TEST(BenchGpuCli, NcclRecordsEveryGpusClocksAndFlagsAThrottledOne) {
  auto g = bench("two_gpus.json", {"nccl"},
                 with(fake_nccl("nvlink.json"), fake_nvml("nvml_two_h100.json")));
  ASSERT_EQ(g.run.exit_code, 0) << g.run.err;
  ASSERT_EQ(g.results.size(), 5u);
  for (auto &r : g.results) {
    ASSERT_EQ(r["status"], "measured") << r.dump();
    const auto &d = r["details"];
    ASSERT_EQ(d["gpus"].size(), 2u) << d.dump();
    for (const auto &gpu : d["gpus"]) {
      const auto &samples = gpu["gpu_state_samples"];
      ASSERT_TRUE(samples.is_object()) << gpu.dump();
      // At least one reading, at most one per timed sample (readings closer than StateLog's
      // interval are skipped).
      EXPECT_GE(samples["readings"].get<int>(), 1) << gpu.dump();
      EXPECT_LE(samples["readings"].get<int>(), r["seconds"]["samples"].get<int>()) << r.dump();
    }
    const auto &cool = d["gpus"][0], &hot = d["gpus"][1];
    EXPECT_EQ(cool["gpu"], 0);
    EXPECT_EQ(cool["gpu_state_samples"]["throttled_readings"], 0);
    EXPECT_EQ(cool["gpu_state_samples"]["sm_clock_mhz"]["min"], 1980);
    EXPECT_EQ(cool["gpu_state_samples"]["clocks_event_reasons"], json::array());
    EXPECT_EQ(cool["throttled"], false);
    EXPECT_EQ(hot["gpu"], 1);
    EXPECT_EQ(hot["gpu_state_samples"]["throttled_readings"], hot["gpu_state_samples"]["readings"]);
    EXPECT_EQ(hot["gpu_state_samples"]["sm_clock_mhz"]["max"], 1275);
    EXPECT_EQ(hot["gpu_state_samples"]["temperature_c_max"], 91);
    EXPECT_EQ(hot["gpu_state_samples"]["power_w_max"], 455);
    EXPECT_EQ(hot["gpu_state_samples"]["clocks_event_reasons"],
              json::array({"hw_thermal_slowdown"}));
    EXPECT_EQ(hot["throttled"], true);
    EXPECT_EQ(d["throttled"], true) << d.dump();
    EXPECT_NE(d["gpu_state_note"].get<std::string>().find("GPU 1 lowered its clocks"),
              std::string::npos)
        << d.dump();
  }
  auto table = run_dlrig({"bench", "show", "1", "--db", g.db});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("GPU 1 throttled in"), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find("GPU 0 throttled in"), std::string::npos) << table.out;
}

// Without NVML nothing is read: every reading and the throttled flags are null, never 0 or false.
TEST(BenchGpuCli, NcclWithoutNvmlSaysItsReadingsAreUnknown) {
  auto g = bench("two_gpus.json", {"nccl.all_reduce"},
                 with(fake_nccl("nvlink.json"), {"DLRIG_NVML_LIBRARY=libdlrig-absent-nvml.so.1"}));
  ASSERT_EQ(g.run.exit_code, 0) << g.run.err;
  const auto &d = g.results.at(0)["details"];
  ASSERT_EQ(d["gpus"].size(), 2u) << d.dump();
  for (const auto &gpu : d["gpus"]) {
    EXPECT_TRUE(gpu["gpu_state_samples"].is_null()) << gpu.dump();
    EXPECT_TRUE(gpu["throttled"].is_null()) << gpu.dump();
    EXPECT_NE(gpu["gpu_state_note"].get<std::string>().find("NVML"), std::string::npos);
  }
  EXPECT_TRUE(d["throttled"].is_null()) << d.dump();
  EXPECT_NE(d["gpu_state_note"].get<std::string>().find("libdlrig-absent-nvml"), std::string::npos)
      << d.dump();
}

// An Xid NVML raises while a GPU's last configuration runs (no later configuration would read
// it) fails that configuration naming the Xid, and dlrig exits 2; the other GPU's result stays.
TEST(BenchGpuCli, AnXidDuringAGpusLastConfigurationFailsIt) {
  auto g = bench("two_gpus.json", {"gpu.memory.copy"}, fake_nvml("nvml_two_h100_xid.json"));
  EXPECT_EQ(g.run.exit_code, 2) << g.run.err;
  ASSERT_EQ(g.results.size(), 2u) << g.results.dump();
  EXPECT_EQ(g.results.at(0)["config"].get<std::string>().rfind("gpu0", 0), 0u);
  EXPECT_EQ(g.results.at(0)["status"], "measured") << g.results.dump();
  const auto &last = g.results.at(1);
  EXPECT_EQ(last["config"].get<std::string>().rfind("gpu1", 0), 0u);
  EXPECT_EQ(last["status"], "failed") << last.dump();
  EXPECT_NE(last["reason"].get<std::string>().find("GPU 1 (NVIDIA H100 80GB HBM3) failed"),
            std::string::npos)
      << last.dump();
  EXPECT_NE(last["reason"].get<std::string>().find("NVML reported Xid 79"), std::string::npos)
      << last.dump();
  EXPECT_NE(g.run.err.find("bench: GPU fault: GPU 1 (NVIDIA H100 80GB HBM3) failed and is not "
                           "used again in this run: NVML reported Xid 79"),
            std::string::npos)
      << g.run.err;
  // The same run without the Xid measures both.
  auto calm = bench("two_gpus.json", {"gpu.memory.copy"}, fake_nvml("nvml_two_h100.json"));
  EXPECT_EQ(calm.run.exit_code, 0) << calm.run.err;
}

// The same for a collective: the Xid one rank's GPU raises while it runs fails it, and the
// collectives after it are skipped (one GPU is left).
TEST(BenchGpuCli, AnXidDuringACollectiveFailsIt) {
  auto g = bench("two_gpus.json", {"nccl.all_reduce", "nccl.all_gather"},
                 with(fake_nccl("nvlink.json"), fake_nvml("nvml_two_h100_xid.json")));
  EXPECT_EQ(g.run.exit_code, 2) << g.run.err;
  auto ar = *result(g, "nccl.all_reduce");
  EXPECT_EQ(ar["status"], "failed") << ar.dump();
  EXPECT_NE(ar["reason"].get<std::string>().find("NVML reported Xid 79"), std::string::npos)
      << ar.dump();
  auto ag = *result(g, "nccl.all_gather");
  EXPECT_EQ(ag["status"], "skipped") << ag.dump();
  EXPECT_NE(g.run.err.find("bench: GPU fault: GPU 1"), std::string::npos) << g.run.err;
}

// GPU 1 falls off the bus inside a collective (the fake NCCL's lose_gpu_at_op): NCCL's kernel on
// GPU 0 would wait for GPU 1's data for ever (the fake libcuda holds GPU 0's stream, giving up
// after DLRIG_FAKE_CUDA_HOLD_S) and the next ncclGroupEnd answers ncclUnhandledCudaError without
// naming a GPU. dlrig asks every GPU of the communicators (GPU 1 answers its sticky error and is
// marked lost), aborts the communicators so GPU 0's kernel returns, fails that collective naming
// GPU 1 and skips the next (one GPU left): exit 2, the fault named.
TEST(BenchGpuCli, AGpuLostInsideACollectiveAbortsTheCommunicators) {
  const auto started = std::chrono::steady_clock::now();
  auto g = bench("two_gpus.json", {"nccl.all_reduce", "nccl.all_gather"},
                 with(fake_nccl("gpu1_lost_at_op3.json"), {"DLRIG_FAKE_CUDA_HOLD_S=60"}));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(g.run.exit_code, 2) << g.run.err;
  auto ar = *result(g, "nccl.all_reduce");
  EXPECT_EQ(ar["status"], "failed") << ar.dump();
  const std::string why = ar["reason"].get<std::string>();
  EXPECT_NE(why.find("ncclUnhandledCudaError"), std::string::npos) << why;
  EXPECT_NE(why.find("GPU 1 (NVIDIA H100 80GB HBM3) failed"), std::string::npos) << why;
  EXPECT_NE(why.find("the communicators were aborted (ncclCommAbort)"), std::string::npos) << why;
  auto ag = *result(g, "nccl.all_gather");
  EXPECT_EQ(ag["status"], "skipped") << ag.dump();
  EXPECT_NE(g.run.err.find("bench: GPU fault: GPU 1"), std::string::npos) << g.run.err;
  EXPECT_EQ(g.run.err.find("fake libcuda"), std::string::npos) << g.run.err; // no wait gave up
  EXPECT_LT(seconds, 50);
}

// The same GPU failing only once everything was queued ("when": "query"): GPU 0's event waits
// (held), GPU 1's query answers the driver's error; dlrig marks GPU 1 lost and aborts the
// communicators instead of waiting on GPU 0.
TEST(BenchGpuCli, AGpuThatFailsWhileACollectiveRunsIsSeenByPolling) {
  auto g = bench("two_gpus.json", {"nccl.all_reduce", "nccl.all_gather"},
                 with(fake_nccl("gpu1_lost_at_query.json"), {"DLRIG_FAKE_CUDA_HOLD_S=60"}));
  EXPECT_EQ(g.run.exit_code, 2) << g.run.err;
  auto ar = *result(g, "nccl.all_reduce");
  EXPECT_EQ(ar["status"], "failed") << ar.dump();
  const std::string why = ar["reason"].get<std::string>();
  EXPECT_NE(why.find("GPU 1 (NVIDIA H100 80GB HBM3) answered cuEventQuery: CUDA_ERROR_UNKNOWN"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("the communicators were aborted (ncclCommAbort)"), std::string::npos) << why;
  EXPECT_EQ((*result(g, "nccl.all_gather"))["status"], "skipped");
  EXPECT_EQ(g.run.err.find("fake libcuda"), std::string::npos) << g.run.err;
}

// NCCL_ALGO / NCCL_PROTO as NCCL reads them, per collective; unset: NCCL chose (null, never a
// guess); a value NCCL's configuration file set is told apart from the environment's.
TEST(BenchGpuCli, NcclRecordsTheAlgorithmAndProtocolRequested) {
  auto free = bench("two_gpus.json", {"nccl.all_reduce"}, fake_nccl("nvlink.json"));
  ASSERT_EQ(free.run.exit_code, 0) << free.run.err;
  const auto &fd = free.results.at(0)["details"];
  EXPECT_EQ(fd["nccl_algorithm"], json({{"variable", "NCCL_ALGO"},
                                        {"setting", nullptr},
                                        {"set_in", nullptr},
                                        {"requested", nullptr},
                                        {"chosen_by", "NCCL"}}))
      << fd.dump();
  EXPECT_TRUE(fd["nccl_protocol"]["requested"].is_null());
  EXPECT_EQ(fd["nccl_protocol"]["chosen_by"], "NCCL");

  // NCCL 2.27 (tuned.json): per-function entries; NCCL_PROTO comes from the configuration file.
  auto g = bench("two_gpus.json", {"nccl"},
                 with(fake_nccl("tuned.json"), {"NCCL_ALGO=Ring;allreduce:Tree"}));
  ASSERT_EQ(g.run.exit_code, 0) << g.run.err;
  const auto &ar = result(g, "nccl.all_reduce")->at("details");
  EXPECT_EQ(ar["nccl_algorithm"]["requested"], "Tree") << ar.dump();
  EXPECT_EQ(ar["nccl_algorithm"]["chosen_by"], "NCCL_ALGO");
  EXPECT_EQ(ar["nccl_algorithm"]["setting"], "Ring;allreduce:Tree");
  EXPECT_EQ(ar["nccl_algorithm"]["set_in"], "environment");
  EXPECT_EQ(result(g, "nccl.broadcast")->at("details")["nccl_algorithm"]["requested"], "Ring");
  EXPECT_EQ(ar["nccl_protocol"]["requested"], "Simple");
  EXPECT_NE(ar["nccl_protocol"]["set_in"].get<std::string>().find("configuration file"),
            std::string::npos);
  const auto &sr = result(g, "nccl.sendrecv")->at("details");
  EXPECT_TRUE(sr["nccl_algorithm"]["requested"].is_null()) << sr.dump();
  EXPECT_TRUE(sr["nccl_algorithm"]["chosen_by"].is_null()) << sr.dump();
  auto table = run_dlrig({"bench", "show", "1", "--db", g.db});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("NCCL_ALGO Tree; NCCL_PROTO Simple"), std::string::npos) << table.out;

  // NCCL 2.21 (nvlink.json) reads one list for every function: a per-function entry is not
  // understood, so what it requests is unknown (null), not guessed.
  auto old = bench("two_gpus.json", {"nccl.all_reduce"},
                   with(fake_nccl("nvlink.json"), {"NCCL_ALGO=allreduce:Tree"}));
  const auto &od = old.results.at(0)["details"]["nccl_algorithm"];
  EXPECT_TRUE(od["requested"].is_null()) << od.dump();
  EXPECT_TRUE(od["chosen_by"].is_null()) << od.dump();
  EXPECT_NE(od["note"].get<std::string>().find("not understood"), std::string::npos);
}

TEST(BenchGpuCli, FitUsesTheStoredGemmRateAndSaysSo) {
  auto home = scratch("xdg-gemm");
  std::filesystem::remove_all(home);
  std::filesystem::create_directories(home / "dlrig");
  const std::string db = (home / "dlrig" / "results.db").string();
  auto catalog = run_dlrig({"fit", "llama-2-7b", "--gpu", "H100 SXM5", "--json"},
                           {"XDG_DATA_HOME=" + home.string()});
  ASSERT_LE(catalog.exit_code, 1) << catalog.err;
  const auto before = json::parse(catalog.out)["gpus"][0]["time"]["throughput_source"];
  EXPECT_EQ(before.get<std::string>().find("measured 790"), std::string::npos) << before;
  auto env = fake_cuda("one_gpu.json");
  env.push_back("DLRIG_BENCH_SMALL=1");
  auto b = run_dlrig({"bench", "--quick", "gpu.gemm.bf16", "--db", db}, env);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  // The fake's "NVIDIA H100 80GB HBM3" is the catalog's H100 SXM5: its measured rate is used.
  auto fit = run_dlrig({"fit", "llama-2-7b", "--gpu", "H100 SXM5", "--json"},
                       {"XDG_DATA_HOME=" + home.string()});
  ASSERT_LE(fit.exit_code, 1) << fit.err;
  auto t = json::parse(fit.out)["gpus"][0]["time"];
  EXPECT_EQ(t["throughput_source"], "GEMM bf16: measured 790 TFLOP/s on this machine's NVIDIA "
                                    "H100 80GB HBM3 (gpu.gemm.bf16 gpu0 256x256x256, dlrig bench "
                                    "run 1)");
  // Another GPU keeps the catalog's basis.
  auto other = run_dlrig({"fit", "llama-2-7b", "--gpu", "A100 80GB SXM4", "--json"},
                         {"XDG_DATA_HOME=" + home.string()});
  ASSERT_LE(other.exit_code, 1) << other.err;
  EXPECT_EQ(json::parse(other.out)["gpus"][0]["time"]["throughput_source"].get<std::string>().find(
                "measured 790"),
            std::string::npos);
}

TEST(BenchGpuCli, GemmRecordsTheClocksPowerAndThrottleReasonsItRanAt) {
  auto g = bench("one_gpu.json", {"gpu.gemm.bf16"},
                 {std::string("DLRIG_NVML_LIBRARY=") + DLRIG_FAKE_NVML,
                  "DLRIG_FAKE_NVML_SCENARIO=" + fixture("fake_cuda/nvml_h100_hot.json")});
  ASSERT_EQ(g.run.exit_code, 0) << g.run.err;
  const auto &d = g.results.at(0)["details"];
  ASSERT_TRUE(d["gpu_state_during_run"].is_object()) << d.dump();
  EXPECT_EQ(d["gpu_state_during_run"]["sm_clock_mhz"], 1410);
  EXPECT_EQ(d["gpu_state_during_run"]["power_w"], 699);
  EXPECT_EQ(d["gpu_state_during_run"]["temperature_c"], 84);
  EXPECT_EQ(d["gpu_state_during_run"]["clocks_event_reasons"],
            json::array({"sw_power_cap", "sw_thermal_slowdown"}));
  EXPECT_EQ(d["throttled"], true);
  EXPECT_NE(d["gpu_state_note"].get<std::string>().find("lowered its clocks"), std::string::npos);
  auto without = bench("one_gpu.json", {"gpu.gemm.bf16"});
  EXPECT_TRUE(without.results.at(0)["details"]["gpu_state_during_run"].is_null());
  EXPECT_NE(without.results.at(0)["details"]["gpu_state_note"].get<std::string>().find("NVML"),
            std::string::npos);
}

TEST(BenchGpuCli, EveryGpuFamilyReadsNvmlDuringEachPassAndFlagsThrottling) {
  std::vector<std::string> hot{std::string("DLRIG_NVML_LIBRARY=") + DLRIG_FAKE_NVML,
                               "DLRIG_FAKE_NVML_SCENARIO=" +
                                   fixture("fake_cuda/nvml_h100_hot.json")};
  std::vector<std::string> ids{"gpu.memory.copy",   "gpu.h2d.pinned",  "gpu.h2d.pageable",
                               "gpu.launch.queued", "gpu.launch.sync", "gpu.gemm.bf16"};
  auto g = bench("one_gpu.json", ids, hot);
  ASSERT_EQ(g.run.exit_code, 0) << g.run.err;
  for (const auto &id : ids) {
    const json *r = result(g, id);
    ASSERT_NE(r, nullptr) << id;
    ASSERT_EQ((*r)["status"], "measured") << r->dump();
    const auto &d = (*r)["details"];
    ASSERT_TRUE(d["gpu_state_samples"].is_object()) << d.dump();
    // At least one reading, at most one per timed pass (the warm-up may add one): passes closer
    // than StateLog's interval share a reading.
    EXPECT_GE(d["gpu_state_samples"]["readings"].get<int>(), 1) << r->dump();
    EXPECT_LE(d["gpu_state_samples"]["readings"].get<int>(),
              (*r)["seconds"]["samples"].get<int>() + 1)
        << r->dump();
    EXPECT_EQ(d["gpu_state_samples"]["throttled_readings"], d["gpu_state_samples"]["readings"]);
    EXPECT_EQ(d["gpu_state_samples"]["sm_clock_mhz"]["min"], 1410);
    EXPECT_EQ(d["gpu_state_samples"]["temperature_c_max"], 84);
    EXPECT_EQ(d["gpu_state_samples"]["clocks_event_reasons"],
              json::array({"sw_power_cap", "sw_thermal_slowdown"}));
    EXPECT_EQ(d["throttled"], true) << id;
  }
  auto table = run_dlrig({"bench", "show", "1", "--db", g.db});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("throttled in"), std::string::npos) << table.out;
  auto cool = bench("one_gpu.json", {"gpu.memory.copy"});
  EXPECT_TRUE(cool.results.at(0)["details"]["gpu_state_samples"].is_null());
  EXPECT_NE(cool.results.at(0)["details"]["gpu_state_note"].get<std::string>().find("NVML"),
            std::string::npos);
}

} // namespace
} // namespace dlrig::test
