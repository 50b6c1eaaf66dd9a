#pragma once
// Names for what /proc/cpuinfo says in codes. On Arm it gives no "model name", only the
// implementer ("CPU implementer : 0x41") and the core's part number ("CPU part : 0xd4f"); the
// knowledge base's data/arm_cpus.csv turns them into "ARM" and "Neoverse-V2" (Grace's core).
#include "dlrig/core/snapshot.hpp"
#include "dlrig/kb/kb.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dlrig::probe {

struct CpuNames {
  OptStr vendor;
  OptStr model;
};

// implementer "0x41", parts {{"0xd85", 10}, {"0xd87", 10}} -> "ARM", "10x Cortex-X925 +
// 10x Cortex-A725"; one part -> its name alone. A code not in the table is named by its code
// ("ARM part 0xd99"); an implementer that is not a hexadecimal code gives nothing.
CpuNames decode_arm_cpu(const kb::KnowledgeBase &kb, std::string_view implementer,
                        const std::vector<std::pair<std::string, int>> &parts);

} // namespace dlrig::probe
