// The host: OS, CPU, NUMA, memory, /dev/shm, limits, storage, network and RDMA, from procfs and
// sysfs through the FileSystem seam. Parsing lives in parse.cpp; this file only reads and fills.
#include "dlrig/core/text.hpp"
#include "dlrig/probe/cpu_names.hpp"
#include "dlrig/probe/parse.hpp"
#include "dlrig/probe/probe.hpp"
#include "dlrig/probe/read.hpp"
#include "dlrig/probe/smbios.hpp"

#include <fmt/format.h>
#include <sys/utsname.h>

#include <algorithm>
#include <set>

namespace dlrig {

namespace {

using probe::IfMissing;
using probe::Meminfo;
using probe::read_parsed;

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

void probe_os(const ProbeContext &ctx, OsInfo &os) {
  auto trimmed = [&](const char *path, const char *field) -> OptStr {
    return read_parsed(ctx, path, field, probe::parse_trimmed, IfMissing::note("missing"), 1 << 16);
  };
  os.kernel_release = trimmed("/proc/sys/kernel/osrelease", "host.os.kernel_release");
  os.kernel_version = trimmed("/proc/sys/kernel/version", "host.os.kernel_version");
  // /proc/sys/kernel/arch exists since Linux 6.1; before that the live machine answers uname().
  os.arch = read_trimmed(ctx.fs, "/proc/sys/kernel/arch");
  if (!os.arch) {
    struct utsname u {};
    auto *live = dynamic_cast<const Sysroot *>(&ctx.fs);
    if (live && live->live() && ::uname(&u) == 0)
      os.arch = std::string(u.machine);
    else
      ctx.note("host.os.arch", "/proc/sys/kernel/arch",
               "missing, and not the live machine (no uname)");
  }
  // os-release(5): /etc/os-release, falling back to /usr/lib/os-release.
  const char *path = ctx.fs.exists("/etc/os-release") ? "/etc/os-release" : "/usr/lib/os-release";
  if (auto kv =
          read_parsed(ctx, path, "host.os.distro_id", probe::parse_os_release, IfMissing::note())) {
    auto get = [&](const char *key) -> OptStr {
      auto it = kv->find(key);
      return it == kv->end() || it->second.empty() ? OptStr{} : OptStr{it->second};
    };
    os.distro_id = get("ID");
    os.distro_version = get("VERSION_ID");
    os.distro_name = get("PRETTY_NAME");
    if (!os.distro_name)
      os.distro_name = get("NAME");
  }
}

void probe_cpu(const ProbeContext &ctx, CpuInfo &cpu) {
  if (auto text =
          probe::read_text(ctx, "/proc/cpuinfo", "host.cpu", IfMissing::note(), 16u << 20)) {
    auto info = probe::parse_cpuinfo(*text);
    if (info) {
      cpu.vendor = info->vendor;
      cpu.model = info->model;
      if (!info->model && info->vendor) { // Arm: codes only (data/arm_cpus.csv names them)
        auto names = probe::decode_arm_cpu(kb::builtin(), *info->vendor, info->parts);
        if (names.vendor)
          cpu.vendor = names.vendor;
        cpu.model = names.model;
      }
      cpu.sockets = info->sockets;
      cpu.cores = info->cores;
      cpu.threads = info->logical;
      cpu.isa = probe::pytorch_isa(info->flags);
      cpu.isa_read = !info->flags.empty();
      if (!cpu.sockets)
        ctx.note("host.cpu.sockets", "/proc/cpuinfo", "no \"physical id\" lines");
      if (!cpu.cores)
        ctx.note("host.cpu.cores", "/proc/cpuinfo", "no \"core id\" lines");
    } else {
      ctx.note("host.cpu", "/proc/cpuinfo", info.error().message);
    }
  }
  // The SoC, where the kernel exposes one (Arm's SMCCC SoC ID: "jep106:036b:0241"; some SoC
  // drivers add a machine name). Absent on x86: no note.
  std::vector<std::string> soc;
  for (const char *f : {"family", "machine", "soc_id"})
    if (auto v = read_trimmed(ctx.fs, std::string("/sys/devices/soc0/") + f))
      if (std::find(soc.begin(), soc.end(), *v) == soc.end())
        soc.push_back(*v);
  if (!soc.empty())
    cpu.soc = join(soc, " ");
  // Logical CPUs online: the sysfs list is authoritative (cpuinfo lists online CPUs too, but a
  // truncated copy would undercount).
  if (auto n = read_parsed(ctx, "/sys/devices/system/cpu/online", "host.cpu.threads",
                           probe::parse_cpulist_count, IfMissing::skip()))
    cpu.threads = *n;
  const std::string freq = "/sys/devices/system/cpu/cpu0/cpufreq/";
  cpu.base_hz =
      read_parsed(ctx, freq + "base_frequency", "host.cpu.base_hz", probe::parse_khz,
                  IfMissing::note("not exposed by this cpufreq driver (intel_pstate only)"));
  cpu.max_hz = read_parsed(ctx, freq + "cpuinfo_max_freq", "host.cpu.max_hz", probe::parse_khz,
                           IfMissing::note("no cpufreq (virtual machine or container without it)"));

  const std::string nodes = "/sys/devices/system/node/";
  for (const auto &name : ctx.fs.list(nodes)) {
    if (!starts_with(name, "node"))
      continue;
    auto id = probe::parse_u64(std::string_view(name).substr(4));
    if (!id || *id > 4096)
      continue;
    NumaNode node;
    node.id = static_cast<int>(*id);
    auto field = fmt::format("host.cpu.numa_nodes[{}]", cpu.numa_nodes.size());
    node.cpus = read_parsed(ctx, nodes + name + "/cpulist", field + ".cpus", probe::parse_trimmed,
                            IfMissing::note("missing"), 1 << 16);
    if (auto m = read_parsed(ctx, nodes + name + "/meminfo", field + ".memory_total_bytes",
                             probe::parse_meminfo, IfMissing::note()))
      node.memory_total_bytes = m->total_bytes;
    cpu.numa_nodes.push_back(std::move(node));
  }
  std::sort(cpu.numa_nodes.begin(), cpu.numa_nodes.end(),
            [](const NumaNode &a, const NumaNode &b) { return a.id < b.id; });
  if (cpu.numa_nodes.empty())
    ctx.note("host.cpu.numa_nodes", nodes,
             "no NUMA node directories (kernel without NUMA support)");
}

// The memory type and DIMM slots from the SMBIOS type-17 records (probe/smbios.hpp).
void probe_dimms(const ProbeContext &ctx, MemoryInfo &mem) {
  constexpr const char *kDmi = "/sys/firmware/dmi/entries";
  const auto dimms = probe::read_dimms(ctx.fs, kDmi);
  if (dimms.empty()) {
    // No record listed (VMs, fixtures) leaves the type unknown without a note; listed but
    // unreadable is the usual non-root case, and says so.
    for (const auto &name : ctx.fs.list(kDmi))
      if (name.rfind("17-", 0) == 0) {
        ctx.note("host.memory.type", std::string(kDmi) + "/17-*/raw",
                 "the memory-device records are readable by root only");
        break;
      }
    return;
  }
  mem.dimm_slots = static_cast<int>(dimms.size());
  int installed = 0;
  std::set<std::string> types;
  bool unstated = false;
  for (const auto &d : dimms) {
    if (!d.installed)
      continue;
    ++installed;
    if (d.memory_type)
      types.insert(*d.memory_type);
    else
      unstated = true;
  }
  mem.dimms_installed = installed;
  if (types.size() == 1 && !unstated)
    mem.type = *types.begin();
  else if (installed > 0)
    ctx.note("host.memory.type", std::string(kDmi) + "/17-*/raw",
             types.size() > 1 ? "the installed modules are of different types"
                              : "a module's record does not state its type");
}

void probe_memory(const ProbeContext &ctx, MemoryInfo &mem) {
  probe_dimms(ctx, mem);
  auto m =
      read_parsed(ctx, "/proc/meminfo", "host.memory", probe::parse_meminfo, IfMissing::note());
  if (!m)
    return;
  mem.total_bytes = m->total_bytes;
  mem.available_bytes = m->available_bytes;
  mem.swap_total_bytes = m->swap_total_bytes;
  mem.swap_free_bytes = m->swap_free_bytes;
  for (auto [v, name] : {std::pair{&mem.total_bytes, "total_bytes"},
                         {&mem.available_bytes, "available_bytes"},
                         {&mem.swap_total_bytes, "swap_total_bytes"},
                         {&mem.swap_free_bytes, "swap_free_bytes"}})
    if (!*v)
      ctx.note(std::string("host.memory.") + name, "/proc/meminfo", "line missing");
}

void probe_limits(const ProbeContext &ctx, Limits &limits) {
  auto l =
      read_parsed(ctx, "/proc/self/limits", "host.limits", probe::parse_limits, IfMissing::note());
  if (!l)
    return;
  if (l->memlock)
    limits.memlock_bytes = *l->memlock;
  else
    ctx.note("host.limits.memlock_bytes", "/proc/self/limits", "no \"Max locked memory\" row");
  if (l->open_files)
    limits.open_files = *l->open_files;
  else
    ctx.note("host.limits.open_files", "/proc/self/limits", "no \"Max open files\" row");
}

// --- storage
// ---------------------------------------------------------------------------------------

// The whole-disk name under /sys/block for a partition or disk name: nvme0n1p2 -> nvme0n1,
// sda1 -> sda, mmcblk0p1 -> mmcblk0.
std::string disk_of(const FileSystem &fs, const std::string &name) {
  if (fs.exists("/sys/block/" + name))
    return name;
  std::string s = name;
  while (!s.empty() && s.back() >= '0' && s.back() <= '9')
    s.pop_back();
  if (s.size() > 1 && s.back() == 'p' && s[s.size() - 2] >= '0' && s[s.size() - 2] <= '9')
    s.pop_back();
  return s;
}

OptStr disk_kind(const FileSystem &fs, const std::string &disk, int depth = 0) {
  const std::string dir = "/sys/block/" + disk;
  if (!fs.exists(dir))
    return std::nullopt;
  // Device mapper and md RAID: the kind of the disks underneath, when they agree.
  if (depth == 0 && (starts_with(disk, "dm-") || starts_with(disk, "md"))) {
    OptStr kind;
    for (const auto &slave : fs.list(dir + "/slaves")) {
      auto k = disk_kind(fs, disk_of(fs, slave), 1);
      if (!k || (kind && *kind != *k))
        return std::nullopt;
      kind = k;
    }
    return kind;
  }
  if (starts_with(disk, "nvme"))
    return "nvme";
  if (starts_with(disk, "loop") || starts_with(disk, "vd") || starts_with(disk, "xvd") ||
      starts_with(disk, "zram"))
    return "virtual";
  if (auto real = fs.canonical(dir); real && real->find("/virtio") != std::string::npos)
    return "virtual";
  auto rot = read_trimmed(fs, dir + "/queue/rotational");
  if (rot == "1")
    return "hdd";
  if (rot == "0" && (starts_with(disk, "sd") || starts_with(disk, "hd")))
    return "sata-ssd";
  return std::nullopt;
}

// Mount points that hold system plumbing, not data (the container's /etc/hosts bind mounts, /run).
bool plumbing_mountpoint(const std::string &mp) {
  for (std::string_view prefix :
       {"/proc", "/sys", "/run", "/snap", "/etc/", "/var/lib/docker", "/var/snap"})
    if (mp == prefix || starts_with(mp, std::string(prefix) + (prefix.back() == '/' ? "" : "/")))
      return true;
  return mp == "/dev" || (starts_with(mp, "/dev/") && mp != "/dev/shm");
}

void probe_storage(const ProbeContext &ctx, HostInfo &host) {
  // Kubernetes nodes and container hosts can list thousands of mounts.
  auto entries = read_parsed(ctx, "/proc/mounts", "host.mounts", probe::parse_mounts,
                             IfMissing::note(), 16u << 20);
  if (!entries)
    return;
  const probe::MountEntry *shm = nullptr;
  std::vector<const probe::MountEntry *> keep;
  for (const auto &e : *entries) {
    if (e.mountpoint == "/dev/shm")
      shm = &e;
    if (probe::is_pseudo_fstype(e.fstype) || plumbing_mountpoint(e.mountpoint))
      continue;
    if (e.fstype == "tmpfs" && e.mountpoint != "/dev/shm" && e.mountpoint != "/tmp")
      continue;
    // A later mount on the same point hides the earlier one.
    keep.erase(
        std::remove_if(keep.begin(), keep.end(),
                       [&](const probe::MountEntry *k) { return k->mountpoint == e.mountpoint; }),
        keep.end());
    keep.push_back(&e);
  }
  for (const auto *e : keep) {
    Mount m;
    m.mountpoint = e->mountpoint;
    m.device = e->device;
    m.fstype = e->fstype;
    if (probe::is_network_fstype(e->fstype))
      m.kind = "network";
    else if (e->fstype == "tmpfs")
      m.kind = "tmpfs";
    else if (e->fstype == "overlay" || e->fstype == "fuse-overlayfs" || e->fstype == "aufs")
      m.kind = "virtual";
    else if (starts_with(e->device, "/dev/"))
      m.kind = disk_kind(ctx.fs, disk_of(ctx.fs, basename(e->device)));
    auto field = fmt::format("host.mounts[{}]", host.mounts.size());
    if (!m.kind) {
      m.kind = "unknown";
      ctx.note(field + ".kind", "/sys/block", "no block device found for " + e->device);
    }
    if (auto du = ctx.fs.disk_usage(e->mountpoint)) {
      m.total_bytes = du->total_bytes;
      m.free_bytes = du->free_bytes;
    } else {
      ctx.note(field + ".total_bytes", e->mountpoint, "statvfs gave no answer");
    }
    host.mounts.push_back(std::move(m));
  }

  // /dev/shm: what the filesystem reports, else the tmpfs size= option.
  if (!shm) {
    ctx.note("host.shm", "/proc/mounts", "/dev/shm is not mounted");
    return;
  }
  if (auto du = ctx.fs.disk_usage("/dev/shm")) {
    host.shm.size_bytes = du->total_bytes;
    host.shm.free_bytes = du->free_bytes;
  } else {
    host.shm.size_bytes = probe::tmpfs_size_option(shm->options);
    ctx.note("host.shm.free_bytes", "/dev/shm", "statvfs gave no answer");
    if (!host.shm.size_bytes)
      ctx.note("host.shm.size_bytes", "/proc/mounts", "no statvfs answer and no size= option");
  }
}

// --- network and RDMA
// ------------------------------------------------------------------------------

void probe_network(const ProbeContext &ctx, HostInfo &host) {
  const std::string base = "/sys/class/net/";
  for (const auto &name : ctx.fs.list(base)) {
    const std::string dir = base + name;
    NetInterface n;
    n.name = name;
    auto field = fmt::format("host.network[{}]", host.network.size());
    n.operstate = read_trimmed(ctx.fs, dir + "/operstate");
    // ARPHRD_* values from include/uapi/linux/if_arp.h: 1 Ethernet, 32 InfiniBand, 772 loopback.
    auto type = read_trimmed(ctx.fs, dir + "/type");
    auto real = ctx.fs.canonical(dir);
    if (type == "772")
      n.kind = "loopback";
    else if (type == "32")
      n.kind = "infiniband";
    else if (ctx.fs.exists(dir + "/wireless") || ctx.fs.exists(dir + "/phy80211"))
      n.kind = "wireless";
    else if (real && starts_with(*real, "/sys/devices/virtual/"))
      n.kind = "virtual";
    else if (type == "1")
      n.kind = "ethernet";
    if (n.kind != "loopback") {
      auto speed = ctx.fs.read(dir + "/speed", 64);
      if (speed) {
        auto bps = probe::parse_net_speed(*speed);
        if (bps)
          n.speed_bps = *bps;
        else if (n.operstate == "up")
          ctx.note(field + ".speed_bps", dir + "/speed", bps.error().message);
      } else if (n.operstate == "up" && n.kind != "wireless") {
        ctx.note(field + ".speed_bps", dir + "/speed", speed.error().message);
      }
    }
    host.network.push_back(std::move(n));
  }
  const std::string ib = "/sys/class/infiniband/";
  for (const auto &dev : ctx.fs.list(ib)) {
    for (const auto &port : ctx.fs.list(ib + dev + "/ports")) {
      auto num = probe::parse_u64(port);
      if (!num || *num > 255)
        continue;
      RdmaPort p;
      p.device = dev;
      p.port = static_cast<int>(*num);
      const std::string dir = ib + dev + "/ports/" + port;
      auto field = fmt::format("host.rdma[{}]", host.rdma.size());
      p.link_layer = read_trimmed(ctx.fs, dir + "/link_layer");
      p.state = read_parsed(ctx, dir + "/state", field + ".state", probe::parse_ib_state,
                            IfMissing::note());
      p.rate_bps = read_parsed(ctx, dir + "/rate", field + ".rate_bps", probe::parse_ib_rate,
                               IfMissing::note());
      host.rdma.push_back(std::move(p));
    }
  }
}

} // namespace

void probe_host(const ProbeContext &ctx) {
  auto &host = ctx.snapshot.host;
  host.hostname = read_parsed(ctx, "/proc/sys/kernel/hostname", "host.hostname",
                              probe::parse_trimmed, IfMissing::note("missing or empty"), 1 << 16);
  probe_os(ctx, host.os);
  probe_cpu(ctx, host.cpu);
  probe_memory(ctx, host.memory);
  probe_limits(ctx, host.limits);
  probe_storage(ctx, host);
  probe_network(ctx, host);
}

} // namespace dlrig
