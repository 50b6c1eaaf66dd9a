#pragma once
// `dlrig kb`: lists and searches the knowledge base, as tables for people and JSON for scripts.
// Pure functions of a KnowledgeBase and a query; the front door only prints what they return.
#include "dlrig/core/json.hpp"
#include "dlrig/core/result.hpp"
#include "dlrig/core/text.hpp"
#include "dlrig/kb/kb.hpp"
#include "dlrig/output/table.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlrig::kb {

// The topics `dlrig kb TOPIC` knows, in the order --help lists them.
const std::vector<std::string> &kb_topics();

struct KbQuery {
  std::string topic;  // gpus | archs | cuda | torch | links | models | cloud
  std::string filter; // words that must all match (case-insensitive); empty = everything
  std::optional<double> min_memory_gb; // gpus only: vendor-stated memory >= this
  std::string sort; // gpus only: a column key (kb_gpu_sort_keys); empty = catalog order
};

struct KbView {
  std::vector<Table> tables;            // what a person reads
  Json json;                            // {schema_version, context, topic, filter, items[, ...]}
  std::size_t matches = 0;              // items found; 0 = nothing matched the filter
  std::vector<std::string> suggestions; // the nearest names when nothing matched
};

// Sort keys of `dlrig kb gpus --sort`: name, memory, bandwidth, fp64, fp32, tf32, fp16, bf16,
// fp8, int8, tdp, year, price. Numbers sort high to low, unknown last.
const std::vector<std::string> &kb_gpu_sort_keys();

// Errors are usage errors: an unknown topic or sort key, --min-memory on another topic.
Result<KbView> kb_search(const KnowledgeBase &kb, const KbQuery &query);

// "24GB", "24 GB", "24" (GB) or "80GiB" (converted to GB) -> GB; an error naming the text.
Result<double> parse_size_gb(std::string_view text);

// Edit distance and "did you mean": core/text.hpp.
using dlrig::edit_distance;
using dlrig::nearest_names;

} // namespace dlrig::kb
