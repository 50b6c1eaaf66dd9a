#include "unit/doctor/machines.hpp"

#include <gtest/gtest.h>

namespace dlrig::doctor::test {
namespace {

TEST(DoctorKernel, NouveauBoundFailsLoadedWarns) {
  Snapshot s = healthy_desktop();
  s.gpus[0].nvml.reset();
  s.gpus[0].driver = "nouveau";
  s.software.kernel.nouveau.loaded = true;
  auto f = run_check("kernel.nouveau-loaded", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::fail);
  EXPECT_NE(f[0].fix[0].find("blacklist nouveau"), std::string::npos);
  Snapshot loaded = healthy_desktop();
  loaded.software.kernel.nouveau.loaded = true;
  EXPECT_EQ(worst("kernel.nouveau-loaded", loaded), Severity::warn);
  EXPECT_TRUE(run_check("kernel.nouveau-loaded", healthy_desktop()).empty());
}

TEST(DoctorKernel, OpenModuleRequiredForBlackwell) {
  Snapshot s = healthy_desktop();
  s.gpus[0].nvml->compute_capability = "12.0";
  s.software.kernel.nvidia_open = false;
  s.software.kernel.nvidia.license = "NVIDIA";
  auto f = run_check("kernel.open-module-required", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].fix[0].rfind("sudo apt install nvidia-driver-550-open", 0), 0u);
  Snapshot ada = healthy_desktop();
  ada.software.kernel.nvidia_open = false;
  EXPECT_TRUE(run_check("kernel.open-module-required", ada).empty());
}

TEST(DoctorKernel, UvmNotLoadedIsInfo) {
  Snapshot s = healthy_desktop();
  s.software.kernel.nvidia_uvm.loaded = false;
  EXPECT_EQ(worst("kernel.uvm-not-loaded", s), Severity::info);
  EXPECT_EQ(worst("kernel.uvm-not-loaded", healthy_desktop()), Severity::ok);
}

TEST(DoctorKernel, PeermemIsInfoWithActiveRdma) {
  Snapshot s = healthy_server();
  s.software.kernel.nvidia_peermem.loaded = false;
  EXPECT_EQ(worst("kernel.peermem-not-loaded", s), Severity::info);
  EXPECT_EQ(worst("kernel.peermem-not-loaded", healthy_server()), Severity::ok);
}

} // namespace
} // namespace dlrig::doctor::test
