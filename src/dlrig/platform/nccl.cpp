#include "dlrig/platform/nccl.hpp"

#include <fmt/format.h>

namespace dlrig::nccl {

EntryPoints resolve(const SymbolLookup &lookup) {
  EntryPoints t;
  DLRIG_NCCL_ENTRY_POINTS(DLRIG_ENTRY_POINT_BIND)
  return t;
}

// Optional: ncclGetErrorString (the codes are named without it) and ncclCommInitRankConfig (NCCL
// 2.14+; before it a job's communicator is made with ncclCommInitRank).
std::vector<std::string> missing_required(const EntryPoints &t) {
  std::vector<std::string> out;
#define DLRIG_NCCL_MISSING(field, ret, params, args, ...)                                          \
  if (!t.field && std::string_view(#field) != "get_error_string" &&                                \
      std::string_view(#field) != "comm_init_rank_config")                                         \
    out.emplace_back(t.field.name());
  DLRIG_NCCL_ENTRY_POINTS(DLRIG_NCCL_MISSING)
#undef DLRIG_NCCL_MISSING
  return out;
}

std::string version_text(int code) {
  if (code >= 10000)
    return fmt::format("{}.{}.{}", code / 10000, (code / 100) % 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, (code / 100) % 10, code % 100);
}

const LibrarySearch &library_search() {
  static const LibrarySearch s{"libnccl.so", "nccl", {"libnccl.so.2"}, "DLRIG_NCCL_LIBRARY"};
  return s;
}

std::vector<LibraryCandidate> candidates(const Snapshot *snapshot,
                                         const std::optional<std::string> &override_path) {
  return library_candidates(snapshot, override_path, library_search());
}

Library Library::open(const std::vector<LibraryCandidate> &candidates) {
  Library l;
  auto opened = open_first(candidates, "NCCL", lacks_required(resolve, missing_required));
  if (!opened) {
    l.error_ = opened.error().message;
    return l;
  }
  l.library_ = std::move(opened.value().library);
  l.table_ = resolve(l.library_.lookup());
  l.path_ = l.library_.path();
  l.origin_ = opened.value().from.origin;
  int v = 0;
  if (l.table_.get_version(&v) == kSuccess)
    l.version_ = v;
  l.ready_ = true;
  return l;
}

std::string Library::result_text(Result r) const {
  static const char *names[] = {"ncclSuccess",       "ncclUnhandledCudaError", "ncclSystemError",
                                "ncclInternalError", "ncclInvalidArgument",    "ncclInvalidUsage",
                                "ncclRemoteError",   "ncclInProgress"};
  const char *name = r >= 0 && r < 8 ? names[r] : "ncclResult";
  const char *text = table_.get_error_string ? table_.get_error_string(r) : nullptr;
  return text && *text ? fmt::format("{} ({}): {}", name, r, text)
                       : fmt::format("{} ({})", name, r);
}

} // namespace dlrig::nccl
