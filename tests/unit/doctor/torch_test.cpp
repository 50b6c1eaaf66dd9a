#include "unit/doctor/machines.hpp"

#include <gtest/gtest.h>

namespace dlrig::doctor::test {
namespace {

TorchInstall &torch_of(Snapshot &s) {
  return *s.software.python_envs[0].torch;
}

TEST(DoctorTorch, CpuOnlyBuildGivesThePipLineForThisDriverAndGpu) {
  Snapshot s = healthy_desktop();
  auto &t = torch_of(s);
  t.version = "2.5.1+cpu";
  t.variant = "cpu";
  t.cuda.reset();
  t.arch_list.clear();
  auto f = run_check("torch.cpu-only-build", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::fail);
  EXPECT_EQ(f[0].fix[0], "pip install --force-reinstall torch==2.5.1 torchvision==0.20.1 "
                         "torchaudio==2.5.1 --index-url https://download.pytorch.org/whl/cu124");
}

TEST(DoctorTorch, CpuOnlyBuildOnAarch64PypiWheel) {
  Snapshot s = healthy_desktop();
  s.host.os.arch = "aarch64";
  auto &t = torch_of(s);
  t.version = "2.5.1";
  t.variant.reset();
  t.cuda.reset();
  EXPECT_EQ(worst("torch.cpu-only-build", s), Severity::fail);
}

// conda's cpuonly build and Debian's python3-torch: "2.5.1" with no +cpu suffix, but
// version.py says cuda = None (the probe's cpu_only). Before, it passed as healthy.
TEST(DoctorTorch, CpuOnlyBuildWithoutCpuSuffix) {
  Snapshot s = healthy_desktop();
  auto &t = torch_of(s);
  t.version = "2.5.1";
  t.variant.reset();
  t.cuda.reset();
  t.cpu_only = true;
  EXPECT_EQ(worst("torch.cpu-only-build", s), Severity::fail);
  t.cpu_only.reset(); // version.py said nothing: not claimed
  EXPECT_TRUE(run_check("torch.cpu-only-build", s).empty());
}

TEST(DoctorTorch, CpuOnlyBuildQuietWithoutUsableGpu) {
  Snapshot s = healthy_desktop();
  auto &t = torch_of(s);
  t.version = "2.5.1+cpu";
  t.variant = "cpu";
  t.cuda.reset();
  s.gpus.clear();
  EXPECT_TRUE(run_check("torch.cpu-only-build", s).empty());
  EXPECT_TRUE(run_check("torch.cpu-only-build", healthy_desktop()).empty());
}

Snapshot rtx5090_with_cu124() {
  Snapshot s = healthy_desktop();
  s.gpus[0].nvml->name = "NVIDIA GeForce RTX 5090";
  s.gpus[0].nvml->compute_capability = "12.0";
  s.gpus[0].device_id = "0x2b85";
  s.nvidia.driver_version = "570.124.06";
  s.nvidia.cuda_driver_version = "12.8";
  return s;
}

TEST(DoctorTorch, ArchUnsupportedNamesTheWheelThatFits) {
  auto f = run_check("torch.arch-unsupported", rtx5090_with_cu124());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::fail);
  EXPECT_NE(f[0].fix[0].find("torch==2.8.0"), std::string::npos) << f[0].fix[0];
  EXPECT_NE(f[0].fix[0].find("/whl/cu128"), std::string::npos) << f[0].fix[0];
}

TEST(DoctorTorch, ArchUnsupportedForPascalOnCu128) {
  Snapshot s = healthy_desktop();
  s.gpus[0].nvml->name = "Tesla P100-PCIE-16GB";
  s.gpus[0].nvml->compute_capability = "6.0";
  s.nvidia.driver_version = "570.124.06";
  s.nvidia.cuda_driver_version = "12.8";
  auto &t = torch_of(s);
  t.version = "2.8.0+cu128";
  t.variant = "cu128";
  t.cuda = "12.8";
  t.arch_list = {"sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"};
  auto f = run_check("torch.arch-unsupported", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].fix[0].find("/whl/cu126"), std::string::npos) << f[0].fix[0];
}

TEST(DoctorTorch, ArchCoveredBySameMajorCubinAndUsesKbListWhenUnread) {
  // sm_86 runs on 8.9 (rule R1): the desktop's 4090 with sm_50..sm_90 is covered.
  EXPECT_TRUE(run_check("torch.arch-unsupported", healthy_desktop()).empty());
  Snapshot s = rtx5090_with_cu124();
  torch_of(s).arch_list.clear(); // unread: the kb's cu124 list decides
  EXPECT_EQ(worst("torch.arch-unsupported", s), Severity::fail);
}

TEST(DoctorTorch, ArchUnknownSaysItCouldNotCheck) {
  Snapshot s = healthy_desktop();
  auto &t = torch_of(s);
  t.arch_list.clear();
  t.version = "2.9.0+cu128"; // not in the test kb
  t.variant = "cu128";
  EXPECT_EQ(worst("torch.arch-unsupported", s), Severity::info);
}

TEST(DoctorTorch, CompanionMismatchBySuffixAndByVersion) {
  Snapshot s = healthy_desktop();
  s.software.python_envs[0].torchvision = "0.20.1+cu121";
  auto f = run_check("torch.companion-mismatch", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].title.find("cu121"), std::string::npos);
  EXPECT_NE(f[0].fix[0].find("torchvision==0.20.1"), std::string::npos);
  Snapshot v = healthy_desktop();
  v.software.python_envs[0].torchaudio = "2.4.0+cu124";
  EXPECT_EQ(worst("torch.companion-mismatch", v), Severity::fail);
  EXPECT_TRUE(run_check("torch.companion-mismatch", healthy_desktop()).empty());
}

// The official trios (pytorch.org/get-started/previous-versions) against the built-in kb: each
// patch release is compared with its own companions, not with its minor's newest patch.
std::vector<Finding> companions(const std::string &torch, const std::string &vision,
                                const std::string &audio) {
  Snapshot s = healthy_desktop();
  auto &e = s.software.python_envs[0];
  e.torch->version = torch;
  e.torchvision = vision;
  e.torchaudio = audio;
  return run_check("torch.companion-mismatch", s, kb::builtin());
}

TEST(DoctorTorch, CompanionCheckPassesTheOfficialTrios) {
  EXPECT_TRUE(companions("2.7.0+cu126", "0.22.0+cu126", "2.7.0+cu126").empty());
  EXPECT_TRUE(companions("2.2.0+cu121", "0.17.0+cu121", "2.2.0+cu121").empty());
  EXPECT_TRUE(companions("2.0.1+cu117", "0.15.2+cu117", "2.0.2+cu117").empty());
  EXPECT_TRUE(companions("1.12.1+cu113", "0.13.1+cu113", "0.12.1+cu113").empty());
  EXPECT_TRUE(companions("2.0.0", "0.15.0", "2.0.0").empty()); // conda's pairing for 2.0.0
  EXPECT_TRUE(companions("1.5.0", "0.6.0", "0.5.0").empty());  // no torchaudio in the source
  // The pytorch/vision README's per-patch table pairs these too (torchvision 0.11.1 and 0.8.1
  // rebuilt 0.11.0 and 0.8.0 for the same torch).
  EXPECT_TRUE(companions("1.10.0+cu113", "0.11.1+cu113", "0.10.0+cu113").empty());
  EXPECT_TRUE(companions("1.7.0", "0.8.1", "0.7.0").empty());
  EXPECT_TRUE(companions("1.7.0", "0.8.0", "0.7.0").empty());
}

TEST(DoctorTorch, CompanionCheckStillFailsARealMismatch) {
  auto f = companions("2.7.0+cu126", "0.21.0+cu126", "2.7.0+cu126");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::fail);
  EXPECT_NE(f[0].title.find("torch 2.7.0 pairs with torchvision 0.22.0"), std::string::npos)
      << f[0].title;
  // A patch of the same minor is another torch's companion too.
  EXPECT_EQ(companions("2.7.0", "0.22.1", "2.7.0").size(), 1u);
}

TEST(DoctorTorch, CompanionCheckOfAnUnlistedVersionComparesTheMinorOnly) {
  // A nightly and a patch the kb does not list: only the family is certain.
  EXPECT_TRUE(
      companions("2.8.0.dev20250401+cu128", "0.23.0.dev20250401+cu128", "2.8.0.dev20250401+cu128")
          .empty());
  EXPECT_TRUE(companions("1.10.2+cu113", "0.11.3+cu113", "0.10.2+cu113").empty());
  auto f = companions("2.8.0.dev20250401+cu128", "0.22.0+cu128", "2.8.0.dev20250401+cu128");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].title.find("torchvision 0.23.x"), std::string::npos) << f[0].title;
}

// torchaudio from 2.10 is built on PyTorch's stable ABI (pytorch/audio#4142): it loads in its own
// torch and newer ones, and none of its own is released for torch 2.11 on; an older torch is still
// a mismatch, as is a torchaudio before 2.10 with a newer torch, and another CUDA.
TEST(DoctorTorch, AStableAbiTorchaudioPairsWithANewerTorch) {
  EXPECT_TRUE(companions("2.12.0+cu130", "0.27.0+cu130", "2.11.0+cu130").empty());
  EXPECT_TRUE(companions("2.11.0+cu128", "0.26.0+cu128", "2.10.0+cu128").empty());
  EXPECT_TRUE(
      companions("2.13.0.dev20260601+cu130", "0.28.0.dev20260601+cu130", "2.10.0+cu130").empty());
  auto older = companions("2.11.0+cu128", "0.26.0+cu128", "2.12.0+cu128");
  ASSERT_EQ(older.size(), 1u);
  EXPECT_NE(older[0].title.find("torchaudio 2.12.0+cu128 belongs to another torch"),
            std::string::npos)
      << older[0].title;
  // A torchaudio from before the stable ABI: the kb's line for torch 2.11 has no torchaudio, so the
  // range that pairs is named for the same index.
  Snapshot old_audio = healthy_desktop();
  auto &e = old_audio.software.python_envs[0];
  e.torch->version = "2.11.0+cu128";
  e.torch->variant = "cu128";
  e.torchvision = "0.26.0+cu128";
  e.torchaudio = "2.9.1+cu128";
  auto before = run_check("torch.companion-mismatch", old_audio, kb::builtin());
  ASSERT_EQ(before.size(), 1u);
  ASSERT_EQ(before[0].fix.size(), 2u);
  EXPECT_EQ(before[0].fix[1],
            "and a torchaudio of 2.10 up to torch's 2.11 (built on PyTorch's stable ABI; torch "
            "2.11.0 has no torchaudio of its own): pip install --force-reinstall "
            "\"torchaudio>=2.10,<2.12\" --index-url https://download.pytorch.org/whl/cu128");
  EXPECT_EQ(companions("2.12.0+cu130", "0.27.0+cu130", "2.11.0+cu128").size(), 1u);
  // Its own torch's exact pairing still holds where the kb lists one.
  EXPECT_TRUE(companions("2.10.0+cu128", "0.25.0+cu128", "2.10.0+cu128").empty());
}

TEST(DoctorTorch, TritonUnsupportedBelowSeven) {
  Snapshot s = healthy_desktop();
  s.gpus[0].nvml->compute_capability = "6.1";
  EXPECT_EQ(worst("torch.triton-unsupported", s), Severity::warn);
  EXPECT_TRUE(run_check("torch.triton-unsupported", healthy_desktop()).empty());
}

TEST(DoctorTorch, VendorMismatch) {
  Snapshot amd;
  Gpu g;
  g.bdf = "0000:0c:00.0";
  g.vendor = "AMD";
  g.vendor_id = "0x1002";
  g.driver = "amdgpu";
  g.amd = AmdGpu{};
  amd.gpus = {g};
  amd.software.python_envs = healthy_desktop().software.python_envs;
  auto f = run_check("torch.vendor-mismatch", amd);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].fix[0].find("/whl/rocm6.2"), std::string::npos) << f[0].fix[0];
  Snapshot rocm = healthy_desktop();
  torch_of(rocm).cuda.reset();
  torch_of(rocm).hip = "6.2.41133";
  torch_of(rocm).variant = "rocm6.2";
  EXPECT_EQ(worst("torch.vendor-mismatch", rocm), Severity::fail);
  EXPECT_TRUE(run_check("torch.vendor-mismatch", healthy_desktop()).empty());
}

TEST(DoctorTorch, VendorMismatchWithTheFullKbSuggestsTheNewestRocmBuild) {
  // With every patch release in the kb, a torch it does not list must not get 1.8's ROCm wheel.
  Snapshot amd;
  Gpu g;
  g.bdf = "0000:0c:00.0";
  g.vendor = "AMD";
  g.vendor_id = "0x1002";
  g.driver = "amdgpu";
  g.amd = AmdGpu{};
  amd.gpus = {g};
  amd.software.python_envs = healthy_desktop().software.python_envs;
  amd.software.python_envs[0].torch->version = "9.9.0+cu999";
  auto f = run_check("torch.vendor-mismatch", amd, kb::builtin());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].fix[0].find("--index-url https://download.pytorch.org/whl/rocm"),
            std::string::npos)
      << f[0].fix[0];
  EXPECT_EQ(f[0].fix[0].find("torch_stable"), std::string::npos) << f[0].fix[0];
}

TEST(DoctorTorch, CudaUnavailableFromDeepProbe) {
  Snapshot s = healthy_desktop();
  s.software.python_envs[0].deep = DeepProbe{true, false, 0, {}, "CUDA unknown error"};
  auto f = run_check("torch.cuda-unavailable", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].evidence.back().value, "CUDA unknown error");
  s.software.python_envs[0].deep->cuda_available = true;
  EXPECT_TRUE(run_check("torch.cuda-unavailable", s).empty());
}

TEST(DoctorTorch, CudnnWheelOfAnotherMajor) {
  Snapshot s = healthy_desktop();
  s.software.python_envs[0].nvidia_wheels["nvidia-cudnn-cu12"] = "8.9.2.26";
  EXPECT_EQ(worst("torch.cudnn-wheel-mismatch", s), Severity::fail);
  EXPECT_TRUE(run_check("torch.cudnn-wheel-mismatch", healthy_desktop()).empty());
}

TEST(DoctorTorch, Tf32AdviceIsInfoOnAmpereAndNewer) {
  EXPECT_EQ(worst("torch.tf32-off-by-default", healthy_desktop()), Severity::info);
  Snapshot s = healthy_desktop();
  s.gpus[0].nvml->compute_capability = "7.5";
  EXPECT_EQ(worst("torch.tf32-off-by-default", s), Severity::ok);
}

} // namespace
} // namespace dlrig::doctor::test
