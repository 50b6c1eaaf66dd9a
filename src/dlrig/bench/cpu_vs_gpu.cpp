#include "dlrig/bench/cpu_vs_gpu.hpp"

#include <fmt/format.h>

#include <cmath>

namespace dlrig::bench {
namespace {

std::optional<double> seconds_at(double flops, const std::optional<StepRate> &r) {
  if (!r || !(r->flops_per_s > 0) || !(flops > 0))
    return std::nullopt;
  return flops / r->flops_per_s;
}

std::string two_figures(double v) {
  if (v >= 10)
    return fmt::format("{:.0f}", v);
  if (v >= 1)
    return fmt::format("{:.1f}", v);
  return fmt::format("{:.2g}", v);
}

} // namespace

CpuVsGpu compare_step(double flops_per_step, const std::optional<StepRate> &cpu,
                      const std::optional<StepRate> &gpu, const std::string &gpu_name) {
  CpuVsGpu c;
  c.flops_per_step = flops_per_step;
  c.gpu_name = gpu_name;
  c.cpu_s = seconds_at(flops_per_step, cpu);
  c.gpu_s = seconds_at(flops_per_step, gpu);
  if (cpu)
    c.cpu_source = cpu->source;
  if (gpu)
    c.gpu_source = gpu->source;
  if (c.cpu_s && c.gpu_s)
    c.speedup = *c.cpu_s / *c.gpu_s;
  return c;
}

std::string human_seconds(double s) {
  if (s < 60)
    return two_figures(s) + " s";
  if (s < 3600)
    return two_figures(s / 60) + " min";
  if (s < 86400)
    return two_figures(s / 3600) + " h";
  return two_figures(s / 86400) + " days";
}

std::string cpu_vs_gpu_line(const CpuVsGpu &c) {
  auto side = [](const std::optional<double> &s) { return s ? human_seconds(*s) : "n/a"; };
  std::string line =
      fmt::format("one step: CPU {}, {} {}", side(c.cpu_s), c.gpu_name, side(c.gpu_s));
  if (c.speedup)
    line += fmt::format(" (×{})", two_figures(*c.speedup));
  return line;
}

} // namespace dlrig::bench
