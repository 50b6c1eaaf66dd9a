#pragma once
// Which kernels OpenBLAS runs, and choosing them (docs/bench.md, "cpu.gemm": "Which kernels
// OpenBLAS runs").
//
// A DYNAMIC_ARCH OpenBLAS picks its kernels by CPU model when the library loads, and falls back
// to an older core for a model it does not know: a VM that hides the model name, a newer CPU. On
// the H200 VM (a 16-vCPU Xeon with AVX-512 and AMX behind "Intel(R) Xeon(R) Processor"), Debian's
// OpenBLAS 0.3.21 ran its Prescott (SSE3) kernels: SGEMM at 235 GFLOP/s against numpy's 1218.
// OPENBLAS_CORETYPE names the core instead, but OpenBLAS reads it only while it initialises (as
// it loads), so `dlrig bench` runs itself again with it set (apps/dlrig/cmd_bench.cpp).
//
// Everything here is pure (a function of its arguments), except openblas_config() and
// OpenblasCoreEnv::read(), which load the library (bench/openblas.hpp) and read the environment.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlrig::bench {

// openblas_get_config() of OpenBLAS (bench/openblas.hpp; loaded by this call) ("OpenBLAS 0.3.21
// NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64"); "" when it gives none or did not
// load.
std::string openblas_config();

// The core named in `config` (case-insensitive against OpenBLAS's x86-64 core names, spelt as
// OpenBLAS spells them: "Prescott", "SkylakeX"); nullopt when it names none dlrig knows.
std::optional<std::string> openblas_core_name(std::string_view config);

// The OPENBLAS_CORETYPE for this CPU when a DYNAMIC_ARCH OpenBLAS (`config`) runs kernels for an
// older instruction set than the CPU's ISA flags (/proc/cpuinfo's): SkylakeX for AVX-512, Zen
// for AVX2 + FMA on AMD and Hygon (`vendor` is /proc/cpuinfo's vendor_id), Haswell for AVX2 + FMA
// otherwise, Sandybridge for AVX. Only names OpenBLAS 0.3.21's OPENBLAS_CORETYPE accepts
// (driver/others/dynamic.c, force_coretype: Cooperlake and later are not). nullopt when the core
// already matches the ISA, when the build is not DYNAMIC_ARCH (OPENBLAS_CORETYPE does nothing
// there), or when the core or the ISA is unknown.
std::optional<std::string> openblas_core_for(std::string_view config,
                                             const std::vector<std::string> &isa,
                                             std::string_view vendor);

// When OpenBLAS runs kernels for an older instruction set than the CPU has: a note in words that
// says so and names the OPENBLAS_CORETYPE for this CPU (openblas_core_for's; a build without
// DYNAMIC_ARCH is told to be rebuilt instead). nullopt when they match, or when the core or the
// ISA is unknown.
std::optional<std::string> openblas_core_note(std::string_view config,
                                              const std::vector<std::string> &isa,
                                              std::string_view vendor = {});

// The environment that decides whether dlrig chooses OpenBLAS's core itself.
struct OpenblasCoreEnv {
  // OPENBLAS_CORETYPE: the user's (always respected), or dlrig's in the run it started.
  std::optional<std::string> coretype;
  // DLRIG_OPENBLAS_CORETYPE_FROM: set by dlrig in the run it starts, to the core OpenBLAS had
  // detected; its presence means "already chosen once, never again".
  std::optional<std::string> chosen_from;
  // DLRIG_OPENBLAS_AUTO_CORE=0 turns the choice off.
  bool auto_core = true;
  // Test hook DLRIG_BENCH_OPENBLAS_DETECTED=CORE: decide as if OpenBLAS had detected CORE (the
  // CLI tests drive the choice on a CPU that OpenBLAS recognises). Never set in normal use.
  std::optional<std::string> test_detected;

  static OpenblasCoreEnv read(); // from this process's environment
};

inline constexpr const char *kOpenblasCoreFromVar = "DLRIG_OPENBLAS_CORETYPE_FROM";

// The decision to run dlrig again with OPENBLAS_CORETYPE=core.
struct OpenblasCoreSwitch {
  std::string core;     // for OPENBLAS_CORETYPE
  std::string detected; // the core OpenBLAS detected, for DLRIG_OPENBLAS_CORETYPE_FROM
  std::string message;  // one line for stderr
};
// nullopt when the user set OPENBLAS_CORETYPE, when dlrig already chose once, when it is turned
// off, or when openblas_core_for has nothing better.
std::optional<OpenblasCoreSwitch> openblas_core_switch(std::string_view config,
                                                       const std::vector<std::string> &isa,
                                                       std::string_view vendor,
                                                       const OpenblasCoreEnv &env);

// In the run dlrig started with OPENBLAS_CORETYPE set (env.chosen_from and env.coretype both
// set): what it did, for cpu.gemm's details.library_core_selected ("OPENBLAS_CORETYPE=SkylakeX
// set by dlrig: OpenBLAS 0.3.21 detected Prescott on a CPU with AVX-512"), and whether OpenBLAS
// runs that core now (`config`). nullopt in every other run.
std::optional<std::string> openblas_core_selected(std::string_view config,
                                                  const std::vector<std::string> &isa,
                                                  const OpenblasCoreEnv &env);

} // namespace dlrig::bench
