#pragma once
// Printers of `dlrig kb`: the rows kb_search found as tables (figures in display units: GB,
// TFLOPS, GB/s) and as JSON items (base units: bytes, FLOP/s, B/s, bit/s).
#include "dlrig/core/json.hpp"
#include "dlrig/kb/search.hpp"
#include "dlrig/output/print.hpp"
#include "dlrig/output/table.hpp"

#include <vector>

namespace dlrig::kb {

inline constexpr int kKbSchemaVersion = 1;

// What a person reads: one table per listing; a GPU named exactly gets its figures with their
// sources; `cuda` with no filter also the driver branches and cuDNN.
std::vector<Table> kb_tables(const KbView &v);
// The document's members besides schema_version and context: topic, filter, items (and for
// `cuda` with no filter, branches and cudnn; when nothing matched, suggestions).
Json kb_json(const KbView &v);

// The report for the printer layer; `v` (and the knowledge base it points into) must outlive it.
// CSV is every table of the view.
Report kb_report(const KbView &v);

} // namespace dlrig::kb
