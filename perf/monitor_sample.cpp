// Cost of one sample: the monitor's Sampler (every NVML reading of platform/nvml.hpp sample(), the
// Xid events, the process list with /proc look-ups, the host's /proc reads) on the fake NVML.
// NVML is read in the sampler's child process, so two figures: the wall time of a take() (both
// processes' work and the round trip, samples back to back) and this process's CPU clock (the
// host's readings, the answer's decoding). perf/monitor.sh prints the table.
//
// Usage: dlrig_perf_monitor SAMPLES SYSROOT   (DLRIG_NVML_LIBRARY and DLRIG_FAKE_NVML_SCENARIO
// name the fake and its scenario). Prints "gpus samples wall_ms_per_sample cpu_ms_per_sample".
#include "dlrig/monitor/sampler.hpp"

#include <ctime>
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <string>

namespace {
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
} // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    fmt::print(stderr, "usage: dlrig_perf_monitor SAMPLES SYSROOT\n");
    return 64;
  }
  const int n = std::atoi(argv[1]);
  dlrig::Sysroot fs(argv[2]);
  dlrig::monitor::SamplerOptions o;
  o.nvml_library = dlrig::monitor::default_nvml_library();
  dlrig::monitor::Sampler sampler(fs, o);
  if (!sampler.nvml_ok()) {
    fmt::print(stderr, "NVML: {}\n", sampler.nvml_error());
    return 2;
  }
  std::size_t gpus = sampler.take().gpus.size(); // warm-up
  const auto wall_start = std::chrono::steady_clock::now();
  const double start = cpu_seconds();
  for (int i = 0; i < n; ++i)
    sampler.take();
  const double cpu = (cpu_seconds() - start) / n * 1e3;
  const double wall =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall_start)
          .count() /
      n;
  fmt::print("{} {} {:.4f} {:.4f}\n", gpus, n, wall, cpu);
  return 0;
}
