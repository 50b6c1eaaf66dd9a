#pragma once
// Printers of a FitReport: JSON (schema_version 1, documented in docs/fit.md), the human /
// markdown tables and CSV. Bytes print in decimal units (GB = 10^9), as GPU memory is sold.
#include "dlrig/core/json.hpp"
#include "dlrig/fit/fit.hpp"
#include "dlrig/output/print.hpp"
#include "dlrig/output/table.hpp"

#include <string>
#include <vector>

namespace dlrig::fit {

inline constexpr int kFitSchemaVersion = 1;

Json to_json(const FitReport &r); // the members besides schema_version and context

// One GPU: breakdown, verdict, time, suggestions. Several GPUs (--all-gpus): one summary table.
std::vector<Table> to_tables(const FitReport &r, bool summary);

// CSV, numbers in base units (bytes, seconds): one row per memory component and GPU, or with
// `summary` one row per GPU; an unknown value is an empty cell.
Table to_csv(const FitReport &r, bool summary);

// The report for the printer layer; `r` must outlive it.
Report fit_report(const FitReport &r, bool summary);

std::string show_duration(double seconds); // "2.3 ms", "41 s", "3.2 h", "5.1 d"

} // namespace dlrig::fit
