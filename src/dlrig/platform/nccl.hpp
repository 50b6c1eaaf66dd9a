#pragma once
// NCCL, the seam: libnccl.so.2 loaded at run time, its entry points resolved by dlsym from the one
// table in nccl_entry_points.hpp, found as the copy the user's PyTorch loads (the torch
// environment's nvidia/nccl/lib or nvidia/cu*/lib), else a CUDA toolkit's, else the loader's
// search path (vendor_library.hpp). A library that does not load or lacks a function is a
// Library that is not ready, with the reason in words. One per process; not thread-safe.
#include "dlrig/core/snapshot.hpp"
#include "dlrig/platform/dynlib.hpp"
#include "dlrig/platform/nccl_entry_points.hpp"
#include "dlrig/platform/vendor_library.hpp"

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace dlrig::nccl {

struct EntryPoints {
  DLRIG_NCCL_ENTRY_POINTS(DLRIG_ENTRY_POINT_FIELD)
};

EntryPoints resolve(const SymbolLookup &lookup);
// Unbound functions dlrig needs (ncclGetErrorString is optional), by symbol name.
std::vector<std::string> missing_required(const EntryPoints &t);

// ncclGetVersion's code as text: 22109 -> "2.21.9" (NCCL >= 2.9: major x 10000 + minor x 100 +
// patch); 2708 -> "2.7.8" (older: major x 1000 + minor x 100 + patch).
std::string version_text(int code);

// What NCCL is looked for as (file prefix, wheel folder, sonames, variable): the
// benchmarks' search and the probe's (software.nccl_files) are the same.
const LibrarySearch &library_search();
// DLRIG_NCCL_LIBRARY alone when set; else the torch environments' nvidia/nccl/lib and
// nvidia/cu*/lib, torch/lib, the CUDA toolkits, then libnccl.so.2.
std::vector<LibraryCandidate> candidates(const Snapshot *snapshot,
                                         const std::optional<std::string> &override_path);

class Library {
public:
  static Library open(const std::vector<LibraryCandidate> &candidates);
  Library(Library &&) noexcept = default;
  Library &operator=(Library &&) noexcept = default;
  bool ready() const { return ready_; }
  const std::string &error() const { return error_; }
  const EntryPoints &api() const { return table_; }
  const std::string &path() const { return path_; }
  const std::string &origin() const { return origin_; }
  int version() const { return version_; } // ncclGetVersion; 0 when it failed
  // "ncclInvalidUsage (5): invalid usage" (the library's own text when it has one).
  std::string result_text(Result r) const;

private:
  Library() = default;
  DynamicLibrary library_;
  EntryPoints table_{};
  std::string path_, origin_, error_;
  int version_ = 0;
  bool ready_ = false;
};

class Error : public std::runtime_error {
public:
  Error(Result result, std::string call, const std::string &message)
      : std::runtime_error(message), result_(result), call_(std::move(call)) {}
  Result result() const { return result_; }
  const std::string &call() const { return call_; }

private:
  Result result_;
  std::string call_;
};

} // namespace dlrig::nccl
