// Lookups others rely on, and the compatibility rules (R1, driver -> CUDA, newest wheel).
#include "dlrig/kb/kb.hpp"

#include <gtest/gtest.h>

#include <utility>

namespace dlrig::kb {
namespace {

const KnowledgeBase &kb() {
  return builtin();
}

TEST(KbLookup, GpuByPciId) {
  ASSERT_NE(kb().find_gpu_by_pci("10de", "2684"), nullptr);
  EXPECT_EQ(kb().find_gpu_by_pci("10de", "2684")->name, "GeForce RTX 4090");
  EXPECT_EQ(kb().find_gpu_by_pci("0x10DE", "0x2330")->name, "NVIDIA H100 SXM5");
  EXPECT_EQ(kb().find_gpu_by_pci("10de", "2206")->name, "GeForce RTX 3080 10GB");
  EXPECT_EQ(kb().find_gpu_by_pci("10de", "20b5")->name, "NVIDIA A100 80GB PCIe");
  EXPECT_EQ(kb().find_gpu_by_pci("10de", "20b0")->name, "NVIDIA A100 40GB SXM4");
  EXPECT_EQ(kb().find_gpu_by_pci("10de", "20b3"), nullptr); // A100-SXM-64GB: not in the catalog
  EXPECT_EQ(kb().find_gpu_by_pci("1002", "74a1")->name, "AMD Instinct MI300X");
  EXPECT_EQ(kb().find_gpu_by_pci("10de", "ffff"), nullptr);
}

TEST(KbLookup, GpuByName) {
  EXPECT_EQ(kb().find_gpu("GeForce RTX 4090")->name, "GeForce RTX 4090");
  EXPECT_EQ(kb().find_gpu("NVIDIA GeForce RTX 4090")->name, "GeForce RTX 4090"); // NVML's name
  EXPECT_EQ(kb().find_gpu("rtx 3090")->name, "GeForce RTX 3090");                // not the 3090 Ti
  EXPECT_EQ(kb().find_gpu("H100 SXM5 80GB")->name, "NVIDIA H100 SXM5");
  EXPECT_EQ(kb().find_gpu("NVIDIA H100 80GB HBM3")->name, "NVIDIA H100 SXM5");
  EXPECT_EQ(kb().find_gpu("NVIDIA A100-SXM4-80GB")->name, "NVIDIA A100 80GB SXM4");
  // The four A100s by the names NVML gives them (nvidia-smi, collect_env).
  EXPECT_EQ(kb().find_gpu("NVIDIA A100-SXM4-40GB")->name, "NVIDIA A100 40GB SXM4");
  EXPECT_EQ(kb().find_gpu("NVIDIA A100-PCIE-40GB")->name, "NVIDIA A100 40GB PCIe");
  EXPECT_EQ(kb().find_gpu("NVIDIA A100 80GB PCIe")->name, "NVIDIA A100 80GB PCIe");
  EXPECT_EQ(kb().find_gpu("Tesla V100-SXM2-16GB")->name, "Tesla V100 SXM2 16GB");
  EXPECT_EQ(kb().find_gpu("MI300X")->name, "AMD Instinct MI300X");
  EXPECT_EQ(kb().find_gpu("H100 SXM")->name, "NVIDIA H100 SXM5"); // a word's start
  EXPECT_EQ(kb().find_gpu("H100"), nullptr);                      // PCIe, SXM5 or NVL: ambiguous
  auto h100 = kb().match_gpus("H100");
  ASSERT_EQ(h100.size(), 3u);
  EXPECT_EQ(kb().match_gpus("rtx 3090").size(), 1u);
  // Letters and digits glued as people type them; the catalog's own glued words still come first.
  EXPECT_EQ(kb().find_gpu("rtx4090")->name, "GeForce RTX 4090");
  EXPECT_EQ(kb().find_gpu("3090ti")->name, "GeForce RTX 3090 Ti");
  EXPECT_EQ(kb().find_gpu("RTX3090")->name, "GeForce RTX 3090");
  EXPECT_EQ(kb().find_gpu("mi300x")->name, "AMD Instinct MI300X");
  EXPECT_TRUE(kb().match_gpus("Voodoo5").empty());
  EXPECT_TRUE(kb().match_gpus("NVIDIA RTX A2000 12GB").empty()); // not the RTX 2000 Ada's
  EXPECT_TRUE(kb().match_gpus("NVIDIA A10G").empty());
  EXPECT_TRUE(kb().match_gpus("Voodoo 5").empty());
  EXPECT_EQ(kb().find_gpu("Voodoo 5"), nullptr);
  EXPECT_EQ(kb().find_gpu(""), nullptr);
}

TEST(KbLookup, ArchByComputeCapability) {
  ASSERT_NE(kb().arch("8.9"), nullptr);
  EXPECT_EQ(kb().arch("8.9")->name, "Ada Lovelace");
  EXPECT_TRUE(kb().arch("8.9")->fp8);
  EXPECT_FALSE(kb().arch("8.6")->fp8);
  EXPECT_EQ(kb().arch("sm_120")->name, "Blackwell");
  EXPECT_EQ(kb().arch("compute_90")->name, "Hopper");
  EXPECT_EQ(kb().arch("sm_90a")->name, "Hopper");
  EXPECT_EQ(kb().arch("gfx942")->name, "CDNA 3");
  EXPECT_EQ(kb().arch("4.2"), nullptr);
}

TEST(KbLookup, CudaTargetsAndWheelTags) {
  // Empty: not a target, or not a wheel's CUDA tag.
  const std::pair<const char *, const char *> targets[] = {
      {"sm_90", "9.0"},    {"sm90", "9.0"},     {"compute_90", "9.0"}, {"SM_86", "8.6"},
      {"sm_100f", "10.0"}, {"sm_120a", "12.0"}, {"9.0", ""},           {"gfx942", ""},
      {"sm_", ""},         {"sm_9", ""},        {"small", ""},         {"sm_9x", ""}};
  for (auto [target, cc] : targets)
    EXPECT_EQ(cc_of_target(target), cc) << target;
  const std::pair<const char *, const char *> tags[] = {
      {"cu121", "12.1"}, {"cu118", "11.8"}, {"cu130", "13.0"}, {"cpu", ""},
      {"cu12", ""},      {"cuda", ""},      {"rocm6.2", ""},   {"cu12a", ""}};
  for (auto [tag, cuda] : tags)
    EXPECT_EQ(cuda_of_tag(tag), cuda) << tag;
}

TEST(KbLookup, ModelOfAHubRepository) {
  ASSERT_NE(kb().model_of_repo("meta-llama/Llama-3.1-8B"), nullptr);
  EXPECT_EQ(kb().model_of_repo("meta-llama/Llama-3.1-8B")->name, "llama-3.1-8b");
  EXPECT_EQ(kb().model_of_repo("META-LLAMA/llama-3.1-8b")->name, "llama-3.1-8b");
  // The whole repository name, not a prefix of it, nor an organisation alone.
  EXPECT_EQ(kb().model_of_repo("meta-llama/Llama-3.1"), nullptr);
  EXPECT_EQ(kb().model_of_repo("meta-llama"), nullptr);
  EXPECT_EQ(kb().model_of_repo("meta-llama/"), nullptr);
  EXPECT_EQ(kb().model_of_repo("/Llama-3.1-8B"), nullptr);
}

TEST(KbLookup, CudaMinimumDriver) {
  ASSERT_NE(kb().cuda_min_driver("12.4"), nullptr);
  EXPECT_EQ(kb().cuda_min_driver("12.4")->min_driver_linux, "550.54.14");
  EXPECT_EQ(kb().cuda_min_driver("12.4.1")->min_driver_linux, "550.54.15");
  EXPECT_EQ(kb().cuda_min_driver("12.4")->minor_compat_min_driver, "525.60.13");
  EXPECT_EQ(kb().cuda_min_driver("11.0")->min_driver_linux, "450.51.05"); // GA, not the RC
  EXPECT_EQ(kb().cuda_min_driver("12.7"), nullptr);                       // there is no CUDA 12.7
}

TEST(KbLookup, TorchRelease) {
  const auto *r = kb().torch_release("2.5.1+cu124");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->version, "2.5.1");
  EXPECT_EQ(kb().torch_release("2.5"), r); // a bare minor: its newest patch
  ASSERT_NE(kb().torch_release("2.5.0"), nullptr);
  EXPECT_EQ(kb().torch_release("2.5.0")->version, "2.5.0"); // a patch: its own rows
  ASSERT_NE(r->variant("cu124"), nullptr);
  EXPECT_TRUE(r->variant("cu124")->pypi_default);
  EXPECT_EQ(r->variant("cu124")->cudnn, "9.1.0.70");
  EXPECT_EQ(r->torchvision, "0.20.1");
  EXPECT_EQ(kb().torch_release("0.4.1"), nullptr);
}

TEST(KbLookup, PcieBandwidthForAWidth) {
  // A Thunderbolt 3 eGPU's Gen3 x4 tunnel against a Gen4 x16 slot
  // (https://en.wikipedia.org/wiki/PCI_Express).
  EXPECT_NEAR(*kb().pcie_bytes_per_s(3, 4), 3.94e9, 0.01e9);
  EXPECT_NEAR(*kb().pcie_bytes_per_s(4, 16), 31.5e9, 0.01e9);
  EXPECT_FALSE(kb().pcie_bytes_per_s(7, 16));
  EXPECT_FALSE(kb().pcie_bytes_per_s(4, 0));
}

TEST(KbLookup, VersionsCompareNumerically) {
  EXPECT_LT(compare_versions("550.54.14", "550.100"), 0);
  EXPECT_GT(compare_versions("12.10", "12.9"), 0);
  EXPECT_EQ(compare_versions("570.26", "570.26.0"), 0);
}

// Rule R1 (https://docs.nvidia.com/cuda/ada-compatibility-guide/).
TEST(ArchCoverage, SameMajorCubinWithLowerMinorCovers) {
  EXPECT_TRUE(arch_list_covers({"sm_80", "sm_86"}, "8.9")); // sm_86 runs on Ada
  EXPECT_TRUE(arch_list_covers({"sm_100"}, "10.3"));        // B300
  EXPECT_TRUE(arch_list_covers({"sm_120"}, "12.1"));        // GB10
  EXPECT_FALSE(arch_list_covers({"sm_86"}, "8.0"));         // higher minor never runs lower
  EXPECT_FALSE(arch_list_covers({"sm_90"}, "12.0"));        // another major: no cubin match
  EXPECT_FALSE(arch_list_covers({"sm_50", "sm_90"}, "10.0"));
}

// An arch list or compute capability from a snapshot file with digits beyond an int threw
// std::stoi's out_of_range (exit 70): such an entry is no target, such a capability no match.
TEST(ArchCoverage, NumbersBeyondAnyArchAreNoTarget) {
  EXPECT_FALSE(arch_list_covers({"sm_99999999999"}, "9.0"));
  EXPECT_FALSE(arch_list_covers({"compute_99999999999"}, "9.0"));
  EXPECT_TRUE(arch_list_covers({"sm_99999999999", "sm_90"}, "9.0"));
  EXPECT_FALSE(arch_list_covers({"sm_90"}, "99999999999.0"));
  EXPECT_FALSE(arch_list_covers({"sm_90"}, "9.99999999999"));
}

TEST(ArchCoverage, PtxIsJitCompiledForNewerGpus) {
  EXPECT_TRUE(arch_list_covers({"sm_80", "compute_90"}, "12.0"));
  EXPECT_TRUE(arch_list_covers({"compute_120"}, "12.0"));
  EXPECT_FALSE(arch_list_covers({"compute_120"}, "10.0")); // PTX never runs on an older GPU
  EXPECT_TRUE(arch_list_covers({"9.0+PTX"}, "10.0"));
  EXPECT_TRUE(arch_list_covers({"8.6"}, "8.9"));
}

TEST(ArchCoverage, ArchSpecificTargetsAreNotForwardCompatible) {
  EXPECT_TRUE(arch_list_covers({"sm_90a"}, "9.0"));
  EXPECT_FALSE(arch_list_covers({"sm_90a"}, "9.1"));
  EXPECT_FALSE(arch_list_covers({"sm_100a"}, "10.3"));
  EXPECT_FALSE(arch_list_covers({"sm_100f"}, "12.0"));
  EXPECT_FALSE(arch_list_covers({"compute_90a"}, "10.0"));
}

TEST(ArchCoverage, UnreadableInputCoversNothing) {
  EXPECT_FALSE(arch_list_covers({}, "8.6"));
  EXPECT_FALSE(arch_list_covers({"sm_86"}, "gfx942"));
  EXPECT_FALSE(arch_list_covers({"garbage", "sm_"}, "8.6"));
}

TEST(ArchCoverage, RealWheels) {
  // An RTX 50-series card with a cu124 wheel: https://github.com/pytorch/pytorch/issues/150733.
  const auto *cu124 = kb().torch_release("2.5.1")->variant("cu124");
  EXPECT_FALSE(arch_list_covers(cu124->arch_list, "12.0"));
  EXPECT_TRUE(arch_list_covers(cu124->arch_list, "8.9"));
  // 2.8 cu128 dropped Pascal: failure #4.
  const auto *cu128 = kb().torch_release("2.8.0")->variant("cu128");
  EXPECT_FALSE(arch_list_covers(cu128->arch_list, "6.0"));
  EXPECT_TRUE(arch_list_covers(cu128->arch_list, "12.0"));
  // 2.12's cu130 starts at Turing: failure #5.
  const auto *cu130 = kb().torch_release("2.12")->variant("cu130");
  EXPECT_FALSE(arch_list_covers(cu130->arch_list, "7.0"));
  EXPECT_TRUE(arch_list_covers(cu130->arch_list, "12.1"));
}

TEST(DriverCuda, HighestCudaFollowsTheDriverBranch) {
  // Driver branch -> native max CUDA, derived from the CUDA Toolkit Release Notes, Table 3.
  const std::pair<const char *, const char *> table[] = {
      {"450.51.06", "11.0"}, {"455.32", "11.1"},     {"460.32.03", "11.2"}, {"465.19.01", "11.3"},
      {"470.82.01", "11.4"}, {"495.29.05", "11.5"},  {"510.47.03", "11.6"}, {"515.65.01", "11.7"},
      {"520.61.05", "11.8"}, {"525.60.13", "12.0"},  {"530.30.02", "12.1"}, {"535.104.05", "12.2"},
      {"545.23.08", "12.3"}, {"550.54.14", "12.4"},  {"555.42.06", "12.5"}, {"560.35.03", "12.6"},
      {"565.57.01", "12.6"}, {"570.124.06", "12.8"}, {"575.57.08", "12.9"}, {"580.82.07", "13.0"},
      {"590.44.01", "13.1"}, {"595.45.04", "13.2"},  {"610.43.02", "13.3"}};
  for (auto [driver, cuda] : table) {
    EXPECT_EQ(kb().max_cuda_for_driver(driver), cuda) << driver;
  }
  EXPECT_EQ(kb().max_cuda_for_driver("390.1"), "");
  EXPECT_EQ(kb().max_cuda_for_driver("not a version"), "");
}

TEST(DriverCuda, MinorVersionCompatibility) {
  EXPECT_EQ(kb().driver_supports_cuda("550.54.14", "12.4"), CudaSupport::native);
  EXPECT_EQ(kb().driver_supports_cuda("535.104.05", "12.4"), CudaSupport::minor_compat);
  EXPECT_EQ(kb().driver_supports_cuda("470.82.01", "12.1"), CudaSupport::unsupported);
  EXPECT_EQ(kb().driver_supports_cuda("520.61.05", "11.0"), CudaSupport::native);
  EXPECT_EQ(kb().driver_supports_cuda("450.36.06", "11.8"), CudaSupport::unsupported);
  EXPECT_EQ(kb().driver_supports_cuda("550.54.14", "12.7"), CudaSupport::unknown);
}

TEST(NewestTorch, FitsDriverAndGpu) {
  // R550 driver (CUDA 12.4) on an RTX 4090: newest wheel built for CUDA <= 12.4.
  auto c = newest_torch_for(kb(), "550.54.14", "8.9");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->variant->tag, "cu124");
  EXPECT_EQ(c->release->version, "2.5.1");
  EXPECT_NE(c->pip.find("--index-url https://download.pytorch.org/whl/cu124"), std::string::npos);
  // An RTX 5090 needs CUDA 12.8 wheels: with an R570 driver, cu128.
  auto b = newest_torch_for(kb(), "570.124.06", "12.0");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->variant->cuda, "12.8");
  // ... and with an R550 driver nothing fits.
  EXPECT_FALSE(newest_torch_for(kb(), "550.54.14", "12.0"));
  // A Pascal P100 on a new driver: the cu126 line keeps sm_60.
  auto p = newest_torch_for(kb(), "610.43.02", "6.0");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->variant->tag, "cu126");
}

} // namespace
} // namespace dlrig::kb
