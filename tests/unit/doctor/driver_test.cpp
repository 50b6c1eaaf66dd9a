#include "unit/doctor/machines.hpp"

#include <gtest/gtest.h>

namespace dlrig::doctor::test {
namespace {

TEST(DoctorDriver, NvmlMismatchFromTheError) {
  Snapshot s = healthy_desktop();
  s.gpus[0].nvml.reset();
  s.nvidia.nvml_status = "init-failed";
  s.nvidia.nvml_error = "Driver/library version mismatch";
  auto f = run_check("driver.nvml-mismatch", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::fail);
  EXPECT_EQ(f[0].fix[0], "sudo reboot");
}

TEST(DoctorDriver, NvmlMismatchFromTheVersions) {
  Snapshot s = healthy_desktop();
  s.software.driver_libraries.libnvidia_ml[0].version = "550.90.07";
  EXPECT_EQ(worst("driver.nvml-mismatch", s), Severity::fail);
  EXPECT_TRUE(run_check("driver.nvml-mismatch", healthy_desktop()).empty());
}

TEST(DoctorDriver, TooOldForTorchFailsAcrossMajors) {
  Snapshot s = healthy_desktop();
  s.nvidia.driver_version = "470.82.01";
  s.nvidia.cuda_driver_version = "11.4";
  auto f = run_check("driver.too-old-for-torch", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::fail);
  // The fix names the driver the kb gives for CUDA 12.4 (the GA row) ...
  EXPECT_NE(f[0].fix[0].find("550.54.14"), std::string::npos) << f[0].fix[0];
  // ... and no wheel in the test kb runs on CUDA 11.4, so no pip line is invented.
  EXPECT_EQ(f[0].fix.size(), 1u);
}

// Found by fuzz_doctor: a driver CUDA version that starts with no number ("b12.4") made the
// same-major test index an empty version list (a crash, exit 139). Its major is unknown.
TEST(DoctorDriver, TooOldForTorchWithAVersionThatIsNotANumber) {
  Snapshot s = healthy_desktop();
  s.nvidia.cuda_driver_version = "b12.4";
  auto f = run_check("driver.too-old-for-torch", s);
  for (const auto &x : f)
    EXPECT_NE(x.severity, Severity::warn) << "minor-version compatibility needs a known major";
}

TEST(DoctorDriver, TooOldForTorchWarnsUnderMinorVersionCompatibility) {
  Snapshot s = healthy_desktop();
  s.nvidia.driver_version = "535.183.01";
  s.nvidia.cuda_driver_version = "12.2";
  auto f = run_check("driver.too-old-for-torch", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::warn);
  // A wheel this driver runs: 2.5.1 cu121 covers sm_89 through sm_86 (rule R1).
  ASSERT_EQ(f[0].fix.size(), 2u);
  EXPECT_NE(f[0].fix[1].find("--index-url https://download.pytorch.org/whl/cu121"),
            std::string::npos)
      << f[0].fix[1];
}

TEST(DoctorDriver, TooOldForTorchDerivesDriverCudaFromTheKb) {
  Snapshot s = healthy_desktop();
  s.nvidia.cuda_driver_version.reset();
  s.nvidia.driver_version = "530.30.02";
  EXPECT_EQ(worst("driver.too-old-for-torch", s), Severity::warn);
  EXPECT_TRUE(run_check("driver.too-old-for-torch", healthy_desktop()).empty());
  EXPECT_TRUE(run_check("driver.too-old-for-torch", healthy_server()).empty());
}

TEST(DoctorDriver, TooOldForTorchCannotCheckWithoutDriverVersion) {
  Snapshot s = healthy_desktop();
  s.nvidia.cuda_driver_version.reset();
  s.nvidia.driver_version.reset();
  // The kernel module's version stands in for the driver's when NVML did not say ...
  EXPECT_EQ(worst("driver.too-old-for-torch", s), Severity::ok);
  // ... and with no version anywhere the check says it could not decide.
  s.nvidia.kernel_module_version.reset();
  s.software.kernel.nvidia.version.reset();
  EXPECT_EQ(worst("driver.too-old-for-torch", s), Severity::info);
}

TEST(DoctorDriver, NoKernelModule) {
  Snapshot s = healthy_desktop();
  s.gpus[0].nvml.reset();
  s.gpus[0].driver.reset();
  s.software.kernel.nvidia.loaded = false;
  s.nvidia.nvml_status = "not-found";
  EXPECT_EQ(worst("driver.no-kernel-module", s), Severity::fail);
  s.software.runtime.kind = "wsl2";
  EXPECT_TRUE(run_check("driver.no-kernel-module", s).empty());
  EXPECT_TRUE(run_check("driver.no-kernel-module", healthy_desktop()).empty());
}

TEST(DoctorDriver, SecureBoot) {
  Snapshot s = healthy_desktop();
  s.gpus[0].nvml.reset();
  s.software.kernel.nvidia.loaded = false;
  s.software.kernel.secure_boot = true;
  EXPECT_EQ(worst("driver.secure-boot", s), Severity::warn);
  Snapshot ok = healthy_desktop();
  ok.software.kernel.secure_boot = true; // signed module loaded: fine
  EXPECT_TRUE(run_check("driver.secure-boot", ok).empty());
}

TEST(DoctorDriver, CompatLibOnGeforce) {
  Snapshot s = healthy_desktop();
  s.software.driver_libraries.compat_ahead = true;
  s.software.driver_libraries.libcuda.insert(
      s.software.driver_libraries.libcuda.begin(),
      FoundLibrary{"/usr/local/cuda-12.8/compat/libcuda.so.1", "570.124.06", "compat",
                   std::nullopt});
  EXPECT_EQ(worst("driver.compat-lib", s), Severity::fail);
  Snapshot dc = healthy_server();
  dc.software.driver_libraries.compat_ahead = true; // forward compat is for datacenter GPUs
  EXPECT_TRUE(run_check("driver.compat-lib", dc).empty());
}

TEST(DoctorDriver, StubLibcuda) {
  Snapshot s = healthy_desktop();
  s.software.driver_libraries.stub_ahead = true;
  s.software.env["LD_LIBRARY_PATH"] = "/usr/local/cuda/lib64/stubs";
  EXPECT_EQ(worst("driver.stub-libcuda", s), Severity::fail);
  EXPECT_TRUE(run_check("driver.stub-libcuda", healthy_desktop()).empty());
}

} // namespace
} // namespace dlrig::doctor::test
