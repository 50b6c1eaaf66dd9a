// `dlrig info`, NVIDIA part: the driver as NVML reports it (or why NVML did not answer and what
// that means), per-GPU readings and health, and for several GPUs the topology and peer-to-peer
// matrices in the shape of `nvidia-smi topo -m` / `topo -p2p r` (summarised per GPU past
// kTopologyMatrixMaxGpus, so 5,000 GPUs print 5,000 rows, not 25 million cells).
#include "dlrig/info/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace dlrig {

namespace {

// What a failed NVML means for the user, keyed by the nvmlReturn_t in the snapshot.
std::string nvml_meaning(const NvidiaDriver &nv) {
  if (nv.nvml_status == "timed-out")
    return "a GPU or the driver has stopped responding (a GPU fallen off the bus leaves "
           "nvidia-smi hanging the same way); CUDA is likely to hang too: look for Xid lines in "
           "`sudo dmesg` (`dlrig doctor --explain gpu.nvml-not-responding`)";
  if (nv.nvml_status == "not-found")
    return "no NVIDIA user-space driver on the library path: GPUs are known from the PCI bus only "
           "(no memory, clocks or health), and CUDA most likely cannot start either";
  switch (nv.nvml_error_code.value_or(-1)) {
  case 18:
    return "Driver/library version mismatch: the kernel module and the user-space driver are "
           "different versions (a driver update without a reboot); reboot, or reload the nvidia "
           "modules";
  case 9:
    return "the nvidia kernel module is not loaded: CUDA cannot run until it is (check lsmod, "
           "Secure Boot signing, nouveau)";
  case 4:
    return "this user may not open the GPU devices (/dev/nvidia*): add it to the video/render "
           "group or fix the container's device mounts";
  default:
    return "NVML did not start: GPUs are known from the PCI bus only, and CUDA is likely to fail "
           "the same way";
  }
}

Table driver_table(const NvidiaDriver &nv) {
  Table t{"NVIDIA driver", {}, {}};
  std::string status = show(nv.nvml_status);
  if (nv.nvml_status == "ok")
    status = "ok (" + show(nv.nvml_library) + ")";
  else if (nv.nvml_status == "not-found")
    status = "not loaded: " + show(nv.nvml_error);
  else if (nv.nvml_status == "init-failed")
    status = fmt::format("failed to initialise: {}{}", show(nv.nvml_error),
                         nv.nvml_error_code ? fmt::format(" (NVML error {})", *nv.nvml_error_code)
                                            : std::string());
  else if (nv.nvml_status == "not-probed")
    status = "not probed";
  else if (nv.nvml_status == "timed-out")
    status = "no answer: " + show(nv.nvml_error);
  t.add({"NVML", status});
  if (nv.nvml_status == "not-found" || nv.nvml_status == "init-failed" ||
      nv.nvml_status == "timed-out")
    t.add({"What it means", nvml_meaning(nv)});
  if (nv.nvml_status == "ok") {
    t.add({"Driver", show(nv.driver_version)});
    t.add({"CUDA (highest the driver supports)", show(nv.cuda_driver_version)});
    t.add({"NVML version", show(nv.nvml_version)});
  }
  t.add({"Kernel module", show(nv.kernel_module_version)});
  if (nv.nvml_status == "ok")
    t.add({"GPUs (NVML)", show_int(nv.gpu_count)});
  for (const auto &l : nv.lost_gpus)
    t.add({fmt::format("GPU {}", l.index),
           fmt::format("{}fallen off the bus (NVML: GPU is lost); `dlrig doctor` says what to do",
                       l.bdf ? *l.bdf + ": " : std::string())});
  return t;
}

std::string pair_of(const std::string &a, const std::string &b) {
  if (a == kUnknown && b == kUnknown)
    return kUnknown;
  return a + " / " + b;
}

// The GPU's own memory as NVML reports it; a GPU without (GB10) shows the system memory it
// shares with the CPU, and one joined to a Grace CPU by NVLink-C2C (GH200, GB200) also names
// the CPU memory it reaches coherently. host_ram: MemTotal from /proc/meminfo, or nullopt.
std::string memory_cell(const NvmlGpu &g, const OptU64 &host_ram) {
  if (g.memory_kind == OptStr("unified") && !g.memory_total_bytes)
    return "unified: " + show_bytes(host_ram) + " system memory shared with the CPU";
  std::string cell = pair_of(show_bytes(g.memory_used_bytes), show_bytes(g.memory_total_bytes));
  if (g.c2c_enabled == OptBool(true))
    cell += " + " + show_bytes(host_ram) + " CPU memory over NVLink-C2C";
  return cell;
}

std::string cc_cell(const NvmlGpu &g) {
  std::string cc = show(g.compute_capability);
  return g.architecture ? cc + " " + *g.architecture : cc;
}

std::string temperature_cell(const NvmlGpu &g) {
  std::string t = show_num(g.temperature_c, "°C", 0);
  if (g.slowdown_temperature_c)
    t += " (slowdown " + show_num(g.slowdown_temperature_c, "°C", 0) + ")";
  return t;
}

std::string throttle_cell(const NvmlGpu &g) {
  if (!g.throttle_reasons_mask)
    return kUnknown;
  if (g.throttle_reasons.empty())
    return "none";
  std::string out;
  for (const auto &r : g.throttle_reasons)
    out += (out.empty() ? "" : ", ") + r;
  return out;
}

std::string ecc_cell(const NvmlGpu &g) {
  if (!g.ecc_enabled)
    return kUnknown;
  if (!*g.ecc_enabled)
    return "off";
  std::string out = "on";
  if (g.ecc_uncorrected_volatile)
    out += fmt::format(", {} uncorrected", *g.ecc_uncorrected_volatile);
  if (g.ecc_uncorrected_aggregate && g.ecc_uncorrected_aggregate != g.ecc_uncorrected_volatile)
    out += fmt::format(" ({} lifetime)", *g.ecc_uncorrected_aggregate);
  return out;
}

// Retired pages (before Ampere) and remapped rows (Ampere and later), whichever the GPU has.
std::string memory_health_cell(const NvmlGpu &g) {
  std::vector<std::string> parts;
  if (g.retired_pages)
    parts.push_back(fmt::format("{} retired pages{}", *g.retired_pages,
                                g.retired_pages_pending == true ? ", retirement pending" : ""));
  const auto &rr = g.remapped_rows;
  if (rr.uncorrectable || rr.correctable) {
    std::string s =
        fmt::format("{} rows remapped", rr.uncorrectable.value_or(0) + rr.correctable.value_or(0));
    if (rr.pending == true)
      s += ", remap pending";
    if (rr.failure == true)
      s += ", REMAP FAILED";
    parts.push_back(s);
  }
  if (parts.empty())
    return kUnknown;
  std::string out;
  for (const auto &p : parts)
    out += (out.empty() ? "" : "; ") + p;
  return out;
}

std::string pcie_cell(const NvmlGpu &g) {
  auto link = [](const std::optional<int> &gen, const std::optional<int> &width) {
    if (!gen && !width)
      return std::string(kUnknown);
    return fmt::format("gen{} x{}", show_int(gen), show_int(width));
  };
  std::string out = link(g.pcie_gen_current, g.pcie_width_current) + " (max " +
                    link(g.pcie_gen_max, g.pcie_width_max) + ")";
  if (g.pcie_replay_counter && *g.pcie_replay_counter > 0)
    out += fmt::format(", {} replays", *g.pcie_replay_counter);
  return out;
}

std::string nvlink_cell(const NvmlGpu &g, bool lists_read) {
  if (g.nvlinks.empty())
    return lists_read ? "none" : kUnknown;
  int active = 0;
  std::map<std::string, int> to;
  for (const auto &l : g.nvlinks) {
    if (l.active != true)
      continue;
    ++active;
    ++to[l.remote_kind.value_or("unknown")];
  }
  std::string out = fmt::format("{}/{} active", active, g.nvlinks.size());
  for (const auto &[kind, n] : to)
    out += fmt::format(", {} to {}", n, kind);
  return out;
}

std::string processes_cell(const NvmlGpu &g, bool lists_read) {
  if (g.processes.empty())
    return lists_read ? "none" : kUnknown;
  std::string out;
  for (const auto &p : g.processes) {
    out += (out.empty() ? "" : ", ") + p.name.value_or("pid") + " " + std::to_string(p.pid);
    if (p.used_memory_bytes)
      out += " (" + show_bytes(p.used_memory_bytes) + ")";
  }
  return out;
}

Table readings_table(const std::vector<const Gpu *> &gpus, const OptU64 &host_ram) {
  Table t{"NVIDIA GPUs (NVML)",
          {"GPU", "bus", "name", "memory used / total", "cc / arch", "SM clock / max",
           "mem clock / max", "power / limit", "temperature", "fan"},
          {}};
  for (const Gpu *gpu : gpus) {
    const NvmlGpu &g = *gpu->nvml;
    std::string power =
        pair_of(show_num(g.power_draw_w, "W", 0), show_num(g.power_limit_w, "W", 0));
    if (g.power_limit_w && g.power_default_limit_w && *g.power_limit_w < *g.power_default_limit_w)
      power += " (default " + show_num(g.power_default_limit_w, "W", 0) + ")";
    t.add({std::to_string(g.index), gpu->bdf, show(g.name), memory_cell(g, host_ram), cc_cell(g),
           pair_of(show_hz(g.sm_clock_hz), show_hz(g.sm_clock_max_hz)),
           pair_of(show_hz(g.memory_clock_hz), show_hz(g.memory_clock_max_hz)), power,
           temperature_cell(g), show_num(g.fan_percent, "%", 0)});
  }
  return t;
}

// `lists_read`: NVML's link and process lists were read (false for a report that prints none).
Table health_table(const std::vector<const Gpu *> &gpus, bool lists_read) {
  Table t{"NVIDIA GPU state and health",
          {"GPU", "throttle reasons", "persistence", "compute mode", "MIG", "display", "ECC",
           "retired / remapped", "PCIe", "NVLink", "processes"},
          {}};
  for (const Gpu *gpu : gpus) {
    const NvmlGpu &g = *gpu->nvml;
    t.add({std::to_string(g.index), throttle_cell(g), show(g.persistence_mode, "on", "off"),
           show(g.compute_mode), show(g.mig_enabled, "enabled", "disabled"),
           show(g.display_active, "active", "none"), ecc_cell(g), memory_health_cell(g),
           pcie_cell(g), nvlink_cell(g, lists_read), processes_cell(g, lists_read)});
  }
  return t;
}

// nvidia-smi topo -p2p's abbreviations.
std::string p2p_code(const OptStr &status) {
  static const std::map<std::string, std::string> codes{{"ok", "OK"},
                                                        {"chipset-not-supported", "CNS"},
                                                        {"gpu-not-supported", "GNS"},
                                                        {"topology-not-supported", "TNS"},
                                                        {"disabled-by-regkey", "DR"},
                                                        {"not-supported", "NS"},
                                                        {"unknown", "U"}};
  if (!status)
    return kUnknown;
  auto it = codes.find(*status);
  return it == codes.end() ? *status : it->second;
}

using PairCell = std::string (*)(const GpuPair &);

std::string topology_cell(const GpuPair &p) {
  return show(p.topology);
}

std::string p2p_cell(const GpuPair &p) {
  std::string r = p2p_code(p.p2p_read), w = p2p_code(p.p2p_write);
  return r == w ? r : r + "/" + w;
}

// Each GPU pair's cell, looked up by NVML index: one pass over the pairs.
std::map<std::pair<int, int>, std::string> cells(const std::vector<GpuPair> &pairs, PairCell cell) {
  std::map<std::pair<int, int>, std::string> out;
  for (const auto &p : pairs)
    out[{std::min(p.a, p.b), std::max(p.a, p.b)}] = cell(p);
  return out;
}

Table matrix(const std::string &title, const std::vector<const Gpu *> &gpus,
             const std::vector<GpuPair> &pairs, PairCell cell) {
  auto by_pair = cells(pairs, cell);
  Table t{title, {""}, {}};
  for (const Gpu *g : gpus)
    t.header.push_back(fmt::format("GPU{}", g->nvml->index));
  for (const Gpu *row : gpus) {
    std::vector<std::string> r{fmt::format("GPU{}", row->nvml->index)};
    for (const Gpu *col : gpus) {
      int a = row->nvml->index, b = col->nvml->index;
      if (a == b) {
        r.push_back("X");
        continue;
      }
      auto it = by_pair.find({std::min(a, b), std::max(a, b)});
      r.push_back(it == by_pair.end() ? std::string(kUnknown) : it->second);
    }
    t.add(std::move(r));
  }
  return t;
}

// Past kTopologyMatrixMaxGpus: per GPU, how many peers it reaches by each link class
// ("NV18: 7, n/a: 4992"), in linear time and width.
Table summary(const std::string &title, const std::vector<const Gpu *> &gpus,
              const std::vector<GpuPair> &pairs, PairCell cell) {
  std::map<int, std::map<std::string, std::size_t>> classes;
  for (const auto &[ab, value] : cells(pairs, cell))
    if (ab.first != ab.second) {
      ++classes[ab.first][value];
      ++classes[ab.second][value];
    }
  Table t{title, {"GPU", "peers by link class"}, {}};
  for (const Gpu *g : gpus) {
    auto &counts = classes[g->nvml->index];
    std::size_t known = 0;
    for (const auto &[value, n] : counts)
      known += n;
    if (known + 1 < gpus.size())
      counts[kUnknown] += gpus.size() - 1 - known;
    std::string row;
    for (const auto &[value, n] : counts)
      row += fmt::format("{}{}: {}", row.empty() ? "" : ", ", value, n);
    t.add({fmt::format("GPU{}", g->nvml->index), row.empty() ? std::string("-") : row});
  }
  return t;
}

} // namespace

std::vector<Table> info_nvidia_tables(const Snapshot &s) {
  const auto &nv = s.nvidia;
  bool nvidia_on_bus = std::any_of(s.gpus.begin(), s.gpus.end(), [](const Gpu &g) {
    return g.vendor == "NVIDIA" || g.vendor_id == "0x10de";
  });
  // A machine with no NVIDIA GPU and no NVIDIA driver gets no NVIDIA section at all; the GPU
  // view already says there is no GPU.
  if (nv.nvml_status == "not-found" && !nvidia_on_bus && !nv.kernel_module_version)
    return {};
  if (!nv.nvml_status && !nvidia_on_bus)
    return {};

  std::vector<Table> tables{driver_table(nv)};
  auto gpus = nvml_gpus(s);
  if (gpus.empty())
    return tables;
  tables.push_back(readings_table(gpus, s.host.memory.total_bytes));
  tables.push_back(health_table(gpus, unread(s, "gpus.nvml") == nullptr));
  if (gpus.size() > kTopologyMatrixMaxGpus) {
    auto big = fmt::format(" for {} GPUs, summarised: per GPU, its peers counted by link class "
                           "(--json has every pair)",
                           gpus.size());
    tables.push_back(summary("GPU topology" + big +
                                 " (NV# = # NVLinks, PIX = one PCIe bridge, "
                                 "PXB = several, PHB = through the host bridge, NODE = same NUMA "
                                 "node, SYS = across NUMA nodes)",
                             gpus, nv.pairs, topology_cell));
    tables.push_back(summary("Peer-to-peer read / write" + big +
                                 " (OK, CNS = chipset not supported, GNS = GPU not supported, TNS "
                                 "= topology not supported, DR = disabled by regkey, NS = not "
                                 "supported, U = unknown)",
                             gpus, nv.pairs, p2p_cell));
  } else if (gpus.size() >= 2) {
    tables.push_back(matrix("GPU topology (as nvidia-smi topo -m: NV# = # NVLinks, PIX = one "
                            "PCIe bridge, PXB = several, PHB = through the host bridge, NODE = "
                            "same NUMA node, SYS = across NUMA nodes)",
                            gpus, nv.pairs, topology_cell));
    tables.push_back(matrix("Peer-to-peer read / write (as nvidia-smi topo -p2p: OK, CNS = "
                            "chipset not supported, GNS = GPU not supported, TNS = topology not "
                            "supported, DR = disabled by regkey, NS = not supported, U = unknown)",
                            gpus, nv.pairs, p2p_cell));
  }
  return tables;
}

} // namespace dlrig
