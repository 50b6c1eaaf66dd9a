#include "unit/doctor/machines.hpp"

#include <gtest/gtest.h>

namespace dlrig::doctor::test {
namespace {

Gpu &first_nvidia(Snapshot &s) {
  for (auto &g : s.gpus)
    if (g.vendor == OptStr("NVIDIA"))
      return g;
  throw std::runtime_error("no NVIDIA GPU");
}

// The machine as the probe sees it when nouveau owns the GPU: no NVML, no nvidia module.
Snapshot nouveau_desktop() {
  Snapshot s = healthy_desktop();
  Gpu &g = first_nvidia(s);
  g.nvml.reset();
  g.driver = "nouveau";
  s.nvidia.nvml_status = "not-found";
  s.nvidia.nvml_error = "libnvidia-ml.so.1: cannot open shared object file";
  s.software.kernel.nvidia.loaded = false;
  s.software.kernel.nouveau.loaded = true;
  return s;
}

TEST(DoctorGpu, NoneVisibleWhenNouveauOwnsTheGpu) {
  auto f = run_check("gpu.none-visible", nouveau_desktop());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::fail);
  EXPECT_NE(f[0].title.find("nouveau"), std::string::npos) << f[0].title;
}

// Two GPUs with the same cause get its fix once.
TEST(DoctorGpu, NoneVisibleGivesEachFixOnce) {
  Snapshot s = healthy_server();
  for (auto &g : s.gpus) {
    g.nvml.reset();
    g.driver.reset();
  }
  s.nvidia.nvml_status = "not-found";
  s.nvidia.nvml_error = "libnvidia-ml.so.1: cannot open shared object file";
  auto f = run_check("gpu.none-visible", s);
  ASSERT_EQ(f.size(), 1u);
  ASSERT_EQ(f[0].fix.size(), 1u) << f[0].fix.size();
  EXPECT_NE(f[0].fix[0].find("install the driver"), std::string::npos) << f[0].fix[0];
}

TEST(DoctorGpu, NoneVisibleWhenCudaVisibleDevicesIsEmptyOrMinusOne) {
  for (const char *v : {"", "-1"}) {
    Snapshot s = healthy_desktop();
    s.software.env["CUDA_VISIBLE_DEVICES"] = v;
    EXPECT_EQ(worst("gpu.none-visible", s), Severity::fail) << v;
  }
}

TEST(DoctorGpu, NoneVisibleWhenDeviceNodesAreMissingOrClosed) {
  Snapshot s = healthy_desktop();
  s.software.device_nodes[0].accessible = false;
  auto f = run_check("gpu.none-visible", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].title.find("/dev/nvidiactl"), std::string::npos);
}

TEST(DoctorGpu, NoneVisibleQuietOnHealthyMachinesAndWithoutNvidia) {
  EXPECT_TRUE(run_check("gpu.none-visible", healthy_desktop()).empty());
  EXPECT_TRUE(run_check("gpu.none-visible", healthy_server()).empty());
  Snapshot none;
  EXPECT_TRUE(run_check("gpu.none-visible", none).empty());
  // Probed with --no-nvml: the driver is bound, nothing says it is broken.
  Snapshot s = healthy_desktop();
  s.gpus[0].nvml.reset();
  s.nvidia.nvml_status = "not-probed";
  EXPECT_TRUE(run_check("gpu.none-visible", s).empty());
}

TEST(DoctorGpu, ThermalThrottleOnThermalBitsOrNearSlowdown) {
  Snapshot s = healthy_desktop();
  s.gpus[0].nvml->throttle_reasons_mask = 0x40;
  s.gpus[0].nvml->throttle_reasons = {"hw_thermal_slowdown"};
  EXPECT_EQ(worst("gpu.thermal-throttle", s), Severity::warn);
  Snapshot hot = healthy_desktop();
  hot.gpus[0].nvml->temperature_c = 84;
  EXPECT_EQ(worst("gpu.thermal-throttle", hot), Severity::warn);
  Snapshot warm = healthy_desktop();
  warm.gpus[0].nvml->temperature_c = 80;
  EXPECT_EQ(worst("gpu.thermal-throttle", warm), Severity::ok);
}

TEST(DoctorGpu, ThermalThrottleMentionsTheDockForEgpus) {
  Snapshot s = healthy_laptop();
  Gpu &g = first_nvidia(s);
  g.behind_thunderbolt = true;
  g.nvml->throttle_reasons_mask = 0x20;
  auto f = run_check("gpu.thermal-throttle", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].fix.back().find("eGPU dock"), std::string::npos);
}

TEST(DoctorGpu, PowerThrottleWhenLimitLowered) {
  Snapshot s = healthy_desktop();
  s.gpus[0].nvml->power_limit_w = 300;
  auto f = run_check("gpu.power-throttle", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].fix[0], "sudo nvidia-smi -i 0 -pl 450");
  EXPECT_TRUE(run_check("gpu.power-throttle", healthy_desktop()).empty());
  Snapshot brake = healthy_desktop();
  brake.gpus[0].nvml->throttle_reasons_mask = 0x80;
  EXPECT_EQ(worst("gpu.power-throttle", brake), Severity::warn);
}

TEST(DoctorGpu, EccErrors) {
  Snapshot s = healthy_server();
  s.gpus[3].nvml->ecc_uncorrected_volatile = 2;
  EXPECT_EQ(worst("gpu.ecc-errors", s), Severity::fail);
  Snapshot old = healthy_server();
  old.gpus[3].nvml->ecc_uncorrected_aggregate = 1;
  EXPECT_EQ(worst("gpu.ecc-errors", old), Severity::warn);
  EXPECT_TRUE(run_check("gpu.ecc-errors", healthy_server()).empty());
}

TEST(DoctorGpu, RetiredPages) {
  Snapshot s = healthy_server();
  s.gpus[1].nvml->remapped_rows.pending = true;
  EXPECT_EQ(worst("gpu.retired-pages", s), Severity::warn);
  s.gpus[1].nvml->remapped_rows.failure = true;
  EXPECT_EQ(worst("gpu.retired-pages", s), Severity::fail);
  EXPECT_TRUE(run_check("gpu.retired-pages", healthy_server()).empty());
}

TEST(DoctorGpu, PersistenceOffOnlyOnServers) {
  Snapshot s = healthy_server();
  s.software.services.persistenced_running = false;
  for (auto &g : s.gpus)
    g.nvml->persistence_mode = false;
  EXPECT_EQ(worst("gpu.persistence-off", s), Severity::warn);
  // The desktop has persistence off too, and that is normal there.
  EXPECT_TRUE(run_check("gpu.persistence-off", healthy_desktop()).empty());
  EXPECT_TRUE(run_check("gpu.persistence-off", healthy_server()).empty());
}

TEST(DoctorGpu, MigEnabled) {
  Snapshot s = healthy_server();
  s.gpus[0].nvml->mig_enabled = true;
  EXPECT_EQ(worst("gpu.mig-enabled", s), Severity::warn);
  s.software.env["CUDA_VISIBLE_DEVICES"] = "MIG-4f2c1a6e-1111-2222-3333-444444444444";
  EXPECT_EQ(worst("gpu.mig-enabled", s), Severity::info);
  EXPECT_TRUE(run_check("gpu.mig-enabled", healthy_server()).empty());
}

TEST(DoctorGpu, FabricManager) {
  Snapshot s = healthy_server();
  s.software.services.fabricmanager_running = false;
  auto f = run_check("gpu.fabric-manager", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].fix[0].rfind("sudo apt install nvidia-fabricmanager-550", 0), 0u) << f[0].fix[0];
  Snapshot other = healthy_server();
  other.software.services.fabricmanager_version = "550.90.07";
  EXPECT_EQ(worst("gpu.fabric-manager", other), Severity::fail);
  EXPECT_TRUE(run_check("gpu.fabric-manager", healthy_server()).empty());
  EXPECT_TRUE(run_check("gpu.fabric-manager", healthy_desktop()).empty());
}

// PyTorch in a container on an NVSwitch server: /proc lists only the container's processes, so
// Fabric Manager is never among them. Without NVML's fabric state that is unknown, not a failure.
Snapshot server_container() {
  Snapshot s = healthy_server();
  s.software.runtime = Runtime{"container", "docker", true, std::nullopt};
  s.software.services.persistenced_running = false;
  s.software.services.fabricmanager_running = false;
  return s;
}

TEST(DoctorGpu, FabricManagerInAContainerIsUnknownNotAFailure) {
  Snapshot s = server_container();
  auto f = run_check("gpu.fabric-manager", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::info);
  EXPECT_NE(f[0].title.find("Could not check"), std::string::npos) << f[0].title;
  // NVML's fabric state decides when the GPUs report it: completed is healthy...
  for (auto &g : s.gpus)
    g.nvml->fabric_state = "completed";
  EXPECT_TRUE(run_check("gpu.fabric-manager", s).empty());
  // ...and a GPU the fabric has not registered fails, with the fix on the host.
  s.gpus[3].nvml->fabric_state = "not-started";
  f = run_check("gpu.fabric-manager", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::fail);
  EXPECT_NE(f[0].title.find("GPUs 3"), std::string::npos) << f[0].title;
  EXPECT_EQ(f[0].fix[0].rfind("on the host: ", 0), 0u) << f[0].fix[0];
}

TEST(DoctorGpu, FabricStateOverridesTheProcessList) {
  // Outside a container too: the fabric completed is proof Fabric Manager ran.
  Snapshot s = healthy_server();
  s.software.services.fabricmanager_running = false;
  for (auto &g : s.gpus)
    g.nvml->fabric_state = "completed";
  EXPECT_TRUE(run_check("gpu.fabric-manager", s).empty());
  s.gpus[0].nvml->fabric_error = "Unknown Error";
  EXPECT_EQ(worst("gpu.fabric-manager", s), Severity::fail);
}

TEST(DoctorGpu, ComputeMode) {
  Snapshot s = healthy_desktop();
  s.gpus[0].nvml->compute_mode = "exclusive-process";
  EXPECT_EQ(worst("gpu.compute-mode", s), Severity::warn);
  s.gpus[0].nvml->compute_mode = "prohibited";
  EXPECT_EQ(worst("gpu.compute-mode", s), Severity::fail);
  EXPECT_TRUE(run_check("gpu.compute-mode", healthy_desktop()).empty());
}

TEST(DoctorGpu, MemoryInUse) {
  Snapshot s = healthy_desktop();
  auto &n = *s.gpus[0].nvml;
  n.memory_used_bytes = *n.memory_total_bytes * 9 / 10;
  n.processes = {GpuProcess{4242, 20ull << 30, "python3"}};
  auto f = run_check("gpu.memory-in-use", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].evidence.back().value.find("4242"), std::string::npos);
  EXPECT_TRUE(run_check("gpu.memory-in-use", healthy_desktop()).empty());
}

TEST(DoctorGpu, DisplayAttachedIsOnlyInfo) {
  EXPECT_EQ(worst("gpu.display-attached", healthy_desktop()), Severity::info);
  EXPECT_EQ(worst("gpu.display-attached", healthy_server()), Severity::ok);
}

} // namespace
} // namespace dlrig::doctor::test
