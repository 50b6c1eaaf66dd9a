#include "dlrig/platform/vendor_library.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>

namespace dlrig {
namespace {

namespace fs = std::filesystem;

// The library's file in `dir` (see library_candidates); nullopt when there is none.
std::optional<std::string> library_in(const fs::path &dir, const std::string &prefix) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return std::nullopt;
  std::vector<std::string> names;
  for (const auto &e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name == prefix || name.rfind(prefix + ".", 0) == 0)
      names.push_back(name);
  }
  if (names.empty())
    return std::nullopt;
  auto rank = [&](const std::string &n) {
    return n == prefix ? 100 : static_cast<int>(std::count(n.begin(), n.end(), '.'));
  };
  std::sort(names.begin(), names.end(), [&](const std::string &a, const std::string &b) {
    return rank(a) != rank(b) ? rank(a) < rank(b) : a > b;
  });
  return (dir / names.front()).string();
}

} // namespace

std::vector<LibraryCandidate> library_candidates(const Snapshot *snapshot,
                                                 const std::optional<std::string> &override_path,
                                                 const LibrarySearch &search) {
  if (override_path && !override_path->empty())
    return {{*override_path, search.env_name}};
  std::vector<LibraryCandidate> out;
  std::set<std::string> seen;
  auto add = [&](const std::optional<std::string> &path, const std::string &origin) {
    if (path && seen.insert(*path).second)
      out.push_back({*path, origin});
  };
  if (snapshot) {
    std::vector<const PythonEnv *> envs;
    for (bool active : {true, false})
      for (const auto &e : snapshot->software.python_envs)
        if (e.torch && e.active.value_or(false) == active)
          envs.push_back(&e);
    for (const PythonEnv *e : envs) {
      const std::string where =
          fmt::format("the torch environment {}", e->root.value_or(e->interpreter));
      if (e->site_packages) {
        const fs::path nv = fs::path(*e->site_packages) / "nvidia";
        add(library_in(nv / search.wheel_folder / "lib", search.file_prefix),
            where + " (pip wheel, nvidia/" + search.wheel_folder + ")");
        std::vector<fs::path> cu; // nvidia/cu13/lib
        std::error_code ec;
        if (fs::is_directory(nv, ec))
          for (const auto &d : fs::directory_iterator(nv, ec)) {
            const std::string name = d.path().filename().string();
            if (name.size() > 2 && name.rfind("cu", 0) == 0 &&
                std::all_of(name.begin() + 2, name.end(),
                            [](char c) { return c >= '0' && c <= '9'; }))
              cu.push_back(d.path());
          }
        std::sort(cu.rbegin(), cu.rend());
        for (const auto &d : cu)
          add(library_in(d / "lib", search.file_prefix),
              where + " (pip wheel, nvidia/" + d.filename().string() + ")");
      }
      if (e->torch->path)
        add(library_in(fs::path(*e->torch->path) / "lib", search.file_prefix),
            where + " (bundled in torch/lib)");
    }
    for (const auto &tk : snapshot->software.cuda_toolkits) {
      const std::string where = "the CUDA toolkit " + tk.root;
      add(library_in(fs::path(tk.root) / "lib64", search.file_prefix), where);
      std::error_code ec;
      const fs::path targets = fs::path(tk.root) / "targets";
      if (fs::is_directory(targets, ec))
        for (const auto &d : fs::directory_iterator(targets, ec))
          add(library_in(d.path() / "lib", search.file_prefix), where);
    }
  }
  for (const auto &soname : search.sonames)
    add(soname, "the loader's search path");
  return out;
}

dlrig::Result<OpenedLibrary>
open_first(const std::vector<LibraryCandidate> &candidates, const std::string &what,
           const std::function<std::optional<std::string>(const DynamicLibrary &)> &lacks) {
  std::vector<std::string> tried;
  for (const auto &c : candidates) {
    auto lib = DynamicLibrary::open({c.path});
    if (!lib) {
      if (c.path.find('/') != std::string::npos) // a soname's miss says nothing new
        tried.push_back(lib.error().message);
      continue;
    }
    if (auto missing = lacks(lib.value())) {
      tried.push_back(fmt::format("{} lacks {}", lib.value().path(), *missing));
      continue;
    }
    return OpenedLibrary{std::move(lib).value(), c};
  }
  std::string names;
  for (const auto &c : candidates)
    names += (names.empty() ? "" : ", ") + c.path;
  std::string error = fmt::format("{} not found (tried {})", what, names);
  for (std::size_t i = 0; i < tried.size(); ++i)
    error += (i ? "; " : ": ") + tried[i];
  return make_error(ErrorKind::not_found, error);
}

} // namespace dlrig
