#pragma once
// The GPU part of the machine snapshot: every display/3D controller on the PCI bus, what NVML says
// of NVIDIA GPUs, and what amdgpu's sysfs files say of AMD GPUs. Units: bytes, hertz, watts,
// degrees Celsius, GT/s for PCIe link speed. nullopt means unknown (JSON null).
#include "dlrig/core/snapshot_host.hpp"

namespace dlrig {

struct PcieLink {
  OptF64 current_gts; // transfer rate per lane, GT/s (2.5, 5, 8, 16, 32, 64)
  std::optional<int> current_width;
  OptF64 max_gts;
  std::optional<int> max_width;
};
DLRIG_JSON(PcieLink, current_gts, current_width, max_gts, max_width)

// One device on the way from a GPU up to its root port, nearest first.
struct PciHop {
  std::string bdf;  // 0000:00:01.0
  OptStr kind;      // switch-port | root-port | thunderbolt | bridge
  OptStr vendor_id; // "0x8086"
  OptStr device_id;
  OptStr name;   // from pci.ids
  PcieLink link; // link of this hop's upstream side
};
DLRIG_JSON(PciHop, bdf, kind, vendor_id, device_id, name, link)

struct NvLink {
  int link = 0;
  OptBool active;
  OptStr remote_bdf;  // peer's PCI bus id
  OptStr remote_kind; // gpu | switch | cpu
  OptU64 speed_bps; // per-direction data rate of this link, bits/s (unknown when NVML does not say)
};
DLRIG_JSON(NvLink, link, active, remote_bdf, remote_kind, speed_bps)

struct GpuProcess {
  std::uint32_t pid = 0;
  OptU64 used_memory_bytes;
  OptStr name; // process name from /proc/PID/comm when readable
};
DLRIG_JSON(GpuProcess, pid, used_memory_bytes, name)

struct RemappedRows {
  OptU64 correctable;
  OptU64 uncorrectable;
  OptBool pending;
  OptBool failure;
};
DLRIG_JSON(RemappedRows, correctable, uncorrectable, pending, failure)

// What NVML reports of one NVIDIA GPU.
struct NvmlGpu {
  int index = 0; // NVML index (PCI order)
  OptStr name;
  OptStr uuid; // removed by --redact
  OptU64 memory_total_bytes;
  OptU64 memory_used_bytes;
  OptStr compute_capability; // "9.0"
  OptStr architecture;       // from the knowledge base: Hopper, Ada Lovelace...
  OptF64 sm_clock_hz;
  OptF64 sm_clock_max_hz;
  OptF64 memory_clock_hz;
  OptF64 memory_clock_max_hz;
  OptF64 power_draw_w;
  OptF64 power_limit_w; // enforced limit
  OptF64 power_default_limit_w;
  OptF64 temperature_c;
  OptF64 slowdown_temperature_c;
  OptF64 fan_percent;
  OptU64 throttle_reasons_mask;              // nvmlClocksEventReasons bit mask
  std::vector<std::string> throttle_reasons; // names of the active bits
  OptBool persistence_mode;
  OptStr compute_mode; // default | exclusive-thread | prohibited | exclusive-process
  OptBool mig_enabled;
  OptBool ecc_enabled;
  OptU64 ecc_uncorrected_volatile;
  OptU64 ecc_corrected_volatile;
  OptU64 ecc_uncorrected_aggregate;
  OptU64 retired_pages; // single + double bit retired pages
  OptBool retired_pages_pending;
  RemappedRows remapped_rows;
  OptBool display_active;
  std::optional<int> pcie_gen_current;
  std::optional<int> pcie_gen_max;
  std::optional<int> pcie_width_current;
  std::optional<int> pcie_width_max;
  OptU64 pcie_replay_counter;
  std::vector<NvLink> nvlinks;
  std::vector<GpuProcess> processes;
  // NVLink-fabric registration (nvmlDeviceGetGpuFabricInfo; Hopper and later on an NVLink fabric):
  // not-started | in-progress | completed; null when NVML does not report it (older GPUs and
  // drivers, no fabric). On NVSwitch systems Fabric Manager completes it.
  OptStr fabric_state = std::nullopt;
  // NVML's error text when the registration completed with an error; null when it succeeded.
  OptStr fabric_error = std::nullopt;
  // dedicated: NVML reports the GPU's own memory (memory_total_bytes); unified: NVML answers that
  // memory info is not supported because the GPU has no memory of its own and shares the system
  // memory with the CPU (GB10, DGX Spark); null when NVML did not say.
  OptStr memory_kind = std::nullopt;
  // The GPU reaches the CPU's memory coherently over NVLink-C2C (GH200, GB200, GB10).
  OptBool c2c_enabled = std::nullopt;
};
DLRIG_JSON(NvmlGpu, index, name, uuid, memory_total_bytes, memory_used_bytes, compute_capability,
           architecture, sm_clock_hz, sm_clock_max_hz, memory_clock_hz, memory_clock_max_hz,
           power_draw_w, power_limit_w, power_default_limit_w, temperature_c,
           slowdown_temperature_c, fan_percent, throttle_reasons_mask, throttle_reasons,
           persistence_mode, compute_mode, mig_enabled, ecc_enabled, ecc_uncorrected_volatile,
           ecc_corrected_volatile, ecc_uncorrected_aggregate, retired_pages, retired_pages_pending,
           remapped_rows, display_active, pcie_gen_current, pcie_gen_max, pcie_width_current,
           pcie_width_max, pcie_replay_counter, nvlinks, processes, fabric_state, fabric_error,
           memory_kind, c2c_enabled)

// What the amdgpu driver's sysfs files report of one AMD GPU.
struct AmdGpu {
  OptU64 vram_total_bytes;
  OptU64 vram_used_bytes;
  OptF64 busy_percent;
  OptF64 temperature_c; // edge (or junction when edge is absent)
  OptF64 power_w;       // average or input power
  OptF64 power_cap_w;
  OptF64 sclk_hz; // current shader clock
  OptF64 sclk_max_hz;
  OptF64 mclk_hz;
  OptF64 mclk_max_hz;
};
DLRIG_JSON(AmdGpu, vram_total_bytes, vram_used_bytes, busy_percent, temperature_c, power_w,
           power_cap_w, sclk_hz, sclk_max_hz, mclk_hz, mclk_max_hz)

struct Gpu {
  std::string bdf;  // PCI bus id, 0000:01:00.0
  OptStr vendor;    // NVIDIA | AMD | Intel | other
  OptStr vendor_id; // "0x10de"
  OptStr device_id; // "0x2684"
  OptStr subsystem_vendor_id;
  OptStr subsystem_device_id;
  OptStr pci_class; // "0x030000"
  OptStr name;
  OptStr name_source; // kb | pci.ids | nvml
  std::optional<int> numa_node;
  OptStr driver; // nvidia | nouveau | amdgpu | i915 | xe | vfio-pci; nullopt = none bound
  PcieLink link; // the GPU's own link
  std::vector<PciHop> path;   // upstream devices, nearest first, ending at the root port
  OptBool behind_thunderbolt; // a Thunderbolt/USB4 controller is on the path (eGPU)
  OptBool behind_switch;      // a PCIe switch is on the path
  OptStr
      narrowest_hop; // bdf of the slowest link on the way (the GPU's own bdf if it is its own link)
  OptF64 narrowest_gts;
  std::optional<int> narrowest_width;
  std::optional<NvmlGpu> nvml;
  std::optional<AmdGpu> amd;
};
DLRIG_JSON(Gpu, bdf, vendor, vendor_id, device_id, subsystem_vendor_id, subsystem_device_id,
           pci_class, name, name_source, numa_node, driver, link, path, behind_thunderbolt,
           behind_switch, narrowest_hop, narrowest_gts, narrowest_width, nvml, amd)

// Peer-to-peer and topology between two NVIDIA GPUs (NVML indices a < b).
struct GpuPair {
  int a = 0;
  int b = 0;
  OptStr topology; // NV<n> | PIX | PXB | PHB | NODE | SYS, as nvidia-smi topo -m prints it
  OptStr p2p_read; // ok | chipset-not-supported | gpu-not-supported | topology-not-supported |
                   // disabled-by-regkey | not-supported | unknown
  OptStr p2p_write;
  OptStr p2p_nvlink;
};
DLRIG_JSON(GpuPair, a, b, topology, p2p_read, p2p_write, p2p_nvlink)

// A GPU whose NVML calls answered NVML_ERROR_GPU_IS_LOST ("The GPU has fallen off the bus or has
// otherwise become inaccessible", nvml.h).
struct LostGpu {
  int index = 0; // NVML's
  OptStr bdf;    // when NVML gave its PCI bus id before it was lost
};
DLRIG_JSON(LostGpu, index, bdf)

struct NvidiaDriver {
  OptStr nvml_status; // ok | not-found | init-failed | not-probed | timed-out
  OptStr nvml_error;  // NVML's error text, e.g. "Driver/library version mismatch"
  std::optional<int>
      nvml_error_code;        // nvmlReturn_t of the failed call (18 = LIB_RM_VERSION_MISMATCH)
  OptStr nvml_library;        // path NVML was loaded from
  OptStr driver_version;      // 550.54.15
  OptStr cuda_driver_version; // highest CUDA the driver supports, "12.4"
  OptStr nvml_version;
  OptStr kernel_module_version; // /proc/driver/nvidia/version
  std::optional<int> gpu_count;
  std::vector<GpuPair> pairs;
  std::vector<LostGpu> lost_gpus; // answered GPU_IS_LOST during the probe
};
DLRIG_JSON(NvidiaDriver, nvml_status, nvml_error, nvml_error_code, nvml_library, driver_version,
           cuda_driver_version, nvml_version, kernel_module_version, gpu_count, pairs, lost_gpus)

} // namespace dlrig
