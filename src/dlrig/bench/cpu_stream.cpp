// cpu.stream: STREAM's four kernels (https://www.cs.virginia.edu/stream/ref.html) with every
// hardware thread (std::thread, static contiguous partition, first-touch initialisation).
// Run rules followed: each array is at least 4 x the sum of the last-level caches (and at least
// 1 Mi elements); 10 timed passes after an untimed first; the best pass is STREAM's figure
// (rate.best), the median is reported beside it. Bytes by STREAM's convention (doubles, reads
// plus writes, no write-allocate traffic counted): Copy c=a and Scale b=s*c move 16 bytes per
// element, Add c=a+b and Triad a=b+s*c move 24. Every element of the output is checked against
// the same formula (relative tolerance 1e-13). The share of theoretical DRAM bandwidth needs
// the memory's channels and speed, which the probe does not read yet: it stays unknown.
#include "dlrig/bench/bench.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <memory>
#include <set>
#include <thread>

namespace dlrig::bench {
namespace {

enum Kernel { copy, scale, add, triad };
constexpr double kScalar = 3.0;

// Sum of the distinct last-level caches (by shared_cpu_list) over the CPUs sysfs lists.
std::optional<double> llc_bytes() {
  int top = 0;
  double total = 0;
  std::set<std::string> seen;
  for (int cpu = 0; cpu < 4096; ++cpu) {
    std::string base = fmt::format("/sys/devices/system/cpu/cpu{}/cache", cpu);
    std::ifstream probe(base + "/index0/level");
    if (!probe)
      break;
    for (int i = 0; i < 8; ++i) {
      std::ifstream lv(fmt::format("{}/index{}/level", base, i));
      std::ifstream sz(fmt::format("{}/index{}/size", base, i));
      std::ifstream sh(fmt::format("{}/index{}/shared_cpu_list", base, i));
      int level = 0;
      std::string size, shared;
      if (!(lv >> level) || !(sz >> size) || !(sh >> shared))
        continue;
      double bytes = std::atof(size.c_str());
      if (!size.empty() && size.back() == 'K')
        bytes *= 1024;
      else if (!size.empty() && size.back() == 'M')
        bytes *= 1024 * 1024;
      if (level > top) {
        top = level;
        total = 0;
        seen.clear();
      }
      if (level == top && seen.insert(shared).second)
        total += bytes;
    }
  }
  if (total <= 0)
    return std::nullopt;
  return total;
}

std::size_t elements(const Context &ctx) {
  if (ctx.small)
    return std::size_t(1) << 20;
  double llc = llc_bytes().value_or(64.0 * 1024 * 1024); // unknown: assume a 64 MiB LLC
  double n = 4 * llc / sizeof(double);
  if (ctx.tier == Tier::sustained)
    n *= 4;
  return std::max<std::size_t>(std::size_t(1) << 20, static_cast<std::size_t>(n));
}

double kernel_bytes(Kernel k, std::size_t n) {
  return (k == copy || k == scale ? 2.0 : 3.0) * sizeof(double) * static_cast<double>(n);
}

template <class F> void parallel(int threads, std::size_t n, F f) {
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    std::size_t lo = n * t / threads, hi = n * (t + 1) / threads;
    pool.emplace_back([=] { f(lo, hi); });
  }
  for (auto &th : pool)
    th.join();
}

void run_kernel(Kernel k, int threads, std::size_t n, double *a, double *b, double *c) {
  parallel(threads, n, [=](std::size_t lo, std::size_t hi) {
    switch (k) {
    case copy:
      for (std::size_t i = lo; i < hi; ++i)
        c[i] = a[i];
      break;
    case scale:
      for (std::size_t i = lo; i < hi; ++i)
        b[i] = kScalar * c[i];
      break;
    case add:
      for (std::size_t i = lo; i < hi; ++i)
        c[i] = a[i] + b[i];
      break;
    case triad:
      for (std::size_t i = lo; i < hi; ++i)
        a[i] = b[i] + kScalar * c[i];
      break;
    }
  });
}

// Deterministic non-zero inputs, different per array and element.
double input(std::size_t i, int array) {
  std::uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(array) * 7919;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return 1.0 + static_cast<double>(x % 1000000) / 1e6; // [1, 2)
}

Outcome run_stream(Kernel k, const Config &cfg, const Context &ctx, Sampler &s) {
  const auto n = static_cast<std::size_t>(cfg.params.at(0));
  const int threads = static_cast<int>(cfg.params.at(1));
  std::unique_ptr<double[]> a(new double[n]), b(new double[n]), c(new double[n]);
  double *pa = a.get(), *pb = b.get(), *pc = c.get();
  parallel(threads, n, [=](std::size_t lo, std::size_t hi) { // first touch by the owning thread
    for (std::size_t i = lo; i < hi; ++i) {
      pa[i] = input(i, 0);
      pb[i] = input(i, 1);
      pc[i] = input(i, 2);
    }
  });
  run_kernel(k, threads, n, pa, pb, pc);  // the untimed first pass
  for (int pass = 0; pass < 10; ++pass) { // STREAM: NTIMES = 10, the first one not counted
    auto t0 = std::chrono::steady_clock::now();
    run_kernel(k, threads, n, pa, pb, pc);
    auto t1 = std::chrono::steady_clock::now();
    s.add(std::chrono::duration<double>(t1 - t0).count());
  }
  if (ctx.corrupt)
    (k == copy || k == add ? pc : k == scale ? pb : pa)[n / 2] += 1;

  Outcome o;
  o.work = kernel_bytes(k, n);
  o.work_unit = "B";
  o.rate_unit = "GB/s";
  // Every kernel is idempotent for its inputs, which it never writes: check each element.
  for (std::size_t i = 0; i < n && !o.verification_error; ++i) {
    double want = 0, got = 0;
    double x = input(i, 0), y = input(i, 1), z = input(i, 2);
    switch (k) {
    case copy:
      want = x, got = pc[i];
      break;
    case scale:
      want = kScalar * z, got = pb[i];
      break;
    case add:
      want = x + y, got = pc[i];
      break;
    case triad:
      want = y + kScalar * z, got = pa[i];
      break;
    }
    if (!(std::fabs(got - want) <= 1e-13 * std::fabs(want)))
      o.verification_error = fmt::format("element {} is {} but should be {}", i, got, want);
  }
  o.peak_assumption = "DRAM peak unknown: memory channels and speed are not probed";
  o.details = {{"elements", n},
               {"array_bytes", n * sizeof(double)},
               {"threads", threads},
               {"bytes_convention", "STREAM: reads + writes, no write-allocate"},
               {"stream_figure", "rate.best (best of 10 after the first)"}};
  return o;
}

std::vector<Config> stream_configs(const Context &ctx) {
  auto n = static_cast<double>(elements(ctx));
  int all = std::max(1, ctx.hardware_threads);
  return {{fmt::format("{:.0f} MiB/array threads={}", n * 8 / 1048576, all), {n, double(all)}}};
}

Benchmark stream(Kernel k, const char *name, const char *what) {
  return {
      std::string("cpu.stream.") + name,
      "cpu.stream",
      what,
      "memory: 3 arrays of 4 x LLC",
      nullptr,
      stream_configs,
      [k](const Config &c, const Context &ctx, Sampler &s) { return run_stream(k, c, ctx, s); }};
}

} // namespace

double stream_bytes(const std::string &kernel, double n) {
  Kernel k = kernel == "copy" ? copy : kernel == "scale" ? scale : kernel == "add" ? add : triad;
  return kernel_bytes(k, static_cast<std::size_t>(n));
}

std::vector<Benchmark> cpu_stream_benchmarks() {
  return {stream(copy, "copy", "STREAM Copy c = a (16 B per element)"),
          stream(scale, "scale", "STREAM Scale b = s*c (16 B per element)"),
          stream(add, "add", "STREAM Add c = a + b (24 B per element)"),
          stream(triad, "triad", "STREAM Triad a = b + s*c (24 B per element)")};
}

} // namespace dlrig::bench
