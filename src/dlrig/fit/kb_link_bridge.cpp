// Link bridge, compiled only while the knowledge base's lookups are not in the build (see
// fit/sources.cmake): an empty catalog, so that `dlrig fit` links and answers "no such model /
// GPU in the catalog" instead of failing to build. It is dropped automatically as soon as
// kb/sources.cmake lists more than the model seam; delete this file after that lands.
#include "dlrig/kb/kb.hpp"

namespace dlrig::kb {

const KnowledgeBase &builtin() {
  static const KnowledgeBase empty;
  return empty;
}
const GpuSpec *KnowledgeBase::find_gpu(std::string_view) const {
  return nullptr;
}
const GpuSpec *KnowledgeBase::find_gpu_by_pci(std::string_view, std::string_view) const {
  return nullptr;
}
const ModelArch *KnowledgeBase::find_model(std::string_view) const {
  return nullptr;
}

} // namespace dlrig::kb
