#pragma once
// cuBLASLt, the seam: libcublasLt.so loaded at run time, its entry points resolved by dlsym from
// the one table in cublaslt_entry_points.hpp. Which copy: preferably the one the user's PyTorch
// loads (nvidia/cublas/lib or nvidia/cu13/lib under the site-packages of the Python environment
// the snapshot found with torch, or torch/lib for wheels that bundle it), else a CUDA toolkit's,
// else the loader's search path (candidates()). A library that does not load or lacks a function
// is a Library that is not ready, with the reason in words: callers skip, never crash.
//
// dlrig keeps one Library per process; nothing here is thread-safe.
#include "dlrig/core/snapshot.hpp"
#include "dlrig/platform/cublaslt_entry_points.hpp"
#include "dlrig/platform/dynlib.hpp"
#include "dlrig/platform/vendor_library.hpp"

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace dlrig::cublaslt {

struct EntryPoints {
  DLRIG_CUBLASLT_ENTRY_POINTS(DLRIG_ENTRY_POINT_FIELD)
};

EntryPoints resolve(const SymbolLookup &lookup);
// The functions dlrig cannot do without that the table leaves unbound, by symbol name
// (cublasLtGetStatusName/String and cublasLtGetCudartVersion are optional).
std::vector<std::string> missing_required(const EntryPoints &t);

// 130100 -> "13.1.0" (cublasLtGetVersion: major x 10000 + minor x 100 + patch); CUDA runtime
// versions 12040 -> "12.4".
std::string version_text(std::size_t version);
std::string cuda_version_text(std::size_t version);

using Candidate = LibraryCandidate;
// What cuBLASLt is looked for as (file prefix, wheel folder, sonames, variable): the
// benchmarks' search and the probe's (software.cublaslt_files) are the same.
const LibrarySearch &library_search();
// Where to look, best first (vendor_library.hpp): `override_path` (DLRIG_CUBLASLT_LIBRARY) alone
// when given; else the torch environments' nvidia/cublas/lib and nvidia/cu*/lib, torch/lib, the
// CUDA toolkits, then the sonames libcublasLt.so.13, .12, .11.
std::vector<Candidate> candidates(const Snapshot *snapshot,
                                  const std::optional<std::string> &override_path);

class Library {
public:
  // Tries the candidates in order; the first that loads and exports every required function wins.
  static Library open(const std::vector<Candidate> &candidates);
  Library(Library &&) noexcept = default;
  Library &operator=(Library &&) noexcept = default;

  bool ready() const { return ready_; }
  // Why cuBLASLt cannot be used ("cuBLASLt not found (tried ...)"); empty when ready.
  const std::string &error() const { return error_; }
  const EntryPoints &api() const { return table_; }
  const std::string &path() const { return path_; }
  const std::string &origin() const { return origin_; }
  std::size_t version() const { return version_; }                      // cublasLtGetVersion
  std::optional<std::size_t> cudart_version() const { return cudart_; } // built for this CUDA
  // "CUBLAS_STATUS_NOT_SUPPORTED (15): the functionality requested is not supported".
  std::string status_text(Status s) const;

private:
  Library() = default;
  DynamicLibrary library_;
  EntryPoints table_{};
  std::string path_, origin_, error_;
  std::size_t version_ = 0;
  std::optional<std::size_t> cudart_;
  bool ready_ = false;
};

// A cuBLASLt call that did not succeed: the call, its status and the library's text.
class Error : public std::runtime_error {
public:
  Error(Status status, std::string call, const std::string &message)
      : std::runtime_error(message), status_(status), call_(std::move(call)) {}
  Status status() const { return status_; }
  const std::string &call() const { return call_; }

private:
  Status status_;
  std::string call_;
};

// Calls the entry point with args; throws Error when it is not bound or answers anything but
// kSuccess.
template <class Fn, class... Args>
void call(const Library &l, const EntryPoint<Fn> &e, Args... args) {
  if (!e)
    throw Error(kNotSupported, e.name(), l.path() + " does not export " + e.name());
  if (Status s = e(args...); s != kSuccess)
    throw Error(s, e.name(), std::string(e.name()) + ": " + l.status_text(s));
}

} // namespace dlrig::cublaslt
