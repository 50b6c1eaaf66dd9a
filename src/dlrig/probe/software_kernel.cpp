// Kernel side of the software stack: modules, /dev/nvidia* nodes, the NVIDIA services, IOMMU and
// PCIe ACS, Secure Boot. Files only; nothing here needs root except the ACS registers, which stay
// unknown without it.
#include "dlrig/probe/parse.hpp"
#include "dlrig/probe/read.hpp"
#include "dlrig/probe/software_parse.hpp"
#include "dlrig/probe/software_probe.hpp"

#include <algorithm>
#include <cctype>
#include <set>

namespace dlrig {

namespace {

void probe_modules(const ProbeContext &ctx, KernelSide &k) {
  std::optional<std::set<std::string>> loaded;
  if (auto text = probe::read_text(ctx, "/proc/modules", "software.kernel.*.loaded",
                                   probe::IfMissing::note(), 1 << 16))
    loaded = parse_proc_modules(*text);

  std::set<std::string> blacklisted;
  bool modprobe_read = false;
  for (const auto &name : ctx.fs.list("/etc/modprobe.d")) {
    if (name.size() < 5 || name.substr(name.size() - 5) != ".conf")
      continue;
    if (auto text = ctx.fs.read("/etc/modprobe.d/" + name, 1 << 16)) {
      modprobe_read = true;
      auto names = parse_modprobe_blacklist(*text);
      blacklisted.insert(names.begin(), names.end());
    }
  }
  bool modprobe_dir = ctx.fs.is_directory("/etc/modprobe.d");

  auto fill = [&](KernelModule &m, const std::string &name) {
    if (loaded)
      m.loaded = loaded->count(name) > 0;
    else if (ctx.fs.is_directory("/sys/module"))
      // Every loaded module has a folder here (built-in ones with parameters too).
      m.loaded = ctx.fs.is_directory("/sys/module/" + name);
    m.version = read_trimmed(ctx.fs, "/sys/module/" + name + "/version");
    if (modprobe_read || modprobe_dir)
      m.blacklisted = blacklisted.count(name) > 0;
  };
  fill(k.nvidia, "nvidia");
  fill(k.nouveau, "nouveau");
  fill(k.nvidia_uvm, "nvidia_uvm");
  fill(k.nvidia_peermem, "nvidia_peermem");
  fill(k.nv_peer_mem, "nv_peer_mem");

  // The open kernel module says so in /proc/driver/nvidia/version; the proprietary one taints
  // the kernel with 'P'. Open modules are licensed "Dual MIT/GPL", proprietary ones "NVIDIA".
  if (auto text = ctx.fs.read("/proc/driver/nvidia/version", 1 << 16)) {
    auto v = parse_nvidia_proc_version(*text);
    k.proc_driver_version = v.first_line;
    k.nvidia_open = v.open;
    if (!k.nvidia.version)
      k.nvidia.version = v.version;
  }
  if (!k.nvidia_open)
    if (auto taint = read_trimmed(ctx.fs, "/sys/module/nvidia/taint"))
      if (auto proprietary = taint_is_proprietary(*taint))
        k.nvidia_open = !*proprietary;
  if (k.nvidia_open && k.nvidia.loaded.value_or(true))
    k.nvidia.license = *k.nvidia_open ? "Dual MIT/GPL" : "NVIDIA";
}

void probe_iommu(const ProbeContext &ctx, KernelSide &k) {
  if (auto cmdline =
          probe::read_parsed(ctx, "/proc/cmdline", "software.kernel.iommu", probe::parse_trimmed,
                             probe::IfMissing::note("not readable"), 1 << 16)) {
    k.cmdline = cmdline;
    k.iommu = parse_iommu_mode(*cmdline);
  }
  if (ctx.fs.is_directory("/sys/kernel/iommu_groups"))
    k.iommu_groups = !ctx.fs.list("/sys/kernel/iommu_groups").empty();
  else if (ctx.fs.is_directory("/sys/kernel"))
    k.iommu_groups = false;
}

void probe_secure_boot(const ProbeContext &ctx, KernelSide &k) {
  const std::string efivars = "/sys/firmware/efi/efivars";
  if (!ctx.fs.is_directory("/sys/firmware/efi")) {
    if (ctx.fs.is_directory("/sys/firmware"))
      k.secure_boot = false; // legacy BIOS boot: no Secure Boot
    return;
  }
  for (const auto &name : ctx.fs.list(efivars))
    if (name.rfind("SecureBoot-", 0) == 0) {
      // 4 bytes of attributes, then the one-byte value.
      auto data = ctx.fs.read(efivars + "/" + name, 64);
      if (data && data->size() >= 5)
        k.secure_boot = (*data)[data->size() - 1] == 1;
      return;
    }
}

void probe_device_nodes(const ProbeContext &ctx, SoftwareInfo &sw) {
  std::vector<std::string> names;
  for (const auto &name : ctx.fs.list("/dev"))
    if (name.rfind("nvidia", 0) == 0 && !ctx.fs.is_directory("/dev/" + name))
      names.push_back(name);
  // The control and UVM nodes are always listed, so "missing" is visible too.
  for (const char *must : {"nvidiactl", "nvidia-uvm"})
    if (std::find(names.begin(), names.end(), must) == names.end())
      names.emplace_back(must);
  std::sort(names.begin(), names.end());
  bool dev_readable = ctx.fs.is_directory("/dev");
  for (const auto &name : names) {
    DeviceNode node{"/dev/" + name, std::nullopt, std::nullopt};
    if (dev_readable) {
      node.exists = ctx.fs.exists(node.path);
      node.accessible = *node.exists && ctx.fs.accessible_rw(node.path);
    }
    sw.device_nodes.push_back(std::move(node));
  }
}

bool all_digits(const std::string &s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

void probe_services(const ProbeContext &ctx, Services &svc) {
  auto entries = ctx.fs.list("/proc");
  bool any_pid = false;
  bool persistenced = false, fabricmanager = false;
  for (const auto &e : entries) {
    if (!all_digits(e))
      continue;
    auto read = ctx.fs.read("/proc/" + e + "/comm", 64);
    if (!read || read->empty())
      continue;
    auto comm = std::optional<std::string>(read->substr(0, read->find('\n')));
    any_pid = true;
    // comm is cut to 15 characters: nvidia-persistenced -> nvidia-persiste.
    if (comm->rfind("nvidia-persiste", 0) == 0)
      persistenced = true;
    if (comm->rfind("nv-fabricmanage", 0) == 0)
      fabricmanager = true;
  }
  if (any_pid) {
    svc.persistenced_running = persistenced;
    svc.fabricmanager_running = fabricmanager;
  } else {
    ctx.note("software.services", "/proc/*/comm", "no process names readable");
  }

  const std::string pci = "/sys/bus/pci/devices";
  if (ctx.fs.is_directory(pci)) {
    bool nvswitch = false;
    for (const auto &bdf : ctx.fs.list(pci)) {
      auto vendor = read_trimmed(ctx.fs, pci + "/" + bdf + "/vendor");
      auto cls = read_trimmed(ctx.fs, pci + "/" + bdf + "/class");
      // NVSwitch is an NVIDIA bridge of subclass "other" (class 0x0680xx).
      if (vendor == "0x10de" && cls && cls->rfind("0x0680", 0) == 0)
        nvswitch = true;
    }
    svc.nvswitch_present = nvswitch;
  }
}

// ACS on the bridges between NVIDIA GPUs. The extended config space holding the ACS capability
// is readable by root only; for everyone else the field stays unknown.
void probe_acs(const ProbeContext &ctx, SoftwareInfo &sw) {
  std::set<std::string> bridges;
  int nvidia = 0;
  for (const auto &gpu : ctx.snapshot.gpus) {
    if (gpu.vendor_id != std::optional<std::string>("0x10de"))
      continue;
    ++nvidia;
    for (const auto &hop : gpu.path)
      bridges.insert(hop.bdf);
  }
  if (nvidia < 2)
    return;
  bool any_unknown = false;
  for (const auto &bdf : bridges) {
    AcsBridge b{bdf, std::nullopt};
    auto config = ctx.fs.read("/sys/bus/pci/devices/" + bdf + "/config", 4096);
    if (config)
      if (auto control = parse_acs_control(*config))
        b.redirect_enabled = acs_redirects(*control);
    any_unknown = any_unknown || !b.redirect_enabled;
    sw.acs.push_back(std::move(b));
  }
  if (any_unknown)
    ctx.note("software.acs", "/sys/bus/pci/devices/*/config",
             "the ACS registers sit in extended config space, readable by root only (run as "
             "root, or check with `sudo lspci -vvv | grep ACSCtl`)");
}

} // namespace

void probe_software_kernel(const ProbeContext &ctx) {
  auto &sw = ctx.snapshot.software;
  probe_modules(ctx, sw.kernel);
  probe_iommu(ctx, sw.kernel);
  probe_secure_boot(ctx, sw.kernel);
  probe_device_nodes(ctx, sw);
  probe_services(ctx, sw.services);
  probe_acs(ctx, sw);
}

} // namespace dlrig
