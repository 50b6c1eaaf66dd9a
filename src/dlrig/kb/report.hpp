#pragma once
// Printers of `dlrig kb`: what kb_search found, as tables, markdown, CSV and JSON.
#include "dlrig/kb/search.hpp"
#include "dlrig/output/print.hpp"

namespace dlrig::kb {

inline constexpr int kKbSchemaVersion = 1;

// The report for the printer layer; `v` must outlive it. CSV is every table of the view.
Report kb_report(const KbView &v);

} // namespace dlrig::kb
