#pragma once
// The host part of the machine snapshot. Units: bytes, hertz, bits per second; every reading is
// optional and nullopt means unknown (JSON null). docs/snapshot.md documents each field's source.
#include "dlrig/core/json.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dlrig {

using OptU64 = std::optional<std::uint64_t>;
using OptI64 = std::optional<std::int64_t>;
using OptF64 = std::optional<double>;
using OptStr = std::optional<std::string>;
using OptBool = std::optional<bool>;

struct OsInfo {
  OptStr kernel_release; // /proc/sys/kernel/osrelease
  OptStr kernel_version; // /proc/sys/kernel/version
  OptStr distro_id;      // /etc/os-release ID
  OptStr distro_version; // /etc/os-release VERSION_ID
  OptStr distro_name;    // /etc/os-release PRETTY_NAME
  OptStr arch;           // machine architecture, e.g. x86_64, aarch64
};
DLRIG_JSON(OsInfo, kernel_release, kernel_version, distro_id, distro_version, distro_name, arch)

struct NumaNode {
  int id = 0;
  OptStr cpus; // cpulist, e.g. "0-31,64-95"
  OptU64 memory_total_bytes;
};
DLRIG_JSON(NumaNode, id, cpus, memory_total_bytes)

struct CpuInfo {
  OptStr vendor; // GenuineIntel, AuthenticAMD, ...
  OptStr model;  // model name; on Arm decoded from the implementer and part codes
  OptStr soc;    // Arm: the SoC as /sys/devices/soc0 names it (family, machine, soc_id)
  std::optional<int> sockets;
  std::optional<int> cores;   // physical cores, all sockets
  std::optional<int> threads; // logical CPUs online
  OptF64 base_hz;
  OptF64 max_hz;
  std::vector<std::string>
      isa; // flags that matter to PyTorch: avx2, avx512f, avx512_bf16, amx_bf16...
  // The CPU's flags were read (/proc/cpuinfo "flags"/"Features", lscpu's "Flags"), so an empty
  // `isa` means none of those, not unknown. Not a JSON member of its own: JSON writes `isa` as
  // null when it is unknown, and reading [] sets it.
  bool isa_read = false;
  std::vector<NumaNode> numa_nodes;

  bool isa_known() const { return isa_read || !isa.empty(); }
};
// As DLRIG_JSON would, but `isa` is null when unknown (isa_known()).
void to_json(Json &j, const CpuInfo &c);
void from_json(const Json &j, CpuInfo &c);

struct MemoryInfo {
  OptU64 total_bytes;
  OptU64 available_bytes;
  OptU64 swap_total_bytes;
  OptU64 swap_free_bytes;
  // From the SMBIOS memory-device records (root only; VMs often have none): the installed
  // modules' type ("DDR4", "DDR5", "LPDDR5"; null when unreadable, unstated or mixed), the DIMM
  // slots the firmware lists and how many hold a module.
  OptStr type;
  std::optional<int> dimm_slots;
  std::optional<int> dimms_installed;
};
DLRIG_JSON(MemoryInfo, total_bytes, available_bytes, swap_total_bytes, swap_free_bytes, type,
           dimm_slots, dimms_installed)

struct ShmInfo {
  OptU64 size_bytes; // capacity of /dev/shm
  OptU64 free_bytes;
};
DLRIG_JSON(ShmInfo, size_bytes, free_bytes)

// A resource limit of the probing process. unlimited=true means RLIM_INFINITY.
struct Limit {
  OptU64 soft;
  OptU64 hard;
  OptBool soft_unlimited;
  OptBool hard_unlimited;
};
DLRIG_JSON(Limit, soft, hard, soft_unlimited, hard_unlimited)

struct Limits {
  Limit memlock_bytes;
  Limit open_files;
};
DLRIG_JSON(Limits, memlock_bytes, open_files)

struct Mount {
  std::string mountpoint;
  OptStr device; // /dev/nvme0n1p2, server:/export, tmpfs
  OptStr fstype;
  OptStr kind; // nvme | sata-ssd | hdd | network | tmpfs | virtual | unknown
  OptU64 total_bytes;
  OptU64 free_bytes;
};
DLRIG_JSON(Mount, mountpoint, device, fstype, kind, total_bytes, free_bytes)

struct NetInterface {
  std::string name;
  OptStr operstate; // up, down, unknown
  OptU64 speed_bps; // link speed in bits per second
  OptStr kind;      // ethernet | infiniband | loopback | virtual | wireless
};
DLRIG_JSON(NetInterface, name, operstate, speed_bps, kind)

struct RdmaPort {
  std::string device; // mlx5_0
  int port = 1;
  OptStr link_layer; // InfiniBand | Ethernet (RoCE)
  OptStr state;      // ACTIVE, DOWN
  OptU64 rate_bps;
};
DLRIG_JSON(RdmaPort, device, port, link_layer, state, rate_bps)

// A physical PCI/PCIe slot as the kernel lists it in /sys/bus/pci/slots/NAME (drivers/pci/slot.c;
// slots the firmware describes through ACPI or SMBIOS, and hot-plug slots). The slot's bus is the
// secondary bus of one bridge (a root port or a switch's downstream port), whose link capability
// gives the slot's electrical width.
struct PciSlot {
  std::string name;             // the directory's name: the firmware's slot number, e.g. "2"
  OptStr address;               // `address`: "0000:0c:00" (domain:bus:device, no function)
  OptBool occupied;             // a function at `address` is in /sys/bus/pci/devices
  OptF64 max_gts;               // `max_bus_speed` in GT/s per lane; null for "Unknown"
  OptF64 current_gts;           // `cur_bus_speed`, the same way
  std::optional<int> max_width; // lanes: `max_link_width` of the bridge above the slot's bus
  OptStr bridge;                // that bridge's bus id, e.g. "0000:00:03.1"
};
DLRIG_JSON(PciSlot, name, address, occupied, max_gts, current_gts, max_width, bridge)

struct HostInfo {
  OptStr hostname; // removed by --redact
  OsInfo os;
  CpuInfo cpu;
  MemoryInfo memory;
  ShmInfo shm;
  Limits limits;
  std::vector<Mount> mounts;
  std::vector<NetInterface> network;
  std::vector<RdmaPort> rdma;
  // null: the kernel lists no slot (/sys/bus/pci/slots empty or missing, as in VMs and on many
  // desktop boards), or the PCI bus was not probed; whether a slot is free is then unknown.
  std::optional<std::vector<PciSlot>> pci_slots;
};
DLRIG_JSON(HostInfo, hostname, os, cpu, memory, shm, limits, mounts, network, rdma, pci_slots)

} // namespace dlrig
