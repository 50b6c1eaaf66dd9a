#include "dlrig/platform/cublaslt.hpp"

#include <fmt/format.h>

namespace dlrig::cublaslt {

EntryPoints resolve(const SymbolLookup &lookup) {
  EntryPoints t;
  DLRIG_CUBLASLT_ENTRY_POINTS(DLRIG_ENTRY_POINT_BIND)
  return t;
}

std::vector<std::string> missing_required(const EntryPoints &t) {
  std::vector<std::string> out;
#define DLRIG_CUBLASLT_MISSING(field, ret, params, args, ...)                                      \
  if (!t.field && std::string_view(#field) != "get_status_name" &&                                 \
      std::string_view(#field) != "get_status_string" &&                                           \
      std::string_view(#field) != "get_cudart_version")                                            \
    out.emplace_back(t.field.name());
  DLRIG_CUBLASLT_ENTRY_POINTS(DLRIG_CUBLASLT_MISSING)
#undef DLRIG_CUBLASLT_MISSING
  return out;
}

std::string version_text(std::size_t v) {
  return fmt::format("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100);
}

std::string cuda_version_text(std::size_t v) {
  return fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
}

const LibrarySearch &library_search() {
  static const LibrarySearch s{"libcublasLt.so",
                               "cublas",
                               {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11"},
                               "DLRIG_CUBLASLT_LIBRARY"};
  return s;
}

std::vector<Candidate> candidates(const Snapshot *snapshot,
                                  const std::optional<std::string> &override_path) {
  return library_candidates(snapshot, override_path, library_search());
}

Library Library::open(const std::vector<Candidate> &candidates) {
  Library l;
  auto opened = open_first(candidates, "cuBLASLt", lacks_required(resolve, missing_required));
  if (!opened) {
    l.error_ = opened.error().message;
    return l;
  }
  l.library_ = std::move(opened.value().library);
  l.table_ = resolve(l.library_.lookup());
  l.path_ = l.library_.path();
  l.origin_ = opened.value().from.origin;
  l.version_ = l.table_.get_version();
  if (l.table_.get_cudart_version)
    l.cudart_ = l.table_.get_cudart_version();
  l.ready_ = true;
  return l;
}

std::string Library::status_text(Status s) const {
  const char *name = table_.get_status_name ? table_.get_status_name(s) : nullptr;
  const char *text = table_.get_status_string ? table_.get_status_string(s) : nullptr;
  std::string n = name && *name ? name : "cuBLAS status";
  return text && *text ? fmt::format("{} ({}): {}", n, s, text) : fmt::format("{} ({})", n, s);
}

} // namespace dlrig::cublaslt
