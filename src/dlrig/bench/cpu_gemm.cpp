// cpu.gemm: SGEMM and DGEMM through OpenBLAS, square sizes per tier, all cores and one core.
// Work: 2·n³ FLOP per call (gemm_flop). Inputs are standard normal; 64 sampled entries of C are
// checked against a dot product in long double with the tolerance |c - ref| <= 16·sqrt(k)·eps·
// sum|a_ik·b_kj| (a probabilistic rounding-error bound, Higham, "Accuracy and Stability of
// Numerical Algorithms", §3.1 and Higham & Mary 2019). BF16 needs OpenBLAS's cblas_sbgemm,
// looked up at run time: Debian's OpenBLAS 0.3.21 does not export it.
#include "dlrig/bench/bench.hpp"

#include <cblas.h>
#include <dlfcn.h>

#include <fmt/format.h>

#include <chrono>
#include <cmath>
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
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
  else
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, b, n, 0.0, c, n);
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

std::string blas_config() {
  const char *c = openblas_get_config();
  return c ? c : "";
}

template <class T> Outcome run_gemm(const Config &cfg, const Context &ctx, Sampler &s) {
  const int n = static_cast<int>(cfg.params.at(0));
  const int threads = static_cast<int>(cfg.params.at(1));
  openblas_set_num_threads(threads);
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

  const bool dp = std::is_same_v<T, double>;
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
               {"library_config", blas_config()},
               {"library_note", Json(nullptr)},
               {"verification", "64 sampled entries vs long-double dot product, tolerance "
                                "16*sqrt(n)*eps*sum|a*b|"}};
  if (ctx.snapshot)
    if (auto note = openblas_core_note(blas_config(), ctx.snapshot->host.cpu.isa))
      o.details["library_note"] = *note;
  return o;
}

} // namespace

std::vector<Benchmark> cpu_gemm_benchmarks() {
  std::vector<Benchmark> v;
  v.push_back({"cpu.gemm.sgemm", "cpu.gemm", "FP32 matrix multiply (OpenBLAS sgemm), n x n",
               "CPU cores", nullptr, gemm_configs, run_gemm<float>});
  v.push_back({"cpu.gemm.dgemm", "cpu.gemm", "FP64 matrix multiply (OpenBLAS dgemm), n x n",
               "CPU cores", nullptr, gemm_configs, run_gemm<double>});
  v.push_back({"cpu.gemm.bf16", "cpu.gemm", "BF16 matrix multiply (OpenBLAS sbgemm), n x n",
               "CPU cores, an OpenBLAS that exports cblas_sbgemm",
               [](const Context &) -> std::optional<std::string> {
                 if (!dlsym(RTLD_DEFAULT, "cblas_sbgemm"))
                   return "this OpenBLAS (" + blas_config() + ") does not export cblas_sbgemm";
                 return "cblas_sbgemm is present but dlrig does not run it yet";
               },
               gemm_configs, nullptr});
  return v;
}

} // namespace dlrig::bench
