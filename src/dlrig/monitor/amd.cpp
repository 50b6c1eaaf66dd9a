#include "dlrig/monitor/amd.hpp"

#include "dlrig/core/text.hpp"
#include "dlrig/probe/parse.hpp"

#include <cmath>
#include <type_traits>

namespace dlrig::monitor {

namespace {

// A sysfs attribute parsed by one of the probe's pure parsers; nullopt when missing or bad.
template <class Parse>
auto attribute(const FileSystem &fs, const std::string &path, Parse parse)
    -> std::optional<std::decay_t<decltype(*parse(std::string_view()))>> {
  auto text = fs.read(path, 4096);
  if (!text)
    return std::nullopt;
  auto v = parse(*text);
  if (!v)
    return std::nullopt;
  return *v;
}

// The temperature sensor to show: "edge" when labelled, else "junction", else temp1.
std::string temperature_file(const FileSystem &fs, const std::string &hwmon) {
  std::string chosen = hwmon + "/temp1_input";
  bool junction = false;
  for (int sensor = 1; sensor <= 3; ++sensor) {
    auto label = read_trimmed(fs, hwmon + "/temp" + std::to_string(sensor) + "_label");
    std::string input = hwmon + "/temp" + std::to_string(sensor) + "_input";
    if (label == "edge")
      return input;
    if (label == "junction" && !junction) {
      chosen = input;
      junction = true;
    }
  }
  return chosen;
}

} // namespace

std::optional<double> pcie_generation(double gts) {
  const double rates[] = {2.5, 5, 8, 16, 32, 64};
  for (int i = 0; i < 6; ++i)
    if (std::fabs(gts - rates[i]) < 0.01)
      return i + 1;
  return std::nullopt;
}

std::vector<AmdDevice> find_amd_gpus(const FileSystem &fs) {
  std::vector<AmdDevice> out;
  const std::string root = "/sys/bus/pci/devices";
  for (const auto &bdf : fs.list(root)) {
    const std::string dir = root + "/" + bdf;
    auto driver = fs.readlink(dir + "/driver");
    if (!driver || basename(*driver) != "amdgpu")
      continue;
    std::string ids;
    if (auto vendor = attribute(fs, dir + "/vendor", probe::parse_hex_id))
      if (auto device = attribute(fs, dir + "/device", probe::parse_hex_id))
        ids = " " + vendor->substr(2) + ":" + device->substr(2);
    out.push_back({dir, bdf, "AMD GPU" + ids});
  }
  return out;
}

void sample_amd(const FileSystem &fs, const AmdDevice &d, GpuSample &out) {
  out.uuid = d.bus_id; // amdgpu has no UUID every GPU gives: the bus id names it
  out.name = d.name;
  out.bus_id = d.bus_id;
  auto percent = [](std::optional<std::uint64_t> v) -> std::optional<double> {
    if (!v || *v > 100)
      return std::nullopt;
    return static_cast<double>(*v) / 100.0;
  };
  out.utilization_ratio = percent(attribute(fs, d.dir + "/gpu_busy_percent", probe::parse_u64));
  out.memory_utilization_ratio =
      percent(attribute(fs, d.dir + "/mem_busy_percent", probe::parse_u64));
  auto total = attribute(fs, d.dir + "/mem_info_vram_total", probe::parse_u64);
  auto used = attribute(fs, d.dir + "/mem_info_vram_used", probe::parse_u64);
  if (total)
    out.memory_total_bytes = static_cast<double>(*total);
  if (used)
    out.memory_used_bytes = static_cast<double>(*used);
  if (total && used && *total >= *used)
    out.memory_free_bytes = static_cast<double>(*total - *used);
  if (auto sclk = attribute(fs, d.dir + "/pp_dpm_sclk", probe::parse_dpm)) {
    out.sm_clock_hertz = sclk->current_hz;
    out.sm_clock_max_hertz = sclk->max_hz();
  }
  if (auto mclk = attribute(fs, d.dir + "/pp_dpm_mclk", probe::parse_dpm))
    out.memory_clock_hertz = mclk->current_hz;
  if (auto gts = attribute(fs, d.dir + "/current_link_speed", probe::parse_link_speed))
    out.pcie_link_generation = pcie_generation(*gts);
  if (auto gts = attribute(fs, d.dir + "/max_link_speed", probe::parse_link_speed))
    out.pcie_link_generation_max = pcie_generation(*gts);
  if (auto w = attribute(fs, d.dir + "/current_link_width", probe::parse_link_width))
    out.pcie_link_width = *w;
  if (auto w = attribute(fs, d.dir + "/max_link_width", probe::parse_link_width))
    out.pcie_link_width_max = *w;
  if (auto replays = attribute(fs, d.dir + "/pcie_replay_count", probe::parse_u64))
    out.pcie_replays = static_cast<double>(*replays);

  std::string hwmon;
  for (const auto &name : fs.list(d.dir + "/hwmon"))
    if (name.rfind("hwmon", 0) == 0) {
      hwmon = d.dir + "/hwmon/" + name;
      break;
    }
  if (hwmon.empty())
    return;
  // hwmon units: millidegrees Celsius, microwatts, PWM 0-255.
  if (auto milli = attribute(fs, temperature_file(fs, hwmon), probe::parse_i64))
    out.temperature_celsius = static_cast<double>(*milli) / 1000.0;
  for (int sensor = 1; sensor <= 3; ++sensor)
    if (read_trimmed(fs, hwmon + "/temp" + std::to_string(sensor) + "_label") == "mem")
      if (auto milli =
              attribute(fs, hwmon + "/temp" + std::to_string(sensor) + "_input", probe::parse_i64))
        out.memory_temperature_celsius = static_cast<double>(*milli) / 1000.0;
  std::string power =
      fs.exists(hwmon + "/power1_average") ? hwmon + "/power1_average" : hwmon + "/power1_input";
  if (auto uw = attribute(fs, power, probe::parse_u64))
    out.power_watts = static_cast<double>(*uw) / 1e6;
  if (auto uw = attribute(fs, hwmon + "/power1_cap", probe::parse_u64))
    out.power_limit_watts = static_cast<double>(*uw) / 1e6;
  if (auto pwm = attribute(fs, hwmon + "/pwm1", probe::parse_u64); pwm && *pwm <= 255)
    out.fan_ratio = static_cast<double>(*pwm) / 255.0;
}

} // namespace dlrig::monitor
