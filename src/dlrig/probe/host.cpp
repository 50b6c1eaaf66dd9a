#include "dlrig/probe/probe.hpp"

namespace dlrig {

void probe_host(const ProbeContext& ctx) {
  ctx.note("host", std::nullopt, "not probed yet by this dlrig");
}

} // namespace dlrig
