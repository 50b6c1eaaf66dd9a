// AMD GPUs through the amdgpu driver's sysfs files, no ROCm needed (reference/monitoring.md §3.5).
// The attributes live in the PCI device directory, which /sys/class/drm/cardN/device links to.
#include "dlrig/probe/parse.hpp"
#include "dlrig/probe/probe.hpp"
#include "dlrig/probe/read.hpp"

#include <fmt/format.h>

namespace dlrig {

namespace {

struct AmdReader {
  const ProbeContext &ctx;
  std::string field;

  template <class Parse> auto value(const std::string &path, const std::string &name, Parse parse) {
    return probe::read_parsed(ctx, path, field + "." + name, parse,
                              probe::IfMissing::note("not provided by this amdgpu driver/GPU"));
  }
};

// The hwmon directory of the device (hwmon/hwmonN); nullopt when the driver exposes none.
std::optional<std::string> hwmon_dir(const FileSystem &fs, const std::string &dev) {
  for (const auto &name : fs.list(dev + "/hwmon"))
    if (name.rfind("hwmon", 0) == 0)
      return dev + "/hwmon/" + name;
  return std::nullopt;
}

// Temperature sensor to report: "edge" when the GPU has one, else "junction" (MI200/MI300 have
// no edge sensor), else temp1. hwmon temperatures are in millidegrees Celsius.
std::optional<std::string> temperature_input(const FileSystem &fs, const std::string &hwmon) {
  std::optional<std::string> junction;
  for (int i = 1; i <= 8; ++i) {
    auto label = read_trimmed(fs, fmt::format("{}/temp{}_label", hwmon, i));
    if (label == "edge")
      return fmt::format("{}/temp{}_input", hwmon, i);
    if (label == "junction" && !junction)
      junction = fmt::format("{}/temp{}_input", hwmon, i);
  }
  if (junction)
    return junction;
  return hwmon + "/temp1_input";
}

} // namespace

void probe_amd(const ProbeContext &ctx) {
  for (std::size_t i = 0; i < ctx.snapshot.gpus.size(); ++i) {
    auto &gpu = ctx.snapshot.gpus[i];
    if (gpu.driver != "amdgpu")
      continue;
    const std::string dev = "/sys/bus/pci/devices/" + gpu.bdf;
    AmdReader r{ctx, fmt::format("gpus[{}].amd", i)};
    AmdGpu amd;
    amd.vram_total_bytes =
        r.value(dev + "/mem_info_vram_total", "vram_total_bytes", probe::parse_u64);
    amd.vram_used_bytes = r.value(dev + "/mem_info_vram_used", "vram_used_bytes", probe::parse_u64);
    if (auto busy = r.value(dev + "/gpu_busy_percent", "busy_percent", probe::parse_u64)) {
      if (*busy <= 100)
        amd.busy_percent = static_cast<double>(*busy);
      else
        ctx.note(r.field + ".busy_percent", dev + "/gpu_busy_percent",
                 "above 100 %: " + std::to_string(*busy));
    }
    if (auto sclk = r.value(dev + "/pp_dpm_sclk", "sclk_hz", probe::parse_dpm)) {
      amd.sclk_hz = sclk->current_hz;
      amd.sclk_max_hz = sclk->max_hz();
    }
    if (auto mclk = r.value(dev + "/pp_dpm_mclk", "mclk_hz", probe::parse_dpm)) {
      amd.mclk_hz = mclk->current_hz;
      amd.mclk_max_hz = mclk->max_hz();
    }
    if (auto hwmon = hwmon_dir(ctx.fs, dev)) {
      auto temp_path = *temperature_input(ctx.fs, *hwmon);
      if (auto milli = r.value(temp_path, "temperature_c", probe::parse_i64))
        amd.temperature_c = static_cast<double>(*milli) / 1000.0;
      // power1_average on most GPUs, power1_input on newer ones; both in microwatts.
      auto power_path = ctx.fs.exists(*hwmon + "/power1_average") ? *hwmon + "/power1_average"
                                                                  : *hwmon + "/power1_input";
      if (auto uw = r.value(power_path, "power_w", probe::parse_u64))
        amd.power_w = static_cast<double>(*uw) / 1e6;
      if (auto uw = r.value(*hwmon + "/power1_cap", "power_cap_w", probe::parse_u64))
        amd.power_cap_w = static_cast<double>(*uw) / 1e6;
    } else {
      ctx.note(r.field, dev + "/hwmon", "no hwmon directory: temperature and power unknown");
    }
    gpu.amd = amd;
  }
}

} // namespace dlrig
