#include "dlrig/probe/probe.hpp"

namespace dlrig {

void probe_nvml(const ProbeContext& ctx) {
  ctx.note("nvml", std::nullopt, "not probed yet by this dlrig");
}

} // namespace dlrig
