#pragma once
// Helpers the checks share: reading the snapshot the same way everywhere, comparing versions,
// and asking the knowledge base the questions the rules need (rule R1 of arch coverage, the
// driver a CUDA build needs, the wheel that fits this driver and these GPUs). All pure.
#include "dlrig/core/pcie.hpp"
#include "dlrig/core/text.hpp"
#include "dlrig/core/version.hpp"
#include "dlrig/doctor/check.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlrig::doctor {

// "550.54.15" -> {550, 54, 15}; "12.4" -> {12, 4}; "2.5.1+cu124" -> {2, 5, 1}. Empty when the
// text does not start with a number. The numbers of core's parse_version (core/version.hpp).
std::vector<int> parse_version(std::string_view v);
using dlrig::compare_versions; // core/version.hpp: numeric per component, "12.x" a wildcard
// "12.4.131" -> "12.4"; "" when not a version.
std::string major_minor(std::string_view v);

bool is_nvidia(const Gpu &g);
bool is_amd(const Gpu &g);
std::vector<const Gpu *> nvidia_gpus(const Snapshot &s);
// NVIDIA GPUs NVML could see (the driver works for them), in NVML index order (core).
using dlrig::nvml_gpus;
// A short name for messages: "GPU 0 (NVIDIA H100 80GB HBM3, 0000:18:00.0)".
std::string gpu_label(const Gpu &g);
std::string gpu_name(const Gpu &g);
// Compute capability from NVML, else from the knowledge base by PCI id; nullopt when unknown.
std::optional<std::string> compute_capability(const Gpu &g, const kb::KnowledgeBase &kb);
const kb::GpuSpec *gpu_spec(const Gpu &g, const kb::KnowledgeBase &kb);

// The environment variable as probed; nullopt when not set.
std::optional<std::string> env_var(const Snapshot &s, std::string_view name);

// Rule R1 (https://docs.nvidia.com/cuda/ada-compatibility-guide/): a GPU of compute capability
// M.m runs a wheel when the arch list has a cubin sm_Mk with k <= m, or PTX compute_XY with
// XY <= Mm. Arch-specific (a) and family (f) targets only cover their exact capability. Accepts
// "sm_86", "compute_90", "8.6" and "8.6+PTX" forms. nullopt when the list is empty (unknown).
std::optional<bool> arch_covers(const std::vector<std::string> &arch_list, std::string_view cc);

// The driver's highest CUDA: NVML's cuda_driver_version, else derived from the driver version
// and the kb's CUDA -> minimum driver table.
std::optional<std::string> driver_cuda(const Snapshot &s, const kb::KnowledgeBase &kb);
// The lowest Linux driver the kb lists for this CUDA major.minor (the GA row); nullptr if none.
const kb::CudaDriverMin *min_driver_for(const kb::KnowledgeBase &kb, std::string_view cuda);

// The snapshot is of Windows itself (collect_env's "OS: Microsoft Windows ..."; dlrig probes
// Linux only): its shell is cmd or PowerShell, not bash.
bool on_windows(const Snapshot &s);
// The GPU driver is a Windows one: on Windows, or in WSL2, whose GPU driver is the Windows
// host's. Its versions are Windows numbers (551.61, not 550.54.14) and it is upgraded on
// Windows, never with apt or modprobe.
bool windows_driver(const Snapshot &s);
// The lowest Windows driver NVIDIA's Table 3 gives for this CUDA major.minor (the
// min_driver_windows column of data/cuda_drivers.csv); nullopt when it gives none (CUDA 13.x
// says N/A) or the CUDA is not listed.
std::optional<std::string> min_driver_windows(const kb::KnowledgeBase &kb, std::string_view cuda);
// The fix line that upgrades a Windows driver to run `cuda` (a download, not a package).
std::string windows_driver_fix(const Snapshot &s, const kb::KnowledgeBase &kb,
                               std::string_view cuda);
// The kb release of an installed version ("2.5.1+cu124" -> 2.5.1); nullptr if none.
const kb::TorchRelease *torch_release(const kb::KnowledgeBase &kb, std::string_view version);

// A wheel that runs here: a variant whose CUDA the driver supports natively and whose arch
// list covers every compute capability given. Prefers `prefer_version`'s release, else the
// newest release that fits. nullopt when the kb has none.
struct WheelChoice {
  const kb::TorchRelease *release = nullptr;
  const kb::TorchVariant *variant = nullptr;
  std::string pip; // the exact command, with its index URL
};
std::optional<WheelChoice> choose_wheel(const kb::KnowledgeBase &kb,
                                        const std::optional<std::string> &driver_cuda_version,
                                        const std::vector<std::string> &ccs,
                                        std::string_view prefer_version = {});
std::string reinstall_command(const kb::TorchRelease &r, const kb::TorchVariant &v);

// Compute capabilities of every NVIDIA GPU whose capability is known.
std::vector<std::string> nvidia_ccs(const Snapshot &s, const kb::KnowledgeBase &kb);

// The PCIe payload bandwidth per direction in bytes/s of `width` lanes at `gts`, after line
// encoding: core/pcie.hpp, the library's one formula.
using dlrig::pcie_bytes_per_s;

std::string show_opt(const OptBool &v);   // yes | no | n/a
std::string fmt_gib(std::uint64_t bytes); // "63.9 GiB"
std::string fmt_gbs(double bytes_per_s);  // "3.9 GB/s"
using dlrig::join;                        // core/text.hpp

// A check result saying why it could not decide; info, never warn or fail.
Finding could_not_check(std::string id, std::string what);

// The Python environment with a torch built for CUDA (torch.version.cuda set), the active one
// first; nullptr when none.
const PythonEnv *cuda_torch_env(const Snapshot &s);
// 2 or more NVIDIA GPUs, or a distributed launch in the environment (WORLD_SIZE above 1, or
// MASTER_ADDR set): where NCCL is used.
bool uses_nccl(const Snapshot &s);

// cuda.cublaslt-not-found and dist.nccl-not-found: a library PyTorch and `dlrig bench` load at
// run time, looked for where the benchmarks look (software.cublaslt_files / nccl_files). No
// finding when no NVIDIA GPU or no CUDA torch is there, or a file was found; "could not check"
// when the snapshot has no listing; else a warning naming every folder looked in and the fix.
struct BenchLibrary {
  const char *id;       // "cuda.cublaslt-not-found"
  const char *name;     // "cuBLASLt"
  const char *file;     // "libcublasLt.so"
  const char *wheel;    // "nvidia-cublas": + "-cu12" for torch's CUDA major
  const char *conda;    // "libcublas": the conda package
  const char *variable; // "DLRIG_CUBLASLT_LIBRARY"
  const char *uses;     // what cannot run without it
  const char *soname;   // "libnccl.so.2"; nullptr: file + "." + torch's CUDA major
};
std::vector<Finding> bench_library_missing(const Snapshot &s,
                                           const std::optional<LibraryFiles> &files,
                                           const BenchLibrary &lib);

} // namespace dlrig::doctor

namespace dlrig::doctor {
inline Finding make_finding(std::string id, Severity sev, std::string title, std::string why,
                            std::vector<std::string> fix = {}) {
  Finding f;
  f.id = std::move(id);
  f.severity = sev;
  f.title = std::move(title);
  f.why = std::move(why);
  f.fix = std::move(fix);
  return f;
}
} // namespace dlrig::doctor
