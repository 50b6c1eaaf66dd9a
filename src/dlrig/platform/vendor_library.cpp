#include "dlrig/platform/vendor_library.hpp"

#include "dlrig/platform/fs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <set>

namespace dlrig {
namespace {

namespace fs = std::filesystem;

// A folder's entry names; empty when it is not a folder.
using ListDir = std::function<std::vector<std::string>(const std::string &)>;

// The library's file in `dir` (see library_candidates); nullopt when there is none.
std::optional<std::string> library_in(const ListDir &list, const fs::path &dir,
                                      const std::string &prefix) {
  std::vector<std::string> names;
  for (const auto &name : list(dir.string()))
    if (name == prefix || name.rfind(prefix + ".", 0) == 0)
      names.push_back(name);
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

// Every folder of the snapshot's places (library_candidates), in order, each with its origin;
// `looked_in` gets every folder listed.
std::vector<LibraryCandidate> files_in_places(const Snapshot &snapshot, const LibrarySearch &search,
                                              const ListDir &list,
                                              std::vector<std::string> &looked_in) {
  std::vector<LibraryCandidate> out;
  std::set<std::string> seen;
  auto look = [&](const fs::path &dir, const std::string &origin) {
    looked_in.push_back(dir.string());
    auto path = library_in(list, dir, search.file_prefix);
    if (path && seen.insert(*path).second)
      out.push_back({*path, origin});
  };
  std::vector<const PythonEnv *> envs;
  for (bool active : {true, false})
    for (const auto &e : snapshot.software.python_envs)
      if (e.torch && e.active.value_or(false) == active)
        envs.push_back(&e);
  for (const PythonEnv *e : envs) {
    const std::string where =
        fmt::format("the torch environment {}", e->root.value_or(e->interpreter));
    if (e->site_packages) {
      const fs::path nv = fs::path(*e->site_packages) / "nvidia";
      look(nv / search.wheel_folder / "lib",
           where + " (pip wheel, nvidia/" + search.wheel_folder + ")");
      std::vector<std::string> cu; // nvidia/cu13/lib
      for (const auto &name : list(nv.string()))
        if (name.size() > 2 && name.rfind("cu", 0) == 0 &&
            std::all_of(name.begin() + 2, name.end(), [](char c) { return c >= '0' && c <= '9'; }))
          cu.push_back(name);
      std::sort(cu.rbegin(), cu.rend());
      for (const auto &d : cu)
        look(nv / d / "lib", where + " (pip wheel, nvidia/" + d + ")");
    }
    if (e->torch->path)
      look(fs::path(*e->torch->path) / "lib", where + " (bundled in torch/lib)");
    if (e->kind == std::optional<std::string>("conda") && e->root)
      look(fs::path(*e->root) / "lib", where + " (conda, lib)");
  }
  for (const auto &tk : snapshot.software.cuda_toolkits) {
    const std::string where = "the CUDA toolkit " + tk.root;
    look(fs::path(tk.root) / "lib64", where);
    for (const auto &d : list(tk.root + "/targets"))
      look(fs::path(tk.root) / "targets" / d / "lib", where);
  }
  return out;
}

} // namespace

std::vector<LibraryCandidate> library_candidates(const Snapshot *snapshot,
                                                 const std::optional<std::string> &override_path,
                                                 const LibrarySearch &search) {
  if (override_path && !override_path->empty())
    return {{*override_path, search.env_name}};
  std::vector<LibraryCandidate> out;
  if (snapshot) {
    std::vector<std::string> looked_in;
    out = files_in_places(*snapshot, search, list_directory, looked_in);
  }
  for (const auto &soname : search.sonames)
    if (std::none_of(out.begin(), out.end(),
                     [&](const LibraryCandidate &c) { return c.path == soname; }))
      out.push_back({soname, "the loader's search path"});
  return out;
}

LibraryFiles library_files(const Snapshot &snapshot,
                           const std::optional<std::string> &override_path,
                           const LibrarySearch &search, const FileSystem &files) {
  LibraryFiles out;
  const auto &loader = snapshot.software.driver_libraries.search_path;
  if (override_path && !override_path->empty()) {
    const std::string &p = *override_path;
    if (p.find('/') != std::string::npos) {
      out.looked_in.push_back(p);
      if (files.exists(p))
        out.found.push_back({p, search.env_name});
      return out;
    }
    for (const auto &dir : loader) { // a bare name: where the loader finds it
      out.looked_in.push_back(dir);
      auto names = files.list(dir);
      if (std::find(names.begin(), names.end(), p) != names.end())
        out.found.push_back({(fs::path(dir) / p).string(), search.env_name});
    }
    return out;
  }
  const ListDir list = [&files](const std::string &dir) { return files.list(dir); };
  for (auto &c : files_in_places(snapshot, search, list, out.looked_in))
    out.found.push_back({std::move(c.path), std::move(c.origin)});
  for (const auto &dir : loader) {
    if (std::find(out.looked_in.begin(), out.looked_in.end(), dir) != out.looked_in.end())
      continue;
    out.looked_in.push_back(dir);
    if (auto path = library_in(list, dir, search.file_prefix))
      if (std::none_of(out.found.begin(), out.found.end(),
                       [&](const LibraryFile &f) { return f.path == *path; }))
        out.found.push_back({*path, "the loader's search path"});
  }
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
