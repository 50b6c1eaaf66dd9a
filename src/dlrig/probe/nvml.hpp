#pragma once
// The NVML probe's parts that tests reach: the pure translations of NVML values into snapshot
// text, and the probe over an NVML session already opened (so tests can hide symbols). The
// library, its entry points and the readings live in platform/nvml.hpp.
#include "dlrig/core/snapshot.hpp"
#include "dlrig/platform/nvml.hpp"
#include "dlrig/probe/probe.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dlrig {

// NVML's bus id "00000000:2A:00.0" as sysfs spells it: "0000:2a:00.0" (4-digit domain, lower
// case). Text that is not a bus id comes back lower-cased and otherwise unchanged.
std::string normalize_bus_id(std::string_view nvml_bus_id);

// nvmlSystemGetCudaDriverVersion's integer (1000 * major + 10 * minor) as "12.4"; nullopt for
// values that are not a version (<= 0).
OptStr cuda_version_text(int version);

// nvmlGpuTopologyLevel_t as nvidia-smi topo -m prints it: 0/10 PIX, 20 PXB, 30 PHB, 40 NODE,
// 50 SYS; nullopt for other values.
OptStr topology_level_name(int level);

// nvmlGpuP2PStatus_t as the snapshot spells it: ok, chipset-not-supported, gpu-not-supported,
// topology-not-supported, disabled-by-regkey, not-supported, unknown.
OptStr p2p_status_name(int status);

// nvmlGpuFabricState_t: not-started (1), in-progress (2), completed (3); nullopt for 0 (the GPU
// is on no fabric) and other values.
OptStr fabric_state_name(int state);

// nvmlComputeMode_t: default, exclusive-thread, prohibited, exclusive-process.
OptStr compute_mode_name(int mode);

// Names of the set bits of an nvmlClocksEventReasons mask, lowest bit first (gpu-idle,
// applications-clocks-setting, sw-power-cap, hw-slowdown, sync-boost, sw-thermal-slowdown,
// hw-thermal-slowdown, hw-power-brake-slowdown, display-clock-setting); bits NVML added later
// print as their hex value, "0x200".
std::vector<std::string> clocks_event_reason_names(std::uint64_t mask);

// The kernel module's version from /proc/driver/nvidia/version ("NVRM version: NVIDIA UNIX
// x86_64 Kernel Module  550.54.15  Tue Mar ..." or "... Open Kernel Module for x86_64  550.54.15
// Release Build ..."); nullopt when no version follows "Kernel Module".
OptStr parse_nvidia_module_version(std::string_view text);

// The topology of two GPUs as nvidia-smi topo -m shows it: NV<n> when they share n active
// NVLinks (links between them, or both on an NVSwitch: the fewer of their switch links), else
// the PCIe level's name.
OptStr gpu_pair_topology(const Gpu &a, const Gpu &b, std::optional<int> pcie_level);

// The library probe_nvml loads: ProbeOptions::nvml_library, else DLRIG_NVML_LIBRARY from the
// probed environment, else libnvidia-ml.so.1.
std::string nvml_library_name(const ProbeContext &ctx);

// probe_nvml over a session already opened (its library path is what the snapshot records; a
// session that is not ready is recorded as not-found or init-failed): probe_nvml_readings, then
// the processes named from /proc/PID/comm through ctx.fs.
void probe_nvml_with(const ProbeContext &ctx, const nvml::Session &session);
// What NVML says, without reading any file. probe_nvml opens the session and calls this in a
// child process, waiting at most ProbeOptions::nvml_timeout for its answer.
void probe_nvml_readings(const ProbeContext &ctx, const nvml::Session &session);

} // namespace dlrig
