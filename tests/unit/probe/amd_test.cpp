#include "probe_fixture.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace dlrig::test {
namespace {

TEST(ProbeAmd, Mi300xReadings) {
  auto s = probe_fixture("node-mi300x", probe_amd, probe_pci_gpus);
  ASSERT_EQ(s.gpus.size(), 2u);
  for (const auto &g : s.gpus) {
    ASSERT_TRUE(g.amd) << g.bdf;
    const auto &a = *g.amd;
    EXPECT_EQ(a.vram_total_bytes, 205822885888ull);
    EXPECT_EQ(a.vram_used_bytes, 285212672ull);
    EXPECT_EQ(a.busy_percent, 0.0);
    EXPECT_EQ(a.temperature_c, 38.0); // junction: MI300X has no edge sensor
    EXPECT_EQ(a.power_w, 142.0);
    EXPECT_EQ(a.power_cap_w, 750.0);
    EXPECT_EQ(a.sclk_hz, 500e6);
    EXPECT_EQ(a.sclk_max_hz, 2100e6);
    EXPECT_EQ(a.mclk_hz, 1300e6);
  }
  EXPECT_FALSE(has_note(s, "gpus[0].amd"));
}

TEST(ProbeAmd, OnlyAmdgpuBound) {
  auto s = probe_fixture("server-8xh100", probe_amd, probe_pci_gpus);
  for (const auto &g : s.gpus)
    EXPECT_FALSE(g.amd);
}

TEST(ProbeAmd, GarbageFilesAreUnknownWithReasons) {
  auto root = std::filesystem::temp_directory_path() / ("dlrig-amd-" + std::to_string(::getpid()));
  auto dev = root / "sys/bus/pci/devices/0000:05:00.0";
  std::filesystem::create_directories(dev / "hwmon/hwmon0");
  std::ofstream(dev / "mem_info_vram_total") << "lots";
  std::ofstream(dev / "gpu_busy_percent") << "250";
  std::ofstream(dev / "pp_dpm_sclk") << "";
  std::ofstream(dev / "hwmon/hwmon0/temp1_input") << "hot";
  Sysroot fs(root.string());
  Snapshot snap;
  Gpu g;
  g.bdf = "0000:05:00.0";
  g.driver = "amdgpu";
  snap.gpus.push_back(g);
  ProbeContext ctx{fs, {}, {}, snap};
  probe_amd(ctx);
  std::filesystem::remove_all(root);
  ASSERT_TRUE(snap.gpus[0].amd);
  const auto &a = *snap.gpus[0].amd;
  EXPECT_FALSE(a.vram_total_bytes);
  EXPECT_FALSE(a.busy_percent);
  EXPECT_FALSE(a.sclk_hz);
  EXPECT_FALSE(a.temperature_c);
  for (const char *f :
       {"gpus[0].amd.vram_total_bytes", "gpus[0].amd.busy_percent", "gpus[0].amd.sclk_hz",
        "gpus[0].amd.temperature_c", "gpus[0].amd.vram_used_bytes"})
    EXPECT_TRUE(has_note(snap, f)) << f;
}

} // namespace
} // namespace dlrig::test
