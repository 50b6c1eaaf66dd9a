// The embedded data itself: every numeric column within its range, and the files agree with one
// another (architecture vs compute capability, torch CUDA vs driver table, PCI ids).
#include "dlrig/kb/kb.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace dlrig::kb {
namespace {

const KnowledgeBase &kb() {
  return builtin();
}

void in_range(const OptF64 &v, double lo, double hi, const std::string &what) {
  if (v) {
    EXPECT_GE(*v, lo) << what;
    EXPECT_LE(*v, hi) << what;
  }
}

TEST(KbData, HoldsEveryReferenceGpu) {
  // The project's research notes list 52 GPUs; each must be here by name.
  const char *names[] = {"GeForce GTX 1080 Ti",
                         "GeForce RTX 4090",
                         "NVIDIA H100 SXM5",
                         "NVIDIA A100 80GB SXM4",
                         "AMD Instinct MI300X",
                         "Intel Arc A770 16GB",
                         "NVIDIA Jetson Orin Nano 8GB",
                         "NVIDIA B200 (HGX B200, per GPU)"};
  for (auto n : names) {
    EXPECT_NE(kb().find_gpu(n), nullptr) << n;
  }
  EXPECT_GE(kb().gpus.size(), 52u);
}

TEST(KbData, GpuNumbersAreInRange) {
  for (const auto &g : kb().gpus) {
    const auto &n = g.name;
    ASSERT_TRUE(g.memory_gb) << n;
    in_range(g.memory_gb, 1, 300, n + " memory_gb");
    ASSERT_TRUE(g.memory_bandwidth_bytes_per_s) << n;
    in_range(g.memory_bandwidth_bytes_per_s, 50e9, 10e12, n + " bandwidth");
    in_range(g.fp64_flops, 0.01e12, 200e12, n + " fp64");
    in_range(g.fp32_flops, 1e12, 200e12, n + " fp32");
    for (const auto *v : {&g.tf32_flops, &g.fp16_flops, &g.bf16_flops, &g.fp8_flops, &g.int8_ops})
      in_range(*v, 5e12, 10000e12, n + " tensor throughput");
    in_range(g.tdp_w, 5, 1500, n + " tdp");
    if (g.tdp_min_w) {
      EXPECT_LE(*g.tdp_min_w, *g.tdp_w) << n;
    }
    if (g.pcie_gen) {
      EXPECT_GE(*g.pcie_gen, 1) << n;
      EXPECT_LE(*g.pcie_gen, 6) << n;
    }
    if (g.pcie_lanes) {
      EXPECT_TRUE(*g.pcie_lanes == 1 || *g.pcie_lanes == 4 || *g.pcie_lanes == 8 ||
                  *g.pcie_lanes == 16)
          << n;
    }
    in_range(g.nvlink_bytes_per_s, 10e9, 2000e9, n + " nvlink");
    if (g.launch_year) {
      EXPECT_GE(*g.launch_year, 2010) << n;
      EXPECT_LE(*g.launch_year, 2027) << n;
    }
    if (g.launch_price_usd) {
      EXPECT_GT(*g.launch_price_usd, 0) << n;
    }
    EXPECT_FALSE(g.source.empty()) << n;
  }
}

TEST(KbData, TensorThroughputOrderingIsSane) {
  for (const auto &g : kb().gpus) {
    const auto &n = g.name;
    // Tensor cores run BF16/FP16 faster than plain FP32, TF32 sits between, FP8 doubles FP16.
    if (g.bf16_flops && g.fp32_flops) {
      EXPECT_GE(*g.bf16_flops, *g.fp32_flops) << n;
    }
    if (g.fp16_flops && g.fp32_flops) {
      EXPECT_GE(*g.fp16_flops, *g.fp32_flops) << n;
    }
    if (g.tf32_flops && g.bf16_flops) {
      EXPECT_LE(*g.tf32_flops, *g.bf16_flops) << n;
    }
    if (g.fp8_flops && g.bf16_flops) {
      EXPECT_GE(*g.fp8_flops, *g.bf16_flops) << n;
    }
    if (g.fp64_flops && g.fp32_flops) {
      EXPECT_LE(*g.fp64_flops, *g.fp32_flops * 2.01) << n; // FP64 matrix units reach 2x
    }
  }
}

TEST(KbData, ArchitectureAgreesWithComputeCapability) {
  for (const auto &g : kb().gpus) {
    const auto *a = kb().arch(g.compute_capability);
    ASSERT_NE(a, nullptr) << g.name << ": no archs.csv row for " << g.compute_capability;
    EXPECT_EQ(a->vendor, g.vendor) << g.name;
    // "Ada Lovelace (AD102)" starts with the archs.csv name, then a space or the end.
    const auto &arch = g.architecture;
    bool agrees = arch.rfind(a->name, 0) == 0 &&
                  (arch.size() == a->name.size() || arch[a->name.size()] == ' ');
    EXPECT_TRUE(agrees) << g.name << ": " << arch << " vs " << a->name;
    // A precision the GPU has a figure for must be a feature of its architecture; one the
    // architecture lacks must be blank.
    auto feature = [&](const OptF64 &v, bool has, const char *f) {
      if (v) {
        EXPECT_TRUE(has) << g.name << " has a " << f << " figure but " << a->name << " lacks it";
      }
      if (!has && a->feature_known(f)) {
        EXPECT_FALSE(v) << g.name << ": " << a->name << " has no " << f;
      }
    };
    feature(g.tf32_flops, a->tf32, "tf32");
    feature(g.bf16_flops, a->bf16, "bf16");
    feature(g.fp8_flops, a->fp8, "fp8");
    if (g.fp16_flops || g.int8_ops) {
      EXPECT_TRUE(a->tensor_cores) << g.name;
    }
  }
}

TEST(KbData, EveryGpuHasUniquePciIdsOrAReason) {
  std::set<std::string> seen;
  for (const auto &g : kb().gpus) {
    EXPECT_TRUE(!g.pci_ids.empty() || !g.no_pci_id_reason.empty()) << g.name;
    if (!g.pci_ids.empty()) {
      EXPECT_FALSE(g.pci_source.empty()) << g.name;
    }
    for (const auto &id : g.pci_ids) {
      EXPECT_TRUE(seen.insert(id).second) << id << " twice";
      auto vendor = id.substr(0, 4);
      EXPECT_EQ(vendor, g.vendor == "NVIDIA" ? "10de"
                        : g.vendor == "AMD"  ? "1002"
                                             : "8086")
          << g.name;
    }
  }
}

TEST(KbData, ArchsAreUniqueAndSourced) {
  std::set<std::string> seen;
  for (const auto &a : kb().archs) {
    EXPECT_TRUE(seen.insert(a.compute_capability).second) << a.compute_capability;
    EXPECT_FALSE(a.source.empty()) << a.compute_capability;
    // Feature ladder: TF32/BF16 need tensor cores; FP4 comes after FP8.
    if (a.tf32 || a.bf16 || a.fp8) {
      EXPECT_TRUE(a.tensor_cores) << a.compute_capability;
    }
    if (a.fp4) {
      EXPECT_TRUE(a.fp8) << a.compute_capability;
    }
  }
}

TEST(KbData, CudaDriverMinimaRiseWithTheToolkit) {
  const auto &rows = kb().cuda;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    EXPECT_GT(compare_versions(rows[i].version, rows[i - 1].version), 0) << rows[i].version;
    EXPECT_GE(compare_versions(rows[i].min_driver_linux, rows[i - 1].min_driver_linux), 0)
        << rows[i].version;
  }
  for (const auto &r : rows) {
    auto major = r.cuda.substr(0, r.cuda.find('.'));
    if (major == "11" || major == "12" || major == "13") {
      EXPECT_FALSE(r.minor_compat_min_driver.empty()) << r.version;
    }
    // CUDA 11.0 is the one exception the source states: its minor-version compatibility needs
    // the 450.80.02 upgrade, above 11.0's own minimum.
    if (!r.minor_compat_min_driver.empty() && r.cuda != "11.0") {
      EXPECT_LE(compare_versions(r.minor_compat_min_driver, r.min_driver_linux), 0) << r.version;
    }
  }
}

TEST(KbData, EveryTorchCudaVariantHasADriverMinimum) {
  for (const auto &rel : kb().torch) {
    EXPECT_FALSE(rel.python_versions.empty()) << rel.version;
    EXPECT_NE(rel.variant("cpu"), nullptr) << rel.version;
    for (const auto &v : rel.variants) {
      if (!v.cuda.empty()) {
        EXPECT_NE(kb().cuda_min_driver(v.cuda), nullptr) << rel.version << "+" << v.tag;
      }
      // The shapes the previous-versions page uses: an index per variant, a find-links page
      // (before 1.11), the 1.8 LTS index, or PyPI itself (the default CUDA build before 1.8.1).
      const std::string whl = "https://download.pytorch.org/whl/";
      EXPECT_TRUE(v.index_url == whl + v.tag || v.index_url == whl + "torch_stable.html" ||
                  v.index_url == whl + v.tag + "/torch_stable.html" ||
                  v.index_url == whl + "lts/1.8/" + v.tag ||
                  (v.index_url == "https://pypi.org/simple" && v.pypi_default))
          << rel.version << "+" << v.tag << ": " << v.index_url;
      for (const auto &a : v.arch_list) {
        EXPECT_NE(kb().arch(a.substr(a.find('_') + 1, a.size() - a.find('_') - 2) + "." +
                            a.substr(a.size() - 1)),
                  nullptr)
            << rel.version << "+" << v.tag << ": " << a << " is no known compute capability";
      }
    }
  }
  // Releases oldest first.
  for (std::size_t i = 1; i < kb().torch.size(); ++i) {
    EXPECT_GT(compare_versions(kb().torch[i].version, kb().torch[i - 1].version), 0);
  }
}

TEST(KbData, TorchCudnnMatchesCudnnTable) {
  // A bundled cuDNN must be built for the variant's CUDA major (cudnn.csv).
  for (const auto &rel : kb().torch)
    for (const auto &v : rel.variants) {
      if (v.cudnn.empty() || v.cuda.empty())
        continue;
      int cuda_major = std::stoi(v.cuda.substr(0, v.cuda.find('.')));
      int cudnn_major = std::stoi(v.cudnn.substr(0, v.cudnn.find('.')));
      int cudnn_minor = std::stoi(v.cudnn.substr(v.cudnn.find('.') + 1));
      bool found = false;
      for (const auto &c : kb().cudnn) {
        // "9.0-9.10" holds 9.1; "8.9" holds 8.9.x.
        auto dash = c.cudnn.find('-');
        auto lo = c.cudnn.substr(0, dash);
        auto hi = dash == std::string::npos ? lo : c.cudnn.substr(dash + 1);
        auto mj = [](const std::string &s) { return std::stoi(s.substr(0, s.find('.'))); };
        auto mn = [](const std::string &s) { return std::stoi(s.substr(s.find('.') + 1)); };
        if (mj(lo) != cudnn_major || cudnn_minor < mn(lo) || cudnn_minor > mn(hi))
          continue;
        found = true;
        EXPECT_NE(std::find(c.cuda_majors.begin(), c.cuda_majors.end(), cuda_major),
                  c.cuda_majors.end())
            << rel.version << "+" << v.tag << " cuDNN " << v.cudnn;
      }
      (void)found; // cuDNN minors the table does not cover (8.3, 9.13...) are not checked
    }
}

} // namespace
} // namespace dlrig::kb

namespace dlrig::kb {
namespace {

TEST(KbLinks, PcieRowsAreConsistent) {
  double prev = 0;
  for (int gen = 1; gen <= 6; ++gen) {
    const auto *l = builtin().pcie(gen);
    ASSERT_NE(l, nullptr) << gen;
    ASSERT_TRUE(l->per_lane_bytes_per_s && l->theoretical_bytes_per_s && l->lanes);
    // Each generation roughly doubles the per-lane rate.
    if (prev > 0) {
      EXPECT_GT(*l->per_lane_bytes_per_s / prev, 1.9) << gen;
      EXPECT_LT(*l->per_lane_bytes_per_s / prev, 2.1) << gen;
    }
    prev = *l->per_lane_bytes_per_s;
    // x16 = 16 x per lane, within rounding.
    EXPECT_NEAR(*l->theoretical_bytes_per_s, *l->per_lane_bytes_per_s * *l->lanes,
                0.01 * *l->theoretical_bytes_per_s)
        << gen;
  }
  EXPECT_EQ(builtin().pcie(7), nullptr);
}

TEST(KbLinks, MeasuredNeverExceedsTheoretical) {
  for (const auto &l : builtin().links) {
    EXPECT_FALSE(l.source.empty()) << l.name;
    if (l.theoretical_bytes_per_s) {
      EXPECT_GT(*l.theoretical_bytes_per_s, 0.1e9) << l.name;
      EXPECT_LT(*l.theoretical_bytes_per_s, 2000e9) << l.name;
      for (const auto *m : {&l.measured_h2d_bytes_per_s, &l.measured_h2d_high_bytes_per_s,
                            &l.measured_d2h_bytes_per_s})
        if (*m) {
          EXPECT_LE(**m, *l.theoretical_bytes_per_s) << l.name;
        }
    }
    if (l.measured_h2d_bytes_per_s) {
      EXPECT_LE(*l.measured_h2d_bytes_per_s, *l.measured_h2d_high_bytes_per_s) << l.name;
      EXPECT_FALSE(l.measured_source.empty()) << l.name;
    }
  }
  // An eGPU link is a small fraction of an x16 slot.
  const auto *tb3 = builtin().find_link("Thunderbolt 3");
  ASSERT_NE(tb3, nullptr);
  EXPECT_LT(*tb3->theoretical_bytes_per_s, *builtin().pcie(3)->theoretical_bytes_per_s / 3.9);
}

TEST(KbCloud, InstancesAgreeWithTheGpuCatalog) {
  for (const auto &c : builtin().cloud) {
    EXPECT_TRUE(c.provider == "AWS" || c.provider == "Azure" || c.provider == "GCP") << c.instance;
    EXPECT_GE(c.gpu_count, 1) << c.instance;
    EXPECT_FALSE(c.source.empty()) << c.instance;
    if (c.price_usd_per_hour) {
      EXPECT_GT(*c.price_usd_per_hour, 0) << c.instance;
      EXPECT_LT(*c.price_usd_per_hour, 200) << c.instance;
      EXPECT_GE(c.price_date.substr(0, 4), "2025") << c.instance;
    }
    if (c.vcpus) {
      EXPECT_GE(*c.vcpus, c.gpu_count) << c.instance;
    }
    if (!c.gpu.empty()) {
      const auto *g = builtin().find_gpu(c.gpu);
      ASSERT_NE(g, nullptr) << c.instance << ": " << c.gpu << " is not in gpus.csv";
      EXPECT_EQ(g->name, c.gpu);
      // Instance GPU memory = count x the GPU's memory, as both state it.
      if (c.gpu_memory) {
        EXPECT_NEAR(*c.gpu_memory, c.gpu_count * *g->memory_gb, 0.5) << c.instance;
      }
    }
  }
  ASSERT_NE(builtin().find_cloud("p5.48xlarge"), nullptr);
  EXPECT_EQ(builtin().find_cloud("p5.48xlarge")->gpu_count, 8);
}

} // namespace
} // namespace dlrig::kb
