#pragma once
// Printers of a FitReport: JSON (schema_version 1, documented in docs/fit.md) and the human /
// markdown tables. Bytes print in decimal units (GB = 10^9), as GPU memory is sold.
#include "dlrig/core/json.hpp"
#include "dlrig/fit/fit.hpp"
#include "dlrig/output/table.hpp"

#include <string>
#include <vector>

namespace dlrig::fit {

inline constexpr int kFitSchemaVersion = 1;

Json to_json(const FitReport &r);

// One GPU: breakdown, verdict, time, suggestions. Several GPUs (--all-gpus): one summary table.
std::vector<Table> to_tables(const FitReport &r, bool summary);

std::string show_duration(double seconds); // "2.3 ms", "41 s", "3.2 h", "5.1 d"

} // namespace dlrig::fit
