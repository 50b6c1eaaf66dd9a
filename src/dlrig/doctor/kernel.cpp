// Kernel module checks. Each check's `source` names the public reports it rests on (Blackwell
// needs the open kernel modules: https://github.com/Start9Labs/start-technologies/issues/3693).
#include "dlrig/doctor/facts.hpp"

#include <fmt/format.h>

namespace dlrig::doctor {
namespace {

std::vector<Finding> nouveau_loaded(const Snapshot &s, const kb::KnowledgeBase &,
                                    const DoctorOptions &) {
  auto nv = nvidia_gpus(s);
  if (nv.empty())
    return {};
  std::vector<std::string> bound;
  for (const auto *g : nv)
    if (g->driver == OptStr("nouveau"))
      bound.push_back(g->bdf);
  bool loaded = s.software.kernel.nouveau.loaded == OptBool(true);
  if (bound.empty() && !loaded)
    return {};
  Finding f = make_finding(
      "kernel.nouveau-loaded", bound.empty() ? Severity::warn : Severity::fail,
      bound.empty() ? "The nouveau module is loaded" : "nouveau drives the NVIDIA GPU",
      "nouveau (the open-source display driver) cannot run CUDA, and while it owns a GPU the "
      "nvidia driver cannot bind it (\"NVRM: ... a driver such as nouveau ... obtained "
      "ownership\").",
      {"printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' | sudo tee "
       "/etc/modprobe.d/blacklist-nouveau.conf",
       "sudo update-initramfs -u   # dracut: sudo dracut --force", "sudo reboot"});
  f.with("nouveau_loaded", show_opt(s.software.kernel.nouveau.loaded))
      .with("nouveau_blacklisted", show_opt(s.software.kernel.nouveau.blacklisted));
  if (!bound.empty())
    f.with("bound_to", join(bound, ", "));
  return {f};
}

std::vector<Finding> open_module_required(const Snapshot &s, const kb::KnowledgeBase &kb,
                                          const DoctorOptions &) {
  const auto &k = s.software.kernel;
  bool closed = k.nvidia_open == OptBool(false) ||
                (k.nvidia.license && *k.nvidia.license != "Dual MIT/GPL" && !k.nvidia_open);
  if (!closed)
    return {};
  for (const auto *g : nvidia_gpus(s)) {
    auto cc = compute_capability(*g, kb);
    if (!cc || parse_version(*cc).empty() || parse_version(*cc)[0] < 10)
      continue;
    std::string branch = "5xx";
    if (s.nvidia.driver_version)
      if (auto v = parse_version(*s.nvidia.driver_version); !v.empty())
        branch = std::to_string(v[0]);
    Finding f = make_finding(
        "kernel.open-module-required", Severity::fail,
        fmt::format("{} (compute capability {}) needs the open nvidia kernel module", gpu_label(*g),
                    *cc),
        "Blackwell and later GPUs are supported only by the open kernel modules; with the "
        "proprietary one nvidia-smi finds no devices or the boot hangs.",
        {"sudo apt install nvidia-driver-" + branch + "-open   # Arch: nvidia-open",
         "sudo reboot"});
    f.with("compute_capability", *cc).with("nvidia_license", k.nvidia.license.value_or("n/a"));
    return {f};
  }
  return {};
}

std::vector<Finding> uvm_missing(const Snapshot &s, const kb::KnowledgeBase &,
                                 const DoctorOptions &) {
  const auto &k = s.software.kernel;
  if (k.nvidia.loaded != OptBool(true) || k.nvidia_uvm.loaded != OptBool(false))
    return {};
  Finding f = make_finding(
      "kernel.uvm-not-loaded", Severity::info,
      "nvidia_uvm is not loaded (CUDA loads it on first use)",
      "CUDA needs nvidia_uvm; nvidia-modprobe normally loads it at the first CUDA call. If CUDA "
      "then fails with \"CUDA unknown error\" (typically after suspend/resume), reload it.",
      {"sudo modprobe nvidia_uvm",
       "after a suspend/resume: sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm"});
  f.with("nvidia_loaded", "yes").with("nvidia_uvm_loaded", "no");
  return {f};
}

std::vector<Finding> peermem_missing(const Snapshot &s, const kb::KnowledgeBase &,
                                     const DoctorOptions &) {
  const auto &k = s.software.kernel;
  bool rdma_up = false;
  for (const auto &p : s.host.rdma)
    rdma_up = rdma_up || p.state == OptStr("ACTIVE");
  if (!rdma_up || nvml_gpus(s).empty() || k.nvidia_peermem.loaded != OptBool(false) ||
      k.nv_peer_mem.loaded == OptBool(true))
    return {};
  Finding f = make_finding(
      "kernel.peermem-not-loaded", Severity::info,
      "RDMA NICs are up but nvidia_peermem is not loaded",
      "Without nvidia_peermem (or a DMA-BUF capable kernel and NCCL) GPUDirect RDMA is off and "
      "NCCL stages inter-node traffic through host memory.",
      {"sudo modprobe nvidia_peermem", "to load it at boot: echo nvidia_peermem | sudo tee "
                                       "/etc/modules-load.d/nvidia-peermem.conf"});
  f.with("rdma_ports_active", "yes").with("nvidia_peermem_loaded", "no");
  return {f};
}

} // namespace

std::vector<Check> kernel_checks() {
  return {
      {"kernel.nouveau-loaded", "kernel", Severity::fail, "nouveau loaded or bound to the GPU",
       "software.kernel.nouveau, gpus[].driver",
       "fail: nouveau is bound to an NVIDIA GPU; warn: nouveau is loaded",
       "blacklist nouveau, rebuild the initramfs, reboot",
       "https://github.com/mattshma/bigdata/issues/133; "
       "DCGM Software denylist https://github.com/NVIDIA/DCGM/blob/HEAD/nvvs/src/Software.cpp",
       nouveau_loaded},
      {"kernel.open-module-required", "kernel", Severity::fail,
       "Blackwell GPU with the proprietary kernel module",
       "software.kernel.nvidia_open, nvidia.license, gpus[] compute capability",
       "a GPU of compute capability 10.0 or newer and the proprietary (non MIT/GPL) module",
       "install nvidia-driver-<branch>-open",
       "https://github.com/getsolus/packages/issues/5575; "
       "https://github.com/Start9Labs/start-technologies/issues/3693; "
       "https://developer.nvidia.com/cuda-gpus",
       open_module_required},
      {"kernel.uvm-not-loaded", "kernel", Severity::info, "nvidia_uvm not loaded",
       "software.kernel.nvidia.loaded, software.kernel.nvidia_uvm.loaded",
       "nvidia is loaded and nvidia_uvm is not (info only: CUDA loads it on first use)",
       "modprobe nvidia_uvm; reload it after suspend",
       "https://github.com/pytorch/pytorch/issues/88639; "
       "https://github.com/pop-os/default-settings/issues/64; "
       "https://github.com/ultralytics/ultralytics/issues/7716",
       uvm_missing},
      {"kernel.peermem-not-loaded", "kernel", Severity::info,
       "GPUDirect RDMA module not loaded with active RDMA NICs",
       "host.rdma, software.kernel.nvidia_peermem, software.kernel.nv_peer_mem",
       "an RDMA port is ACTIVE, NVIDIA GPUs work and neither peer-memory module is loaded (info)",
       "modprobe nvidia_peermem",
       "DCGM diagnostics "
       "https://docs.nvidia.com/datacenter/dcgm/latest/reference/command-line-reference/dcgmi/"
       "dcgmi-diag.html; "
       "https://github.com/NVIDIA/nccl-tests/issues/206; "
       "https://github.com/NVIDIA/nvidia-container-toolkit/issues/2037",
       peermem_missing},
  };
}

} // namespace dlrig::doctor
