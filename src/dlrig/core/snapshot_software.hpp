#pragma once
// The software part of the machine snapshot: kernel modules, driver libraries, CUDA toolkits,
// CUDA libraries, Python environments, environment variables and where dlrig runs.
// nullopt means unknown (JSON null); docs/snapshot.md documents each field's source. Members
// added after the skeleton carry default initialisers, so aggregate initialisation written
// before them still compiles under -Wmissing-field-initializers.
#include "dlrig/core/snapshot_host.hpp"

#include <map>

namespace dlrig {

struct KernelModule {
  OptBool loaded;      // listed in /proc/modules
  OptStr version;      // /sys/module/NAME/version
  OptStr license;      // "NVIDIA" (proprietary) or "Dual MIT/GPL" (open)
  OptBool blacklisted; // a "blacklist NAME" line under /etc/modprobe.d
};
DLRIG_JSON(KernelModule, loaded, version, license, blacklisted)

struct KernelSide {
  KernelModule nvidia;
  OptBool nvidia_open; // the open kernel module (license "Dual MIT/GPL")
  KernelModule nouveau;
  KernelModule nvidia_uvm;
  KernelModule nvidia_peermem;
  KernelModule nv_peer_mem;
  OptStr cmdline;       // /proc/cmdline
  OptStr iommu;         // pt | on | off | unknown: from the kernel command line
  OptBool iommu_groups; // /sys/kernel/iommu_groups populated
  OptBool secure_boot;
  // First line of /proc/driver/nvidia/version: the kernel side of the driver.
  OptStr proc_driver_version = std::nullopt;
};
DLRIG_JSON(KernelSide, nvidia, nvidia_open, nouveau, nvidia_uvm, nvidia_peermem, nv_peer_mem,
           cmdline, iommu, iommu_groups, secure_boot, proc_driver_version)

struct DeviceNode {
  std::string path; // /dev/nvidia0
  OptBool exists;
  OptBool accessible; // readable and writable by this user
};
DLRIG_JSON(DeviceNode, path, exists, accessible)

struct Services {
  OptBool persistenced_running;
  OptBool fabricmanager_running;
  OptStr fabricmanager_version;
  OptBool nvswitch_present; // NVSwitch devices on the PCI bus
};
DLRIG_JSON(Services, persistenced_running, fabricmanager_running, fabricmanager_version,
           nvswitch_present)

// ACS on a PCIe bridge between GPUs; enabled source validation/redirects block P2P.
struct AcsBridge {
  std::string bdf;
  OptBool redirect_enabled;
};
DLRIG_JSON(AcsBridge, bdf, redirect_enabled)

struct FoundLibrary {
  std::string path;
  OptStr version;
  OptStr origin; // system | toolkit | toolkit-stub | compat | wsl | conda | pip
  OptBool via_ld_library_path = std::nullopt; // found in a directory LD_LIBRARY_PATH names
  // cuDNN's sub-libraries in the same folder, by soname ("libcudnn_ops.so.9", ...): cuDNN opens
  // them by name at run time, so one missing here is taken from wherever the loader finds it.
  // Listed for cuDNN; nullopt when not listed (other libraries, older snapshots).
  std::optional<std::vector<std::string>> members = std::nullopt;
};
DLRIG_JSON(FoundLibrary, path, version, origin, via_ld_library_path, members)

struct DriverLibraries {
  std::vector<FoundLibrary> libcuda; // in loader order, the first one wins
  std::vector<FoundLibrary> libnvidia_ml;
  OptBool stub_ahead;   // a toolkit stub libcuda resolves before the driver's
  OptBool compat_ahead; // a cuda-compat libcuda resolves before the driver's
  // Loader folders in order: LD_LIBRARY_PATH, ld.so.conf (with includes), the defaults.
  std::vector<std::string> search_path = {};
};
DLRIG_JSON(DriverLibraries, libcuda, libnvidia_ml, stub_ahead, compat_ahead, search_path)

struct CudaToolkit {
  std::string root;                  // /usr/local/cuda-12.4
  OptStr version;                    // 12.4 (or 12.4.131)
  OptStr nvcc;                       // path of nvcc when present
  std::vector<std::string> found_by; // usr-local | opt | conda | path | cuda-home | cuda-path
};
DLRIG_JSON(CudaToolkit, root, version, nvcc, found_by)

struct CudaSelection {
  OptStr by_path;            // root of the toolkit whose nvcc PATH finds first
  OptStr by_ld_library_path; // root of the toolkit LD_LIBRARY_PATH puts first
  OptStr by_cuda_home;       // CUDA_HOME / CUDA_PATH
  OptStr usr_local_cuda;     // target of /usr/local/cuda
};
DLRIG_JSON(CudaSelection, by_path, by_ld_library_path, by_cuda_home, usr_local_cuda)

struct CudaLibraries {
  std::vector<FoundLibrary> cudnn;
  std::vector<FoundLibrary> nccl;
  std::vector<FoundLibrary> cublas;
  std::vector<FoundLibrary> tensorrt;
};
DLRIG_JSON(CudaLibraries, cudnn, nccl, cublas, tensorrt)

// A library `dlrig bench` loads at run time (cuBLASLt, NCCL) as the probe found it on disk, where
// the benchmarks look (platform/vendor_library.hpp: DLRIG_CUBLASLT_LIBRARY / DLRIG_NCCL_LIBRARY
// alone when set; else each torch environment's nvidia wheels, torch/lib and conda lib, the CUDA
// toolkits, the loader's folders).
struct LibraryFile {
  std::string path;
  std::string origin; // "the torch environment /home/user/venv (pip wheel, nvidia/cublas)"
};
DLRIG_JSON(LibraryFile, path, origin)

struct LibraryFiles {
  std::vector<std::string> looked_in; // folders listed (or the variable's path), best first
  std::vector<LibraryFile> found;     // files found there, best first; empty: none anywhere
};
DLRIG_JSON(LibraryFiles, looked_in, found)

struct TorchInstall {
  OptStr version; // 2.5.1+cu124
  OptStr variant; // cu124 | cpu | rocm6.2 | (none: default PyPI build)
  OptStr cuda;    // torch.version.cuda, "12.4"; nullopt for CPU/ROCm builds
  OptStr hip;
  // true: torch/version.py says `cuda = None` and names no HIP or XPU either (a CPU-only build,
  // with or without a +cpu suffix); false: it names one; null: it does not say.
  OptBool cpu_only = std::nullopt;
  OptStr cudnn;                           // bundled cuDNN version
  OptStr nccl;                            // bundled NCCL version
  std::vector<std::string> arch_list;     // sm_50 ... compute_90; empty = unknown
  OptStr arch_list_source = std::nullopt; // "deep" (torch.cuda.get_arch_list()); null when unknown
  OptStr path = std::nullopt;             // the torch package folder
  OptBool debug_build = std::nullopt;     // torch.version.debug (collect_env's "Is debug build")
  OptBool xnnpack = std::nullopt;         // torch.backends.xnnpack.enabled ("Is XNNPACK available")
};
DLRIG_JSON(TorchInstall, version, variant, cuda, hip, cpu_only, cudnn, nccl, arch_list,
           arch_list_source, path, debug_build, xnnpack)

// What running the interpreter once (--deep) reported.
struct DeepProbe {
  OptBool ran; // the interpreter ran and printed a result
  OptBool cuda_available;
  std::optional<int> device_count;
  std::vector<std::string> arch_list;
  OptStr error; // CUDA initialisation error text, or why the run failed
  OptBool xpu_available =
      std::nullopt; // torch.xpu.is_available() (collect_env's "Is XPU available")
};
DLRIG_JSON(DeepProbe, ran, cuda_available, device_count, arch_list, error, xpu_available)

struct PythonEnv {
  std::string interpreter; // path
  OptStr kind;             // system | venv | conda | given
  OptStr name;             // conda env name or venv folder
  OptBool active;          // the active venv / conda env
  OptStr python_version;
  OptStr site_packages;
  std::optional<TorchInstall> torch;
  OptStr torchvision; // versions, with their +cuXXX suffixes
  OptStr torchaudio;
  OptStr tensorflow;
  OptStr jax;
  OptStr jaxlib = std::nullopt;
  OptStr jaxlib_cuda;                               // CUDA flavour of the jax plugin (cuda12...)
  std::map<std::string, std::string> nvidia_wheels; // nvidia-cudnn-cu12 -> 9.1.0.70
  std::optional<DeepProbe> deep;
  OptStr root = std::nullopt; // the environment's prefix (folder holding bin/)
  std::vector<std::string> found_by =
      {}; // path | virtual-env | conda-prefix | conda | system | home | given
  // Distributions pip built from source here (a linux_* wheel tag) that require torch: torch
  // C++/CUDA extensions compiled on this machine, as "name==version".
  std::vector<std::string> built_here = {};
  // Hugging Face transformers' version (its dist-info name; fit's SDPA rule depends on it).
  OptStr transformers = std::nullopt;
};
DLRIG_JSON(PythonEnv, interpreter, kind, name, active, python_version, site_packages, torch,
           torchvision, torchaudio, tensorflow, jax, jaxlib_cuda, nvidia_wheels, deep, jaxlib, root,
           found_by, built_here, transformers)

struct Runtime {
  OptStr kind;             // bare-metal | vm | container | wsl2
  OptStr container_engine; // docker | podman | kubernetes | lxc
  OptBool nvidia_runtime;  // the NVIDIA container runtime injected the GPU
  OptStr hypervisor;       // kvm, vmware, hyperv... when a VM
};
DLRIG_JSON(Runtime, kind, container_engine, nvidia_runtime, hypervisor)

struct SoftwareInfo {
  KernelSide kernel;
  std::vector<DeviceNode> device_nodes;
  Services services;
  std::vector<AcsBridge> acs;
  DriverLibraries driver_libraries;
  std::vector<CudaToolkit> cuda_toolkits;
  CudaSelection cuda_selection;
  CudaLibraries libraries;
  std::vector<PythonEnv> python_envs;
  // Where the probe looked for Python environments, in order ("PATH", "/usr/bin/python3",
  // "~/.virtualenvs/*"...): what a user reads when the environment they run is not listed.
  std::vector<std::string> python_search;
  std::map<std::string, std::string> env; // the variables that matter, as set
  OptBool master_port_in_use;
  OptStr host_compiler_version; // gcc major version, from the /usr/bin/gcc link's target
  // MASTER_PORT, or 29500 (torch.distributed's default) when unset.
  std::optional<int> master_port = std::nullopt;
  Runtime runtime;
  // torch.utils.cpp_extension's build folder ($TORCH_EXTENSIONS_DIR, else
  // ~/.cache/torch_extensions) when it holds builds: extensions were JIT-compiled here.
  OptStr torch_extensions_cache = std::nullopt;
  // Read from a collect_env report only (a live probe leaves them unknown): "Clang version",
  // "CMake version", "Libc version" ("glibc-2.39"), "HIP runtime version", "MIOpen runtime
  // version".
  OptStr clang_version = std::nullopt;
  OptStr cmake_version = std::nullopt;
  OptStr libc_version = std::nullopt;
  OptStr hip_runtime_version = std::nullopt;
  OptStr miopen_runtime_version = std::nullopt;
  // libcublasLt and libnccl on disk; null when not looked for (a collect_env report, an older
  // snapshot).
  std::optional<LibraryFiles> cublaslt_files = std::nullopt;
  std::optional<LibraryFiles> nccl_files = std::nullopt;
};
DLRIG_JSON(SoftwareInfo, kernel, device_nodes, services, acs, driver_libraries, cuda_toolkits,
           cuda_selection, libraries, python_envs, python_search, env, master_port_in_use,
           host_compiler_version, runtime, master_port, torch_extensions_cache, clang_version,
           cmake_version, libc_version, hip_runtime_version, miopen_runtime_version, cublaslt_files,
           nccl_files)

} // namespace dlrig
