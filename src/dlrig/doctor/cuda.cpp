// CUDA toolkit and library-path checks: which toolkit builds extensions, which libraries the
// loader finds first. Each check's `source` names the public reports it rests on. PyTorch's
// wheels link their nvidia-* libraries through RPATH, so LD_LIBRARY_PATH entries shadow them
// (https://github.com/pytorch/pytorch/blob/main/.ci/manywheel/build_cuda.sh).
#include "dlrig/doctor/facts.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dlrig::doctor {
namespace {

std::vector<std::string> split_path(const std::string &v) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= v.size()) {
    auto end = v.find(':', start);
    if (end == std::string::npos)
      end = v.size();
    std::string part = v.substr(start, end - start);
    while (part.size() > 1 && part.back() == '/')
      part.pop_back();
    if (!part.empty())
      out.push_back(part);
    start = end + 1;
  }
  return out;
}

std::string dir_of(const std::string &path) {
  auto p = path.rfind('/');
  return p == std::string::npos ? "" : path.substr(0, p);
}

const CudaToolkit *toolkit_at(const Snapshot &s, const OptStr &root) {
  if (!root)
    return nullptr;
  for (const auto &t : s.software.cuda_toolkits)
    if (t.root == *root)
      return &t;
  return nullptr;
}

std::optional<std::string> torch_cuda(const Snapshot &s) {
  for (const auto &env : s.software.python_envs)
    if (env.torch && env.torch->cuda)
      return major_minor(*env.torch->cuda);
  return std::nullopt;
}

// How a cuDNN found on the machine compares with the one torch was built with, by the rule
// torch/backends/cudnn/__init__.py applies at start: another major never loads, and since cuDNN 7
// an older minor of the same major is refused ("cuDNN version incompatibility: PyTorch was
// compiled against (9, 1, 0) but found runtime version (9, 0, 0)"); a newer minor is accepted.
enum class CudnnFit { unknown, same, newer_minor, older_minor, other_major };
CudnnFit cudnn_fit(const OptStr &found, const OptStr &built_with) {
  if (!found || !built_with)
    return CudnnFit::unknown;
  auto f = parse_version(*found), b = parse_version(*built_with);
  if (f.empty() || b.empty())
    return CudnnFit::unknown;
  if (f[0] != b[0])
    return CudnnFit::other_major;
  if (f.size() < 2 || b.size() < 2)
    return CudnnFit::unknown;
  if (f[1] < b[1])
    return CudnnFit::older_minor;
  if (f[1] > b[1])
    return CudnnFit::newer_minor;
  // Same major.minor: a different patch is still another build of the sub-libraries.
  for (std::size_t i = 2; i < std::min<std::size_t>({f.size(), b.size(), 3}); ++i)
    if (f[i] != b[i])
      return CudnnFit::newer_minor;
  return CudnnFit::same;
}

// The cuDNN torch was built with: the one its wheel or conda package bundles, else the
// knowledge base's row for this release and variant.
OptStr torch_built_cudnn(const TorchInstall &t, const kb::KnowledgeBase &kb) {
  if (t.cudnn)
    return t.cudnn;
  if (t.version && t.variant)
    if (const auto *r = torch_release(kb, *t.version))
      if (const auto *v = r->variant(*t.variant); v && !v->cudnn.empty())
        return v->cudnn;
  return std::nullopt;
}

std::vector<Finding> ld_shadows(const Snapshot &s, const kb::KnowledgeBase &kb,
                                const DoctorOptions &) {
  auto ld = env_var(s, "LD_LIBRARY_PATH");
  if (!ld)
    return {};
  const PythonEnv *pip_torch = nullptr;
  for (const auto &env : s.software.python_envs)
    if (env.torch && env.torch->cuda)
      pip_torch = &env;
  if (!pip_torch)
    return {};
  auto dirs = split_path(*ld);
  std::vector<std::string> shadow_dirs, shadow_libs;
  bool refused = false; // a cuDNN torch refuses at start: another major, or an older minor
  auto scan = [&](const std::vector<FoundLibrary> &libs, const OptStr &torch_ver) {
    for (const auto &lib : libs) {
      if (lib.origin == OptStr("pip") || lib.origin == OptStr("conda"))
        continue;
      std::string d = dir_of(lib.path);
      if (lib.via_ld_library_path != OptBool(true) &&
          std::find(dirs.begin(), dirs.end(), d) == dirs.end())
        continue;
      if (std::find(shadow_dirs.begin(), shadow_dirs.end(), d) == shadow_dirs.end())
        shadow_dirs.push_back(d);
      shadow_libs.push_back(lib.path + (lib.version ? " (" + *lib.version + ")" : ""));
      auto fit = cudnn_fit(lib.version, torch_ver);
      if (fit == CudnnFit::other_major || fit == CudnnFit::older_minor)
        refused = true;
    }
  };
  scan(s.software.libraries.cudnn, torch_built_cudnn(*pip_torch->torch, kb));
  scan(s.software.libraries.cublas, std::nullopt);
  scan(s.software.libraries.nccl, std::nullopt);
  // A toolkit's lib64 on LD_LIBRARY_PATH shadows the wheel's cuBLAS, cuSPARSE, nvJitLink...
  if (const auto *t = toolkit_at(s, s.software.cuda_selection.by_ld_library_path))
    for (const auto &d : dirs)
      if (d.rfind(t->root, 0) == 0 &&
          std::find(shadow_dirs.begin(), shadow_dirs.end(), d) == shadow_dirs.end()) {
        shadow_dirs.push_back(d);
        shadow_libs.push_back("CUDA " + t->version.value_or("?") + " libraries in " + d);
      }
  if (shadow_dirs.empty())
    return {};
  std::vector<std::string> kept;
  for (const auto &d : dirs)
    if (std::find(shadow_dirs.begin(), shadow_dirs.end(), d) == shadow_dirs.end())
      kept.push_back(d);
  Finding f = make_finding(
      "cuda.ld-library-path-shadows", refused ? Severity::fail : Severity::warn,
      refused ? "LD_LIBRARY_PATH puts a cuDNN torch refuses (another major, or an older minor "
                "than torch was built with) ahead of the one torch bundles"
              : "LD_LIBRARY_PATH puts system CUDA libraries ahead of the ones torch bundles",
      "PyTorch wheels load their own cuDNN, cuBLAS and NCCL from site-packages/nvidia; a "
      "directory on LD_LIBRARY_PATH wins over them, and another version fails at import "
      "(\"undefined symbol: __nvJitLinkComplete_12_4\") or at the first convolution: torch "
      "refuses a cuDNN of another major or of an older minor than it was built with (\"cuDNN "
      "version incompatibility: PyTorch was compiled against (9, 1, 0) but found runtime version "
      "(9, 0, 0)\").",
      {kept.empty() ? std::string("unset LD_LIBRARY_PATH")
                    : "export LD_LIBRARY_PATH=" + join(kept, ":"),
       "and remove those directories where LD_LIBRARY_PATH is set (~/.bashrc, the activate "
       "script)"});
  f.with("LD_LIBRARY_PATH", *ld)
      .with("shadowing", join(shadow_libs, "; "))
      .with("python", pip_torch->interpreter)
      .with("torch", pip_torch->torch->version.value_or("n/a"));
  if (pip_torch->torch->cudnn)
    f.with("torch_cudnn", *pip_torch->torch->cudnn);
  return {f};
}

// The cuDNN folder this environment's torch bundles (pip's nvidia/cudnn/lib, conda's lib), as
// the probe listed it; nullptr when none is listed.
const FoundLibrary *bundled_cudnn(const Snapshot &s, const PythonEnv &env) {
  for (const auto &lib : s.software.libraries.cudnn) {
    if (lib.origin != OptStr("pip") && lib.origin != OptStr("conda"))
      continue;
    for (const OptStr &prefix : {env.site_packages, env.root})
      if (prefix && lib.path.rfind(*prefix + "/", 0) == 0)
        return &lib;
  }
  return nullptr;
}

std::vector<Finding> system_cudnn(const Snapshot &s, const kb::KnowledgeBase &kb,
                                  const DoctorOptions &) {
  // The loader's folders that LD_LIBRARY_PATH did not add: /etc/ld.so.conf (with its includes)
  // and the defaults. cuda.ld-library-path-shadows covers the others.
  std::vector<std::string> ld;
  if (auto v = env_var(s, "LD_LIBRARY_PATH"))
    ld = split_path(*v);
  std::vector<std::string> default_dirs;
  for (const auto &d : s.software.driver_libraries.search_path)
    if (std::find(ld.begin(), ld.end(), d) == ld.end())
      default_dirs.push_back(d);
  std::vector<Finding> out;
  for (const auto &env : s.software.python_envs) {
    if (!env.torch || !env.torch->cuda)
      continue;
    auto built = torch_built_cudnn(*env.torch, kb);
    bool bundled = env.torch->cudnn.has_value();
    for (const auto &lib : s.software.libraries.cudnn) {
      if (lib.origin == OptStr("pip") || lib.origin == OptStr("conda") ||
          lib.via_ld_library_path == OptBool(true) ||
          std::find(default_dirs.begin(), default_dirs.end(), dir_of(lib.path)) ==
              default_dirs.end())
        continue;
      auto fit = cudnn_fit(lib.version, built);
      // Another major has another soname (libcudnn.so.8 vs .so.9): it never mixes in.
      if (fit == CudnnFit::unknown || fit == CudnnFit::same || fit == CudnnFit::other_major)
        continue;
      // Without a bundled cuDNN this copy is the one torch loads: an older minor is refused.
      // With one, cuDNN loads its sub-libraries by name, so a copy of another version on the
      // default path can be mixed in.
      bool loads_this = !bundled;
      if (loads_this && fit != CudnnFit::older_minor)
        continue;
      // Beside a bundled copy, only a sub-library the bundled folder lacks is taken from this
      // one (its soname is looked up past torch's folders); a complete bundle never mixes.
      std::vector<std::string> missing;
      if (!loads_this) {
        const FoundLibrary *own = bundled_cudnn(s, env);
        if (!own || !own->members || !lib.members) {
          Finding f = could_not_check(
              "cuda.system-cudnn",
              fmt::format("whether the cuDNN torch bundles lacks a sub-library that the system "
                          "cuDNN {} in {} has (the folders' listings are",
                          *lib.version, dir_of(lib.path)));
          f.title += ")";
          out.push_back(std::move(f));
          continue;
        }
        for (const auto &m : *lib.members)
          if (std::find(own->members->begin(), own->members->end(), m) == own->members->end())
            missing.push_back(m);
        if (missing.empty())
          continue;
      }
      Finding f = make_finding(
          "cuda.system-cudnn", loads_this ? Severity::fail : Severity::warn,
          loads_this
              ? fmt::format("torch loads the system cuDNN {} from {}, older than the {} it was "
                            "built with",
                            *lib.version, dir_of(lib.path), *built)
              : fmt::format("The cuDNN {} torch bundles lacks {}, which the system cuDNN {} on "
                            "the default loader path has",
                            *built, join(missing, ", "), *lib.version),
          loads_this
              ? "This torch has no cuDNN of its own, so the dynamic loader takes the one in the "
                "ld.so.conf folders; torch refuses an older minor than it was built with at the "
                "first cuDNN call: \"cuDNN version incompatibility: PyTorch was compiled against "
                "... but found runtime version ...\"."
              : "torch finds its bundled libcudnn through its RUNPATH, and cuDNN opens its "
                "sub-libraries (libcudnn_ops, libcudnn_cnn, libcudnn_engines_*...) by name: one "
                "the bundled folder lacks is taken from the loader's cache, from this other "
                "version, and cuDNN stops at the first convolution with "
                "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH (\"version libcudnn_ops_infer.so.8 not "
                "defined\" with cuDNN 8).",
          {loads_this
               ? "pip install nvidia-cudnn-cu" +
                     std::to_string(parse_version(*env.torch->cuda)[0]) + "==" + *built +
                     "   # the cuDNN torch was built with, beside torch"
               : "remove the system copy if nothing else needs it (sudo apt remove 'libcudnn*', "
                 "or the files under " +
                     dir_of(lib.path) + ") and run sudo ldconfig",
           loads_this ? "or upgrade the system cuDNN to " + major_minor(*built) + " or newer"
                      : "or install the same cuDNN version system-wide as torch bundles (" +
                            *built + ")"});
      f.with("system_cudnn", lib.path + " (" + *lib.version + ")")
          .with("loader_folder", dir_of(lib.path) + " (ld.so.conf / default, not LD_LIBRARY_PATH)")
          .with("torch", env.torch->version.value_or("n/a"))
          .with("torch_cudnn", *built + (bundled ? " (bundled)" : " (built with; none bundled)"))
          .with("python", env.interpreter);
      if (!missing.empty())
        f.with("missing_from_bundle", join(missing, ", "));
      out.push_back(std::move(f));
    }
  }
  return out;
}

std::vector<Finding> multiple_toolkits(const Snapshot &s, const kb::KnowledgeBase &,
                                       const DoctorOptions &) {
  const auto &sel = s.software.cuda_selection;
  if (s.software.cuda_toolkits.size() < 2)
    return {};
  std::vector<std::pair<std::string, std::string>> chosen;
  if (sel.by_path)
    chosen.emplace_back("PATH (nvcc)", *sel.by_path);
  if (sel.by_cuda_home)
    chosen.emplace_back("CUDA_HOME", *sel.by_cuda_home);
  if (sel.by_ld_library_path)
    chosen.emplace_back("LD_LIBRARY_PATH", *sel.by_ld_library_path);
  bool disagree = false;
  for (const auto &c : chosen)
    disagree = disagree || c.second != chosen.front().second;
  if (!disagree)
    return {};
  // Point all three at the toolkit that matches torch's CUDA when there is one.
  std::string target = chosen.front().second;
  if (auto tc = torch_cuda(s))
    for (const auto &t : s.software.cuda_toolkits)
      if (t.version && major_minor(*t.version) == *tc)
        target = t.root;
  Finding f = make_finding(
      "cuda.multiple-toolkits", Severity::warn,
      "Several CUDA toolkits, and PATH, CUDA_HOME and LD_LIBRARY_PATH pick different ones",
      "Extensions are then compiled by one toolkit's nvcc and linked or loaded against another's "
      "libraries: builds fail with \"The detected CUDA version mismatches\" or load with "
      "undefined symbols.",
      {"export CUDA_HOME=" + target, "export PATH=$CUDA_HOME/bin:$PATH",
       "export LD_LIBRARY_PATH=$CUDA_HOME/lib64   # plus what else you need, without other "
       "toolkits"});
  for (const auto &[k, v] : chosen) {
    const auto *t = toolkit_at(s, v);
    f.with(k, v + (t && t->version ? " (" + *t->version + ")" : ""));
  }
  std::vector<std::string> roots;
  for (const auto &t : s.software.cuda_toolkits)
    roots.push_back(t.root);
  f.with("toolkits", join(roots, ", "));
  return {f};
}

// The toolkit whose nvcc builds extensions: CUDA_HOME first (what torch.utils.cpp_extension
// uses), else the nvcc on PATH, else /usr/local/cuda.
const CudaToolkit *build_toolkit(const Snapshot &s, std::string *by) {
  const auto &sel = s.software.cuda_selection;
  if (const auto *t = toolkit_at(s, sel.by_cuda_home)) {
    *by = "CUDA_HOME";
    return t;
  }
  if (const auto *t = toolkit_at(s, sel.by_path)) {
    *by = "PATH";
    return t;
  }
  if (const auto *t = toolkit_at(s, sel.usr_local_cuda)) {
    *by = "/usr/local/cuda";
    return t;
  }
  if (s.software.cuda_toolkits.size() == 1) {
    *by = "the only toolkit";
    return &s.software.cuda_toolkits.front();
  }
  return nullptr;
}

std::vector<Finding> toolkit_newer_than_driver(const Snapshot &s, const kb::KnowledgeBase &kb,
                                               const DoctorOptions &) {
  std::string by;
  const auto *t = build_toolkit(s, &by);
  auto dc = driver_cuda(s, kb);
  if (!t || !t->version || !dc || compare_versions(major_minor(*t->version), *dc) <= 0)
    return {};
  const auto *row = min_driver_for(kb, *t->version);
  Finding f = make_finding(
      "cuda.toolkit-newer-than-driver", Severity::warn,
      fmt::format("nvcc is CUDA {} but the driver supports CUDA {}", major_minor(*t->version), *dc),
      "Extensions and kernels built with this nvcc compile fine but fail to load or JIT on this "
      "driver (\"the provided PTX was compiled with an unsupported toolchain\", \"CUDA driver "
      "version is insufficient\").");
  const bool windows = on_windows(s);
  if (windows_driver(s))
    f.fix.push_back(windows_driver_fix(s, kb, *t->version));
  else if (row)
    f.fix.push_back(fmt::format("upgrade the driver to {} or newer (sudo ubuntu-drivers install)",
                                row->min_driver_linux));
  for (const auto &other : s.software.cuda_toolkits)
    if (other.version && compare_versions(major_minor(*other.version), *dc) <= 0) {
      f.fix.push_back(windows ? "or build with the older toolkit: set CUDA_HOME=" + other.root +
                                    " and put its bin folder first on PATH"
                              : "or build with the older toolkit: export CUDA_HOME=" + other.root +
                                    " PATH=" + other.root + "/bin:$PATH");
      break;
    }
  f.with("toolkit", t->root)
      .with("toolkit_version", *t->version)
      .with("selected_by", by)
      .with("driver_version", s.nvidia.driver_version.value_or("n/a"))
      .with("driver_cuda", *dc);
  return {f};
}

// What on this machine shows that CUDA extensions get built, each as a sentence for the
// evidence: CUDA_HOME or TORCH_CUDA_ARCH_LIST set (only extension builds read them), a
// torch.utils.cpp_extension JIT cache that holds builds, or a package pip compiled here that
// requires torch.
std::vector<std::string> extension_builds(const Snapshot &s) {
  std::vector<std::string> out;
  for (const char *var : {"CUDA_HOME", "CUDA_PATH", "TORCH_CUDA_ARCH_LIST", "TORCH_EXTENSIONS_DIR"})
    if (auto v = env_var(s, var))
      out.push_back(std::string(var) + " is set (" + *v + ")");
  if (s.software.torch_extensions_cache)
    out.push_back("torch.utils.cpp_extension has built into " + *s.software.torch_extensions_cache);
  for (const auto &env : s.software.python_envs)
    for (const auto &d : env.built_here)
      out.push_back(d + " was compiled here (" + env.interpreter + ")");
  return out;
}

std::vector<Finding> toolkit_mismatches_torch(const Snapshot &s, const kb::KnowledgeBase &,
                                              const DoctorOptions &) {
  std::string by;
  const auto *t = build_toolkit(s, &by);
  auto tc = torch_cuda(s);
  if (!t || !t->version || !tc)
    return {};
  auto tv = parse_version(*t->version), pv = parse_version(*tc);
  if (tv.empty() || pv.empty() || tv[0] == pv[0])
    return {};
  // The mismatch only bites when something compiles against torch: a note otherwise.
  auto builds = extension_builds(s);
  Finding f = make_finding(
      "cuda.toolkit-mismatches-torch", builds.empty() ? Severity::info : Severity::warn,
      fmt::format("The toolkit that builds extensions is CUDA {}, torch was built with CUDA {}{}",
                  major_minor(*t->version), *tc,
                  builds.empty() ? " (nothing here builds CUDA extensions)" : ""),
      "torch.utils.cpp_extension (and pip packages that compile CUDA code: flash-attn, apex, "
      "xformers...) refuse a toolkit of another CUDA major: \"The detected CUDA version "
      "mismatches the version that was used to compile PyTorch\". Training with the wheel "
      "itself does not use this toolkit.");
  bool have = false;
  // On Windows (not WSL2, which is Linux) the toolkit is the NVIDIA installer's and the shell is
  // cmd or PowerShell.
  const bool windows = on_windows(s);
  for (const auto &other : s.software.cuda_toolkits)
    if (other.version && major_minor(*other.version) == *tc) {
      f.fix = windows ? std::vector<std::string>{"set CUDA_HOME=" + other.root +
                                                 "   # and put its bin folder first on PATH"}
                      : std::vector<std::string>{"export CUDA_HOME=" + other.root,
                                                 "export PATH=$CUDA_HOME/bin:$PATH"};
      have = true;
    }
  if (!have && windows) {
    f.fix = {fmt::format("install CUDA Toolkit {} from https://developer.nvidia.com/"
                         "cuda-toolkit-archive",
                         *tc),
             fmt::format("setx CUDA_HOME \"C:\\Program Files\\NVIDIA GPU Computing "
                         "Toolkit\\CUDA\\v{}\"   # then open a new terminal",
                         *tc)};
  } else if (!have) {
    auto v = parse_version(*tc);
    f.fix = {fmt::format("sudo apt install cuda-toolkit-{}-{}", v[0], v.size() > 1 ? v[1] : 0),
             fmt::format("export CUDA_HOME=/usr/local/cuda-{}", *tc),
             "export PATH=$CUDA_HOME/bin:$PATH"};
  }
  if (builds.empty())
    for (auto &step : f.fix)
      step = "before building a CUDA extension: " + step;
  f.with("toolkit", t->root)
      .with("toolkit_version", *t->version)
      .with("selected_by", by)
      .with("torch_cuda", *tc)
      .with("extension_builds", builds.empty() ? "none found" : join(builds, "; "));
  return {f};
}

std::vector<Finding> no_cuda_home(const Snapshot &s, const kb::KnowledgeBase &,
                                  const DoctorOptions &) {
  if (nvidia_gpus(s).empty() || !s.software.cuda_toolkits.empty() || env_var(s, "CUDA_HOME") ||
      env_var(s, "CUDA_PATH") || !torch_cuda(s))
    return {};
  Finding f = make_finding(
      "cuda.no-toolkit", Severity::info,
      "No CUDA toolkit: PyTorch runs, but CUDA extensions cannot be built",
      "Wheels bundle the CUDA runtime, so training needs no toolkit; packages that compile CUDA "
      "code at install time fail with \"CUDA_HOME environment variable is not set\".",
      {"only if you build extensions: sudo apt install cuda-toolkit-X-Y (matching torch's CUDA) "
       "&& export CUDA_HOME=/usr/local/cuda-X.Y"});
  f.with("torch_cuda", *torch_cuda(s)).with("toolkits", "none");
  return {f};
}

const BenchLibrary kCublasLt{"cuda.cublaslt-not-found",
                             "cuBLASLt",
                             "libcublasLt.so",
                             "nvidia-cublas",
                             "libcublas",
                             "DLRIG_CUBLASLT_LIBRARY",
                             "PyTorch's GPU matmuls and dlrig bench's gpu.gemm.* cannot load it",
                             nullptr};

std::vector<Finding> cublaslt_not_found(const Snapshot &s, const kb::KnowledgeBase &,
                                        const DoctorOptions &) {
  return bench_library_missing(s, s.software.cublaslt_files, kCublasLt);
}

} // namespace

std::vector<Check> cuda_checks() {
  return {
      {"cuda.ld-library-path-shadows", "cuda", Severity::fail,
       "LD_LIBRARY_PATH puts a system CUDA or cuDNN ahead of what the wheel bundles",
       "software.env.LD_LIBRARY_PATH, software.libraries (cudnn, cublas, nccl), "
       "software.cuda_selection.by_ld_library_path, software.python_envs[].torch",
       "a CUDA torch is installed and a system cuDNN/cuBLAS/NCCL or a toolkit's lib64 sits in an "
       "LD_LIBRARY_PATH directory; fail when that cuDNN is one torch refuses: another major, or "
       "the same major with an older minor than torch's",
       "export LD_LIBRARY_PATH without those directories (the exact value is printed)",
       "https://github.com/pytorch/pytorch/issues/80637, "
       "https://github.com/pytorch/pytorch/issues/111469, "
       "https://github.com/pytorch/pytorch/issues/134929; "
       "RPATH https://github.com/pytorch/pytorch/blob/main/.ci/manywheel/build_cuda.sh; the "
       "version rule https://github.com/pytorch/pytorch/blob/main/torch/backends/cudnn/__init__.py",
       ld_shadows},
      {"cuda.system-cudnn", "cuda", Severity::fail,
       "A system cuDNN on the default loader path that torch loads or mixes in",
       "software.libraries.cudnn, software.driver_libraries.search_path, "
       "software.env.LD_LIBRARY_PATH, software.python_envs[].torch (cudnn, version, variant), kb "
       "torch variants (cudnn)",
       "a CUDA torch and a system cuDNN of the same major in an ld.so.conf or default folder (not "
       "LD_LIBRARY_PATH): fail when torch bundles no cuDNN and that copy is an older minor than "
       "torch was built with; warn when torch bundles one of another version that lacks a "
       "sub-library the system copy has (could not check when either folder was not listed)",
       "pip install the nvidia-cudnn wheel torch was built with, or remove or upgrade the system "
       "copy (sudo ldconfig after)",
       "the version rule: "
       "https://github.com/pytorch/pytorch/blob/main/torch/backends/cudnn/__init__.py, "
       "https://github.com/pytorch/pytorch/issues/80637; the system fallback: "
       "https://github.com/pytorch/pytorch/issues/101314, "
       "https://github.com/pytorch/pytorch/issues/104591; a sub-library missing from the "
       "bundle taken from the system: https://github.com/pytorch/pytorch/issues/185512, "
       "https://github.com/pytorch/pytorch/issues/188892; loader order (LD_LIBRARY_PATH, "
       "RUNPATH, ld.so.cache, defaults): https://man7.org/linux/man-pages/man8/ld.so.8.html",
       system_cudnn},
      {"cuda.multiple-toolkits", "cuda", Severity::warn,
       "Several toolkits, and PATH, CUDA_HOME and LD_LIBRARY_PATH disagree",
       "software.cuda_toolkits, software.cuda_selection",
       "two or more toolkits and the ones PATH, CUDA_HOME and LD_LIBRARY_PATH select differ",
       "point CUDA_HOME, PATH and LD_LIBRARY_PATH at one toolkit (torch's CUDA when installed)",
       "https://github.com/lipzh5/ResearchProgress/issues/11; "
       "https://github.com/pytorch/pytorch/issues/73047",
       multiple_toolkits},
      {"cuda.toolkit-newer-than-driver", "cuda", Severity::warn,
       "nvcc newer than the driver supports",
       "software.cuda_selection, software.cuda_toolkits, nvidia.cuda_driver_version, kb cuda",
       "the toolkit that builds extensions (CUDA_HOME, PATH, /usr/local/cuda) is newer than the "
       "driver's CUDA",
       "upgrade the driver, or build with an older toolkit",
       "https://github.com/fauxpilot/fauxpilot/issues/19; "
       "https://github.com/triton-inference-server/server/issues/2193; "
       "CUDA Toolkit Release Notes, Table 3 "
       "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/",
       toolkit_newer_than_driver},
      {"cuda.toolkit-mismatches-torch", "cuda", Severity::warn,
       "The extension-building toolkit's CUDA major differs from torch's",
       "software.cuda_selection, software.cuda_toolkits, software.python_envs[].torch.cuda, "
       "software.python_envs[].built_here, software.torch_extensions_cache, software.env "
       "(CUDA_HOME, CUDA_PATH, TORCH_CUDA_ARCH_LIST, TORCH_EXTENSIONS_DIR)",
       "CUDA_HOME/nvcc major differs from torch.version.cuda major: warn when something here "
       "builds CUDA extensions (CUDA_HOME, CUDA_PATH, TORCH_CUDA_ARCH_LIST or "
       "TORCH_EXTENSIONS_DIR set; a non-empty torch_extensions JIT cache; a package pip compiled "
       "here that requires torch), else info",
       "export CUDA_HOME to a toolkit of torch's CUDA, or install one",
       "https://github.com/lipzh5/ResearchProgress/issues/11; "
       "https://github.com/pytorch/pytorch/issues/73047; the CUDA_HOME lookup, version check and "
       "JIT build folder: "
       "https://github.com/pytorch/pytorch/blob/main/torch/utils/cpp_extension.py; locally built "
       "wheels carry a linux_* platform tag: https://peps.python.org/pep-0600/",
       toolkit_mismatches_torch},
      {"cuda.no-toolkit", "cuda", Severity::info, "No CUDA toolkit for building extensions",
       "software.cuda_toolkits, software.env.CUDA_HOME/CUDA_PATH, software.python_envs[].torch",
       "a CUDA torch, an NVIDIA GPU and no toolkit or CUDA_HOME (info only)",
       "install cuda-toolkit-X-Y and export CUDA_HOME when building extensions",
       "https://github.com/NVIDIA/flownet2-pytorch/issues/218", no_cuda_home},
      {"cuda.cublaslt-not-found", "cuda", Severity::warn,
       "cuBLASLt (libcublasLt) is nowhere PyTorch and dlrig bench look",
       "software.cublaslt_files (the folders listed and the files found), "
       "software.python_envs[].torch, gpus[]",
       "an NVIDIA GPU and a PyTorch built for CUDA, and no libcublasLt.so* in "
       "DLRIG_CUBLASLT_LIBRARY "
       "(when set, alone), the torch environments' site-packages nvidia/cublas/lib, nvidia/cu*/lib "
       "and torch/lib, a conda environment's lib, the CUDA toolkits' lib64 and targets/*/lib, or "
       "the loader's folders; could not check on a snapshot without that listing",
       "pip install nvidia-cublas-cuXX (torch's CUDA major) or reinstall torch from its index; "
       "or export DLRIG_CUBLASLT_LIBRARY=/path/to/libcublasLt.so.XX",
       "the wheels' dependency and RPATH: "
       "https://github.com/pytorch/pytorch/blob/main/.ci/manywheel/build_cuda.sh; "
       "https://github.com/pytorch/pytorch/issues/88882 (import torch fails on libcublasLt.so.11, "
       "which the nvidia/cublas/lib wheel folder holds)",
       cublaslt_not_found},
  };
}

} // namespace dlrig::doctor
