#pragma once
// Finding a CUDA library dlrig loads at run time (cuBLASLt, NCCL): preferably the very copy the
// user's PyTorch loads, else a CUDA toolkit's, else the loader's search path; and opening the
// first candidate that exports every function dlrig needs. The libraries' own seams
// (platform/cublaslt.*, platform/nccl.*) build on this.
#include "dlrig/core/result.hpp"
#include "dlrig/core/snapshot.hpp"
#include "dlrig/platform/dynlib.hpp"
#include "dlrig/platform/fs.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dlrig {

// One place to load a library from, and why it is on the list.
struct LibraryCandidate {
  std::string path;   // a file path, or a soname for the loader's search
  std::string origin; // "DLRIG_CUBLASLT_LIBRARY", "the torch environment /opt/venv (pip ...)"
};

struct LibrarySearch {
  std::string file_prefix;          // "libcublasLt.so": files named so, or so + ".N..."
  std::string wheel_folder;         // "cublas": site-packages/nvidia/<folder>/lib (CUDA 12 wheels)
  std::vector<std::string> sonames; // for the loader's search, newest first
  std::string env_name;             // "DLRIG_CUBLASLT_LIBRARY": its value, when set, alone
};

// Where to look, best first: `override_path` alone when given; else each Python environment of
// the snapshot with PyTorch (the active one first): its site-packages' nvidia/<wheel_folder>/lib
// and nvidia/cu*/lib (CUDA 13 wheels put every library in nvidia/cu13/lib), then torch/lib (wheels
// that bundle the library), then a conda environment's lib (conda's pytorch loads its libcublas
// and nccl packages from there); then each CUDA toolkit (lib64, targets/*/lib); then the sonames.
// Directories are listed on this machine; one without a matching file adds nothing. In a folder
// the shortest versioned name wins ("libnccl.so.2" over "libnccl.so.2.21.5" over "libnccl.so").
std::vector<LibraryCandidate> library_candidates(const Snapshot *snapshot,
                                                 const std::optional<std::string> &override_path,
                                                 const LibrarySearch &search);

// The same places listed through `fs` (a sysroot: the probe's seam), for the snapshot
// (software.cublaslt_files, software.nccl_files): every folder looked in and the files found,
// best first; instead of the sonames, the loader's folders of the snapshot
// (software.driver_libraries.search_path). `override_path` (the variable's value) is looked up
// alone: a path is found when it exists, a bare name in the loader's folders.
LibraryFiles library_files(const Snapshot &snapshot,
                           const std::optional<std::string> &override_path,
                           const LibrarySearch &search, const FileSystem &files);

// The first candidate that loads and for which `lacks` (given the loaded library) names no
// missing function. The error lists every candidate and why each was passed over:
// "<what> not found (tried a, b): a: <dlopen error>; b lacks ncclSend".
struct OpenedLibrary {
  DynamicLibrary library;
  LibraryCandidate from;
};
dlrig::Result<OpenedLibrary>
open_first(const std::vector<LibraryCandidate> &candidates, const std::string &what,
           const std::function<std::optional<std::string>(const DynamicLibrary &)> &lacks);

// open_first's `lacks` for an entry-point table: resolves the table in the library and names the
// first required function it lacks (nullopt when it has them all).
template <class Resolve, class MissingRequired>
std::function<std::optional<std::string>(const DynamicLibrary &)>
lacks_required(Resolve resolve, MissingRequired missing_required) {
  return [resolve, missing_required](const DynamicLibrary &lib) -> std::optional<std::string> {
    auto missing = missing_required(resolve(lib.lookup()));
    if (missing.empty())
      return std::nullopt;
    return missing.front();
  };
}

} // namespace dlrig
