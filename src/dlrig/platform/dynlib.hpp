#pragma once
// Shared libraries loaded at run time (NVML, libcuda, cuBLASLt, NCCL): dlrig links none of them,
// so it runs on machines without a driver; a library that does not load is a finding.
#include "dlrig/core/result.hpp"

#include <initializer_list>
#include <string>

namespace dlrig {

class DynamicLibrary {
public:
  DynamicLibrary() = default;
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;
  DynamicLibrary(DynamicLibrary&& other) noexcept;
  DynamicLibrary& operator=(DynamicLibrary&& other) noexcept;
  ~DynamicLibrary();

  // Tries each name in turn (as dlopen would search it); the error lists every attempt.
  static Result<DynamicLibrary> open(std::initializer_list<std::string> names);
  // The first of the symbol names that the library exports (e.g. "nvmlInit_v2", "nvmlInit");
  // nullptr when none is there.
  void* symbol(std::initializer_list<const char*> names) const;
  // Where the library was actually loaded from (dlinfo), or the name asked for.
  const std::string& path() const { return path_; }
  bool loaded() const { return handle_ != nullptr; }

private:
  void* handle_ = nullptr;
  std::string path_;
};

} // namespace dlrig
