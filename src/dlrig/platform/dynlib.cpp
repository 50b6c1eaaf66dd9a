#include "dlrig/platform/dynlib.hpp"

#include "dlrig/platform/fs.hpp"

#include <dlfcn.h>
#include <link.h>

#include <utility>

namespace dlrig {

DynamicLibrary::DynamicLibrary(DynamicLibrary &&other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), path_(std::move(other.path_)) {}

DynamicLibrary &DynamicLibrary::operator=(DynamicLibrary &&other) noexcept {
  if (this != &other) {
    if (handle_)
      dlclose(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

DynamicLibrary::~DynamicLibrary() {
  if (handle_)
    dlclose(handle_);
}

Result<DynamicLibrary> DynamicLibrary::open(std::initializer_list<std::string> names) {
  std::string errors;
  for (const auto &name : names) {
    // A path (not a bare soname for the loader's search) must be a regular file: dlopen() of a
    // FIFO blocks forever, of a device reads it.
    if (name.find('/') != std::string::npos)
      if (auto why = not_a_regular_file(name)) {
        errors += (errors.empty() ? "" : "; ") + why->message;
        continue;
      }
    void *handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = dlerror();
      errors += (errors.empty() ? "" : "; ") + std::string(why ? why : name + ": not found");
      continue;
    }
    DynamicLibrary lib;
    lib.handle_ = handle;
    lib.path_ = name;
    link_map *map = nullptr;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name)
      lib.path_ = map->l_name;
    return lib;
  }
  return make_error(errors);
}

void *DynamicLibrary::symbol(std::initializer_list<const char *> names) const {
  if (!handle_)
    return nullptr;
  for (const char *name : names)
    if (void *sym = dlsym(handle_, name))
      return sym;
  return nullptr;
}

} // namespace dlrig
