// PCI GPUs without any driver: every display/3D controller under /sys/bus/pci/devices, its ids,
// driver, NUMA node, link, and the bridges between it and its root port.
#include "dlrig/core/text.hpp"
#include "dlrig/kb/kb.hpp"
#include "dlrig/probe/parse.hpp"
#include "dlrig/probe/pci_ids.hpp"
#include "dlrig/probe/probe.hpp"
#include "dlrig/probe/read.hpp"
#include "dlrig/probe/thunderbolt_ids.hpp"

#include <fmt/format.h>

namespace dlrig {

namespace {

using probe::parse_hex_id;
using probe::parse_hex_u32;

constexpr const char *kPciDevices = "/sys/bus/pci/devices/";

// PCI class codes (PCI Code and ID Assignment Specification): base class 0x03 display controller,
// sub-classes 0x00 VGA, 0x02 3D, 0x80 other display controller.
bool is_gpu_class(std::uint32_t cls) {
  auto sub = cls >> 8;
  return sub == 0x0300 || sub == 0x0302 || sub == 0x0380;
}
bool is_bridge_class(std::uint32_t cls) {
  return (cls >> 8) == 0x0604;
}

OptStr vendor_name(std::uint32_t vendor) {
  switch (vendor) {
  case 0x10de:
    return "NVIDIA";
  case 0x1002:
    return "AMD";
  case 0x8086:
    return "Intel";
  default:
    return "other";
  }
}

// "0000:01:00.0" (the domain may have more than 4 digits, e.g. Intel VMD's 10000:).
bool looks_like_bdf(std::string_view s) {
  auto c1 = s.find(':');
  if (c1 == std::string_view::npos || c1 == 0 || s.size() != c1 + 8)
    return false;
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
  for (std::size_t i = 0; i < c1; ++i)
    if (!hex(s[i]))
      return false;
  return hex(s[c1 + 1]) && hex(s[c1 + 2]) && s[c1 + 3] == ':' && hex(s[c1 + 4]) && hex(s[c1 + 5]) &&
         s[c1 + 6] == '.' && s[c1 + 7] >= '0' && s[c1 + 7] <= '7';
}

struct Reader {
  const ProbeContext &ctx;

  // A value read with a parser. An attribute the device lacks is an answer (no PCIe link of its
  // own, no NUMA affinity file): silent; one that is there but unreadable or garbage is noted.
  template <class Parse> auto read(const std::string &path, const std::string &field, Parse parse) {
    return probe::read_parsed(ctx, path, field, parse, probe::IfMissing::skip(), 4096);
  }

  // The four link attributes of the device directory dir. Missing attributes mean the device has
  // no PCIe link of its own (an integrated GPU, a conventional PCI device): null without a note.
  PcieLink link(const std::string &dir, const std::string &field) {
    PcieLink l;
    l.current_gts =
        read(dir + "/current_link_speed", field + ".current_gts", probe::parse_link_speed);
    l.current_width =
        read(dir + "/current_link_width", field + ".current_width", probe::parse_link_width);
    l.max_gts = read(dir + "/max_link_speed", field + ".max_gts", probe::parse_link_speed);
    l.max_width = read(dir + "/max_link_width", field + ".max_width", probe::parse_link_width);
    return l;
  }
};

struct HopInfo {
  PciHop hop;
  std::optional<std::uint32_t> cls;
  bool removable = false;
};

// Upstream bridges of the device at canonical path `real` (/sys/devices/pciDDDD:BB/.../BDF),
// nearest first. nullopt when the path is not a PCI device tree path.
std::optional<std::vector<std::string>> upstream_dirs(const std::string &real) {
  const std::string prefix = "/sys/devices/pci";
  if (real.compare(0, prefix.size(), prefix) != 0)
    return std::nullopt;
  std::vector<std::string> dirs;
  std::size_t pos = real.find('/', prefix.size());
  while (pos != std::string::npos) {
    auto next = real.find('/', pos + 1);
    auto part =
        real.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
    if (!looks_like_bdf(part))
      return std::nullopt;
    dirs.push_back(real.substr(0, next));
    pos = next;
  }
  if (dirs.empty())
    return std::nullopt;
  dirs.pop_back(); // the device itself
  std::reverse(dirs.begin(), dirs.end());
  return dirs;
}

void fill_path(Reader &r, probe::PciIds &ids, Gpu &gpu, const std::string &field,
               const std::string &real, bool thunderbolt_bus) {
  auto dirs = upstream_dirs(real);
  if (!dirs) {
    r.ctx.note(field + ".path", real,
               "not under /sys/devices/pci*: the way to the root port is unknown");
    return;
  }
  std::vector<HopInfo> hops;
  for (std::size_t i = 0; i < dirs->size(); ++i) {
    const auto &dir = (*dirs)[i];
    HopInfo h;
    h.hop.bdf = basename(dir);
    auto hf = fmt::format("{}.path[{}]", field, i);
    h.hop.vendor_id = r.read(dir + "/vendor", hf + ".vendor_id", parse_hex_id);
    h.hop.device_id = r.read(dir + "/device", hf + ".device_id", parse_hex_id);
    h.cls = r.read(dir + "/class", hf + ".kind", parse_hex_u32);
    h.hop.link = r.link(dir, hf + ".link");
    h.removable = read_trimmed(r.ctx.fs, dir + "/removable") == "removable";
    if (h.hop.vendor_id && h.hop.device_id) {
      auto v = *parse_hex_u32(*h.hop.vendor_id);
      auto d = *parse_hex_u32(*h.hop.device_id);
      h.hop.name = ids.lookup(v, d).device;
    }
    hops.push_back(std::move(h));
  }
  // Kinds: the topmost hop sits on the root bus and is the root port; a bridge with another
  // non-root bridge next to it on the way is a port of a PCIe switch (upstream or downstream).
  const std::size_t n = hops.size();
  bool any_unknown = false;
  for (std::size_t i = 0; i < n; ++i) {
    auto &h = hops[i];
    bool tunnel = false;
    if (h.hop.vendor_id && h.hop.device_id)
      tunnel = probe::is_tunnel_bridge(*parse_hex_u32(*h.hop.vendor_id),
                                       *parse_hex_u32(*h.hop.device_id));
    if (!tunnel && thunderbolt_bus && h.removable)
      tunnel = true; // behind an external-facing port while a Thunderbolt/USB4 domain is up
    auto bridge = [&](std::size_t j) { return hops[j].cls && is_bridge_class(*hops[j].cls); };
    if (tunnel)
      h.hop.kind = "thunderbolt";
    else if (i + 1 == n)
      h.hop.kind = "root-port";
    else if (!h.cls)
      any_unknown = true;
    else if (!is_bridge_class(*h.cls))
      h.hop.kind = "bridge";
    else if ((i > 0 && bridge(i - 1)) || (i + 2 < n && bridge(i + 1)))
      h.hop.kind = "switch-port";
    else
      h.hop.kind = "bridge";
  }
  bool tb = false, sw = false;
  for (const auto &h : hops) {
    tb = tb || h.hop.kind == "thunderbolt";
    sw = sw || h.hop.kind == "switch-port";
  }
  gpu.behind_thunderbolt = tb;
  if (sw || !any_unknown)
    gpu.behind_switch = sw;
  for (auto &h : hops)
    gpu.path.push_back(std::move(h.hop));
}

// The slowest link between the GPU and its root port, by usable bandwidth; on a tie the one
// nearest the GPU.
void fill_narrowest(Gpu &gpu) {
  std::optional<double> best;
  auto consider = [&](const std::string &bdf, const PcieLink &l) {
    if (!l.current_gts || !l.current_width)
      return;
    double bw = probe::pcie_link_gbps(*l.current_gts, *l.current_width);
    if (!best || bw < *best) {
      best = bw;
      gpu.narrowest_hop = bdf;
      gpu.narrowest_gts = l.current_gts;
      gpu.narrowest_width = l.current_width;
    }
  };
  consider(gpu.bdf, gpu.link);
  for (const auto &h : gpu.path)
    consider(h.bdf, h.link);
}

} // namespace

void probe_pci_gpus(const ProbeContext &ctx) {
  auto &snap = ctx.snapshot;
  auto bdfs = ctx.fs.list(kPciDevices);
  if (bdfs.empty()) {
    ctx.note("gpus", "/sys/bus/pci/devices", "no PCI device listed: sysfs missing or unreadable");
    return;
  }
  const bool thunderbolt_bus = !ctx.fs.list("/sys/bus/thunderbolt/devices").empty();
  probe::PciIds ids(probe::pci_ids_path(ctx.env));
  Reader r{ctx};
  for (const auto &bdf : bdfs) {
    const std::string dir = kPciDevices + bdf;
    auto cls_text = ctx.fs.read(dir + "/class", 64);
    if (!cls_text)
      continue;
    auto cls = parse_hex_u32(*cls_text);
    if (!cls) {
      ctx.note("gpus", dir + "/class", cls.error().message + "; device " + bdf + " skipped");
      continue;
    }
    if (!is_gpu_class(*cls))
      continue;
    const auto field = fmt::format("gpus[{}]", snap.gpus.size());
    Gpu gpu;
    gpu.bdf = bdf;
    gpu.pci_class = fmt::format("0x{:06x}", *cls);
    gpu.vendor_id = r.read(dir + "/vendor", field + ".vendor_id", parse_hex_id);
    gpu.device_id = r.read(dir + "/device", field + ".device_id", parse_hex_id);
    gpu.subsystem_vendor_id =
        r.read(dir + "/subsystem_vendor", field + ".subsystem_vendor_id", parse_hex_id);
    gpu.subsystem_device_id =
        r.read(dir + "/subsystem_device", field + ".subsystem_device_id", parse_hex_id);
    std::optional<std::uint32_t> vid, did;
    if (gpu.vendor_id) {
      vid = *parse_hex_u32(*gpu.vendor_id);
      gpu.vendor = vendor_name(*vid);
    }
    if (gpu.device_id)
      did = *parse_hex_u32(*gpu.device_id);
    if (auto numa = r.read(dir + "/numa_node", field + ".numa_node", probe::parse_numa_node))
      gpu.numa_node = *numa;
    if (auto drv = ctx.fs.readlink(dir + "/driver"))
      gpu.driver = basename(*drv);
    gpu.link = r.link(dir, field + ".link");

    // Names: the knowledge base first (its names match the rest of dlrig's answers), then pci.ids.
    const kb::GpuSpec *spec = nullptr;
    if (gpu.vendor_id && gpu.device_id)
      spec = kb::builtin().find_gpu_by_pci(*gpu.vendor_id, *gpu.device_id);
    if (spec) {
      gpu.name = spec->name;
      gpu.name_source = "kb";
    } else if (vid && did) {
      auto names = ids.lookup(*vid, *did);
      if (names.device) {
        gpu.name = probe::pci_ids_short_name(*names.device);
        gpu.name_source = "pci.ids";
      } else {
        ctx.note(field + ".name", ids.path(),
                 ids.error().empty()
                     ? fmt::format("{:04x}:{:04x} is in neither the knowledge base nor pci.ids",
                                   *vid, *did)
                     : "pci.ids unreadable: " + ids.error());
      }
    }

    if (auto real = ctx.fs.canonical(dir))
      fill_path(r, ids, gpu, field, *real, thunderbolt_bus);
    else
      ctx.note(field + ".path", dir, "link does not resolve: the way to the root port is unknown");
    fill_narrowest(gpu);
    snap.gpus.push_back(std::move(gpu));
  }
}

} // namespace dlrig
