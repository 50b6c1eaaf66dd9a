// The loader: parsing bad text gives file:line:column errors; the embedded files load.
#include "dlrig/kb/kb.hpp"

#include <gtest/gtest.h>

namespace dlrig::kb {
namespace {

const char *kGpuHeader =
    "name,vendor,architecture,compute_capability,pci_ids,no_pci_id_reason,memory_gb,memory_type,"
    "memory_bandwidth_gbs,fp64_tflops,fp32_tflops,tf32_tflops,fp16_tflops,bf16_tflops,fp8_tflops,"
    "int8_tops,tdp_w,pcie_gen,pcie_lanes,nvlink_gbs,launch_year,launch_price_usd,form_factor,"
    "source,pci_source,notes\n";

std::string gpu_row(const std::string &fp16 = "165.2", const std::string &ids = "10de:2684",
                    const std::string &tdp = "450", const std::string &name = "GeForce RTX 4090") {
  return name + ",NVIDIA,Ada Lovelace (AD102),8.9," + ids + ",,24,GDDR6X,1008,1.291,82.6,82.6," +
         fp16 + ",165.2,330.3,660.6," + tdp + ",4,16,,2022,1599,desktop,Ada whitepaper,pci.ids,\n";
}

TEST(KbLoader, ParsesAGpuRowIntoBaseUnits) {
  auto gpus = parse_gpus(std::string(kGpuHeader) + gpu_row(), "data/gpus.csv");
  ASSERT_TRUE(gpus) << gpus.error().message;
  ASSERT_EQ(gpus->size(), 1u);
  const auto &g = gpus->front();
  EXPECT_EQ(g.pci_ids, std::vector<std::string>{"10de:2684"});
  EXPECT_DOUBLE_EQ(*g.fp16_flops, 165.2e12);
  EXPECT_DOUBLE_EQ(*g.memory_bandwidth_bytes_per_s, 1008e9);
  EXPECT_EQ(*g.memory_bytes, 24ull * 1024 * 1024 * 1024);
  EXPECT_EQ(*g.pcie_gen, 4);
  EXPECT_FALSE(g.nvlink_bytes_per_s); // blank is unknown, not 0
}

TEST(KbLoader, BadNumberNamesFileLineAndColumn) {
  auto gpus =
      parse_gpus(std::string(kGpuHeader) + gpu_row() + gpu_row("abc", "10de:2685", "450", "Other"),
                 "data/gpus.csv");
  ASSERT_FALSE(gpus);
  EXPECT_EQ(gpus.error().message, "data/gpus.csv:3: column fp16_tflops: 'abc' is not a number");
}

// A user's CSV (pick --prices) with a 400-digit or binary cell: the message quotes its start.
TEST(KbLoader, ABadCellIsQuotedShortAndPrintable) {
  auto gpus =
      parse_gpus(std::string(kGpuHeader) + gpu_row() +
                     gpu_row("\x1b[2J" + std::string(400, '9'), "10de:2685", "450", "Other"),
                 "f.csv");
  ASSERT_FALSE(gpus);
  const auto &m = gpus.error().message;
  EXPECT_LT(m.size(), 160u) << m;
  EXPECT_NE(m.find("f.csv:3: column fp16_tflops: '?[2J9999"), std::string::npos) << m;
  EXPECT_NE(m.find("...' is not a number"), std::string::npos) << m;
  EXPECT_EQ(m.find('\x1b'), std::string::npos) << m;
}

TEST(KbLoader, TdpRangeKeepsBothEnds) {
  auto gpus = parse_gpus(std::string(kGpuHeader) + gpu_row("1", "10de:2684", "300-350"), "f");
  ASSERT_TRUE(gpus) << gpus.error().message;
  EXPECT_EQ(*gpus->front().tdp_w, 350);
  EXPECT_EQ(*gpus->front().tdp_min_w, 300);
  auto bad = parse_gpus(std::string(kGpuHeader) + gpu_row("1", "10de:2684", "350-300"), "f");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("column tdp_w"), std::string::npos);
}

TEST(KbLoader, PciIdsMustBeWellFormedUniqueOrExplained) {
  auto bad = parse_gpus(std::string(kGpuHeader) + gpu_row("1", "10de-2684"), "f");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("column pci_ids: '10de-2684'"), std::string::npos);
  auto none = parse_gpus(std::string(kGpuHeader) + gpu_row("1", ""), "f");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("no_pci_id_reason"), std::string::npos);
  auto dup = parse_gpus(std::string(kGpuHeader) + gpu_row() + gpu_row(), "f");
  ASSERT_FALSE(dup);
  EXPECT_NE(dup.error().message.find("f:3:"), std::string::npos) << dup.error().message;
}

TEST(KbLoader, MissingColumnIsNamed) {
  auto r = parse_archs("compute_capability,vendor,name\n8.6,NVIDIA,Ampere\n", "data/archs.csv");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("data/archs.csv:1: the header has no column 'example_gpus'"),
            std::string::npos)
      << r.error().message;
}

TEST(KbLoader, ArchFeatureMustBeYesNoOrBlank) {
  std::string h = "compute_capability,vendor,name,example_gpus,tensor_cores,tf32,bf16,fp8,fp4,"
                  "min_cuda,last_cuda,source,notes\n";
  auto ok = parse_archs(h + "8.6,NVIDIA,Ampere,,yes,yes,yes,no,,,,src,\n", "a");
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_TRUE(ok->front().bf16);
  EXPECT_FALSE(ok->front().fp8);
  EXPECT_TRUE(ok->front().feature_known("fp8"));
  EXPECT_FALSE(ok->front().feature_known("fp4"));
  auto bad = parse_archs(h + "8.6,NVIDIA,Ampere,,maybe,yes,yes,no,,,,src,\n", "a");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "a:2: column tensor_cores: 'maybe' is not yes, no or blank");
}

// data/attention_achieved.csv: a kernel, pass and mask dlrig knows; one row per shape.
TEST(KbLoader, AttentionRowsNameTheirKernelPassAndShape) {
  std::string h = "gpu,kernel,pass,head_dim,causal,seq,achieved_tflops,source,notes\n";
  auto ok =
      parse_attention_achieved(h + "NVIDIA H100 SXM5,cudnn,forward,64,yes,1024,288,src,\n", "t");
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->front().head_dim, 64);
  EXPECT_TRUE(ok->front().causal);
  EXPECT_DOUBLE_EQ(ok->front().flops, 288e12);
  auto pass = parse_attention_achieved(h + "X,cudnn,sideways,64,yes,1024,288,src,\n", "t");
  ASSERT_FALSE(pass);
  EXPECT_EQ(pass.error().message, "t:2: column pass: 'sideways' is not forward, backward or both");
  auto kernel = parse_attention_achieved(h + "X,xformers,both,64,no,512,90,src,\n", "t");
  ASSERT_FALSE(kernel);
  EXPECT_EQ(kernel.error().message, "t:2: column kernel: 'xformers' is not flash2 or cudnn");
  auto mask = parse_attention_achieved(h + "X,flash2,both,64,,512,90,src,\n", "t");
  ASSERT_FALSE(mask);
  EXPECT_EQ(mask.error().message, "t:2: column causal: blank: the mask must be known (yes or no)");
  auto twice = parse_attention_achieved(
      h + "X,flash2,both,64,no,512,90,src,\n" + "X,flash2,both,64,no,512,91,src,\n", "t");
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message.find("t:3"), std::string::npos) << twice.error().message;
}

TEST(KbLoader, CudaRowMustBelongToItsMinor) {
  std::string h = "cuda,version,release,min_driver_linux,min_driver_windows,"
                  "minor_compat_min_driver,source,notes\n";
  auto bad = parse_cuda_drivers(h + "12.4,12.5.0,GA,550.54.14,551.61,525.60.13,src,\n", "c");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("c:2: column version"), std::string::npos);
  auto driver = parse_cuda_drivers(h + "12.4,12.4.0,GA,r550,551.61,525.60.13,src,\n", "c");
  ASSERT_FALSE(driver);
  auto windows = parse_cuda_drivers(h + "12.4,12.4.0,GA,550.54.14,r551,525.60.13,src,\n", "c");
  ASSERT_FALSE(windows);
  EXPECT_NE(windows.error().message.find("column min_driver_windows"), std::string::npos)
      << windows.error().message;
  auto good = parse_cuda_drivers(h + "12.4,12.4.0,GA,550.54.14,551.61,525.60.13,src,\n" +
                                     "13.0,13.0.0,GA,580.65.06,,580,src,\n",
                                 "c");
  ASSERT_TRUE(good) << good.error().message;
  EXPECT_EQ(good.value()[0].min_driver_windows, "551.61");
  EXPECT_EQ(good.value()[1].min_driver_windows, ""); // Table 3 says N/A
}

TEST(KbLoader, TorchRowsGroupIntoReleases) {
  std::string h = "version,variant,status,cudnn,nccl,arch_list,arch_list_partial,python,"
                  "torchvision,torchaudio,pypi_default,index_url,source,notes\n";
  std::string rows =
      "2.5.1,cu124,stable,9.1.0.70,,sm_50;sm_90,,3.9-3.12,0.20.1,2.5.1,yes,"
      "https://download.pytorch.org/whl/cu124,src,\n"
      "2.5.1,cpu,stable,,,,,3.9-3.12,0.20.1,2.5.1,,https://download.pytorch.org/whl/cpu,src,\n";
  auto t = parse_torch(h + rows, "t");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->size(), 1u);
  const auto &rel = t->front();
  EXPECT_EQ(rel.python_versions, (std::vector<std::string>{"3.9", "3.10", "3.11", "3.12"}));
  ASSERT_EQ(rel.variants.size(), 2u);
  EXPECT_EQ(rel.variants[0].cuda, "12.4");
  EXPECT_TRUE(rel.variants[0].pypi_default);
  EXPECT_EQ(rel.variants[1].cuda, "");
  EXPECT_EQ(pip_command(rel, rel.variants[0]),
            "pip install torch==2.5.1 torchvision==0.20.1 torchaudio==2.5.1 --index-url "
            "https://download.pytorch.org/whl/cu124");

  auto bad_arch = parse_torch(h + "2.5.1,cu124,stable,,,8.6,,3.9-3.12,,,,https://x,src,\n", "t");
  ASSERT_FALSE(bad_arch);
  EXPECT_NE(bad_arch.error().message.find("column arch_list"), std::string::npos);
  auto bad_tag = parse_torch(h + "2.5.1,cuda,stable,,,,,3.9-3.12,,,,https://x,src,\n", "t");
  ASSERT_FALSE(bad_tag);
  auto bad_py = parse_torch(h + "2.5.1,cpu,stable,,,,,3.9,,,,https://x,src,\n", "t");
  ASSERT_FALSE(bad_py);
  EXPECT_NE(bad_py.error().message.find("column python"), std::string::npos);
}

TEST(KbLoader, EmbeddedFilesLoad) {
  const auto &kb = builtin();
  EXPECT_GE(kb.gpus.size(), 52u);
  EXPECT_FALSE(kb.archs.empty());
  EXPECT_FALSE(kb.cuda.empty());
  EXPECT_FALSE(kb.torch.empty());
  EXPECT_FALSE(kb.cudnn.empty());
  EXPECT_EQ(&kb, &builtin()); // loaded once
}

TEST(KbArmCpus, RowsAreValidatedAndEveryImplementerHasItsRow) {
  const std::string header = "implementer,part,vendor,core,source\n";
  EXPECT_TRUE(parse_arm_cpus(header + "0x41,,ARM,,s\n0x41,0xd4f,ARM,Neoverse-V2,s\n", "f"));
  for (const char *bad : {"0x41,0xd4f,ARM,,s\n",          // a part without its core
                          "0x41,,ARM,Neoverse-V2,s\n",    // a core without its part
                          "41,,ARM,,s\n",                 // not hexadecimal
                          "0x41,0xzz,ARM,X,s\n",          // not hexadecimal
                          "0x41,,ARM,,s\n0x41,,ARM,,s\n", // twice
                          "0x41,,ARM,,\n"})               // no source
    EXPECT_FALSE(parse_arm_cpus(header + bad, "f")) << bad;
  const auto &kb = builtin();
  ASSERT_FALSE(kb.arm_cpus.empty());
  for (const auto &a : kb.arm_cpus) {
    EXPECT_TRUE(kb.arm_cpu(a.implementer, std::nullopt)) << a.core;
    EXPECT_NE(a.source.find("https://"), std::string::npos) << a.core;
  }
  EXPECT_EQ(kb.arm_cpu(0x41, 0xd4f)->core, "Neoverse-V2");
  EXPECT_EQ(kb.arm_cpu(0x41, 0xd85)->core, "Cortex-X925");
  EXPECT_FALSE(kb.arm_cpu(0x41, 0xfff));
}

} // namespace
TEST(KbParse, P2pHangs) {
  const std::string header = "gpu,driver_from,driver_before,source,notes\n";
  EXPECT_TRUE(parse_p2p_hangs(header + "GeForce,545,570,s,\nGeForce RTX 4090,520,,s,\n", "f"));
  for (const char *bad : {"GeForce,545,535,s,\n", // fixed before it started
                          "GeForce,r545,,s,\n",   // not a driver version
                          "GeForce,545,,,\n",     // no source
                          ",545,,s,\n"})          // no GPU
    EXPECT_FALSE(parse_p2p_hangs(header + bad, "f")) << bad;
  const auto &kb = builtin();
  ASSERT_FALSE(kb.p2p_hangs.empty());
  for (const auto &h : kb.p2p_hangs) {
    EXPECT_NE(h.source.find("https://"), std::string::npos) << h.gpu;
    EXPECT_NE(h.gpu.find("GeForce"), std::string::npos) << h.gpu;
  }
}

} // namespace dlrig::kb
