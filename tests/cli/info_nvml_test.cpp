// dlrig info with the fake NVML standing in for the driver: the real binary, the fixture
// machines, and the scenarios of tests/data (docs/testing.md, "Fake NVML").
#include "support/cli.hpp"

#include "dlrig/core/json.hpp"

#include <gtest/gtest.h>

#include <set>

namespace dlrig::test {
namespace {

std::vector<std::string> fake_nvml(const std::string &scenario) {
  return {std::string("DLRIG_NVML_LIBRARY=") + DLRIG_FAKE_NVML,
          "DLRIG_FAKE_NVML_SCENARIO=" + fixture(scenario)};
}

TEST(InfoNvmlCli, ServerJsonHasEightH100OnNvSwitch) {
  auto r = run_dlrig({"info", "--sysroot", fixture("server-8xh100"), "--json"},
                     fake_nvml("server-8xh100/nvml.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json j = Json::parse(r.out);
  const Json &nv = j.at("nvidia");
  EXPECT_EQ(nv.at("nvml_status"), "ok");
  EXPECT_EQ(nv.at("driver_version"), "550.54.15");
  EXPECT_EQ(nv.at("cuda_driver_version"), "12.4");
  EXPECT_EQ(nv.at("gpu_count"), 8);

  std::set<std::string> buses;
  for (const auto &g : j.at("gpus")) {
    if (g.at("nvml").is_null())
      continue;
    buses.insert(g.at("bdf").get<std::string>());
    EXPECT_EQ(g.at("nvml").at("name"), "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(g.at("nvml").at("compute_capability"), "9.0");
    EXPECT_EQ(g.at("nvml").at("architecture"), "Hopper");
    EXPECT_EQ(g.at("nvml").at("nvlinks").size(), 18u);
  }
  EXPECT_EQ(buses, (std::set<std::string>{"0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0",
                                          "0000:5d:00.0", "0000:9a:00.0", "0000:ab:00.0",
                                          "0000:ba:00.0", "0000:db:00.0"}));
  ASSERT_EQ(nv.at("pairs").size(), 28u);
  for (const auto &p : nv.at("pairs")) {
    EXPECT_EQ(p.at("topology"), "NV18");
    EXPECT_EQ(p.at("p2p_read"), "ok");
  }
}

// DGX Spark (GB10): NVML has no memory figure for a GPU without memory of its own; info shows
// the system memory it shares, never 0 or a bare n/a.
TEST(InfoNvmlCli, Gb10ShowsUnifiedMemory) {
  auto r = run_dlrig({"info", "--sysroot", fixture("laptop-no-gpu"), "--json"},
                     fake_nvml("nvml/gb10-unified.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json j = Json::parse(r.out);
  const Json *gb10 = nullptr;
  for (const auto &g : j.at("gpus"))
    if (!g.at("nvml").is_null())
      gb10 = &g.at("nvml");
  ASSERT_NE(gb10, nullptr);
  EXPECT_EQ(gb10->at("name"), "NVIDIA GB10");
  EXPECT_EQ(gb10->at("memory_kind"), "unified");
  EXPECT_TRUE(gb10->at("memory_total_bytes").is_null()); // unknown, not 0
  EXPECT_EQ(gb10->at("c2c_enabled"), true);
  EXPECT_EQ(gb10->at("architecture"), "Blackwell");
  auto text = run_dlrig({"info", "--sysroot", fixture("laptop-no-gpu")},
                        fake_nvml("nvml/gb10-unified.json"));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  // laptop-no-gpu's /proc/meminfo: MemTotal 16093888 kB = 15.3 GiB.
  EXPECT_NE(text.out.find("unified: 15.3 GiB system memory shared with the CPU"), std::string::npos)
      << text.out;
}

// GH200: the GPU's own HBM3, and the Grace CPU's memory it reaches over NVLink-C2C.
TEST(InfoNvmlCli, GraceHopperShowsHbmAndC2cMemory) {
  auto r =
      run_dlrig({"info", "--sysroot", fixture("laptop-no-gpu")}, fake_nvml("nvml/gh200-c2c.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("NVIDIA GH200 480GB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/ 95.0 GiB + 15.3 GiB CPU memory over NVLink-C2C"), std::string::npos)
      << r.out;
}

TEST(InfoNvmlCli, ServerTextShowsTheTopologyMatrix) {
  auto r = run_dlrig({"info", "--sysroot", fixture("server-8xh100")},
                     fake_nvml("server-8xh100/nvml.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string &out = r.out;
  EXPECT_NE(out.find("CUDA (highest the driver supports)  12.4"), std::string::npos) << out;
  auto at = out.find("GPU topology");
  ASSERT_NE(at, std::string::npos) << out;
  std::string matrix = out.substr(at);
  EXPECT_NE(matrix.find("GPU0  GPU1  GPU2  GPU3  GPU4  GPU5  GPU6  GPU7"), std::string::npos);
  EXPECT_NE(matrix.find("GPU0  X     NV18  NV18  NV18  NV18  NV18  NV18  NV18"), std::string::npos)
      << matrix;
  EXPECT_NE(matrix.find("GPU7  NV18  NV18  NV18  NV18  NV18  NV18  NV18  X"), std::string::npos)
      << matrix;
}

TEST(InfoNvmlCli, MarkdownCarriesTheMatrix) {
  auto r = run_dlrig({"info", "--sysroot", fixture("server-8xh100"), "--markdown"},
                     fake_nvml("server-8xh100/nvml.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("| GPU3 | NV18 | NV18 | NV18 | X | NV18 |"), std::string::npos) << r.out;
}

TEST(InfoNvmlCli, VersionMismatchIsExplainedAndNotFatal) {
  auto r = run_dlrig({"info", "--sysroot", fixture("server-8xh100")},
                     fake_nvml("nvml/version-mismatch.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("failed to initialise: RM has detected an NVML/RM version mismatch (NVML "
                       "error 18)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Driver/library version mismatch"), std::string::npos);
  EXPECT_NE(r.out.find("reboot"), std::string::npos);

  auto j = run_dlrig({"info", "--sysroot", fixture("server-8xh100"), "--json"},
                     fake_nvml("nvml/version-mismatch.json"));
  ASSERT_EQ(j.exit_code, 0) << j.err;
  Json nv = Json::parse(j.out).at("nvidia");
  EXPECT_EQ(nv.at("nvml_status"), "init-failed");
  EXPECT_EQ(nv.at("nvml_error_code"), 18);
}

TEST(InfoNvmlCli, NoNvmlLibraryIsReportedInTheSnapshot) {
  // run_dlrig's default environment points DLRIG_NVML_LIBRARY at a path that does not exist.
  auto r = run_dlrig({"info", "--sysroot", fixture("server-8xh100"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json nv = Json::parse(r.out).at("nvidia");
  EXPECT_EQ(nv.at("nvml_status"), "not-found");
  EXPECT_NE(nv.at("nvml_error").get<std::string>().find("/nonexistent/libnvidia-ml.so.1"),
            std::string::npos);
}

TEST(InfoNvmlCli, EgpuDesktopAndContainerScenarios) {
  struct Case {
    const char *machine;
    const char *bdf;
    const char *name;
  };
  for (const Case &c : {Case{"desktop-rtx4090", "0000:01:00.0", "NVIDIA GeForce RTX 4090"},
                        Case{"laptop-egpu-3080", "0000:07:00.0", "NVIDIA GeForce RTX 3080"},
                        Case{"container-shm64", "0000:00:05.0", "NVIDIA A100 80GB PCIe"}}) {
    auto r = run_dlrig({"info", "--sysroot", fixture(c.machine), "--json"},
                       fake_nvml(std::string(c.machine) + "/nvml.json"));
    ASSERT_EQ(r.exit_code, 0) << c.machine << ": " << r.err;
    Json j = Json::parse(r.out);
    bool found = false;
    for (const auto &g : j.at("gpus"))
      if (g.at("bdf") == c.bdf && !g.at("nvml").is_null()) {
        found = true;
        EXPECT_EQ(g.at("nvml").at("name"), c.name) << c.machine;
      }
    EXPECT_TRUE(found) << c.machine << " has no NVML GPU at " << c.bdf;
  }
}

TEST(InfoNvmlCli, HealthViewShowsThrottlingAndMemoryFaults) {
  auto hot = run_dlrig({"info", "--sysroot", fixture("desktop-rtx4090")},
                       fake_nvml("nvml/throttling.json"));
  ASSERT_EQ(hot.exit_code, 0) << hot.err;
  EXPECT_NE(hot.out.find("sw-power-cap, sw-thermal-slowdown, hw-thermal-slowdown"),
            std::string::npos)
      << hot.out;
  EXPECT_NE(hot.out.find("300 W (default 450 W)"), std::string::npos) << hot.out;
  EXPECT_NE(hot.out.find("86 °C (slowdown 87 °C)"), std::string::npos) << hot.out;

  auto ecc =
      run_dlrig({"info", "--sysroot", fixture("laptop-no-gpu")}, fake_nvml("nvml/ecc-errors.json"));
  ASSERT_EQ(ecc.exit_code, 0) << ecc.err;
  EXPECT_NE(ecc.out.find("3 retired pages, retirement pending"), std::string::npos) << ecc.out;
  EXPECT_NE(ecc.out.find("REMAP FAILED"), std::string::npos) << ecc.out;
  EXPECT_NE(ecc.out.find("on, 5 uncorrected (12 lifetime)"), std::string::npos) << ecc.out;
}

TEST(InfoNvmlCli, GpuOnTheBusWithoutNvmlSaysWhatThatMeans) {
  auto r = run_dlrig({"info", "--sysroot", fixture("desktop-rtx4090")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("not loaded: /nonexistent/libnvidia-ml.so.1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("What it means  no NVIDIA user-space driver"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("NVIDIA GPUs (NVML)"), std::string::npos) << r.out;
}

TEST(InfoNvmlCli, NoNvidiaSectionOnAMachineWithoutNvidia) {
  auto r = run_dlrig({"info", "--sysroot", fixture("laptop-no-gpu")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("NVIDIA driver"), std::string::npos) << r.out;
}

// A captured machine (perf/capture_machine.py, tests/data/README.md): its sysroot and NVML
// readings under `info`, one GPU on driver 580.159.04 / CUDA 13.0 at 0000:00:06.0, Hopper, a
// 32 GT/s x16 link, Ubuntu 24.04.3 (both lent VMs); `memory` as the text prints it. The GPU's JSON.
Json captured_vm_gpu(const std::string &machine, const std::string &memory) {
  auto r = run_dlrig({"info", "--sysroot", fixture(machine), "--json"},
                     fake_nvml(machine + "/nvml.json"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  Json j = Json::parse(r.out);
  EXPECT_EQ(j.at("nvidia").at("driver_version"), "580.159.04");
  EXPECT_EQ(j.at("nvidia").at("cuda_driver_version"), "13.0");
  EXPECT_EQ(j.at("gpus").size(), 1u);
  const Json &g = j.at("gpus").at(0);
  EXPECT_EQ(g.at("bdf"), "0000:00:06.0");
  EXPECT_EQ(g.at("nvml").at("compute_capability"), "9.0");
  EXPECT_EQ(g.at("nvml").at("architecture"), "Hopper");
  auto text = run_dlrig({"info", "--sysroot", fixture(machine)}, fake_nvml(machine + "/nvml.json"));
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("32 GT/s x16"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(memory), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("Ubuntu 24.04.3 LTS"), std::string::npos) << text.out;
  return g;
}

// One NVIDIA H200 in a Firecracker VM, captured on 2026-11-26.
TEST(InfoNvmlCli, CapturedH200Vm) {
  const Json g = captured_vm_gpu("h200-vm", "140.4 GiB");
  EXPECT_EQ(g.at("nvml").at("name"), "NVIDIA H200");
}

// The same capture on one NVIDIA H100 80GB HBM3 (SXM5), 2026-11-26: the catalog's name beside
// NVML's.
TEST(InfoNvmlCli, CapturedH100Vm) {
  const Json g = captured_vm_gpu("h100-vm", "79.6 GiB");
  EXPECT_EQ(g.at("name"), "NVIDIA H100 SXM5");
  EXPECT_EQ(g.at("nvml").at("name"), "NVIDIA H100 80GB HBM3");
}

} // namespace
} // namespace dlrig::test
