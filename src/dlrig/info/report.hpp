#pragma once
// `dlrig info` and `dlrig snapshot`: the views of a snapshot. Each area builds its own tables in
// its own file; report.cpp puts them together as one Report for the printer layer.
#include "dlrig/core/snapshot.hpp"
#include "dlrig/output/print.hpp"
#include "dlrig/output/table.hpp"

namespace dlrig {

std::vector<Table> info_host_tables(const Snapshot &s);     // host.cpp
std::vector<Table> info_gpu_tables(const Snapshot &s);      // gpu.cpp (PCI GPUs and links)
Table info_pci_gpu_table(const Snapshot &s);                // gpu.cpp: one row per PCI GPU
std::vector<Table> info_nvidia_tables(const Snapshot &s);   // nvidia.cpp (driver, NVML, topology)
std::vector<Table> info_software_tables(const Snapshot &s); // software.cpp

// The snapshot's note that a field was not read at all (its exact dotted path, as a collect_env
// report's snapshot notes what the report does not print); nullptr otherwise. An empty list under
// such a note is unknown, not "none".
const ProbeNote *unread(const Snapshot &s, std::string_view field); // report.cpp

// Past this many NVML GPUs the N x N topology and peer-to-peer matrices are summarised: one row
// per GPU counting its link classes (the JSON keeps every pair).
inline constexpr std::size_t kTopologyMatrixMaxGpus = 16;

// Text or markdown (JSON is the snapshot itself).
std::string render_info(const Snapshot &s, Format f, std::size_t width = 0);

// `dlrig info`: tables, markdown, CSV (the PCI GPU table) and the snapshot as JSON. The snapshot
// is referenced, not copied: it must outlive the report.
Report info_report(const Snapshot &s);
// `dlrig snapshot`: the snapshot document (JSON only).
Report snapshot_report(const Snapshot &s);

} // namespace dlrig
