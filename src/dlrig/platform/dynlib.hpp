#pragma once
// Shared libraries loaded at run time (NVML, libcuda, cuBLASLt, NCCL): dlrig links none of them,
// so it runs on machines without a driver; a library that does not load is a finding.
//
// Each library's functions are listed once, in an entry-point table (an X-macro: see
// platform/nvml_entry_points.hpp), with their symbol names newest version first. The table
// generates a struct of EntryPoint<Fn> fields and a resolver that binds each field to the first
// name the library exports (`_v3` -> `_v2` -> plain) and remembers which name that was, so a
// note about a call names the symbol actually called.
#include "dlrig/core/result.hpp"

#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>

namespace dlrig {

// The address of one exported symbol, nullptr when the library does not export it. Production
// lookups are DynamicLibrary::lookup(); tests pass their own to hide names (an older driver).
using SymbolLookup = std::function<void *(const char *name)>;

class DynamicLibrary {
public:
  DynamicLibrary() = default;
  DynamicLibrary(const DynamicLibrary &) = delete;
  DynamicLibrary &operator=(const DynamicLibrary &) = delete;
  DynamicLibrary(DynamicLibrary &&other) noexcept;
  DynamicLibrary &operator=(DynamicLibrary &&other) noexcept;
  ~DynamicLibrary();

  // Tries each name in turn (as dlopen would search it); the error lists every attempt.
  static Result<DynamicLibrary> open(std::initializer_list<std::string> names);
  // The first of the symbol names that the library exports (e.g. "nvmlInit_v2", "nvmlInit");
  // nullptr when none is there.
  void *symbol(std::initializer_list<const char *> names) const;
  // This library's symbols, one name at a time, for an entry-point table's resolver (valid while
  // the library is loaded and not moved).
  SymbolLookup lookup() const {
    return [this](const char *name) { return symbol({name}); };
  }
  // Where the library was actually loaded from (dlinfo), or the name asked for.
  const std::string &path() const { return path_; }
  bool loaded() const { return handle_ != nullptr; }

private:
  void *handle_ = nullptr;
  std::string path_;
};

// One entry point of a table: the function pointer and the symbol name it was bound to. Not
// bound (nullptr) when the library exports none of the names; name() is then the newest name,
// the one a note should ask for.
template <class Fn> struct EntryPoint {
  Fn fn = nullptr;
  const char *bound = nullptr;  // the symbol found; nullptr when none was
  const char *newest = nullptr; // the first name of the table's list

  explicit operator bool() const { return fn != nullptr; }
  const char *name() const { return bound ? bound : newest; }
  // The version suffix of the bound symbol: 3 for "..._v3", 2 for "..._v2", 1 for a plain name;
  // 0 when not bound. Callers pick struct layouts by it.
  int version() const {
    if (!bound)
      return 0;
    std::string_view s(bound);
    auto at = s.rfind("_v");
    if (at == std::string_view::npos || at + 2 >= s.size())
      return 1;
    int v = 0;
    for (char c : s.substr(at + 2)) {
      if (c < '0' || c > '9')
        return 1;
      v = v * 10 + (c - '0');
    }
    return v;
  }
  template <class... Args> auto operator()(Args... args) const { return fn(args...); }

  // Binds to the first of names that lookup finds, newest first.
  void bind(const SymbolLookup &lookup, std::initializer_list<const char *> names) {
    fn = nullptr;
    bound = nullptr;
    newest = names.size() ? *names.begin() : nullptr;
    for (const char *name : names)
      if (void *address = lookup(name)) {
        fn = reinterpret_cast<Fn>(address);
        bound = name;
        return;
      }
  }
};

} // namespace dlrig

// --- helpers for entry-point tables ----------------------------------------------------------
// A table is a macro TABLE(X) that calls X(field, return type, (parameters), (argument names),
// symbol names newest first...) once per function, the names as bare identifiers (one to three of
// them). DLRIG_ENTRY_POINT_FIELD and DLRIG_ENTRY_POINT_BIND generate the struct and the resolver:
//
//   struct Table { MY_ENTRY_POINTS(DLRIG_ENTRY_POINT_FIELD) };
//   Table t; MY_ENTRY_POINTS(DLRIG_ENTRY_POINT_BIND)   // with `t` and `lookup` in scope

#define DLRIG_PP_NARGS_(_1, _2, _3, n, ...) n
#define DLRIG_PP_NARGS(...) DLRIG_PP_NARGS_(__VA_ARGS__, 3, 2, 1, 0)
#define DLRIG_PP_CAT_(a, b) a##b
#define DLRIG_PP_CAT(a, b) DLRIG_PP_CAT_(a, b)
#define DLRIG_PP_UNPAREN(...) __VA_ARGS__
// DLRIG_PP_FOR_EACH(m, ctx, a, b, c) -> m(ctx, a) m(ctx, b) m(ctx, c)
#define DLRIG_PP_FOR_EACH_1(m, ctx, a) m(ctx, a)
#define DLRIG_PP_FOR_EACH_2(m, ctx, a, b) m(ctx, a) m(ctx, b)
#define DLRIG_PP_FOR_EACH_3(m, ctx, a, b, c) m(ctx, a) m(ctx, b) m(ctx, c)
#define DLRIG_PP_FOR_EACH(m, ctx, ...)                                                             \
  DLRIG_PP_CAT(DLRIG_PP_FOR_EACH_, DLRIG_PP_NARGS(__VA_ARGS__))(m, ctx, __VA_ARGS__)
#define DLRIG_PP_STRING_ITEM(ctx, name) #name,

#define DLRIG_ENTRY_POINT_FIELD(field, ret, params, args, ...)                                     \
  ::dlrig::EntryPoint<ret(*) params> field;
#define DLRIG_ENTRY_POINT_BIND(field, ret, params, args, ...)                                      \
  t.field.bind(lookup, {DLRIG_PP_FOR_EACH(DLRIG_PP_STRING_ITEM, ~, __VA_ARGS__)});
