#pragma once
// `dlrig info` views of a snapshot. Each area builds its own tables in its own file.
#include "dlrig/core/snapshot.hpp"
#include "dlrig/output/table.hpp"

namespace dlrig {

std::vector<Table> info_host_tables(const Snapshot& s);     // info_host.cpp
std::vector<Table> info_gpu_tables(const Snapshot& s);      // info_gpu.cpp (PCI GPUs and links)
std::vector<Table> info_nvidia_tables(const Snapshot& s);   // info_nvidia.cpp (driver, NVML, topology)
std::vector<Table> info_software_tables(const Snapshot& s); // info_software.cpp

// Text or markdown (JSON is the snapshot itself).
std::string render_info(const Snapshot& s, Format f);

} // namespace dlrig
