#pragma once
// `dlrig kb`: lists and searches the knowledge base. Pure functions of a KnowledgeBase and a
// query returning typed rows; kb/report.* prints them (tables, markdown, CSV, JSON).
#include "dlrig/core/result.hpp"
#include "dlrig/core/text.hpp"
#include "dlrig/kb/kb.hpp"

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

// `dlrig kb cuda DRIVER`: what that driver runs.
struct DriverAnswer {
  std::string driver;                // "550.54.14"
  std::string max_cuda;              // newest CUDA it runs natively; empty when unknown
  std::string minor_compat_max_cuda; // newest of that major through minor-version compatibility
};

// One torch wheel: a release and one of its variants.
struct TorchMatch {
  const TorchRelease *release = nullptr;
  const TorchVariant *variant = nullptr;
};

// What `dlrig kb` found, as typed rows: pointers into the knowledge base searched, which must
// outlive the view. Only the rows of the query's topic are filled. kb/report.* prints it.
struct KbView {
  KbQuery query;
  const KnowledgeBase *kb = nullptr;
  std::vector<const GpuSpec *> gpus;
  bool gpu_detail = false; // the filter named exactly one GPU: show each figure with its source
  std::vector<const ArchSpec *> archs;
  std::optional<DriverAnswer> driver; // cuda: the filter was a driver version
  std::vector<const CudaDriverMin *> cuda;
  bool cuda_overview = false; // cuda with no filter: also driver branches and cuDNN
  std::vector<TorchMatch> torch;
  bool torch_install = false; // the filter picked one release or a few wheels: pip commands
  std::vector<const LinkSpec *> links;
  std::vector<const ModelArch *> models;
  std::vector<const CloudInstance *> cloud;
  std::size_t matches = 0;              // items found; 0 = nothing matched the filter
  std::vector<std::string> suggestions; // the nearest names when nothing matched
};

// Sort keys of `dlrig kb gpus --sort`: name, memory, bandwidth, fp64, fp32, tf32, fp16, bf16,
// fp8, int8, tdp, year, price. Numbers sort high to low, unknown last.
const std::vector<std::string> &kb_gpu_sort_keys();

// Errors are usage errors: an unknown topic or sort key, --min-memory on another topic.
Result<KbView> kb_search(const KnowledgeBase &kb, const KbQuery &query);

// "24GB", "24 GB", "24" or "80GiB" -> GB as GPU vendors state it (memory_gb). Vendors size GPU
// memory in powers of two, so their GB is a GiB (memory_bytes = memory_gb x 2^30): "24GiB" is
// the 24 of an RTX 4090, not 25.8. An error naming the text.
Result<double> parse_size_gb(std::string_view text);

// The family as `dlrig kb models` names it: decoder, moe_decoder, encoder, encoder_decoder, cnn,
// unet.
const char *model_family_name(ModelFamily f);

// Edit distance and "did you mean": core/text.hpp.
using dlrig::edit_distance;
using dlrig::nearest_names;

} // namespace dlrig::kb
