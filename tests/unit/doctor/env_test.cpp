#include "unit/doctor/machines.hpp"

#include <gtest/gtest.h>

namespace dlrig::doctor::test {
namespace {

TEST(DoctorEnv, CudaLaunchBlocking) {
  Snapshot s = healthy_desktop();
  s.software.env["CUDA_LAUNCH_BLOCKING"] = "1";
  EXPECT_EQ(worst("env.cuda-launch-blocking", s), Severity::warn);
  s.software.env["CUDA_LAUNCH_BLOCKING"] = "0";
  EXPECT_TRUE(run_check("env.cuda-launch-blocking", s).empty());
}

TEST(DoctorEnv, CudaVisibleDevicesOutOfRange) {
  Snapshot s = healthy_desktop();
  s.software.env["CUDA_VISIBLE_DEVICES"] = "1";
  auto f = run_check("env.cuda-visible-devices", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::fail);
  Snapshot srv = healthy_server();
  srv.software.env["CUDA_VISIBLE_DEVICES"] = "0,1,9";
  EXPECT_EQ(worst("env.cuda-visible-devices", srv), Severity::warn);
  srv.software.env["CUDA_VISIBLE_DEVICES"] = "GPU-00000003,5";
  EXPECT_TRUE(run_check("env.cuda-visible-devices", srv).empty());
  srv.software.env["CUDA_VISIBLE_DEVICES"] = "GPU-deadbeef";
  EXPECT_EQ(worst("env.cuda-visible-devices", srv), Severity::fail);
  EXPECT_TRUE(run_check("env.cuda-visible-devices", healthy_laptop()).empty());
}

TEST(DoctorEnv, CudaDeviceOrderWithMixedModels) {
  Snapshot s = healthy_server();
  s.gpus[7].nvml->name = "NVIDIA A100-SXM4-80GB";
  EXPECT_EQ(worst("env.cuda-device-order", s), Severity::warn);
  s.software.env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
  EXPECT_TRUE(run_check("env.cuda-device-order", s).empty());
  EXPECT_TRUE(run_check("env.cuda-device-order", healthy_server()).empty());
}

TEST(DoctorEnv, DebugVars) {
  Snapshot s = healthy_desktop();
  s.software.env["CUDA_INJECTION64_PATH"] = "/opt/nsight/libinj.so";
  auto f = run_check("env.debug-vars", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].fix[0], "unset CUDA_INJECTION64_PATH");
  EXPECT_TRUE(run_check("env.debug-vars", healthy_desktop()).empty());
}

TEST(DoctorEnv, AllocConf) {
  Snapshot s = healthy_desktop();
  s.software.env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True,max_split_mb:128";
  EXPECT_EQ(worst("env.alloc-conf", s), Severity::warn);
  s.software.env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True,max_split_size_mb:128";
  EXPECT_TRUE(run_check("env.alloc-conf", s).empty());
}

} // namespace
} // namespace dlrig::doctor::test
