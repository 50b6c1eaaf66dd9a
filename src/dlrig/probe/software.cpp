#include "dlrig/probe/probe.hpp"

namespace dlrig {

void probe_software(const ProbeContext& ctx) {
  ctx.note("software", std::nullopt, "not probed yet by this dlrig");
}

} // namespace dlrig
