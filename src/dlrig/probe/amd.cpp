#include "dlrig/probe/probe.hpp"

namespace dlrig {

void probe_amd(const ProbeContext& ctx) {
  ctx.note("amd", std::nullopt, "not probed yet by this dlrig");
}

} // namespace dlrig
