// Which kernels OpenBLAS runs and dlrig's choice of OPENBLAS_CORETYPE (bench/openblas_core.hpp):
// pure functions of the library's config string, the CPU's ISA flags and vendor, and the
// environment.
#include "dlrig/bench/openblas_core.hpp"

#include <gtest/gtest.h>

namespace dlrig::bench {
namespace {

// The H200 VM (16 vCPU Xeon with AVX-512 and AMX behind a generic model name) ran Debian's
// OpenBLAS 0.3.21 with its Prescott kernels (docs/bench.md, "On a real GPU").
const std::string kH200 =
    "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Prescott MAX_THREADS=64";
const std::vector<std::string> kH200Isa{"avx2", "fma", "avx512f", "amx_bf16"};
// This CI machine's: an AMD EPYC with AVX2, which OpenBLAS recognises.
const std::string kCi = "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64";

TEST(OpenblasCore, OlderKernelsThanTheCpuAreNamed) {
  auto note = openblas_core_note(kH200, kH200Isa, "GenuineIntel");
  ASSERT_TRUE(note);
  EXPECT_NE(note->find("Prescott kernels (SSE) on a CPU with AVX-512"), std::string::npos) << *note;
  EXPECT_NE(note->find("OPENBLAS_CORETYPE=SkylakeX"), std::string::npos) << *note;
  EXPECT_FALSE(openblas_core_note(kCi, {"avx2", "fma"}, "AuthenticAMD"));
  EXPECT_EQ(*openblas_core_note("OpenBLAS 0.3.21 DYNAMIC_ARCH Sandybridge", {"avx2", "fma"}),
            "OpenBLAS runs its Sandybridge kernels (AVX) on a CPU with AVX2 and FMA: its "
            "DYNAMIC_ARCH detection did not recognise this CPU model (a VM that hides it, or a "
            "newer model) and fell back to an older core; OPENBLAS_CORETYPE=Haswell selects "
            "kernels for this CPU, and this rate is below what it can do");
  // An AMD CPU is told Zen.
  EXPECT_NE(
      openblas_core_note("OpenBLAS 0.3.21 DYNAMIC_ARCH Prescott", {"avx2", "fma"}, "AuthenticAMD")
          ->find("OPENBLAS_CORETYPE=Zen"),
      std::string::npos);
  // A build for one core: OPENBLAS_CORETYPE does nothing there, so the note says rebuild.
  auto fixed = openblas_core_note("OpenBLAS 0.3.21 NO_AFFINITY PRESCOTT MAX_THREADS=64", kH200Isa);
  ASSERT_TRUE(fixed);
  EXPECT_NE(fixed->find("no DYNAMIC_ARCH"), std::string::npos) << *fixed;
  EXPECT_NE(fixed->find("TARGET=SkylakeX"), std::string::npos) << *fixed;
  // Unknown core or unknown ISA: nothing said.
  EXPECT_FALSE(openblas_core_note("OpenBLAS 0.3.21 MAX_THREADS=64", {"avx512f"}));
  EXPECT_FALSE(openblas_core_note(kH200, {}));
}

TEST(OpenblasCore, CoreForTheCpuOnlyWhenItFellBack) {
  EXPECT_EQ(openblas_core_for(kH200, kH200Isa, "GenuineIntel"), "SkylakeX");
  EXPECT_EQ(openblas_core_for(kH200, {"avx2", "fma"}, "GenuineIntel"), "Haswell");
  EXPECT_EQ(openblas_core_for(kH200, {"avx2", "fma"}, "AuthenticAMD"), "Zen");
  EXPECT_EQ(openblas_core_for(kH200, {"avx2", "fma"}, "HygonGenuine"), "Zen");
  EXPECT_EQ(openblas_core_for(kH200, {"avx2", "fma"}, ""), "Haswell");
  EXPECT_EQ(openblas_core_for(kH200, {"avx"}, "GenuineIntel"), "Sandybridge");
  // AVX-512 on AMD (Zen 4): SkylakeX, the AVX-512 kernels 0.3.21 accepts.
  EXPECT_EQ(openblas_core_for("OpenBLAS 0.3.21 DYNAMIC_ARCH Zen", kH200Isa, "AuthenticAMD"),
            "SkylakeX");
  // Already right (or newer), nothing to do.
  EXPECT_FALSE(openblas_core_for(kCi, {"avx2", "fma"}, "AuthenticAMD"));
  EXPECT_FALSE(
      openblas_core_for("OpenBLAS 0.3.21 DYNAMIC_ARCH SkylakeX", kH200Isa, "GenuineIntel"));
  EXPECT_FALSE(
      openblas_core_for("OpenBLAS 0.3.21 DYNAMIC_ARCH Cooperlake", kH200Isa, "GenuineIntel"));
  EXPECT_FALSE(openblas_core_for("OpenBLAS 0.3.21 DYNAMIC_ARCH Haswell", {"avx2", "fma"}, ""));
  // Not DYNAMIC_ARCH, no core, no ISA, SSE only: unknown.
  EXPECT_FALSE(openblas_core_for("OpenBLAS 0.3.21 PRESCOTT", kH200Isa, "GenuineIntel"));
  EXPECT_FALSE(openblas_core_for("OpenBLAS 0.3.21 DYNAMIC_ARCH", kH200Isa, "GenuineIntel"));
  EXPECT_FALSE(openblas_core_for(kH200, {}, "GenuineIntel"));
  EXPECT_FALSE(openblas_core_for(kH200, {"sse3"}, "GenuineIntel"));
  EXPECT_EQ(openblas_core_name(kH200), "Prescott");
  EXPECT_EQ(openblas_core_name("OpenBLAS 0.3.21 SKYLAKEX"), "SkylakeX");
  EXPECT_FALSE(openblas_core_name("OpenBLAS 0.3.21 DYNAMIC_ARCH"));
}

TEST(OpenblasCore, SwitchOnlyOnceAndNeverOverTheUser) {
  OpenblasCoreEnv none;
  auto sw = openblas_core_switch(kH200, kH200Isa, "GenuineIntel", none);
  ASSERT_TRUE(sw);
  EXPECT_EQ(sw->core, "SkylakeX");
  EXPECT_EQ(sw->detected, "Prescott");
  EXPECT_EQ(sw->message,
            "OpenBLAS 0.3.21 runs its Prescott kernels (SSE) on this CPU with AVX-512: running "
            "again with OPENBLAS_CORETYPE=SkylakeX (DLRIG_OPENBLAS_AUTO_CORE=0 turns this off)");
  OpenblasCoreEnv user;
  user.coretype = "Prescott";
  EXPECT_FALSE(openblas_core_switch(kH200, kH200Isa, "GenuineIntel", user));
  OpenblasCoreEnv again;
  again.chosen_from = "Prescott";
  EXPECT_FALSE(openblas_core_switch(kH200, kH200Isa, "GenuineIntel", again));
  OpenblasCoreEnv off;
  off.auto_core = false;
  EXPECT_FALSE(openblas_core_switch(kH200, kH200Isa, "GenuineIntel", off));
  EXPECT_FALSE(openblas_core_switch(kCi, {"avx2", "fma"}, "AuthenticAMD", none));
  EXPECT_FALSE(openblas_core_switch("OpenBLAS 0.3.21 PRESCOTT", kH200Isa, "GenuineIntel", none));
  // The test hook: decide as if OpenBLAS had detected Prescott on this CI machine.
  OpenblasCoreEnv hook;
  hook.test_detected = "Prescott";
  auto ci = openblas_core_switch(kCi, {"avx2", "fma"}, "AuthenticAMD", hook);
  ASSERT_TRUE(ci);
  EXPECT_EQ(ci->core, "Zen");
  EXPECT_EQ(ci->detected, "Prescott");
  EXPECT_NE(ci->message.find("test hook"), std::string::npos) << ci->message;
  hook.test_detected = "NoSuchCore";
  EXPECT_FALSE(openblas_core_switch(kCi, {"avx2", "fma"}, "AuthenticAMD", hook));
}

TEST(OpenblasCore, SelectedCoreIsReportedOnlyInTheRunDlrigStarted) {
  OpenblasCoreEnv chosen;
  chosen.coretype = "SkylakeX";
  chosen.chosen_from = "Prescott";
  EXPECT_EQ(openblas_core_selected(
                "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY SkylakeX MAX_THREADS=64",
                kH200Isa, chosen),
            "OPENBLAS_CORETYPE=SkylakeX set by dlrig: OpenBLAS 0.3.21 detected Prescott on a CPU "
            "with AVX-512");
  // OpenBLAS still runs the old core: said, not hidden.
  auto stuck = openblas_core_selected(kH200, kH200Isa, chosen);
  ASSERT_TRUE(stuck);
  EXPECT_NE(stuck->find("runs its Prescott kernels all the same"), std::string::npos) << *stuck;
  OpenblasCoreEnv user;
  user.coretype = "SkylakeX";
  EXPECT_FALSE(openblas_core_selected(kH200, kH200Isa, user));
  EXPECT_FALSE(openblas_core_selected(kH200, kH200Isa, OpenblasCoreEnv{}));
}

} // namespace
} // namespace dlrig::bench
