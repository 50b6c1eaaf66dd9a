#include "dlrig/bench/cpu_vs_gpu.hpp"

#include <gtest/gtest.h>

namespace dlrig::bench {
namespace {

TEST(CpuVsGpu, StepTimesAndRatioFromTheRates) {
  // 4.1e12 FLOPs at 100 GFLOP/s (CPU) and at 4.5 TFLOP/s (GPU).
  auto c = compare_step(4.1e12, StepRate{100e9, "measured cpu.gemm.sgemm"},
                        StepRate{4.5e12, "catalog peak × 40 %"}, "RTX 3060");
  ASSERT_TRUE(c.cpu_s && c.gpu_s && c.speedup);
  EXPECT_DOUBLE_EQ(*c.cpu_s, 41.0);
  EXPECT_NEAR(*c.gpu_s, 0.9111, 1e-3);
  EXPECT_NEAR(*c.speedup, 45.0, 1e-9);
  EXPECT_EQ(c.gpu_source, "catalog peak × 40 %");
  EXPECT_EQ(cpu_vs_gpu_line(c), "one step: CPU 41 s, RTX 3060 0.91 s (×45)");
}

TEST(CpuVsGpu, AnUnknownRateIsNaNotZeroOrInfinity) {
  auto c = compare_step(1e12, StepRate{0, "no measurement"}, StepRate{1e12, "x"}, "A100");
  EXPECT_FALSE(c.cpu_s.has_value());
  EXPECT_FALSE(c.speedup.has_value());
  EXPECT_EQ(cpu_vs_gpu_line(c), "one step: CPU n/a, A100 1.0 s");
  auto d = compare_step(1e12, StepRate{1e9, "x"}, std::nullopt, "A100");
  EXPECT_EQ(cpu_vs_gpu_line(d), "one step: CPU 17 min, A100 n/a");
}

TEST(CpuVsGpu, HumanSeconds) {
  EXPECT_EQ(human_seconds(0.012), "0.012 s");
  EXPECT_EQ(human_seconds(41), "41 s");
  EXPECT_EQ(human_seconds(12 * 3600), "12 h");
  EXPECT_EQ(human_seconds(25 * 60), "25 min");
  EXPECT_EQ(human_seconds(3 * 86400), "3.0 days");
}

} // namespace
} // namespace dlrig::bench
