// When a check applies to a machine, and which checks a collect_env report can decide. Both only
// relabel a check that found nothing ("not applicable", "not run"), so neither can hide a finding
// of a check that ran; the rule files stay as they are.
#include "dlrig/doctor/facts.hpp"

#include <algorithm>

namespace dlrig::doctor {
namespace {

using Reason = std::optional<std::string>;

bool any_gpu(const Snapshot &s) {
  return std::any_of(s.gpus.begin(), s.gpus.end(),
                     [](const Gpu &g) { return is_nvidia(g) || is_amd(g); });
}

Reason no_nvidia_gpu(const Snapshot &s) {
  if (!gpus_known(s) || !nvidia_gpus(s).empty())
    return std::nullopt;
  return std::string("no NVIDIA GPU on the PCI bus");
}

Reason no_gpu(const Snapshot &s) {
  if (!gpus_known(s) || any_gpu(s))
    return std::nullopt;
  return std::string("no NVIDIA or AMD GPU on the PCI bus");
}

// Python environments were looked for (a probe lists where) or the report named its Python;
// none holds torch.
Reason no_torch(const Snapshot &s) {
  const auto &envs = s.software.python_envs;
  if (envs.empty() && s.software.python_search.empty())
    return std::nullopt;
  if (std::any_of(envs.begin(), envs.end(), [](const PythonEnv &e) { return e.torch; }))
    return std::nullopt;
  return std::string("no PyTorch in any Python environment found");
}

// Environments with torch were found and none is built for CUDA (CPU, ROCm or XPU builds).
Reason no_cuda_torch(const Snapshot &s) {
  if (no_torch(s) || cuda_torch_env(s))
    return std::nullopt;
  const auto &envs = s.software.python_envs;
  if (std::none_of(envs.begin(), envs.end(), [](const PythonEnv &e) { return e.torch; }))
    return std::nullopt;
  return std::string("no PyTorch built for CUDA (CPU or ROCm builds only)");
}

// One NVIDIA GPU and no distributed launch: NCCL is never loaded.
Reason no_nccl_use(const Snapshot &s) {
  if (!gpus_known(s) || uses_nccl(s))
    return std::nullopt;
  return std::string("fewer than 2 NVIDIA GPUs and no WORLD_SIZE above 1 or MASTER_ADDR: NCCL "
                     "is not used");
}

Reason first_of(std::initializer_list<Reason> reasons) {
  for (const auto &r : reasons)
    if (r)
      return r;
  return std::nullopt;
}

Reason not_runtime(const Snapshot &s, const char *kind, const char *what) {
  const auto &k = s.software.runtime.kind;
  if (!k || *k == kind)
    return std::nullopt;
  return std::string("not ") + what + " (runtime: " + *k + ")";
}

} // namespace

std::optional<std::string> not_applicable(const Check &c, const Snapshot &s) {
  const std::string_view id = c.id, area = c.area;
  // Checks that need more than their area does.
  if (id == "torch.companion-mismatch")
    return no_torch(s);
  if (id == "torch.vendor-mismatch")
    return first_of({no_torch(s), no_gpu(s)});
  // The libraries dlrig bench and a CUDA torch load: a machine without both is no concern.
  if (id == "cuda.cublaslt-not-found")
    return first_of({no_torch(s), no_cuda_torch(s), no_nvidia_gpu(s)});
  if (id == "dist.nccl-not-found")
    return first_of({no_torch(s), no_cuda_torch(s), no_nvidia_gpu(s), no_nccl_use(s)});
  if (id == "host.ram-vs-vram" || id == "host.cpu-cores-per-gpu")
    return no_gpu(s);
  if (area == "torch")
    return first_of({no_torch(s), no_nvidia_gpu(s)});
  if (area == "gpu" || area == "link" || area == "driver" || area == "kernel")
    return no_nvidia_gpu(s);
  if (area == "env")
    return no_gpu(s);
  if (area == "cuda")
    return s.software.cuda_toolkits.empty() ? no_nvidia_gpu(s) : std::nullopt;
  if (area == "container")
    return not_runtime(s, "container", "a container");
  if (area == "wsl")
    return not_runtime(s, "wsl2", "WSL2");
  return std::nullopt; // host, dist: any machine that trains
}

const std::vector<std::string_view> &collect_env_checks() {
  // Each reads only what the report prints: torch's version and CUDA/ROCm build, whether torch saw
  // CUDA, the GPUs nvidia-smi lists (compute capability from the kb by name), the driver version,
  // nvcc's version, the pip/conda packages, lscpu's CPU count.
  static const std::vector<std::string_view> ids = {
      "torch.cpu-only-build",           "torch.arch-unsupported",        "torch.companion-mismatch",
      "torch.triton-unsupported",       "torch.vendor-mismatch",         "torch.cuda-unavailable",
      "torch.cudnn-wheel-mismatch",     "torch.tf32-off-by-default",     "driver.too-old-for-torch",
      "cuda.toolkit-newer-than-driver", "cuda.toolkit-mismatches-torch", "host.cpu-cores-per-gpu",
  };
  return ids;
}

std::optional<std::string> not_in_report(const Check &c, const Snapshot &s) {
  if (!from_collect_env(s))
    return std::nullopt;
  const auto &ids = collect_env_checks();
  if (std::find(ids.begin(), ids.end(), c.id) != ids.end())
    return std::nullopt;
  const std::string_view area = c.area;
  if (c.id == "cuda.cublaslt-not-found" || c.id == "dist.nccl-not-found")
    return "a collect_env report does not list the files in the library folders (site-packages "
           "nvidia/*/lib, torch/lib, the toolkits, the loader's folders)";
  std::string lacks = area == "gpu"    ? "NVML readings (clocks, temperatures, ECC, processes)"
                      : area == "link" ? "the PCIe and NVLink topology"
                      : area == "kernel" || area == "driver"
                          ? "kernel modules, device nodes and driver libraries"
                      : area == "host" ? "memory, /dev/shm, limits and mounts"
                      : area == "cuda" ? "library paths, CUDA_HOME and every toolkit but nvcc's"
                      : area == "env" || area == "dist"
                          ? "environment variables (only CUDA_MODULE_LOADING and the allocator "
                            "config)"
                      : area == "container" || area == "wsl"
                          ? "whether it ran in a container, and the libraries WSL2 loads"
                          : "the readings this check needs";
  return "a collect_env report does not include " + lacks;
}

} // namespace dlrig::doctor
