// `dlrig info` host tables: OS, CPU and NUMA, memory with /dev/shm and limits, storage, network
// and RDMA.
#include "dlrig/core/text.hpp"
#include "dlrig/info/report.hpp"

#include <fmt/format.h>

namespace dlrig {

namespace {

std::string show_limit_value(const OptU64 &v, const OptBool &unlimited, bool bytes) {
  if (unlimited && *unlimited)
    return "unlimited";
  return bytes ? show_bytes(v) : show_count(v);
}

std::string show_limit(const Limit &l, bool bytes) {
  return fmt::format("{} (hard {})", show_limit_value(l.soft, l.soft_unlimited, bytes),
                     show_limit_value(l.hard, l.hard_unlimited, bytes));
}

} // namespace

std::vector<Table> info_host_tables(const Snapshot &s) {
  const auto &h = s.host;
  std::vector<Table> out;

  Table sys{"Host", {}, {}};
  sys.add({"hostname", show(h.hostname)});
  sys.add({"OS", show(h.os.distro_name)});
  sys.add({"kernel", show(h.os.kernel_release)});
  sys.add({"architecture", show(h.os.arch)});
  out.push_back(std::move(sys));

  const auto &c = h.cpu;
  Table cpu{"CPU", {}, {}};
  cpu.add({"model", show(c.model)});
  cpu.add({"vendor", show(c.vendor)});
  if (c.soc)
    cpu.add({"SoC", *c.soc});
  cpu.add({"sockets / cores / threads", fmt::format("{} / {} / {}", show_int(c.sockets),
                                                    show_int(c.cores), show_int(c.threads))});
  cpu.add({"base / max frequency", show_hz(c.base_hz) + " / " + show_hz(c.max_hz)});
  cpu.add({"ISA for PyTorch", !c.isa.empty() ? join(c.isa, " ")
                              : !c.isa_known() || unread(s, "host.cpu.isa")
                                  ? std::string(kUnknown)
                                  : "none of AVX2, AVX-512, AMX, NEON, SVE"});
  cpu.add({"NUMA nodes",
           c.numa_nodes.empty() ? std::string(kUnknown) : std::to_string(c.numa_nodes.size())});
  out.push_back(std::move(cpu));

  if (c.numa_nodes.size() > 1) {
    Table numa{"NUMA nodes", {"node", "CPUs", "memory"}, {}};
    for (const auto &n : c.numa_nodes)
      numa.add({std::to_string(n.id), show(n.cpus), show_bytes(n.memory_total_bytes)});
    out.push_back(std::move(numa));
  }

  Table mem{"Memory", {}, {}};
  mem.add({"RAM total", show_bytes(h.memory.total_bytes)});
  mem.add({"RAM available", show_bytes(h.memory.available_bytes)});
  mem.add({"swap total / free",
           show_bytes(h.memory.swap_total_bytes) + " / " + show_bytes(h.memory.swap_free_bytes)});
  mem.add({"/dev/shm size / free",
           show_bytes(h.shm.size_bytes) + " / " + show_bytes(h.shm.free_bytes)});
  mem.add({"locked memory limit", show_limit(h.limits.memlock_bytes, true)});
  mem.add({"open files limit", show_limit(h.limits.open_files, false)});
  out.push_back(std::move(mem));

  if (!h.mounts.empty()) {
    Table st{"Storage", {"mount", "device", "filesystem", "kind", "size", "free"}, {}};
    for (const auto &m : h.mounts)
      st.add({m.mountpoint, show(m.device), show(m.fstype), show(m.kind),
              show_bytes_si(m.total_bytes), show_bytes_si(m.free_bytes)});
    out.push_back(std::move(st));
  }

  Table net{"Network", {"interface", "kind", "state", "speed"}, {}};
  for (const auto &n : h.network)
    if (n.kind != "loopback")
      net.add({n.name, show(n.kind), show(n.operstate), show_bps(n.speed_bps)});
  if (!net.rows.empty())
    out.push_back(std::move(net));

  if (!h.rdma.empty()) {
    Table rdma{"RDMA (InfiniBand / RoCE)", {"device", "port", "link layer", "state", "rate"}, {}};
    for (const auto &p : h.rdma)
      rdma.add({p.device, std::to_string(p.port), show(p.link_layer), show(p.state),
                show_bps(p.rate_bps)});
    out.push_back(std::move(rdma));
  }
  return out;
}

} // namespace dlrig
