// `dlrig info` PCI GPU tables: one row per display/3D controller, its links and the way to its
// root port, and the amdgpu readings. NVML's view belongs to nvidia.cpp.
#include "dlrig/core/pcie.hpp"
#include "dlrig/info/report.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dlrig {

namespace {

std::string show_gts(const OptF64 &gts) {
  if (!gts)
    return kUnknown;
  return *gts == static_cast<int>(*gts) ? fmt::format("{:.0f} GT/s", *gts)
                                        : fmt::format("{:.1f} GT/s", *gts);
}

std::string show_link(const OptF64 &gts, const std::optional<int> &width) {
  if (!gts && !width)
    return kUnknown;
  return show_gts(gts) + " x" + (width ? std::to_string(*width) : std::string("?"));
}

std::string show_current(const PcieLink &l) {
  return show_link(l.current_gts, l.current_width);
}
std::string show_max(const PcieLink &l) {
  return show_link(l.max_gts, l.max_width);
}

std::string flags(const Gpu &g) {
  std::vector<std::string> f;
  if (g.behind_thunderbolt.value_or(false))
    f.push_back("eGPU (Thunderbolt/USB4)");
  if (g.behind_switch.value_or(false))
    f.push_back("PCIe switch");
  if (!g.behind_thunderbolt && !g.behind_switch)
    return kUnknown;
  std::string out;
  for (const auto &s : f)
    out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "-" : out;
}

std::string link_gbps(double gts, int width) {
  return fmt::format("{:.1f} GB/s", pcie_link_gbps(gts, width));
}

std::string narrowest(const Gpu &g) {
  if (!g.narrowest_hop)
    return kUnknown;
  auto link = show_link(g.narrowest_gts, g.narrowest_width);
  if (g.narrowest_gts && g.narrowest_width)
    link += ", " + link_gbps(*g.narrowest_gts, *g.narrowest_width);
  return *g.narrowest_hop == g.bdf ? link + " (own link)" : link + " at " + *g.narrowest_hop;
}

std::string ids(const Gpu &g) {
  auto strip = [](const OptStr &id) {
    return id && id->size() > 2 ? id->substr(2) : std::string("?");
  };
  return strip(g.vendor_id) + ":" + strip(g.device_id);
}

// The way from the root port down to the GPU: "0000:00:07.0 thunderbolt 8 GT/s x4 > ...".
std::string path(const Gpu &g) {
  if (g.path.empty())
    return g.behind_switch || g.behind_thunderbolt ? "on the root bus" : kUnknown;
  std::string out;
  for (auto it = g.path.rbegin(); it != g.path.rend(); ++it)
    out +=
        (out.empty() ? "" : " > ") + it->bdf + " " + show(it->kind) + " " + show_current(it->link);
  return out;
}

} // namespace

Table info_pci_gpu_table(const Snapshot &s) {
  Table gpus{"GPUs (PCI)",
             {"bus id", "name", "vendor", "id", "driver", "NUMA", "link", "max link",
              "narrowest on the way", "attached"},
             {}};
  for (const auto &g : s.gpus)
    gpus.add({g.bdf, show(g.name), show(g.vendor), ids(g), g.driver ? *g.driver : "none",
              show_int(g.numa_node), show_current(g.link), show_max(g.link), narrowest(g),
              flags(g)});
  return gpus;
}

std::vector<Table> info_gpu_tables(const Snapshot &s) {
  std::vector<Table> out;
  Table gpus = info_pci_gpu_table(s);
  bool usable_vendor = std::any_of(s.gpus.begin(), s.gpus.end(), [](const Gpu &g) {
    return g.vendor == "NVIDIA" || g.vendor == "AMD";
  });
  if (s.gpus.empty()) {
    const auto *why = unread(s, "gpus");
    out.push_back(Table{"GPUs (PCI)",
                        {},
                        {{"GPU", why             ? "unknown: " + why->reason
                                 : gpus_known(s) ? "No GPU found on the PCI bus"
                                                 : "unknown: the snapshot holds no PCI reading"}}});
    return out;
  }
  out.push_back(std::move(gpus));
  if (!usable_vendor)
    out.push_back(
        Table{"",
              {},
              {{"note", "No NVIDIA or AMD GPU found on the PCI bus (only integrated graphics)"}}});
  // A discrete GPU is usable by CUDA or ROCm only through its vendor's driver.
  Table unusable{"", {}, {}};
  for (const auto &g : s.gpus) {
    const char *wanted = g.vendor == "NVIDIA" ? "nvidia" : g.vendor == "AMD" ? "amdgpu" : nullptr;
    if (wanted && g.driver != wanted)
      unusable.add({"note", fmt::format("{} {}: not usable by {} (driver: {}; needs {})", g.bdf,
                                        show(g.name), g.vendor == "NVIDIA" ? "CUDA" : "ROCm",
                                        g.driver.value_or("none"), wanted)});
  }
  if (!unusable.rows.empty())
    out.push_back(std::move(unusable));

  Table paths{"PCIe paths (root port first)", {"GPU", "path", "Thunderbolt", "switch"}, {}};
  for (const auto &g : s.gpus)
    if (!g.path.empty())
      paths.add({g.bdf, path(g), show(g.behind_thunderbolt), show(g.behind_switch)});
  if (!paths.rows.empty())
    out.push_back(std::move(paths));

  Table amd{"AMD GPUs (amdgpu sysfs)",
            {"bus id", "VRAM total", "VRAM used", "busy", "temperature", "power / cap",
             "shader clock (max)", "memory clock (max)"},
            {}};
  for (const auto &g : s.gpus) {
    if (!g.amd)
      continue;
    const auto &a = *g.amd;
    amd.add({g.bdf, show_bytes(a.vram_total_bytes), show_bytes(a.vram_used_bytes),
             show_num(a.busy_percent, "%", 0), show_num(a.temperature_c, "C", 0),
             show_num(a.power_w, "W", 0) + " / " + show_num(a.power_cap_w, "W", 0),
             show_hz(a.sclk_hz) + " (" + show_hz(a.sclk_max_hz) + ")",
             show_hz(a.mclk_hz) + " (" + show_hz(a.mclk_max_hz) + ")"});
  }
  if (!amd.rows.empty())
    out.push_back(std::move(amd));
  return out;
}

} // namespace dlrig
