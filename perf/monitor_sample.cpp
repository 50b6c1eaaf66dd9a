// CPU cost of one sample per GPU: the monitor's Sampler (every NVML reading of platform/nvml.hpp
// sample(), the Xid events, the process list with /proc look-ups, the host's /proc reads) on the
// fake NVML, measured with the process's CPU clock. perf/monitor.sh prints the table.
//
// Usage: dlrig_perf_monitor SAMPLES SYSROOT   (DLRIG_NVML_LIBRARY and DLRIG_FAKE_NVML_SCENARIO
// name the fake and its scenario). Prints "gpus samples cpu_ms_per_sample cpu_ms_per_gpu".
#include "dlrig/monitor/sampler.hpp"

#include <ctime>
#include <fmt/format.h>

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
  double start = cpu_seconds();
  for (int i = 0; i < n; ++i)
    sampler.take();
  double per_sample = (cpu_seconds() - start) / n * 1e3;
  fmt::print("{} {} {:.4f} {:.4f}\n", gpus, n, per_sample,
             gpus ? per_sample / static_cast<double>(gpus) : 0.0);
  return 0;
}
