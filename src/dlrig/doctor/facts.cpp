#include "dlrig/doctor/facts.hpp"

#include <cmath>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace dlrig::doctor {

std::vector<int> parse_version(std::string_view v) {
  auto parsed = dlrig::parse_version(v);
  return std::vector<int>(parsed.parts.begin(), parsed.parts.end());
}

std::string major_minor(std::string_view v) {
  auto p = parse_version(v);
  if (p.empty())
    return "";
  return fmt::format("{}.{}", p[0], p.size() > 1 ? p[1] : 0);
}

bool is_nvidia(const Gpu &g) {
  return g.vendor == std::optional<std::string>("NVIDIA") || g.vendor_id == OptStr("0x10de") ||
         g.nvml.has_value();
}

bool is_amd(const Gpu &g) {
  return g.vendor == OptStr("AMD") || g.vendor_id == OptStr("0x1002") || g.amd.has_value();
}

std::vector<const Gpu *> nvidia_gpus(const Snapshot &s) {
  std::vector<const Gpu *> out;
  for (const auto &g : s.gpus)
    if (is_nvidia(g))
      out.push_back(&g);
  return out;
}

std::string gpu_name(const Gpu &g) {
  if (g.nvml && g.nvml->name)
    return *g.nvml->name;
  return g.name.value_or("unknown GPU");
}

std::string gpu_label(const Gpu &g) {
  // A GPU named by a collect_env report has no bus id.
  if (g.bdf.empty())
    return g.nvml ? fmt::format("GPU {} ({})", g.nvml->index, gpu_name(g)) : gpu_name(g);
  if (g.nvml)
    return fmt::format("GPU {} ({}, {})", g.nvml->index, gpu_name(g), g.bdf);
  return fmt::format("{} ({})", gpu_name(g), g.bdf);
}

static std::string strip_0x(const OptStr &v) {
  if (!v)
    return "";
  std::string s = *v;
  if (s.rfind("0x", 0) == 0 || s.rfind("0X", 0) == 0)
    s = s.substr(2);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

const kb::GpuSpec *gpu_spec(const Gpu &g, const kb::KnowledgeBase &kb) {
  std::string id = strip_0x(g.vendor_id) + ":" + strip_0x(g.device_id);
  if (g.vendor_id && g.device_id)
    for (const auto &spec : kb.gpus)
      for (const auto &p : spec.pci_ids) {
        std::string lp = p;
        std::transform(lp.begin(), lp.end(), lp.begin(),
                       [](unsigned char c) { return std::tolower(c); });
        if (lp == id)
          return &spec;
      }
  std::string name = gpu_name(g);
  for (const auto &spec : kb.gpus)
    if (spec.name == name)
      return &spec;
  return nullptr;
}

std::optional<std::string> compute_capability(const Gpu &g, const kb::KnowledgeBase &kb) {
  if (g.nvml && g.nvml->compute_capability)
    return g.nvml->compute_capability;
  if (!is_nvidia(g))
    return std::nullopt;
  if (const auto *spec = gpu_spec(g, kb); spec && !spec->compute_capability.empty())
    return spec->compute_capability;
  return std::nullopt;
}

std::optional<std::string> env_var(const Snapshot &s, std::string_view name) {
  auto it = s.software.env.find(std::string(name));
  if (it == s.software.env.end())
    return std::nullopt;
  return it->second;
}

std::optional<bool> arch_covers(const std::vector<std::string> &arch_list, std::string_view cc) {
  if (arch_list.empty() || parse_version(cc).size() < 2)
    return std::nullopt;
  return kb::arch_list_covers(arch_list, cc);
}

const kb::CudaDriverMin *min_driver_for(const kb::KnowledgeBase &kb, std::string_view cuda) {
  std::string want = major_minor(cuda);
  const kb::CudaDriverMin *best = nullptr;
  for (const auto &row : kb.cuda)
    if (major_minor(row.cuda) == want && !row.min_driver_linux.empty() &&
        (!best || compare_versions(row.min_driver_linux, best->min_driver_linux) < 0))
      best = &row;
  return best;
}

namespace {

// The newest CUDA a Windows driver runs natively: the rows whose Windows minimum it meets, and
// for a CUDA whose Windows minimum Table 3 does not give (13.x), the rows of a Linux branch at
// or below the driver's (the branches are shared).
std::optional<std::string> windows_max_cuda(const kb::KnowledgeBase &kb, std::string_view driver) {
  auto d = parse_version(driver);
  if (d.empty())
    return std::nullopt;
  std::optional<std::string> best;
  for (const auto &r : kb.cuda) {
    bool runs = false;
    if (!r.min_driver_windows.empty()) {
      runs = compare_versions(driver, r.min_driver_windows) >= 0;
    } else {
      auto branch = parse_version(r.min_driver_linux);
      runs = !branch.empty() && branch[0] <= d[0];
    }
    if (runs && (!best || compare_versions(r.cuda, *best) > 0))
      best = r.cuda;
  }
  return best;
}

} // namespace

bool on_windows(const Snapshot &s) {
  const auto &name = s.host.os.distro_name;
  return name && lower(*name).rfind("microsoft windows", 0) == 0;
}

bool windows_driver(const Snapshot &s) {
  return on_windows(s) || s.software.runtime.kind == OptStr("wsl2");
}

std::optional<std::string> min_driver_windows(const kb::KnowledgeBase &kb, std::string_view cuda) {
  std::string want = major_minor(cuda);
  std::optional<std::string> best;
  for (const auto &r : kb.cuda)
    if (major_minor(r.cuda) == want && !r.min_driver_windows.empty() &&
        (!best || compare_versions(r.min_driver_windows, *best) < 0))
      best = r.min_driver_windows;
  return best;
}

std::string windows_driver_fix(const Snapshot &s, const kb::KnowledgeBase &kb,
                               std::string_view cuda) {
  const std::string where =
      s.software.runtime.kind == OptStr("wsl2") ? "on the Windows host (not inside WSL): " : "";
  const std::string get = "download it from https://www.nvidia.com/Download/index.aspx or "
                          "update it in the NVIDIA App";
  if (auto win = min_driver_windows(kb, cuda))
    return fmt::format("{}upgrade the Windows driver to {} or newer: {}", where, *win, get);
  if (const auto *row = min_driver_for(kb, cuda);
      row && !parse_version(row->min_driver_linux).empty())
    return fmt::format("{}upgrade the Windows driver to branch {} or newer (NVIDIA lists no "
                       "Windows minimum for CUDA {}): {}",
                       where, parse_version(row->min_driver_linux)[0], major_minor(cuda), get);
  return fmt::format("{}upgrade the Windows driver: {}", where, get);
}

std::optional<std::string> driver_cuda(const Snapshot &s, const kb::KnowledgeBase &kb) {
  if (s.nvidia.cuda_driver_version)
    return major_minor(*s.nvidia.cuda_driver_version);
  // Without NVML the kernel module's version is the driver's.
  OptStr driver = s.nvidia.driver_version;
  if (!driver)
    driver = s.nvidia.kernel_module_version;
  if (!driver)
    driver = s.software.kernel.nvidia.version;
  if (!driver)
    return std::nullopt;
  if (windows_driver(s))
    if (auto best = windows_max_cuda(kb, *driver))
      return major_minor(*best);
  std::string best = kb.max_cuda_for_driver(*driver);
  if (best.empty())
    return std::nullopt;
  return best;
}

const kb::TorchRelease *torch_release(const kb::KnowledgeBase &kb, std::string_view version) {
  return kb.torch_release(version);
}

std::string reinstall_command(const kb::TorchRelease &r, const kb::TorchVariant &v) {
  // The kb's exact install line, made to replace what is installed.
  std::string cmd = kb::pip_command(r, v);
  const std::string head = "pip install ";
  if (cmd.rfind(head, 0) == 0)
    cmd.insert(head.size(), "--force-reinstall ");
  return cmd;
}

std::optional<WheelChoice> choose_wheel(const kb::KnowledgeBase &kb,
                                        const std::optional<std::string> &driver_cuda_version,
                                        const std::vector<std::string> &ccs,
                                        std::string_view prefer_version) {
  auto fits = [&](const kb::TorchVariant &v) {
    if (v.cuda.empty() || v.index_url.empty() || v.arch_list_partial)
      return false;
    if (driver_cuda_version && compare_versions(v.cuda, *driver_cuda_version) > 0)
      return false;
    for (const auto &cc : ccs)
      if (arch_covers(v.arch_list, cc) != std::optional<bool>(true))
        return false;
    return true;
  };
  auto best_in = [&](const kb::TorchRelease &r) -> const kb::TorchVariant * {
    const kb::TorchVariant *best = nullptr;
    for (const auto &v : r.variants)
      if (fits(v) && (!best || compare_versions(v.cuda, best->cuda) > 0))
        best = &v;
    return best;
  };
  if (!prefer_version.empty())
    if (const auto *r = torch_release(kb, prefer_version))
      if (const auto *v = best_in(*r))
        return WheelChoice{r, v, reinstall_command(*r, *v)};
  const kb::TorchRelease *best_r = nullptr;
  const kb::TorchVariant *best_v = nullptr;
  for (const auto &r : kb.torch)
    if (const auto *v = best_in(r);
        v && (!best_r || compare_versions(r.version, best_r->version) > 0)) {
      best_r = &r;
      best_v = v;
    }
  if (!best_r)
    return std::nullopt;
  return WheelChoice{best_r, best_v, reinstall_command(*best_r, *best_v)};
}

std::vector<std::string> nvidia_ccs(const Snapshot &s, const kb::KnowledgeBase &kb) {
  std::vector<std::string> out;
  for (const auto *g : nvidia_gpus(s))
    if (auto cc = compute_capability(*g, kb);
        cc && std::find(out.begin(), out.end(), *cc) == out.end())
      out.push_back(*cc);
  return out;
}

std::string show_opt(const OptBool &v) {
  return v ? (*v ? "yes" : "no") : "n/a";
}

std::string fmt_gib(std::uint64_t bytes) {
  return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
}

std::string fmt_gbs(double bytes_per_s) {
  return fmt::format("{:.1f} GB/s", bytes_per_s / 1e9);
}

Finding could_not_check(std::string id, std::string what) {
  Finding f;
  f.id = std::move(id);
  f.severity = Severity::info;
  f.title = "Could not check: " + what + " unknown";
  f.why = "The snapshot does not hold this reading, so this check cannot decide.";
  return f;
}

const PythonEnv *cuda_torch_env(const Snapshot &s) {
  for (bool active : {true, false})
    for (const auto &e : s.software.python_envs)
      if (e.torch && e.torch->cuda && e.active.value_or(false) == active)
        return &e;
  return nullptr;
}

bool uses_nccl(const Snapshot &s) {
  if (nvidia_gpus(s).size() >= 2 || env_var(s, "MASTER_ADDR"))
    return true;
  auto world = env_var(s, "WORLD_SIZE");
  return world && std::atol(world->c_str()) > 1;
}

std::vector<Finding> bench_library_missing(const Snapshot &s,
                                           const std::optional<LibraryFiles> &files,
                                           const BenchLibrary &lib) {
  const PythonEnv *env = cuda_torch_env(s);
  if (!env || nvidia_gpus(s).empty())
    return {};
  if (!files) {
    Finding f = could_not_check(lib.id, "");
    f.title = fmt::format("Could not check: the snapshot does not list the folders where {} is "
                          "looked for (taken by an older dlrig: re-take it with `dlrig snapshot`)",
                          lib.file);
    return {f};
  }
  if (!files->found.empty())
    return {};
  const std::string where = env->root.value_or(env->interpreter);
  const std::string cuda = *env->torch->cuda;
  const std::string major = cuda.substr(0, cuda.find('.'));
  const std::string torch = env->torch->version.value_or("torch");
  const std::string soname = lib.soname ? lib.soname : fmt::format("{}.{}", lib.file, major);
  Finding f = make_finding(
      lib.id, Severity::warn,
      fmt::format("{} ({}*) is {} looked in: {}", lib.name, lib.file,
                  files->looked_in.size() == 1
                      ? std::string("not in the 1 folder")
                      : fmt::format("in none of the {} folders", files->looked_in.size()),
                  lib.uses),
      fmt::format("A PyTorch built for CUDA loads {0} from the {1}-cu{2} wheel it depends on "
                  "(site-packages/nvidia/.../lib, through its RPATH), or from a conda "
                  "environment's lib; without it `import torch` or the first use fails with "
                  "\"{3}: cannot open shared object file\", and dlrig bench skips with "
                  "\"{4} not found\".",
                  lib.file, lib.wheel, major, soname, lib.name));
  const bool conda = env->kind == std::optional<std::string>("conda") && env->root;
  const std::string pip = env->root ? *env->root + "/bin/pip" : "pip";
  if (conda)
    f.fix.push_back(fmt::format("conda install -p {} -c nvidia {}", *env->root, lib.conda));
  else if (std::atoi(major.c_str()) <= 12)
    f.fix.push_back(fmt::format("{} install {}-cu{}", pip, lib.wheel, major));
  // Reinstalling torch from its index brings every wheel it depends on (CUDA 13 builds put
  // them in site-packages/nvidia/cu13/lib).
  const std::string plain = torch.substr(0, torch.find('+'));
  if (!conda && env->torch->variant && env->torch->variant->rfind("cu", 0) == 0)
    f.fix.push_back(fmt::format("{} install --force-reinstall torch=={} --index-url "
                                "https://download.pytorch.org/whl/{}",
                                pip, plain, *env->torch->variant));
  else if (!conda)
    f.fix.push_back(fmt::format("{} install --force-reinstall torch=={}", pip, plain));
  f.fix.push_back(
      fmt::format("or, with a copy elsewhere: export {}=/path/to/{}", lib.variable, soname));
  f.with("torch_environment", where)
      .with("torch", torch)
      .with("torch_cuda", cuda)
      .with("looked_in", join(files->looked_in, "; "));
  return {f};
}

} // namespace dlrig::doctor
