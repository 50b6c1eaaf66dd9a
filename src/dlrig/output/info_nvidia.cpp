#include "dlrig/output/info.hpp"

namespace dlrig {

std::vector<Table> info_nvidia_tables(const Snapshot&) { return {}; }

} // namespace dlrig
