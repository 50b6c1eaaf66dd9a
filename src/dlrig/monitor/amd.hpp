#pragma once
// AMD GPUs for `watch` and `serve`, through the amdgpu driver's sysfs files as `dlrig info` reads
// them (no ROCm): https://www.kernel.org/doc/html/latest/gpu/amdgpu/driver-misc.html and
// .../thermal.html. Each sample re-reads the files; what a file does not give stays unknown.
// pcie_bw is never read: the driver sleeps a second in it.
#include "dlrig/monitor/sample.hpp"
#include "dlrig/platform/fs.hpp"

#include <optional>
#include <string>
#include <vector>

namespace dlrig::monitor {

struct AmdDevice {
  std::string dir;    // "/sys/bus/pci/devices/0000:05:00.0"
  std::string bus_id; // "0000:05:00.0"
  std::string name;   // "AMD GPU 1002:74a1"
};

// The PCI devices bound to amdgpu, in bus order.
std::vector<AmdDevice> find_amd_gpus(const FileSystem &fs);

// Fills out's readings (not index) from the device's sysfs files.
void sample_amd(const FileSystem &fs, const AmdDevice &d, GpuSample &out);

// PCIe generation of a transfer rate per lane (2.5 GT/s -> 1 ... 64 GT/s -> 6); nullopt otherwise.
std::optional<double> pcie_generation(double gts);

} // namespace dlrig::monitor
