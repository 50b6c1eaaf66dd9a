#pragma once
// Pure parsers for the software probe: each takes the text (or name) a file holds and returns
// what it says, nullopt/empty when the text is odd. None of them reads a file or throws.
#include "dlrig/core/snapshot_software.hpp"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace dlrig {

// /proc/modules: the module names (first column).
std::set<std::string> parse_proc_modules(std::string_view text);

// /etc/modprobe.d/*.conf: names on "blacklist NAME" lines, and modules made unloadable with
// "install NAME /bin/false" (or /bin/true), which also keeps them out.
std::set<std::string> parse_modprobe_blacklist(std::string_view text);

// /proc/driver/nvidia/version: the kernel module's version and whether it is the open module.
struct NvidiaProcVersion {
  OptStr version; // 550.54.15
  OptBool open;   // "Open Kernel Module" in the first line
  OptStr first_line;
};
NvidiaProcVersion parse_nvidia_proc_version(std::string_view text);

// /sys/module/nvidia/taint: "P" marks a proprietary module; nullopt when the text is empty.
OptBool taint_is_proprietary(std::string_view taint);

// IOMMU mode from the kernel command line: "pt" (iommu=pt), "off" (iommu=off, intel_iommu=off,
// amd_iommu=off), "on" (intel_iommu=on, amd_iommu=on, iommu=force|on), "default" when the
// command line says nothing about it (the kernel's build default applies).
std::string parse_iommu_mode(std::string_view cmdline);

// The version in a versioned library file name: ("libcuda.so.550.54.15", "libcuda.so") ->
// "550.54.15". nullopt when name is not stem followed by ".digits[.digits...]".
OptStr library_version_from_name(std::string_view name, std::string_view stem);

// cuDNN's sub-libraries among a folder's file names, as sonames, sorted and unique:
// "libcudnn_ops.so.9.1.0" and "libcudnn_ops.so.9" -> "libcudnn_ops.so.9". Names without a major
// ("libcudnn_ops.so", a development link) are left out.
std::vector<std::string> cudnn_members(const std::vector<std::string> &names);

// The blank-separated words of a line ("  a  b\t c" -> {"a", "b", "c"}); views into `line`.
std::vector<std::string_view> words_of(std::string_view line);

// /etc/ld.so.conf and its includes: directories in order, and the "include" patterns.
struct LdSoConf {
  std::vector<std::string> dirs;
  std::vector<std::string> includes; // glob patterns, e.g. /etc/ld.so.conf.d/*.conf
};
LdSoConf parse_ld_so_conf(std::string_view text);

// Splits a PATH-like list; empty entries are dropped (the loader and shells treat them as ".",
// which a probe of another root cannot resolve).
std::vector<std::string> split_path_list(std::string_view value);

// CUDA toolkit version.json ({"cuda": {"version": "12.4.131"}}) -> "12.4.131".
OptStr parse_cuda_version_json(std::string_view text);
// Older toolkits' version.txt ("CUDA Version 11.8.89") -> "11.8.89".
OptStr parse_cuda_version_txt(std::string_view text);
// A toolkit folder name: "cuda-12.4" -> "12.4", "cuda12.1" -> "12.1"; nullopt for "cuda".
OptStr cuda_version_from_dirname(std::string_view name);

// cuda.h: "#define CUDA_VERSION 12040" -> "12.4" (1000 * major + 10 * minor).
OptStr parse_cuda_h_version(std::string_view text);

// A library's version from the #defines of its header, joined with dots as far as they are
// defined (major and minor are required). The macros of each library are in kLibraryHeaders.
OptStr parse_version_header(std::string_view text, const std::vector<std::string_view> &macros);

// Where a CUDA library states its full version when its file name carries only the major
// (libnccl.so.2, libcublas.so.13, libcudnn.so.9): the header installed beside it.
struct LibraryHeader {
  std::string_view stem;   // "libnccl.so"
  std::string_view prefix; // header file names start with it: "nccl.h", "cudnn_version_v9.h"
  std::vector<std::string_view> macros;
};
extern const std::vector<LibraryHeader> kLibraryHeaders;

// cudnn_version.h / cudnn.h: CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL -> "9.1.0".
OptStr parse_cudnn_header(std::string_view text);

// torch/version.py, read as text (never imported): __version__, cuda, hip.
struct TorchVersionPy {
  OptStr version;
  OptStr cuda;
  OptStr hip;
  OptStr xpu;
  // The file says `cuda = None` (or `cuda: Optional[str] = None`): no CUDA in this build, as
  // opposed to a file that does not say (cuda nullopt either way).
  bool cuda_none = false;
};
TorchVersionPy parse_torch_version_py(std::string_view text);
// A `__version__ = '...'` assignment in a version.py (torchvision, torchaudio).
OptStr parse_python_version_assignment(std::string_view text);

// The local version suffix of a PyTorch wheel: "2.5.1+cu124" -> "cu124", "+cpu" -> "cpu",
// "+rocm6.2" -> "rocm6.2"; nullopt when there is no suffix.
OptStr torch_variant(std::string_view version);

// pyvenv.cfg: "version = 3.11.4" (or "version_info = 3.11.4.final.0") -> "3.11.4".
OptStr parse_pyvenv_version(std::string_view text);
// A lib folder name: "python3.11" -> "3.11".
OptStr python_version_from_dirname(std::string_view name);

// "nvidia_cudnn_cu12-9.1.0.70.dist-info" -> {"nvidia-cudnn-cu12", "9.1.0.70"}. The name is
// normalised as PEP 503 does (lower case, runs of -_. become -).
struct DistInfo {
  std::string name;
  std::string version;
};
std::optional<DistInfo> parse_dist_info_name(std::string_view dirname);

// A dist-info WHEEL file (PEP 427): true when the wheel holds compiled code (Root-Is-Purelib:
// false) and every Tag's platform is a plain linux_<arch> (PEP 425), which is what pip writes when
// it builds a wheel from source on this machine; PyPI's binary wheels carry manylinux/musllinux
// tags (PEP 600, 656). false otherwise; nullopt when the text has no Tag line.
OptBool wheel_built_locally(std::string_view wheel_text);

// Whether a METADATA file (core metadata) has a `Requires-Dist: <dist>` line, whatever its version
// or marker; names compared as PEP 503 normalises them.
bool metadata_requires(std::string_view metadata, std::string_view dist);

// conda-meta/NAME-VERSION-BUILD.json -> {NAME, VERSION}.
std::optional<DistInfo> parse_conda_meta_name(std::string_view filename);

// /proc/net/tcp or tcp6: the local ports in state LISTEN (0A).
std::set<int> parse_listen_ports(std::string_view text);

// /proc/1/cgroup: the container engine its paths name (docker, podman, kubernetes, lxc), if any.
OptStr container_engine_from_cgroup(std::string_view text);

// Hypervisor from DMI sys_vendor / product_name: kvm, vmware, hyperv, xen, virtualbox, ...
OptStr hypervisor_from_dmi(std::string_view sys_vendor, std::string_view product_name);

// A PCI config space dump (as /sys/bus/pci/devices/X/config gives root, 4096 bytes): the ACS
// Control register of the ACS extended capability. nullopt when the dump is shorter than the
// extended space (unprivileged readers get 64 or 256 bytes) or there is no ACS capability.
std::optional<std::uint16_t> parse_acs_control(std::string_view config);
// Whether an ACS Control value redirects peer requests (Request or Completion Redirect).
bool acs_redirects(std::uint16_t control);

// What the --deep snippet printed: the line starting with kDeepMarker holds a JSON object.
inline constexpr std::string_view kDeepMarker = "DLRIG_DEEP ";
// An error (garbage, no marker line, wrong types) becomes a DeepProbe with ran=false and the
// reason.
DeepProbe parse_deep_output(std::string_view stdout_text);

} // namespace dlrig
