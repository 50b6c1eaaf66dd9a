#include "dlrig/monitor/diagnose.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace dlrig::monitor {
namespace {

GpuSample busy_gpu() {
  GpuSample g;
  g.index = 0;
  g.name = "NVIDIA GeForce RTX 4090";
  g.utilization_ratio = 0.97;
  g.memory_total_bytes = 24e9;
  g.memory_used_bytes = 12e9;
  g.sm_clock_hertz = 2520e6;
  g.sm_clock_max_hertz = 3120e6;
  g.temperature_celsius = 67;
  g.power_limit_watts = 450;
  g.clocks_event_reasons = 0;
  g.pcie_link_generation = 4;
  g.pcie_link_generation_max = 4;
  g.pcie_link_width = 16;
  g.pcie_link_width_max = 16;
  g.processes =
      std::vector<ProcessSample>{ProcessSample{48211, 10e9, 0.9, "alice", "python", true}};
  return g;
}

std::vector<Sample> window_of(const std::vector<GpuSample> &per_sample, double step = 1) {
  std::vector<Sample> w;
  double t = 1000;
  for (const auto &g : per_sample) {
    Sample s;
    s.time = t;
    t += step;
    s.gpus.push_back(g);
    w.push_back(s);
  }
  return w;
}

// A copy: the findings are usually a temporary.
std::optional<Finding> find(const std::vector<Finding> &fs, const std::string &id) {
  auto it = std::find_if(fs.begin(), fs.end(), [&](const Finding &f) { return f.id == id; });
  if (it == fs.end())
    return std::nullopt;
  return *it;
}

TEST(MonitorDiagnose, AHealthyBusyGpuSaysNothing) {
  auto w = window_of(std::vector<GpuSample>(10, busy_gpu()));
  EXPECT_TRUE(diagnose(w).empty());
  EXPECT_TRUE(diagnose({}).empty());
}

TEST(MonitorDiagnose, ThrottlingNamesTheReasonTheTemperatureAndTheClocks) {
  GpuSample g = busy_gpu();
  g.clocks_event_reasons = 0x20 | 0x40; // SW and HW thermal slowdown
  g.temperature_celsius = 87;
  g.sm_clock_hertz = 1410e6;
  g.sm_clock_max_hertz = 2520e6;
  auto fs = diagnose(window_of({g}));
  std::optional<Finding> f = find(fs, "throttling");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, "warning");
  EXPECT_EQ(f->gpu, 0u);
  EXPECT_EQ(f->message, "GPU 0 is throttling (thermal 87 °C, hardware thermal 87 °C): clocks "
                        "1,410 of 2,520 MHz");
  // The idle bit (0x1) and sync boost (0x10) are not throttling.
  g.clocks_event_reasons = 0x1 | 0x10;
  EXPECT_FALSE(find(diagnose(window_of({g})), "throttling"));
  // Unknown reasons: nothing said.
  g.clocks_event_reasons.reset();
  EXPECT_FALSE(find(diagnose(window_of({g})), "throttling"));
}

TEST(MonitorDiagnose, IdleWhileItsProcessRunsWithTheHostEvidence) {
  GpuSample idle = busy_gpu();
  idle.utilization_ratio = 0.02;
  std::vector<GpuSample> gs(6, idle);
  gs[0].utilization_ratio = 0.9;
  auto w = window_of(gs, 12); // 60 s
  for (auto &s : w) {
    s.host.cpu_utilization_ratio = 1.0;
    s.host.data_read_bytes_per_second = 480e6;
  }
  std::optional<Finding> f = find(diagnose(w), "idle-while-process-runs");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->message, "GPU 0 idle 83 % of the last minute while its process runs: the input "
                        "pipeline is starving it (CPU 100 %, data disk 480 MB/s)");
  // Without a process the GPU is just idle; with too few samples nothing is said yet.
  for (auto &s : w)
    s.gpus[0].processes = std::vector<ProcessSample>{};
  EXPECT_FALSE(find(diagnose(w), "idle-while-process-runs"));
  EXPECT_FALSE(find(diagnose(window_of({idle, idle, idle})), "idle-while-process-runs"));
  // A mostly busy GPU is not idle.
  std::vector<GpuSample> mostly(6, busy_gpu());
  mostly[2].utilization_ratio = 0.0;
  EXPECT_FALSE(find(diagnose(window_of(mostly)), "idle-while-process-runs"));
}

TEST(MonitorDiagnose, PcieLinkBelowItsBestOnlyUnderLoad) {
  GpuSample g = busy_gpu();
  g.pcie_link_generation = 1;
  std::optional<Finding> f = find(diagnose(window_of({g})), "pcie-link-degraded");
  ASSERT_TRUE(f);
  EXPECT_NE(f->message.find("fell to Gen1 (of Gen4) under load"), std::string::npos);
  // Idle GPUs lower their link speed to save power: not a finding.
  g.utilization_ratio = 0.0;
  EXPECT_FALSE(find(diagnose(window_of({g})), "pcie-link-degraded"));
  GpuSample narrow = busy_gpu();
  narrow.pcie_link_width = 8;
  f = find(diagnose(window_of({narrow})), "pcie-link-degraded");
  ASSERT_TRUE(f);
  EXPECT_NE(f->message.find("runs x8 of x16"), std::string::npos);
}

TEST(MonitorDiagnose, MemoryFullAndRising) {
  GpuSample before = busy_gpu(), now = busy_gpu();
  before.memory_used_bytes = 22e9;
  now.memory_used_bytes = 23.6e9;
  std::optional<Finding> f = find(diagnose(window_of({before, now})), "memory-nearly-full");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->message,
            "GPU 0 memory 98 % full and rising: the next larger batch will run out of memory");
  // Full but steady (a caching allocator holding its pool) is not rising.
  EXPECT_FALSE(find(diagnose(window_of({now, now})), "memory-nearly-full"));
}

TEST(MonitorDiagnose, LostGpuXidsAndHiddenProcesses) {
  GpuSample lost;
  lost.index = 1;
  lost.lost = true;
  GpuSample xid = busy_gpu();
  xid.xids = {79};
  GpuSample later = busy_gpu();
  later.processes->push_back(
      ProcessSample{51234, 1e9, std::nullopt, std::nullopt, std::nullopt, false});
  Sample a, b;
  a.time = 1;
  a.gpus = {xid};
  b.time = 2;
  b.gpus = {later, lost};
  auto fs = diagnose({a, b});
  std::optional<Finding> x = find(fs, "xid");
  ASSERT_TRUE(x);
  EXPECT_EQ(x->message, "GPU 0 reported Xid 79 (GPU has fallen off the bus)");
  ASSERT_TRUE(find(fs, "gpu-lost"));
  EXPECT_EQ(find(fs, "gpu-lost")->gpu, 1u);
  std::optional<Finding> ns = find(fs, "pid-namespace");
  ASSERT_TRUE(ns);
  EXPECT_EQ(ns->gpu, std::nullopt);
  EXPECT_NE(ns->message.find("--pid=host"), std::string::npos);
}

// serve's window grew with every scrape of the last 60 s: under a flood of scrapes (wrk, 8
// connections, eight GPUs) its memory rose 11 -> 81 MB in 40 s and each scrape's diagnoses slowed
// with it (307 -> 166 scrapes/s). Spaced, it stays small, keeps 60 s, and loses no Xid.
TEST(MonitorDiagnose, ASpacedWindowStaysSmallAndKeepsItsXids) {
  std::vector<Sample> w;
  for (int i = 0; i < 120000; ++i) { // 120 s of a scrape every millisecond
    Sample s;
    s.time = 1000 + i * 0.001;
    s.gpus.push_back(busy_gpu());
    if (i == 110000)
      s.gpus[0].xids = {79}; // fallen off the bus, in a sample that is then replaced
    add_to_window(w, std::move(s), 60, 0.1);
    ASSERT_LE(w.size(), 603u) << i; // 60 / 0.1 + 2, and one for rounding
  }
  EXPECT_GE(w.size(), 590u);
  EXPECT_NEAR(w.back().time - w.front().time, 60, 0.11);
  EXPECT_NEAR(w.back().time, 1000 + 119999 * 0.001, 1e-9); // the newest is always kept
  auto xid = find(diagnose(w), "xid");
  ASSERT_TRUE(xid);
  EXPECT_NE(xid->message.find("79"), std::string::npos) << xid->message;

  // Unspaced (watch: one sample per interval), every sample of the last 60 s stays.
  std::vector<Sample> all;
  for (int i = 0; i < 200; ++i) {
    Sample s;
    s.time = 1000 + i * 0.5;
    add_to_window(all, std::move(s), 60);
  }
  EXPECT_EQ(all.size(), 121u); // 39.5 s .. 99.5 s: 60 s back from the newest
  EXPECT_EQ(all.front().time, 1039.5);
}

TEST(MonitorDiagnose, EveryRuleIsListedOnce) {
  std::vector<std::string> ids;
  for (const auto &r : diagnosis_rules())
    ids.push_back(r.id);
  auto sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::unique(sorted.begin(), sorted.end()), sorted.end());
  EXPECT_EQ(ids.size(), 7u);
}

} // namespace
} // namespace dlrig::monitor
