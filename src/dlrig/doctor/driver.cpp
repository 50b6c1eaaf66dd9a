// Driver checks: the kernel driver and its user-space libraries, and whether the driver is new
// enough for the CUDA the installed PyTorch was built with. Each check's `source` names the public
// reports it rests on; CUDA -> minimum driver and minor-version compatibility come from the CUDA
// Toolkit Release Notes, Table 3 (https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/) and
// https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html.
#include "dlrig/doctor/facts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace dlrig::doctor {
namespace {

std::string driver_branch(std::string_view version) {
  auto v = parse_version(version);
  return v.empty() ? "XXX" : std::to_string(v[0]);
}

// ">= 525.60.13" -> "525.60.13"
std::string strip_to_version(std::string_view text) {
  auto i = text.find_first_of("0123456789");
  return i == std::string_view::npos ? "" : std::string(text.substr(i));
}

bool in_wsl(const Snapshot &s) {
  return s.software.runtime.kind == OptStr("wsl2");
}

std::vector<Finding> nvml_mismatch(const Snapshot &s, const kb::KnowledgeBase &,
                                   const DoctorOptions &) {
  bool by_error =
      s.nvidia.nvml_error && lower(*s.nvidia.nvml_error).find("mismatch") != std::string::npos;
  std::optional<std::string> lib;
  if (!s.software.driver_libraries.libnvidia_ml.empty())
    lib = s.software.driver_libraries.libnvidia_ml.front().version;
  bool by_versions = s.nvidia.kernel_module_version && lib &&
                     compare_versions(*s.nvidia.kernel_module_version, *lib) != 0;
  if (!by_error && !by_versions)
    return {};
  Finding f = make_finding(
      "driver.nvml-mismatch", Severity::fail,
      "Driver/library version mismatch: the loaded kernel module and the installed driver "
      "libraries differ",
      "The driver packages were upgraded but the old kernel module is still loaded, so NVML "
      "and CUDA refuse to start (\"Failed to initialize NVML: Driver/library version "
      "mismatch\") until the module is reloaded.",
      {"sudo reboot",
       "or, with no GPU process running: sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia "
       "&& sudo modprobe nvidia",
       "to stop it recurring, hold the driver packages from unattended upgrades: sudo "
       "apt-mark hold 'nvidia-driver-*'"});
  if (s.nvidia.nvml_error)
    f.with("nvml_error", *s.nvidia.nvml_error);
  f.with("kernel_module_version", s.nvidia.kernel_module_version.value_or("n/a"))
      .with("libnvidia_ml_version", lib.value_or("n/a"));
  return {f};
}

std::vector<Finding> too_old_for_torch(const Snapshot &s, const kb::KnowledgeBase &kb,
                                       const DoctorOptions &) {
  auto dc = driver_cuda(s, kb);
  std::vector<Finding> out;
  for (const auto &env : s.software.python_envs) {
    if (!env.torch || !env.torch->cuda)
      continue;
    const std::string need = major_minor(*env.torch->cuda);
    if (need.empty())
      continue;
    if (!dc) {
      if (!nvidia_gpus(s).empty())
        out.push_back(could_not_check("driver.too-old-for-torch",
                                      "the driver's CUDA version (" + env.interpreter + ")"));
      continue;
    }
    if (compare_versions(need, *dc) <= 0)
      continue;
    const auto *row = min_driver_for(kb, need);
    // Minor-version compatibility: within a CUDA major, a newer-minor runtime runs on an older
    // driver of the same major's branch range, with a limited feature set (no newer PTX JIT).
    bool minor_compat = false;
    // Either version may be text that starts with no number (a snapshot from anywhere): then
    // the majors are not known to match.
    auto need_v = parse_version(need), dc_v = parse_version(*dc);
    if (row && s.nvidia.driver_version && !need_v.empty() && !dc_v.empty() &&
        need_v[0] == dc_v[0]) {
      auto floor = strip_to_version(row->minor_compat_min_driver);
      minor_compat = !floor.empty() && compare_versions(*s.nvidia.driver_version, floor) >= 0;
    }
    Finding f = make_finding(
        "driver.too-old-for-torch", minor_compat ? Severity::warn : Severity::fail,
        fmt::format("torch {} needs CUDA {} but the driver supports CUDA {}",
                    env.torch->version.value_or("?"), need, *dc),
        minor_compat
            ? "The driver is older than this CUDA's but of the same major: it runs under CUDA "
              "minor-version compatibility, with a limited feature set; kernels JIT-compiled "
              "from newer PTX (torch.compile, Triton, extensions) fail with \"the provided PTX "
              "was compiled with an unsupported toolchain\"."
            : "PyTorch refuses to start CUDA: \"The NVIDIA driver on your system is too old\" "
              "(or \"CUDA driver version is insufficient for CUDA runtime version\").");
    const bool windows = windows_driver(s);
    if (windows)
      f.fix.push_back(windows_driver_fix(s, kb, need));
    else if (row)
      f.fix.push_back(fmt::format(
          "upgrade the driver to {} or newer: sudo apt install nvidia-driver-{}-open   # or "
          "sudo ubuntu-drivers install",
          row->min_driver_linux, driver_branch(row->min_driver_linux)));
    else
      f.fix.push_back("upgrade the driver (sudo ubuntu-drivers install)");
    if (auto w = choose_wheel(kb, dc, nvidia_ccs(s, kb), env.torch->version.value_or("")))
      f.fix.push_back("or install a wheel this driver runs: " + w->pip);
    f.with("python", env.interpreter)
        .with("torch", env.torch->version.value_or("n/a"))
        .with("torch_cuda", need)
        .with("driver_version", s.nvidia.driver_version.value_or("n/a"))
        .with("driver_cuda", *dc);
    if (auto win = min_driver_windows(kb, need); windows && win)
      f.with("min_windows_driver_for_cuda_" + need, *win);
    else if (row && !windows)
      f.with("min_driver_for_cuda_" + need, row->min_driver_linux);
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Finding> no_kernel_module(const Snapshot &s, const kb::KnowledgeBase &,
                                      const DoctorOptions &) {
  if (in_wsl(s) || s.software.kernel.nvidia.loaded != OptBool(false))
    return {};
  std::vector<const Gpu *> on_bus;
  for (const auto *g : nvidia_gpus(s))
    if (!g->nvml && g->driver != OptStr("vfio-pci"))
      on_bus.push_back(g);
  if (on_bus.empty())
    return {};
  Finding f = make_finding(
      "driver.no-kernel-module", Severity::fail,
      "The nvidia kernel module is not loaded, though an NVIDIA GPU is on the PCI bus",
      "Without the kernel module nothing can talk to the GPU: nvidia-smi \"couldn't communicate "
      "with the NVIDIA driver\" and torch \"Found no NVIDIA driver on your system\".",
      {"sudo modprobe nvidia",
       "if that fails after a kernel update, rebuild it: sudo apt install "
       "linux-headers-$(uname -r) && sudo dkms autoinstall",
       "no driver installed: sudo ubuntu-drivers install (or sudo apt install "
       "nvidia-driver-XXX-open), then reboot"});
  f.with("nvidia_module_loaded", "no").with("gpu", gpu_label(*on_bus.front()));
  if (s.host.os.kernel_release)
    f.with("kernel_release", *s.host.os.kernel_release);
  return {f};
}

std::vector<Finding> secure_boot(const Snapshot &s, const kb::KnowledgeBase &,
                                 const DoctorOptions &) {
  const auto &k = s.software.kernel;
  if (k.secure_boot != OptBool(true) || k.nvidia.loaded != OptBool(false) || in_wsl(s) ||
      nvidia_gpus(s).empty())
    return {};
  Finding f = make_finding(
      "driver.secure-boot", Severity::warn,
      "Secure Boot is on and the nvidia module is not loaded: an unsigned module is refused",
      "With Secure Boot the kernel loads only signed modules; a DKMS-built nvidia module that "
      "is not enrolled fails with \"Key was rejected by service\".",
      {"enrol the DKMS key: sudo mokutil --import /var/lib/shim-signed/mok/MOK.der, reboot and "
       "confirm in the MOK manager",
       "or install the distribution's signed modules (e.g. linux-modules-nvidia-XXX-open-$(uname "
       "-r))",
       "or disable Secure Boot in the firmware"});
  f.with("secure_boot", "yes").with("nvidia_module_loaded", "no");
  return {f};
}

bool consumer_gpu(const Gpu &g) {
  std::string n = gpu_name(g);
  return n.find("GeForce") != std::string::npos || n.find("TITAN") != std::string::npos;
}

std::vector<Finding> compat_lib(const Snapshot &s, const kb::KnowledgeBase &,
                                const DoctorOptions &) {
  const auto &dl = s.software.driver_libraries;
  if (dl.compat_ahead != OptBool(true))
    return {};
  const Gpu *consumer = nullptr;
  for (const auto *g : nvidia_gpus(s))
    if (consumer_gpu(*g))
      consumer = g;
  if (!consumer)
    return {};
  Finding f = make_finding(
      "driver.compat-lib", Severity::fail,
      "A cuda-compat libcuda is loaded ahead of the driver's, on a GeForce GPU",
      "The forward-compatibility libcuda works only on datacenter GPUs; on GeForce it fails with "
      "\"Error 804: forward compatibility was attempted on non supported HW\".",
      {"remove /usr/local/cuda*/compat from LD_LIBRARY_PATH (and from /etc/ld.so.conf.d, then "
       "sudo ldconfig)",
       "or upgrade the host driver so that compat is not needed"});
  if (!dl.libcuda.empty())
    f.with("libcuda_first", dl.libcuda.front().path);
  f.with("gpu", gpu_label(*consumer));
  return {f};
}

std::vector<Finding> stub_libcuda(const Snapshot &s, const kb::KnowledgeBase &,
                                  const DoctorOptions &) {
  const auto &dl = s.software.driver_libraries;
  if (dl.stub_ahead != OptBool(true))
    return {};
  Finding f = make_finding(
      "driver.stub-libcuda", Severity::fail,
      "The CUDA toolkit's stub libcuda.so is found before the driver's",
      "The stub only exists to link against; loaded at run time it makes every CUDA call fail "
      "(\"CUDA driver version is insufficient for CUDA runtime version\" or error 34, "
      "\"CUDA driver is a stub library\").",
      {"remove the toolkit's lib64/stubs directory from LD_LIBRARY_PATH and from "
       "/etc/ld.so.conf.d (then sudo ldconfig)"});
  if (!dl.libcuda.empty())
    f.with("libcuda_first", dl.libcuda.front().path);
  if (auto ld = env_var(s, "LD_LIBRARY_PATH"))
    f.with("LD_LIBRARY_PATH", *ld);
  return {f};
}

} // namespace

std::vector<Check> driver_checks() {
  return {
      {"driver.nvml-mismatch", "driver", Severity::fail,
       "Driver/library version mismatch (driver upgraded, not rebooted)",
       "nvidia.nvml_error, nvidia.kernel_module_version, software.driver_libraries.libnvidia_ml",
       "NVML says \"Driver/library version mismatch\", or the loaded kernel module's version "
       "differs from libnvidia-ml's",
       "reboot, or reload the modules; hold the driver packages",
       "https://github.com/oddmario/NVIDIA-Ubuntu-Driver-Guide/issues/4; "
       "https://github.com/NVIDIA/ubuntu-packaging-nvidia-driver/issues/3; "
       "https://github.com/lyulyul/shine-cluster/issues/30",
       nvml_mismatch},
      {"driver.too-old-for-torch", "driver", Severity::fail,
       "The driver's CUDA is older than the installed PyTorch needs",
       "nvidia.cuda_driver_version (else nvidia.driver_version with kb cuda), "
       "software.python_envs[].torch.cuda, kb cuda (minimum driver, minor-version rule), kb torch",
       "torch.version.cuda is newer than the driver's CUDA: warn when minor-version compatibility "
       "applies (same major, driver above the major's floor), fail otherwise",
       "upgrade the driver to the kb minimum (Windows' own minimum and a download for a Windows or "
       "WSL2 driver), or pip install the variant this driver runs",
       "https://github.com/lllyasviel/Fooocus/issues/1313; "
       "https://github.com/NVIDIA/nvidia-docker/issues/700; "
       "https://github.com/fauxpilot/fauxpilot/issues/19; "
       "CUDA Toolkit Release Notes, Table 3 "
       "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/",
       too_old_for_torch},
      {"driver.no-kernel-module", "driver", Severity::fail,
       "nvidia kernel module not loaded with an NVIDIA GPU on the bus",
       "software.kernel.nvidia.loaded, gpus[], software.runtime.kind",
       "an NVIDIA GPU without NVML is on the PCI bus and the nvidia module is not loaded (not in "
       "WSL2)",
       "modprobe nvidia; rebuild with DKMS after a kernel update; install the driver",
       "https://github.com/qixuema/envs/issues/4; "
       "https://github.com/lyulyul/shine-cluster/issues/50; "
       "https://github.com/junxnone/tio/issues/206",
       no_kernel_module},
      {"driver.secure-boot", "driver", Severity::warn,
       "Secure Boot may be refusing the unsigned nvidia module",
       "software.kernel.secure_boot, software.kernel.nvidia.loaded",
       "Secure Boot is on, an NVIDIA GPU is present and the nvidia module is not loaded",
       "enrol the MOK key, use signed modules, or disable Secure Boot",
       "https://github.com/NVIDIA/gpu-driver-container/issues/44; "
       "https://github.com/tuxedocomputers/tuxedo-keyboard/issues/186",
       secure_boot},
      {"driver.compat-lib", "driver", Severity::fail,
       "cuda-compat libcuda ahead of the driver's on a GeForce GPU",
       "software.driver_libraries.compat_ahead, libcuda, gpus[] names",
       "a forward-compatibility libcuda resolves first and a GPU is a GeForce/TITAN",
       "remove the compat directory from the loader path, or upgrade the driver",
       "https://github.com/gpustack/gpustack/issues/1254; "
       "CUDA Toolkit Release Notes https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/",
       compat_lib},
      {"driver.stub-libcuda", "driver", Severity::fail,
       "Toolkit stub libcuda ahead of the driver's",
       "software.driver_libraries.stub_ahead, libcuda, software.env.LD_LIBRARY_PATH",
       "a toolkit stub libcuda.so resolves before the driver's",
       "remove lib64/stubs from LD_LIBRARY_PATH and ld.so.conf.d",
       "dlrig issue 3 (driver libraries); "
       "CUDA driver API error CUDA_ERROR_STUB_LIBRARY "
       "https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html",
       stub_libcuda},
  };
}

} // namespace dlrig::doctor
