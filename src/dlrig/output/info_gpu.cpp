#include "dlrig/output/info.hpp"

namespace dlrig {

std::vector<Table> info_gpu_tables(const Snapshot&) { return {}; }

} // namespace dlrig
