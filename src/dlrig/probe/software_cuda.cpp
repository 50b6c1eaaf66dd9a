// Driver libraries, CUDA toolkits and the system's CUDA libraries (cuDNN, NCCL, cuBLAS,
// TensorRT). The dynamic loader's cache (/etc/ld.so.cache) is binary, so the loader's order is
// rebuilt from what it is made of: LD_LIBRARY_PATH, the ld.so.conf directories, the defaults.
#include "dlrig/probe/software_parse.hpp"
#include "dlrig/probe/software_probe.hpp"

#include <algorithm>
#include <fnmatch.h>
#include <set>

namespace dlrig {

namespace {

std::string env_value(const ProbeContext &ctx, const std::string &name) {
  auto it = ctx.env.find(name);
  return it == ctx.env.end() ? std::string() : it->second;
}

// A path as the probed machine resolves it, or the path itself when it does not resolve.
std::string resolved(const ProbeContext &ctx, const std::string &path) {
  return ctx.fs.canonical(path).value_or(path);
}

// ld.so.conf and its includes, depth-limited against include loops.
void read_ld_so_conf(const ProbeContext &ctx, const std::string &file, int depth,
                     std::vector<std::string> &dirs) {
  if (depth > 8)
    return;
  auto text = ctx.fs.read(file, 1 << 16);
  if (!text)
    return;
  auto conf = parse_ld_so_conf(*text);
  dirs.insert(dirs.end(), conf.dirs.begin(), conf.dirs.end());
  for (auto pattern : conf.includes) {
    if (pattern.front() != '/')
      pattern = join_path(parent_path(file), pattern);
    auto dir = parent_path(pattern);
    auto glob = base_name(pattern);
    for (const auto &name : ctx.fs.list(dir)) // sorted, as glob(3) returns them
      if (::fnmatch(glob.c_str(), name.c_str(), 0) == 0)
        read_ld_so_conf(ctx, join_path(dir, name), depth + 1, dirs);
  }
}

struct SearchDir {
  std::string dir;
  bool from_ld_library_path = false;
};

std::vector<SearchDir> loader_search_path(const ProbeContext &ctx) {
  std::vector<SearchDir> out;
  std::set<std::string> seen;
  auto add = [&](const std::string &d, bool from_env) {
    if (d.empty() || d.front() != '/' || !seen.insert(d).second)
      return;
    out.push_back({d, from_env});
  };
  for (const auto &d : split_path_list(env_value(ctx, "LD_LIBRARY_PATH")))
    add(d, true);
  std::vector<std::string> conf;
  read_ld_so_conf(ctx, "/etc/ld.so.conf", 0, conf);
  for (const auto &d : conf)
    add(d, false);
  for (const char *d : {"/lib64", "/usr/lib64", "/lib", "/usr/lib"})
    add(d, false);
  return out;
}

std::string origin_of(const std::string &path, const std::vector<CudaToolkit> &toolkits) {
  if (path.find("/stubs") != std::string::npos)
    return "toolkit-stub";
  if (path.find("/compat") != std::string::npos)
    return "compat";
  if (path_under(path, "/usr/lib/wsl"))
    return "wsl";
  if (path.find("/site-packages/") != std::string::npos ||
      path.find("/dist-packages/") != std::string::npos)
    return "pip";
  for (const auto &tk : toolkits)
    if (path_under(path, tk.root) && tk.root != "/usr")
      return std::find(tk.found_by.begin(), tk.found_by.end(), "conda") != tk.found_by.end()
                 ? "conda"
                 : "toolkit";
  if (path.find("conda") != std::string::npos || path.find("/envs/") != std::string::npos)
    return "conda";
  return "system";
}

// The version a library's file names carry in dir: the link target of `soname`, else the
// longest versioned name beside it.
OptStr library_version_in(const ProbeContext &ctx, const std::string &dir,
                          const std::vector<std::string> &names, const std::string &stem,
                          const std::string &soname) {
  if (auto real = ctx.fs.canonical(join_path(dir, soname)))
    if (auto v = library_version_from_name(base_name(*real), stem))
      if (v->find('.') != std::string::npos)
        return v;
  OptStr best;
  // libcuda.so.1's "1" is the ABI number, not the driver's version.
  for (const auto &n : names)
    if (auto v = library_version_from_name(n, stem); v && (n != soname || soname == stem))
      if (!best || v->size() > best->size())
        best = v;
  return best;
}

std::vector<FoundLibrary> find_driver_library(const ProbeContext &ctx,
                                              const std::vector<SearchDir> &dirs,
                                              const std::string &stem,
                                              const std::vector<CudaToolkit> &toolkits) {
  std::vector<FoundLibrary> found;
  const std::string soname = stem + ".1";
  for (const auto &sd : dirs) {
    auto names = ctx.fs.list(sd.dir);
    bool has_soname = std::binary_search(names.begin(), names.end(), soname);
    // A toolkit's stub ships only the unversioned name; it is what links and loads there.
    bool stub = !has_soname && sd.dir.find("/stubs") != std::string::npos &&
                std::binary_search(names.begin(), names.end(), stem);
    if (!has_soname && !stub)
      continue;
    FoundLibrary lib;
    lib.path = join_path(sd.dir, has_soname ? soname : stem);
    lib.origin = origin_of(lib.path, toolkits);
    // Stubs carry no version; WSL's libcuda.so.1.1 names the WSL shim's ABI, not the
    // Windows driver's version.
    if (lib.origin != "toolkit-stub" && lib.origin != "wsl")
      lib.version = library_version_in(ctx, sd.dir, names, stem, soname);
    lib.via_ld_library_path = sd.from_ld_library_path;
    found.push_back(std::move(lib));
  }
  return found;
}

// Whether root looks like a CUDA toolkit install.
bool is_toolkit_root(const ProbeContext &ctx, const std::string &root) {
  return ctx.fs.exists(root + "/bin/nvcc") || ctx.fs.exists(root + "/version.json") ||
         ctx.fs.exists(root + "/version.txt");
}

OptStr toolkit_version(const ProbeContext &ctx, const std::string &root,
                       const std::string &given_root) {
  if (auto text = ctx.fs.read(root + "/version.json", 1 << 16))
    if (auto v = parse_cuda_version_json(*text))
      return v;
  if (auto text = ctx.fs.read(root + "/version.txt", 4096))
    if (auto v = parse_cuda_version_txt(*text))
      return v;
  for (const auto &r : {root, given_root})
    if (auto v = cuda_version_from_dirname(base_name(r)))
      return v;
  // A conda env's toolkit records itself as the cuda-nvcc (or cuda-version) package.
  for (const auto &name : ctx.fs.list(root + "/conda-meta"))
    if (auto d = parse_conda_meta_name(name))
      if (d->name == "cuda-nvcc" || d->name == "cuda-version" || d->name == "cudatoolkit")
        return d->version;
  for (const auto &header :
       {root + "/include/cuda.h", root + "/targets/x86_64-linux/include/cuda.h"})
    if (auto text = ctx.fs.read(header, 1 << 16))
      if (auto v = parse_cuda_h_version(*text))
        return v;
  return std::nullopt;
}

void add_toolkit(const ProbeContext &ctx, std::vector<CudaToolkit> &toolkits,
                 const std::string &given_root, const std::string &how) {
  auto root = resolved(ctx, given_root);
  if (!is_toolkit_root(ctx, root))
    return;
  for (auto &tk : toolkits)
    if (tk.root == root) {
      if (std::find(tk.found_by.begin(), tk.found_by.end(), how) == tk.found_by.end())
        tk.found_by.push_back(how);
      return;
    }
  CudaToolkit tk;
  tk.root = root;
  tk.version = toolkit_version(ctx, root, given_root);
  if (ctx.fs.exists(root + "/bin/nvcc"))
    tk.nvcc = root + "/bin/nvcc";
  tk.found_by.push_back(how);
  toolkits.push_back(std::move(tk));
}

OptStr toolkit_holding(const std::string &path, const std::vector<CudaToolkit> &toolkits) {
  for (const auto &tk : toolkits)
    if (tk.root != "/usr" && path_under(path, tk.root))
      return tk.root;
  return std::nullopt;
}

void probe_toolkits(const ProbeContext &ctx, SoftwareInfo &sw) {
  auto &toolkits = sw.cuda_toolkits;
  for (const auto &name : ctx.fs.list("/usr/local"))
    if (name.rfind("cuda", 0) == 0)
      add_toolkit(ctx, toolkits, "/usr/local/" + name, "usr-local");
  for (const auto &name : ctx.fs.list("/opt")) {
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    if (lower.find("cuda") != std::string::npos)
      add_toolkit(ctx, toolkits, "/opt/" + name, "opt");
  }
  for (const auto &prefix : conda_env_prefixes(ctx))
    if (ctx.fs.exists(prefix + "/bin/nvcc"))
      add_toolkit(ctx, toolkits, prefix, "conda");

  auto &sel = sw.cuda_selection;
  for (const auto &dir : split_path_list(env_value(ctx, "PATH")))
    if (ctx.fs.exists(dir + "/nvcc")) {
      auto real_dir = parent_path(resolved(ctx, dir + "/nvcc"));
      auto root = base_name(real_dir) == "bin" ? parent_path(real_dir) : real_dir;
      add_toolkit(ctx, toolkits, root, "path");
      sel.by_path = resolved(ctx, root);
      break;
    }
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"}) {
    auto value = env_value(ctx, var);
    if (value.empty())
      continue;
    add_toolkit(ctx, toolkits, value, var == std::string("CUDA_HOME") ? "cuda-home" : "cuda-path");
    if (!sel.by_cuda_home)
      sel.by_cuda_home = resolved(ctx, value); // as given when it does not exist: a finding
  }
  for (const auto &dir : split_path_list(env_value(ctx, "LD_LIBRARY_PATH")))
    if (auto root = toolkit_holding(resolved(ctx, dir), toolkits)) {
      sel.by_ld_library_path = root;
      break;
    }
  if (ctx.fs.readlink("/usr/local/cuda"))
    sel.usr_local_cuda = ctx.fs.canonical("/usr/local/cuda");
  std::sort(toolkits.begin(), toolkits.end(),
            [](const CudaToolkit &a, const CudaToolkit &b) { return a.root < b.root; });
}

struct LibrarySpec {
  std::vector<FoundLibrary> CudaLibraries::*list;
  const char *stem;
};

void probe_cuda_libraries(const ProbeContext &ctx, SoftwareInfo &sw,
                          const std::vector<SearchDir> &loader_dirs) {
  // One entry per real folder: lib64 is often a link to lib or targets/<arch>/lib.
  std::vector<SearchDir> dirs;
  std::set<std::string> seen;
  for (const auto &d : loader_dirs)
    if (seen.insert(resolved(ctx, d.dir)).second)
      dirs.push_back(d);
  for (const auto &tk : sw.cuda_toolkits) {
    std::vector<std::string> more = {tk.root + "/lib64", tk.root + "/lib"};
    for (const auto &t : ctx.fs.list(tk.root + "/targets"))
      more.push_back(tk.root + "/targets/" + t + "/lib");
    for (const auto &d : more)
      if (ctx.fs.is_directory(d) && seen.insert(resolved(ctx, d)).second)
        dirs.push_back({d, false});
  }
  static const LibrarySpec specs[] = {{&CudaLibraries::cudnn, "libcudnn.so"},
                                      {&CudaLibraries::nccl, "libnccl.so"},
                                      {&CudaLibraries::cublas, "libcublas.so"},
                                      {&CudaLibraries::tensorrt, "libnvinfer.so"}};
  for (const auto &sd : dirs) {
    if (sd.dir.find("/stubs") != std::string::npos)
      continue;
    auto names = ctx.fs.list(sd.dir);
    if (names.empty())
      continue;
    for (const auto &spec : specs) {
      std::string stem = spec.stem;
      bool any = std::any_of(names.begin(), names.end(),
                             [&](const std::string &n) { return n.rfind(stem + ".", 0) == 0; });
      if (!any)
        continue;
      FoundLibrary lib;
      lib.version = library_version_in(ctx, sd.dir, names, stem, stem);
      lib.path = join_path(sd.dir, lib.version ? stem + "." + *lib.version : stem);
      lib.origin = origin_of(lib.path, sw.cuda_toolkits);
      lib.via_ld_library_path = sd.from_ld_library_path;
      if (spec.list == &CudaLibraries::cudnn)
        lib.members = cudnn_members(names);
      (sw.libraries.*spec.list).push_back(std::move(lib));
    }
  }
  // File names often carry only the major (libcudnn.so.9, libnccl.so.2, libcublas.so.13); the
  // header installed beside the library has the rest. A header of another major is not used.
  for (const auto &spec : specs) {
    auto header = std::find_if(kLibraryHeaders.begin(), kLibraryHeaders.end(),
                               [&](const LibraryHeader &h) { return h.stem == spec.stem; });
    if (header == kLibraryHeaders.end())
      continue;
    for (auto &lib : sw.libraries.*spec.list) {
      if (lib.version && lib.version->find('.') != std::string::npos)
        continue;
      auto dir = parent_path(lib.path);
      std::vector<std::string> headers;
      for (const auto &inc : {parent_path(dir) + "/include", std::string("/usr/include"),
                              "/usr/include/" + base_name(dir), std::string("/usr/local/include")})
        for (const auto &n : ctx.fs.list(inc))
          if (n.rfind(header->prefix, 0) == 0)
            headers.push_back(inc + "/" + n);
      for (const auto &h : headers)
        if (auto text = ctx.fs.read(h, 1 << 19))
          if (auto v = parse_version_header(*text, header->macros))
            if (!lib.version || v->rfind(*lib.version + ".", 0) == 0) {
              lib.version = v;
              break;
            }
    }
  }
}

} // namespace

void probe_software_cuda(const ProbeContext &ctx) {
  auto &sw = ctx.snapshot.software;
  probe_toolkits(ctx, sw);
  auto dirs = loader_search_path(ctx);
  for (const auto &d : dirs)
    sw.driver_libraries.search_path.push_back(d.dir);
  auto &dl = sw.driver_libraries;
  dl.libcuda = find_driver_library(ctx, dirs, "libcuda.so", sw.cuda_toolkits);
  dl.libnvidia_ml = find_driver_library(ctx, dirs, "libnvidia-ml.so", sw.cuda_toolkits);
  if (!dl.libcuda.empty()) {
    dl.stub_ahead = dl.libcuda.front().origin == std::optional<std::string>("toolkit-stub");
    dl.compat_ahead = dl.libcuda.front().origin == std::optional<std::string>("compat");
  } else {
    dl.stub_ahead = false; // nothing resolves at all: an empty list says so
    dl.compat_ahead = false;
  }
  probe_cuda_libraries(ctx, sw, dirs);
}

} // namespace dlrig
