// cpu.stream: STREAM's four kernels (https://www.cs.virginia.edu/stream/ref.html) with every
// hardware thread: a persistent team (the caller plus std::threads meeting at a barrier, as
// stream.c's OpenMP team does), a static contiguous partition on cache-line boundaries,
// first-touch initialisation by the member that uses each slice, arrays in transparent huge
// pages where the kernel grants them (madvise), loops written with the widest vectors the CPU has.
// Run rules followed: each array is at least 4 x the sum of the last-level caches (and at least
// 1 Mi elements); 10 timed passes after an untimed first; the best pass is STREAM's figure
// (rate.best), the median is reported beside it. Bytes by STREAM's convention (doubles, reads
// plus writes, no write-allocate traffic counted): Copy c=a and Scale b=s*c move 16 bytes per
// element, Add c=a+b and Triad a=b+s*c move 24. Every element of the output is checked against
// the same formula (relative tolerance 1e-13). The share of theoretical DRAM bandwidth comes from
// the SMBIOS memory-device records (dram.hpp: channels x MT/s x 8 B), else it stays unknown.
// Per NUMA node (machines with two or more): the node's CPUs only, each member pinned to one of
// them (sched_setaffinity), the arrays bound to the node's memory with mbind(MPOL_BIND) before
// they are touched (first touch by the pinned threads places the pages even where mbind is
// refused; the details say which happened).
#include "dlrig/bench/bench.hpp"
#include "dlrig/bench/dram.hpp"

#include <fmt/format.h>

#include <linux/mempolicy.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <barrier>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <sstream>
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

// A team of `threads` members that lives for one configuration, like stream.c's OpenMP team: the
// caller is member 0, the others are std::threads that wait at a barrier between jobs, so a timed
// pass costs a barrier and the loop, not thread creation (creating and joining a pool inside
// every timed pass cost up to a fifth of triad's rate here). Member t always gets the same slice,
// so the thread that first touched a page is the one that uses it. With `cpus` (a NUMA node's
// CPUs) member t is pinned to cpus[t]; the caller's own affinity is put back afterwards. Not
// thread-safe: one caller runs jobs.
class Team {
public:
  Team(int threads, const std::vector<int> *cpus) : threads_(threads), cpus_(cpus), sync_(threads) {
    if (cpus_) {
      CPU_ZERO(&caller_affinity_);
      saved_ = ::sched_getaffinity(0, sizeof caller_affinity_, &caller_affinity_) == 0;
      pin(0);
    }
    for (int t = 1; t < threads_; ++t)
      members_.emplace_back([this, t] {
        pin(t);
        for (;;) {
          sync_.arrive_and_wait(); // start
          if (stop_)
            return;
          job_(t);
          sync_.arrive_and_wait(); // end
        }
      });
  }
  Team(const Team &) = delete;
  Team &operator=(const Team &) = delete;
  ~Team() {
    stop_ = true;
    sync_.arrive_and_wait();
    for (auto &m : members_)
      m.join();
    if (cpus_ && saved_)
      ::sched_setaffinity(0, sizeof caller_affinity_, &caller_affinity_);
  }
  // Runs job(t) on every member t; returns the seconds from before the start barrier to after
  // the end barrier, as STREAM times its parallel loop.
  double run(const std::function<void(int)> &job) {
    job_ = job;
    auto t0 = std::chrono::steady_clock::now();
    sync_.arrive_and_wait();
    job_(0);
    sync_.arrive_and_wait();
    auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double>(t1 - t0).count();
  }

private:
  void pin(int t) const {
    if (!cpus_)
      return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((*cpus_)[static_cast<std::size_t>(t) % cpus_->size()], &set);
    ::sched_setaffinity(0, sizeof set, &set); // 0: this thread
  }
  int threads_;
  const std::vector<int> *cpus_;
  std::barrier<> sync_;
  std::function<void(int)> job_;
  bool stop_ = false; // written before a barrier, read after it
  cpu_set_t caller_affinity_{};
  bool saved_ = false;
  std::vector<std::thread> members_;
};

// Member t's slice [lo, hi): contiguous, boundaries on whole cache lines (8 doubles), so no two
// threads write one line and every vector load below is 16-byte aligned.
std::pair<std::size_t, std::size_t> slice(std::size_t n, int threads, int t) {
  const std::size_t lines = (n + 7) / 8;
  const std::size_t lo = std::min(n, lines * static_cast<std::size_t>(t) / threads * 8);
  const std::size_t hi =
      std::min(n, lines * static_cast<std::size_t>(t + 1) / static_cast<std::size_t>(threads) * 8);
  return {lo, hi};
}

// The kernels, written with explicit vectors (GCC/Clang vector extensions) of W bytes. Plain
// loops over three pointers are left scalar at -O2 (GCC's "very cheap" vectoriser will not add the
// alias checks and the remainder loop they need); the explicit form issues the loads and stores
// that stream.c gets from -O3. The binary stays portable: SSE2's 16 bytes everywhere on x86-64,
// and copies of the loops compiled for AVX2 (32 bytes) and AVX-512F (64 bytes) that run where the
// CPU has them (__builtin_cpu_supports), as stream.c built with -march=native uses the widest
// (16-byte loads measured 0.85 of stream.c's triad on a 16-vCPU Xeon with AVX-512, docs/bench.md).
template <std::size_t W> struct Vec;
template <> struct Vec<16> { typedef double type __attribute__((vector_size(16))); };
template <> struct Vec<32> { typedef double type __attribute__((vector_size(32))); };
template <> struct Vec<64> { typedef double type __attribute__((vector_size(64))); };

template <Kernel K, std::size_t W>
[[gnu::always_inline]] inline void kernel_lanes(double *__restrict a, double *__restrict b,
                                                double *__restrict c, std::size_t lo,
                                                std::size_t hi) {
  using V = typename Vec<W>::type;
  constexpr std::size_t lanes = W / sizeof(double);
  const V s = V{} + kScalar;
  std::size_t i = lo;
  for (; i + 8 <= hi; i += 8) // slices start on whole cache lines: every vector is W-aligned
    for (std::size_t j = i; j < i + 8; j += lanes) {
      if constexpr (K == copy)
        *reinterpret_cast<V *>(c + j) = *reinterpret_cast<const V *>(a + j);
      else if constexpr (K == scale)
        *reinterpret_cast<V *>(b + j) = s * *reinterpret_cast<const V *>(c + j);
      else if constexpr (K == add)
        *reinterpret_cast<V *>(c + j) =
            *reinterpret_cast<const V *>(a + j) + *reinterpret_cast<const V *>(b + j);
      else
        *reinterpret_cast<V *>(a + j) =
            *reinterpret_cast<const V *>(b + j) + s * *reinterpret_cast<const V *>(c + j);
    }
  for (; i < hi; ++i) {
    if constexpr (K == copy)
      c[i] = a[i];
    else if constexpr (K == scale)
      b[i] = kScalar * c[i];
    else if constexpr (K == add)
      c[i] = a[i] + b[i];
    else
      a[i] = b[i] + kScalar * c[i];
  }
}

#if defined(__x86_64__)
template <Kernel K>
[[gnu::target("avx2")]] void kernel_32(double *a, double *b, double *c, std::size_t lo,
                                       std::size_t hi) {
  kernel_lanes<K, 32>(a, b, c, lo, hi);
}
template <Kernel K>
[[gnu::target("avx512f")]] void kernel_64(double *a, double *b, double *c, std::size_t lo,
                                          std::size_t hi) {
  kernel_lanes<K, 64>(a, b, c, lo, hi);
}
#endif

// The widest vector this CPU runs, in bytes (16, 32 or 64), no wider than DLRIG_STREAM_VECTOR_BYTES
// where that is set (16, 32 or 64: the widths side by side on one machine).
std::size_t vector_bytes() {
  std::size_t cap = 64;
  if (const char *env = std::getenv("DLRIG_STREAM_VECTOR_BYTES"))
    cap = std::string(env) == "16" ? 16 : std::string(env) == "32" ? 32 : 64;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (cap >= 64 && __builtin_cpu_supports("avx512f"))
    return 64;
  if (cap >= 32 && __builtin_cpu_supports("avx2"))
    return 32;
#endif
  return 16;
}

std::string vector_name(std::size_t bytes) {
  return bytes == 64   ? "64 B (AVX-512F)"
         : bytes == 32 ? "32 B (AVX2)"
                       : "16 B (SSE2 on x86-64; the compiler's generic vectors elsewhere)";
}

template <Kernel K>
void kernel_slice(std::size_t width, double *a, double *b, double *c, std::size_t lo,
                  std::size_t hi) {
#if defined(__x86_64__)
  if (width == 64)
    return kernel_64<K>(a, b, c, lo, hi);
  if (width == 32)
    return kernel_32<K>(a, b, c, lo, hi);
#endif
  (void)width;
  kernel_lanes<K, 16>(a, b, c, lo, hi);
}

double run_kernel(Kernel k, std::size_t width, Team &team, int threads, std::size_t n, double *a,
                  double *b, double *c) {
  return team.run([=](int t) {
    auto [lo, hi] = slice(n, threads, t);
    switch (k) {
    case copy:
      return kernel_slice<copy>(width, a, b, c, lo, hi);
    case scale:
      return kernel_slice<scale>(width, a, b, c, lo, hi);
    case add:
      return kernel_slice<add>(width, a, b, c, lo, hi);
    case triad:
      return kernel_slice<triad>(width, a, b, c, lo, hi);
    }
  });
}

// "0-3,8-11" -> {0,1,2,3,8,9,10,11}; empty on anything else.
std::vector<int> parse_cpus(const std::string &list) {
  std::vector<int> out;
  std::size_t at = 0;
  while (at < list.size()) {
    auto end = list.find(',', at);
    auto item = list.substr(at, end == std::string::npos ? std::string::npos : end - at);
    auto dash = item.find('-');
    char *e1 = nullptr, *e2 = nullptr;
    long lo = std::strtol(item.c_str(), &e1, 10);
    long hi = dash == std::string::npos ? lo : std::strtol(item.c_str() + dash + 1, &e2, 10);
    if (item.empty() || lo < 0 || hi < lo || hi > 65535)
      return {};
    for (long c = lo; c <= hi; ++c)
      out.push_back(static_cast<int>(c));
    if (end == std::string::npos)
      break;
    at = end + 1;
  }
  return out;
}

// STREAM's three arrays in one anonymous mapping. Each starts on a 2 MiB boundary and is offered
// to transparent huge pages with madvise(MADV_HUGEPAGE) (the kernel's THP mode is often
// `madvise`, which gives plain mmap 4 KiB pages: a TLB miss every 512 doubles, and the hardware
// prefetchers stop at each 4 KiB boundary). Array k starts k x (its size rounded up to 2 MiB, plus
// 2 MiB) after the first, so the three streams are not at one offset modulo a large power of two,
// where they would share DRAM bank and cache-set bits (stream.c's static arrays of 2^24 doubles,
// OFFSET 0, sit exactly 128 MiB apart; that layout measured 10-15 % slower on the 2-vCPU EPYC VM,
// docs/bench.md). With node >= 0 the mapping is bound to it with mbind(MPOL_BIND) before any page
// is touched; `bound` says whether the kernel accepted the policy.
struct Arrays {
  static constexpr std::size_t kHuge = std::size_t(2) << 20;
  void *base = MAP_FAILED;
  std::size_t mapped = 0, stride = 0;
  double *first = nullptr; // array k: first + k * stride bytes
  bool huge_asked = false, huge_advised = false, bound = false;
  Arrays(std::size_t bytes_each, int node) {
    stride = (bytes_each + kHuge - 1) / kHuge * kHuge + kHuge;
    mapped = 3 * stride + kHuge;
    base = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
      throw std::bad_alloc();
    auto at = (reinterpret_cast<std::uintptr_t>(base) + kHuge - 1) / kHuge * kHuge;
    first = reinterpret_cast<double *>(at);
    // DLRIG_STREAM_HUGE_PAGES=0 leaves the advice out: 4 KiB pages where THP is `madvise`, as
    // stream.c's static arrays get (perf/bench_side_by_side.sh's like-for-like row).
    const char *env = std::getenv("DLRIG_STREAM_HUGE_PAGES");
    huge_asked = !(env && std::string(env) == "0");
    huge_advised = huge_asked && ::madvise(first, 3 * stride, MADV_HUGEPAGE) == 0;
    if (node >= 0 && node < 64) {
      unsigned long mask = 1ul << node;
      bound = ::syscall(SYS_mbind, first, 3 * stride, MPOL_BIND, &mask, 64, 0) == 0;
    }
  }
  Arrays(const Arrays &) = delete;
  Arrays &operator=(const Arrays &) = delete;
  ~Arrays() {
    if (base != MAP_FAILED)
      ::munmap(base, mapped);
  }
  double *array(int k) const {
    return reinterpret_cast<double *>(reinterpret_cast<char *>(first) +
                                      static_cast<std::size_t>(k) * stride);
  }
};

// Bytes of [p, p + bytes) the kernel backs with transparent huge pages: the AnonHugePages of
// the mappings of /proc/self/smaps that overlap the range (a mapping split by madvise is counted
// by the parts inside it). nullopt when smaps cannot be read.
std::optional<double> huge_bytes(const void *p, std::size_t bytes) {
  std::ifstream in("/proc/self/smaps");
  if (!in)
    return std::nullopt;
  const auto lo = reinterpret_cast<std::uintptr_t>(p), hi = lo + bytes;
  bool inside = false;
  double total = 0;
  std::string line;
  while (std::getline(in, line)) {
    unsigned long start = 0, end = 0;
    char dash = 0;
    std::istringstream head(line);
    if (line.find(':') > line.find(' ') && (head >> std::hex >> start >> dash >> end) &&
        dash == '-') {
      inside = start < hi && end > lo;
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0)
      total += std::atof(line.c_str() + 14) * 1024;
  }
  return total;
}

std::string thp_mode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string all;
  std::getline(in, all);
  auto l = all.find('['), r = all.find(']');
  return l != std::string::npos && r > l ? all.substr(l + 1, r - l - 1) : "unknown";
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
  const int node = cfg.params.size() > 2 ? static_cast<int>(cfg.params[2]) : -1;
  std::vector<int> node_cpus;
  if (node >= 0 && ctx.snapshot)
    for (const auto &nn : ctx.snapshot->host.cpu.numa_nodes)
      if (nn.id == node && nn.cpus)
        node_cpus = parse_cpus(*nn.cpus);
  if (node >= 0 && node_cpus.empty())
    throw std::runtime_error(fmt::format("NUMA node {}: its CPU list is unknown", node));
  const std::vector<int> *cpus = node >= 0 ? &node_cpus : nullptr;
  Arrays arrays(n * sizeof(double), node);
  const bool bound = arrays.bound;
  double *pa = arrays.array(0), *pb = arrays.array(1), *pc = arrays.array(2);
  Team team(threads, cpus);
  team.run([=](int t) { // first touch by the member that will use the slice
    auto [lo, hi] = slice(n, threads, t);
    for (std::size_t i = lo; i < hi; ++i) {
      pa[i] = input(i, 0);
      pb[i] = input(i, 1);
      pc[i] = input(i, 2);
    }
  });
  const auto huge = huge_bytes(arrays.first, 3 * arrays.stride);
  const std::size_t width = vector_bytes();
  run_kernel(k, width, team, threads, n, pa, pb, pc); // the untimed first pass
  for (int pass = 0; pass < 10; ++pass) // STREAM: NTIMES = 10, the first one not counted
    s.add(run_kernel(k, width, team, threads, n, pa, pb, pc));
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
  // The machine's peak for the all-thread run; a node's run gets its own socket's channels where
  // the SMBIOS locators name the sockets and nodes = sockets (dram.hpp), else null with why.
  const auto dimms = read_dimms();
  DramPeak peak = dram_peak(dimms);
  if (node >= 0 && ctx.snapshot) {
    const auto &cpu = ctx.snapshot->host.cpu;
    int rank = 0;
    for (const auto &nn : cpu.numa_nodes)
      rank += nn.id < node ? 1 : 0;
    peak = node_dram_peak(dimms, rank, static_cast<int>(cpu.numa_nodes.size()), cpu.sockets);
  }
  if (peak.bytes_per_s) {
    o.peak = *peak.bytes_per_s / 1e9;
    o.expectation = stream_expectation(*o.peak);
  }
  o.peak_assumption = peak.assumption;
  o.details = {
      {"elements", n},
      {"array_bytes", n * sizeof(double)},
      {"threads", threads},
      {"bytes_convention", "STREAM: reads + writes, no write-allocate"},
      {"stream_figure", "rate.best (best of 10 after the first)"},
      {"numa_node", node >= 0 ? Json(node) : Json(nullptr)},
      {"binding", node < 0 ? "none: every hardware thread, placed by the scheduler; "
                             "pages first-touched by the thread that uses them"
                  : bound  ? fmt::format("threads pinned to node {}'s CPUs "
                                          "(sched_setaffinity), arrays bound to its memory "
                                          "(mbind MPOL_BIND)",
                                         node)
                           : fmt::format("threads pinned to node {}'s CPUs "
                                          "(sched_setaffinity); mbind refused, pages "
                                          "placed by first touch from those threads",
                                         node)},
      {"team", "a persistent team (the caller and threads - 1 std::threads) meeting at a "
               "barrier; each pass timed from before the start barrier to after the "
               "end barrier, as STREAM times its OpenMP loop"},
      {"huge_pages",
       fmt::format("madvise(MADV_HUGEPAGE) {}; system THP mode {}; {} of the {:.0f} MiB "
                   "of arrays in huge pages after first touch",
                   !arrays.huge_asked    ? "not asked (DLRIG_STREAM_HUGE_PAGES=0)"
                   : arrays.huge_advised ? "accepted"
                                         : "refused",
                   thp_mode(), huge ? fmt::format("{:.0f} MiB", *huge / 1048576) : "unknown",
                   3.0 * static_cast<double>(n * sizeof(double)) / 1048576)},
      {"array_stride_bytes", arrays.stride},
      {"vector_bytes", width},
      {"vector", vector_name(width)},
      {"dram_channels", peak.channels ? Json(peak.channels) : Json(nullptr)},
      {"dram_mts", peak.mts ? Json(*peak.mts) : Json(nullptr)}};
  return o;
}

std::vector<Config> stream_configs(const Context &ctx) {
  auto n = static_cast<double>(elements(ctx));
  int all = std::max(1, ctx.hardware_threads);
  std::vector<Config> out{
      {fmt::format("{:.0f} MiB/array threads={}", n * 8 / 1048576, all), {n, double(all)}}};
  // Per NUMA node where there are several (on one node it is the run above).
  if (ctx.snapshot && ctx.snapshot->host.cpu.numa_nodes.size() > 1)
    for (const auto &node : ctx.snapshot->host.cpu.numa_nodes) {
      auto cpus = node.cpus ? parse_cpus(*node.cpus) : std::vector<int>{};
      if (cpus.empty())
        continue;
      out.push_back({fmt::format("{:.0f} MiB/array node={} threads={}", n * 8 / 1048576, node.id,
                                 cpus.size()),
                     {n, static_cast<double>(cpus.size()), static_cast<double>(node.id)}});
    }
  return out;
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

std::optional<Expectation> stream_expectation(double dram_peak_gbs) {
  if (!(dram_peak_gbs > 0))
    return std::nullopt;
  return Expectation{
      0.5 * dram_peak_gbs, true,
      fmt::format("STREAM's best pass should reach half the DRAM peak ({:.1f} GB/s); "
                  "below it, look for an empty channel, memory running below its "
                  "rated speed, or other work on the machine",
                  dram_peak_gbs),
      "TI SPRAD45A Table 3-3 (triad 78 % of the DDR wire rate): "
      "https://www.ti.com/lit/an/sprad45a/sprad45a.pdf; benchmarking.md §5 rule "
      "6 (flag under ~70 % of the expected figure)"};
}

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
