#pragma once
// PCIe link arithmetic on the snapshot's link readings, shared by the probe (narrowest hop) and
// the printers.

#include <optional>

namespace dlrig {

// Usable bandwidth of a link in GB/s per direction: GT/s x lanes x line-code efficiency. PCIe
// 1.x/2.x use 8b/10b line coding, 3.0-5.0 use 128b/130b (PCI-SIG base specifications); 6.0's
// FLIT mode is counted at full rate.
// This is the one PCIe bandwidth formula of the library; pcie_bytes_per_s is the same in bytes/s.
inline double pcie_link_gbps(double gts, int width) {
  double efficiency = gts <= 5.0 ? 8.0 / 10.0 : gts < 64.0 ? 128.0 / 130.0 : 1.0;
  return gts * width * efficiency / 8.0;
}

// The same in bytes/s; nullopt for a rate or width that is not positive (unknown).
inline std::optional<double> pcie_bytes_per_s(double gts, int width) {
  if (!(gts > 0) || width <= 0)
    return std::nullopt;
  return pcie_link_gbps(gts, width) * 1e9;
}

} // namespace dlrig
