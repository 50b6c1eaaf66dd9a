#pragma once
// Printers of a PickResult: JSON (schema_version 1, documented in docs/pick.md: every option with
// its numbers and the rules applied), the human and markdown tables.
#include "dlrig/core/json.hpp"
#include "dlrig/output/print.hpp"
#include "dlrig/output/table.hpp"
#include "dlrig/pick/pick.hpp"
#include "dlrig/pick/upgrade.hpp"

#include <vector>

namespace dlrig::pick {

inline constexpr int kPickSchemaVersion = 1;

// `advice` (--from-this-machine) may be null. The members besides schema_version and context.
Json to_json(const PickResult &r, const UpgradeAdvice *advice = nullptr);
std::vector<Table> to_tables(const PickResult &r, const UpgradeAdvice *advice = nullptr);

// The report for the printer layer; `r` and `advice` must outlive it.
Report pick_report(const PickResult &r, const UpgradeAdvice *advice = nullptr);

} // namespace dlrig::pick
