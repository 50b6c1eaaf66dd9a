#include "dlrig/probe/probe.hpp"

namespace dlrig {

void probe_pci_gpus(const ProbeContext& ctx) {
  ctx.note("pci", std::nullopt, "not probed yet by this dlrig");
}

} // namespace dlrig
