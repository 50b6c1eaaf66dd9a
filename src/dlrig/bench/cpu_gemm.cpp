// cpu.gemm: SGEMM and DGEMM through OpenBLAS, square sizes per tier, all cores and one core.
// Work: 2·n³ FLOP per call (gemm_flop). Inputs are standard normal; 64 sampled entries of C are
// checked against a dot product in long double with the tolerance |c - ref| <= 16·sqrt(k)·eps·
// sum|a_ik·b_kj| (a probabilistic rounding-error bound, Higham, "Accuracy and Stability of
// Numerical Algorithms", §3.1 and Higham & Mary 2019). BF16 runs OpenBLAS's cblas_sbgemm (bf16
// A and B, fp32 C, fp32 accumulation), looked up at run time because Debian's OpenBLAS 0.3.21
// does not export it; DLRIG_SBGEMM_LIBRARY=PATH looks it up in that library instead (tests: a
// fake). OpenBLAS itself is loaded when the first of them runs (openblas_core.hpp, openblas()). Its
// reference is the same dot product of the bf16-rounded inputs, so the tolerance is SGEMM's (fp32
// epsilon).
#include "dlrig/bench/bench.hpp"

#include "dlrig/bench/gemm_data.hpp"
#include "dlrig/bench/openblas.hpp"
#include "dlrig/bench/openblas_core.hpp"
#include "dlrig/platform/dynlib.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <thread>

namespace dlrig::bench {
namespace {

std::vector<double> sizes(const Context &ctx) {
  if (ctx.small)
    return {128};
  switch (ctx.tier) {
  case Tier::quick:
    return {256, 512};
  case Tier::standard:
    return {512, 1024, 2048};
  case Tier::sustained:
    return {2048, 4096};
  }
  return {512};
}

int all_threads(const Context &ctx) {
  return std::max(1, ctx.hardware_threads);
}

std::vector<Config> gemm_configs(const Context &ctx) {
  std::vector<Config> out;
  int all = all_threads(ctx);
  for (double n : sizes(ctx)) {
    out.push_back({fmt::format("n={} threads={}", n, all), {n, static_cast<double>(all)}});
    if (all > 1)
      out.push_back({fmt::format("n={} threads=1", n), {n, 1}});
  }
  return out;
}

template <class T> void gemm(int n, const T *a, const T *b, T *c) {
  if constexpr (std::is_same_v<T, float>)
    openblas().sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c,
                     n);
  else
    openblas().dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, b, n, 0.0, c,
                     n);
}

// cpu.gemm's needs: an OpenBLAS that loads.
std::optional<std::string> needs_openblas(const Context &) {
  if (!openblas().sgemm)
    return openblas().error;
  return std::nullopt;
}

template <class T>
std::optional<std::string> verify(int n, const std::vector<T> &a, const std::vector<T> &b,
                                  const std::vector<T> &c) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> pick(0, n - 1);
  const long double eps = std::numeric_limits<T>::epsilon();
  for (int s = 0; s < 64; ++s) {
    int i = pick(rng), j = pick(rng);
    long double ref = 0, mag = 0;
    for (int k = 0; k < n; ++k) {
      long double t = static_cast<long double>(a[i * n + k]) * b[k * n + j];
      ref += t;
      mag += std::fabs(t);
    }
    long double tol = 16 * std::sqrt(static_cast<long double>(n)) * eps * mag;
    long double got = c[i * n + j];
    if (!(std::fabs(got - ref) <= tol))
      return fmt::format("C[{}][{}] = {} but the reference dot product gives {} (tolerance {:.3g})",
                         i, j, static_cast<double>(got), static_cast<double>(ref),
                         static_cast<double>(tol));
  }
  return std::nullopt;
}

// details.library_note (with `note`) and details.library_core_selected: which kernels OpenBLAS
// runs here, and whether dlrig chose them (openblas_core.hpp).
void add_core_details(Json &details, const Context &ctx, bool note = true) {
  details["library_core_selected"] = nullptr;
  if (!ctx.snapshot)
    return;
  const auto &cpu = ctx.snapshot->host.cpu;
  const auto config = openblas_config();
  if (note)
    if (auto text = openblas_core_note(config, cpu.isa, cpu.vendor.value_or("")))
      details["library_note"] = *text;
  if (auto chosen = openblas_core_selected(config, cpu.isa, OpenblasCoreEnv::read()))
    details["library_core_selected"] = *chosen;
}

// The theoretical peak of `threads` cores (FP32 when !dp) and how it was derived.
void set_peak(Outcome &o, const Context &ctx, int threads, bool dp) {
  std::optional<int> cores;
  std::optional<double> hz;
  FlopPerCycle fpc{std::nullopt, "no snapshot"};
  if (ctx.snapshot) {
    const auto &cpu = ctx.snapshot->host.cpu;
    fpc = cpu_flop_per_cycle(cpu.isa, dp);
    hz = cpu.max_hz ? cpu.max_hz : cpu.base_hz;
    // threads beyond the physical cores share FMA units (SMT): the peak counts cores.
    cores = threads == 1 ? std::optional<int>(1)
            : cpu.cores  ? std::optional<int>(std::min(*cpu.cores, threads))
                         : std::nullopt;
  }
  o.peak = cpu_peak_gflops(cores, hz, fpc.value);
  o.peak_assumption =
      fmt::format("peak = cores x frequency x FLOP/cycle: {} x {} x {}; {}",
                  cores ? std::to_string(*cores) : "unknown",
                  hz ? fmt::format("{:.2f} GHz", *hz / 1e9) : "unknown",
                  fpc.value ? fmt::format("{:g}", *fpc.value) : "unknown", fpc.assumption);
}

template <class T> Outcome run_gemm(const Config &cfg, const Context &ctx, Sampler &s) {
  const int n = static_cast<int>(cfg.params.at(0));
  const int threads = static_cast<int>(cfg.params.at(1));
  openblas().set_num_threads(threads);
  std::vector<T> a(static_cast<std::size_t>(n) * n), b(a.size()), c(a.size());
  std::mt19937_64 rng(42);
  std::normal_distribution<T> normal(0, 1);
  for (auto &v : a)
    v = normal(rng);
  for (auto &v : b)
    v = normal(rng);

  gemm<T>(n, a.data(), b.data(), c.data()); // untimed warm-up: threads, pages, caches
  while (s.more()) {
    auto t0 = std::chrono::steady_clock::now();
    gemm<T>(n, a.data(), b.data(), c.data());
    auto t1 = std::chrono::steady_clock::now();
    s.add(std::chrono::duration<double>(t1 - t0).count());
  }
  if (ctx.corrupt)
    for (auto &v : c)
      v = v * T(1.5) + T(1);

  Outcome o;
  o.work = gemm_flop(n, n, n);
  o.work_unit = "FLOP";
  o.rate_unit = "GFLOP/s";
  o.verification_error = verify<T>(n, a, b, c);

  set_peak(o, ctx, threads, std::is_same_v<T, double>);
  // Below n = 1024 the blocking overheads of the BLAS dominate: no floor there.
  if (o.peak && n >= 1024)
    o.expectation = Expectation{
        0.5 * *o.peak, false,
        fmt::format("half the theoretical peak ({:.1f} GFLOP/s) at n >= 1024; below it, look for "
                    "throttling, a power limit, a frequency governor other than performance, or "
                    "other work on the machine",
                    *o.peak),
        "benchmarking.md §5 rule 6 (flag GEMM under ~70 % of the expected figure), with the "
        "peak taken at the maximum clock, which all-core vector code may not hold"};
  o.details = {{"n", n},
               {"threads", threads},
               {"library", "OpenBLAS"},
               {"library_config", openblas_config()},
               {"library_note", Json(nullptr)},
               {"verification", "64 sampled entries vs long-double dot product, tolerance "
                                "16*sqrt(n)*eps*sum|a*b|"}};
  add_core_details(o.details, ctx);
  return o;
}

// ---- BF16: cblas_sbgemm ----------------------------------------------------------------------

// OpenBLAS's declaration (cblas.h of builds with BUILD_BFLOAT16=1; bfloat16 is a uint16_t there).
using Sbgemm = void (*)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, blasint, blasint, blasint,
                        float, const std::uint16_t *, blasint, const std::uint16_t *, blasint,
                        float, float *, blasint);

struct SbgemmLookup {
  Sbgemm fn = nullptr;
  std::string where; // "OpenBLAS PATH (config)" or the override's path
  std::string why;   // when fn is null: why it cannot run
};

// Once per process; the override library stays loaded until exit.
const SbgemmLookup &sbgemm() {
  static const SbgemmLookup found = [] {
    SbgemmLookup l;
    const char *env = std::getenv("DLRIG_SBGEMM_LIBRARY");
    if (env && *env) {
      static auto lib = DynamicLibrary::open({env});
      l.where = std::string("DLRIG_SBGEMM_LIBRARY=") + env;
      if (!lib) {
        l.why = l.where + " does not load: " + lib.error().message;
        return l;
      }
      l.fn = reinterpret_cast<Sbgemm>(lib->symbol({"cblas_sbgemm"}));
    } else {
      const auto &o = openblas();
      if (!o.sgemm) {
        l.why = o.error;
        return l;
      }
      l.where = "OpenBLAS " + o.path + " (" + openblas_config() + ")";
      l.fn = reinterpret_cast<Sbgemm>(o.sbgemm);
    }
    if (!l.fn)
      l.why = l.where + " does not export cblas_sbgemm (OpenBLAS builds it with "
                        "BUILD_BFLOAT16=1; Debian's 0.3.21 is built without)";
    return l;
  }();
  return found;
}

// BF16 instructions OpenBLAS's sbgemm kernels use, from /proc/cpuinfo's flags: AVX512-BF16
// (Cooper Lake and later, Zen 4), AMX-BF16 (Sapphire Rapids), Arm's BF16 (Neoverse V1/N2).
std::optional<std::string> bf16_isa(const std::vector<std::string> &isa) {
  for (const char *f : {"amx_bf16", "avx512_bf16", "bf16"})
    if (std::find(isa.begin(), isa.end(), f) != isa.end())
      return std::string(f);
  return std::nullopt;
}

Outcome run_sbgemm(const Config &cfg, const Context &ctx, Sampler &s) {
  const auto &lib = sbgemm();
  if (!lib.fn)
    throw std::runtime_error(lib.why); // the needs check skips first; this is a guard
  const int n = static_cast<int>(cfg.params.at(0));
  const int threads = static_cast<int>(cfg.params.at(1));
  if (openblas().set_num_threads) // DLRIG_SBGEMM_LIBRARY's library may come without OpenBLAS
    openblas().set_num_threads(threads);
  const std::size_t count = static_cast<std::size_t>(n) * n;
  // Random normal floats rounded to bf16; the float copies hold exactly the rounded values.
  std::vector<std::uint16_t> a(count), b(count);
  std::vector<float> af(count), bf(count), c(count);
  std::mt19937_64 rng(42);
  std::normal_distribution<float> normal(0, 1);
  for (auto [bits, value] : {std::pair{&a, &af}, {&b, &bf}})
    for (std::size_t i = 0; i < count; ++i) {
      const float x = normal(rng);
      gemm::write_element(gemm::Element::bf16, x, reinterpret_cast<unsigned char *>(&(*bits)[i]));
      (*value)[i] = static_cast<float>(
          gemm::read_element(gemm::Element::bf16, reinterpret_cast<unsigned char *>(&(*bits)[i])));
    }
  auto call = [&] {
    lib.fn(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f,
           c.data(), n);
  };
  call(); // untimed warm-up
  while (s.more()) {
    auto t0 = std::chrono::steady_clock::now();
    call();
    auto t1 = std::chrono::steady_clock::now();
    s.add(std::chrono::duration<double>(t1 - t0).count());
  }
  if (ctx.corrupt)
    for (auto &v : c)
      v = v * 1.5f + 1.0f;

  Outcome o;
  o.work = gemm_flop(n, n, n);
  o.work_unit = "FLOP";
  o.rate_unit = "GFLOP/s";
  o.verification_error = verify<float>(n, af, bf, c);
  o.peak_assumption = "BF16 peak unknown: dlrig has no FLOP-per-cycle model for BF16 "
                      "instructions (AVX512-BF16, AMX), so no share and no floor";
  const auto isa = ctx.snapshot ? bf16_isa(ctx.snapshot->host.cpu.isa) : std::nullopt;
  o.details = {
      {"n", n},
      {"threads", threads},
      {"library", "OpenBLAS cblas_sbgemm"},
      {"library_config", openblas_config()},
      {"sbgemm_from", lib.where},
      {"bf16_isa", isa ? Json(*isa) : Json(nullptr)},
      {"library_note",
       isa || !ctx.snapshot
           ? Json(nullptr)
           : Json("this CPU has no BF16 instructions (avx512_bf16, amx_bf16): OpenBLAS runs "
                  "a generic sbgemm kernel, reported 5-15x slower than its SGEMM "
                  "(https://github.com/OpenMathLib/OpenBLAS/issues/3540); the rate says what "
                  "this library does here, not what BF16 hardware does")},
      {"inputs", "standard normal floats rounded to bf16 (nearest even); C in fp32"},
      {"verification", "64 sampled entries vs a long-double dot product of the bf16-rounded "
                       "inputs, tolerance 16*sqrt(n)*eps(fp32)*sum|a*b|"}};
  add_core_details(o.details, ctx, false); // its library_note is about BF16 instructions
  return o;
}

} // namespace

std::vector<Benchmark> cpu_gemm_benchmarks() {
  std::vector<Benchmark> v;
  v.push_back({"cpu.gemm.sgemm", "cpu.gemm", "FP32 matrix multiply (OpenBLAS sgemm), n x n",
               "CPU cores, OpenBLAS", needs_openblas, gemm_configs, run_gemm<float>});
  v.push_back({"cpu.gemm.dgemm", "cpu.gemm", "FP64 matrix multiply (OpenBLAS dgemm), n x n",
               "CPU cores, OpenBLAS", needs_openblas, gemm_configs, run_gemm<double>});
  v.push_back({"cpu.gemm.bf16", "cpu.gemm",
               "BF16 matrix multiply (OpenBLAS sbgemm, fp32 output), n x n",
               "CPU cores, an OpenBLAS that exports cblas_sbgemm",
               [](const Context &) -> std::optional<std::string> {
                 if (!sbgemm().fn)
                   return sbgemm().why;
                 return std::nullopt;
               },
               gemm_configs, run_sbgemm});
  return v;
}

} // namespace dlrig::bench
