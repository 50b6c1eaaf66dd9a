// GPU state checks: can the GPU be used at all, and is it healthy (clocks, memory errors,
// modes). Each check's `source` names the public reports it rests on.
#include "dlrig/doctor/facts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace dlrig::doctor {
namespace {

// NVML nvmlClocksEventReasons bits
// (https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html).
constexpr std::uint64_t kHwSlowdown = 0x8;
constexpr std::uint64_t kSwThermal = 0x20;
constexpr std::uint64_t kHwThermal = 0x40;
constexpr std::uint64_t kHwPowerBrake = 0x80;
// How close to the slowdown temperature counts as "near": dlrig's margin, not a vendor figure.
constexpr double kNearSlowdownC = 5.0;

bool hides_all(const std::optional<std::string> &cvd) {
  return cvd && (cvd->empty() || *cvd == "-1" || *cvd == "none" || *cvd == "NoDevFiles");
}

std::vector<Finding> none_visible(const Snapshot &s, const kb::KnowledgeBase &,
                                  const DoctorOptions &) {
  auto nv = nvidia_gpus(s);
  if (nv.empty())
    return {};
  std::vector<std::string> reasons;
  Finding f = make_finding(
      "gpu.none-visible", Severity::fail, "An NVIDIA GPU is in the machine but CUDA cannot use it",
      "PyTorch only sees GPUs that the nvidia driver owns, that CUDA_VISIBLE_DEVICES lets "
      "through and whose /dev/nvidia* nodes this user can open; otherwise "
      "torch.cuda.is_available() is False and training silently runs on the CPU.");
  const bool nvml_failed =
      s.nvidia.nvml_status == OptStr("not-found") || s.nvidia.nvml_status == OptStr("init-failed");
  bool any_usable = false;
  for (const auto *g : nv) {
    bool usable = g->nvml.has_value() || (g->driver == OptStr("nvidia") && !nvml_failed);
    any_usable = any_usable || usable;
    if (g->nvml)
      continue;
    if (g->driver == OptStr("nouveau")) {
      reasons.push_back(g->bdf + " is driven by nouveau");
      f.fix.push_back("see `dlrig doctor --explain kernel.nouveau-loaded`: blacklist nouveau, "
                      "install the NVIDIA driver, reboot");
    } else if (g->driver == OptStr("vfio-pci")) {
      reasons.push_back(g->bdf + " is bound to vfio-pci (reserved for a virtual machine)");
      f.fix.push_back("to use it here, unbind it from vfio-pci (remove its id from the vfio-pci "
                      "ids= option) and reboot");
    } else if (!g->driver && s.nvidia.nvml_status != OptStr("not-probed")) {
      reasons.push_back(g->bdf + " has no kernel driver bound");
      f.fix.push_back("install the driver and reboot: `sudo ubuntu-drivers install` (or `sudo apt "
                      "install nvidia-driver-XXX-open`), then `sudo modprobe nvidia`");
    }
    f.with(g->bdf + ".driver", g->driver.value_or("none"));
  }
  if (nvml_failed) {
    reasons.push_back("NVML: " + s.nvidia.nvml_error.value_or(*s.nvidia.nvml_status));
    f.with("nvml_status", *s.nvidia.nvml_status);
  }
  auto cvd = env_var(s, "CUDA_VISIBLE_DEVICES");
  if (hides_all(cvd)) {
    any_usable = false;
    reasons.push_back("CUDA_VISIBLE_DEVICES=\"" + *cvd + "\" hides every GPU");
    f.with("CUDA_VISIBLE_DEVICES", *cvd);
    f.fix.push_back("unset CUDA_VISIBLE_DEVICES   # or list the GPUs to use: "
                    "export CUDA_VISIBLE_DEVICES=0");
  }
  bool nodes_bad = false;
  for (const auto &n : s.software.device_nodes) {
    if (n.path != "/dev/nvidiactl" && n.path.rfind("/dev/nvidia", 0) != 0)
      continue;
    if (n.path == "/dev/nvidia-uvm-tools" || n.path.rfind("/dev/nvidia-caps", 0) == 0)
      continue;
    if (n.exists == OptBool(false)) {
      reasons.push_back(n.path + " is missing");
      nodes_bad = true;
    } else if (n.accessible == OptBool(false)) {
      reasons.push_back(n.path + " is not readable and writable by this user");
      nodes_bad = true;
    }
  }
  if (nodes_bad) {
    any_usable = false;
    f.fix.push_back("sudo nvidia-modprobe -u -c=0   # creates the missing /dev/nvidia* nodes");
    f.fix.push_back("sudo usermod -aG video,render $USER   # then log in again");
    f.fix.push_back("in a container: `docker run --gpus all ...` so the nodes are passed in");
  }
  if (any_usable || reasons.empty())
    return {};
  // One fix per cause, not per GPU: two GPUs without a driver need one driver install.
  std::vector<std::string> fixes;
  for (auto &step : f.fix)
    if (std::find(fixes.begin(), fixes.end(), step) == fixes.end())
      fixes.push_back(std::move(step));
  f.fix = std::move(fixes);
  f.with("reasons", join(reasons, "; "));
  f.title += ": " + reasons.front();
  return {f};
}

std::vector<Finding> nvml_not_responding(const Snapshot &s, const kb::KnowledgeBase &,
                                         const DoctorOptions &) {
  if (s.nvidia.nvml_status != OptStr("timed-out"))
    return {};
  Finding f = make_finding(
      "gpu.nvml-not-responding", Severity::fail,
      "NVML did not answer: a GPU or the NVIDIA driver has stopped responding",
      "NVML, which nvidia-smi is built on, asks the driver about every GPU. When it does not "
      "answer, a GPU has usually fallen off the bus (Xid 79) or the driver is stuck on a faulted "
      "GPU (Xid 45, 48, 79), and CUDA hangs the same way: torch.cuda.is_available() or a job's "
      "first CUDA call never returns, and nvidia-smi itself hangs.",
      {"sudo dmesg -T | grep -E 'NVRM: Xid|fallen off the bus'   # which GPU, which Xid",
       "stop the jobs on this machine and reboot it (a GPU off the bus does not come back "
       "without one)",
       "if it happens again: check the GPU's power cables and the PSU, reseat the card, watch "
       "its temperature (NVIDIA's Xid catalogue, 79)"});
  f.with("nvml_error", s.nvidia.nvml_error.value_or("unknown"))
      .with("nvml_library", s.nvidia.nvml_library.value_or("unknown"));
  return {f};
}

std::vector<Finding> fallen_off_bus(const Snapshot &s, const kb::KnowledgeBase &,
                                    const DoctorOptions &) {
  const auto &lost = s.nvidia.lost_gpus;
  if (lost.empty())
    return {};
  std::vector<std::string> names;
  for (const auto &l : lost)
    names.push_back(l.bdf ? fmt::format("GPU {} ({})", l.index, *l.bdf)
                          : fmt::format("GPU {}", l.index));
  Finding f = make_finding(
      "gpu.fallen-off-bus", Severity::fail,
      join(names, ", ") + (lost.size() == 1 ? " has" : " have") +
          " fallen off the bus: NVML answers GPU_IS_LOST",
      "NVML answers NVML_ERROR_GPU_IS_LOST when a GPU \"has fallen off the bus or has otherwise "
      "become inaccessible\" (the kernel logs Xid 79). Nothing runs on it until the machine is "
      "rebooted: CUDA calls on it fail, and a job that was using it has died or hangs in its "
      "collectives.",
      {"sudo dmesg -T | grep -E 'NVRM: Xid|fallen off the bus'   # when, and what came before",
       "stop the jobs on this machine and reboot it",
       "if it happens again: check the GPU's power cables and the PSU, reseat the card, update "
       "the system BIOS, watch its temperature (NVIDIA's Xid catalogue, 79)"});
  f.with("lost_gpus", join(names, ", "));
  return {f};
}

std::vector<Finding> thermal_throttle(const Snapshot &s, const kb::KnowledgeBase &,
                                      const DoctorOptions &) {
  std::vector<Finding> out;
  for (const auto *g : nvml_gpus(s)) {
    const auto &n = *g->nvml;
    std::uint64_t mask = n.throttle_reasons_mask.value_or(0);
    bool throttling = (mask & (kHwSlowdown | kSwThermal | kHwThermal)) != 0;
    bool near = n.temperature_c && n.slowdown_temperature_c &&
                *n.temperature_c >= *n.slowdown_temperature_c - kNearSlowdownC;
    if (!throttling && !near)
      continue;
    Finding f = make_finding(
        "gpu.thermal-throttle", Severity::warn,
        throttling ? gpu_label(*g) + " is slowing its clocks for heat"
                   : gpu_label(*g) + " runs within a few degrees of its slowdown temperature",
        "A GPU that reaches its slowdown temperature lowers its clocks, so training gets slower "
        "over time while nothing reports an error.",
        {"improve airflow: clear the intake, raise fan speed, clean the heatsink",
         fmt::format("lower the power limit to cut heat: sudo nvidia-smi -i {} -pl <watts>",
                     n.index)});
    if (g->behind_thunderbolt == OptBool(true))
      f.fix.push_back("an eGPU dock: use one with active cooling, leave space around its vents");
    for (auto [key, v] : {std::pair{"temperature_c", n.temperature_c},
                          std::pair{"slowdown_temperature_c", n.slowdown_temperature_c}})
      v ? f.with(key, celsius_of(*v)) : f.with(key, "n/a");
    f.with("throttle_reasons", n.throttle_reasons.empty() ? fmt::format("{:#x}", mask)
                                                          : join(n.throttle_reasons, ", "));
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Finding> power_throttle(const Snapshot &s, const kb::KnowledgeBase &,
                                    const DoctorOptions &) {
  std::vector<Finding> out;
  for (const auto *g : nvml_gpus(s)) {
    const auto &n = *g->nvml;
    bool lowered = n.power_limit_w && n.power_default_limit_w &&
                   *n.power_limit_w < *n.power_default_limit_w - 1.0;
    bool brake = (n.throttle_reasons_mask.value_or(0) & kHwPowerBrake) != 0;
    if (!lowered && !brake)
      continue;
    Finding f = make_finding(
        "gpu.power-throttle", Severity::warn,
        lowered ? fmt::format("{} has its power limit lowered to {:.0f} W (default {:.0f} W)",
                              gpu_label(*g), *n.power_limit_w, *n.power_default_limit_w)
                : gpu_label(*g) + " is held back by the hardware power brake",
        "A lowered power cap or an active power brake keeps the clocks below what the GPU "
        "delivers at its default limit, so every step is slower.");
    if (lowered)
      f.fix.push_back(
          fmt::format("sudo nvidia-smi -i {} -pl {:.0f}", n.index, *n.power_default_limit_w));
    if (brake)
      f.fix.push_back("the power brake is asserted by the board or the system: check the PSU "
                      "and the power cables to the GPU");
    if (n.power_limit_w)
      f.with("power_limit_w", watts_of(*n.power_limit_w));
    if (n.power_default_limit_w)
      f.with("power_default_limit_w", watts_of(*n.power_default_limit_w));
    f.with("throttle_reasons", join(n.throttle_reasons, ", "));
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Finding> ecc_errors(const Snapshot &s, const kb::KnowledgeBase &,
                                const DoctorOptions &) {
  std::vector<Finding> out;
  for (const auto *g : nvml_gpus(s)) {
    const auto &n = *g->nvml;
    std::uint64_t vol = n.ecc_uncorrected_volatile.value_or(0);
    std::uint64_t agg = n.ecc_uncorrected_aggregate.value_or(0);
    if (vol == 0 && agg == 0)
      continue;
    Finding f = make_finding(
        "gpu.ecc-errors", vol > 0 ? Severity::fail : Severity::warn,
        vol > 0
            ? fmt::format("{} had {} uncorrectable ECC errors since the driver loaded",
                          gpu_label(*g), vol)
            : fmt::format("{} has {} uncorrectable ECC errors in its lifetime", gpu_label(*g), agg),
        "An uncorrectable memory error kills the process that touched it (\"CUDA error: "
        "uncorrectable ECC error encountered\"); errors that recur mean failing memory.",
        {fmt::format("stop the jobs on it, then reset it: sudo nvidia-smi -r -i {}", n.index),
         fmt::format("watch the counters: nvidia-smi -q -d ECC -i {}", n.index),
         "if they come back after the reset, ask the vendor for a replacement (RMA)"});
    f.with("ecc_uncorrected_volatile", count_of(static_cast<double>(vol)))
        .with("ecc_uncorrected_aggregate", count_of(static_cast<double>(agg)));
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Finding> retired_pages(const Snapshot &s, const kb::KnowledgeBase &,
                                   const DoctorOptions &) {
  std::vector<Finding> out;
  for (const auto *g : nvml_gpus(s)) {
    const auto &n = *g->nvml;
    bool failure = n.remapped_rows.failure == OptBool(true);
    bool pending =
        n.remapped_rows.pending == OptBool(true) || n.retired_pages_pending == OptBool(true);
    if (!failure && !pending)
      continue;
    Finding f = make_finding(
        "gpu.retired-pages", failure ? Severity::fail : Severity::warn,
        failure ? gpu_label(*g) + " failed to remap a bad memory row"
                : gpu_label(*g) + " has a memory page or row waiting to be retired",
        failure ? "The GPU ran out of spare rows: bad memory stays in use and jobs will crash."
                : "The bad memory stays in use until the GPU is reset; jobs may hit ECC errors "
                  "until then.");
    if (failure)
      f.fix = {"ask the vendor for a replacement (RMA): row remapping failed"};
    else
      f.fix = {fmt::format("stop its jobs and reset it: sudo nvidia-smi -r -i {}   # or reboot",
                           n.index)};
    f.with("remapped_rows.pending", show_opt(n.remapped_rows.pending))
        .with("remapped_rows.failure", show_opt(n.remapped_rows.failure))
        .with("retired_pages_pending", show_opt(n.retired_pages_pending));
    out.push_back(std::move(f));
  }
  return out;
}

// A server: NVSwitch, four or more NVIDIA GPUs, or an SXM/OAM module (kb form_factor).
bool is_server(const Snapshot &s, const kb::KnowledgeBase &kb) {
  if (s.software.services.nvswitch_present == OptBool(true))
    return true;
  auto nv = nvidia_gpus(s);
  if (nv.size() >= 4)
    return true;
  for (const auto *g : nv)
    if (const auto *spec = gpu_spec(*g, kb)) {
      std::string ff = spec->form_factor;
      std::transform(ff.begin(), ff.end(), ff.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      if (ff.find("sxm") != std::string::npos || ff.find("oam") != std::string::npos)
        return true;
    }
  return false;
}

std::vector<Finding> persistence_off(const Snapshot &s, const kb::KnowledgeBase &kb,
                                     const DoctorOptions &) {
  if (!is_server(s, kb) || s.software.services.persistenced_running == OptBool(true))
    return {};
  std::vector<std::string> off;
  for (const auto *g : nvml_gpus(s))
    if (g->nvml->persistence_mode == OptBool(false))
      off.push_back(std::to_string(g->nvml->index));
  if (off.empty())
    return {};
  Finding f = make_finding(
      "gpu.persistence-off", Severity::warn,
      "Persistence mode is off on this server (GPUs " + join(off, ", ") + ")",
      "Without persistence the driver tears the GPUs down when the last process exits, so each "
      "new job and each nvidia-smi call waits seconds for them to initialise again.",
      {"sudo systemctl enable --now nvidia-persistenced", "or: sudo nvidia-smi -pm 1"});
  f.with("persistence_off_gpus", join(off, ", "))
      .with("nvidia_persistenced_running", show_opt(s.software.services.persistenced_running));
  return {f};
}

std::vector<Finding> mig_enabled(const Snapshot &s, const kb::KnowledgeBase &,
                                 const DoctorOptions &) {
  std::vector<std::string> on;
  for (const auto *g : nvml_gpus(s))
    if (g->nvml->mig_enabled == OptBool(true))
      on.push_back(std::to_string(g->nvml->index));
  if (on.empty())
    return {};
  auto cvd = env_var(s, "CUDA_VISIBLE_DEVICES");
  bool selected = cvd && cvd->find("MIG-") != std::string::npos;
  Finding f = make_finding(
      "gpu.mig-enabled", selected ? Severity::info : Severity::warn,
      "MIG is enabled on GPUs " + join(on, ", "),
      "With MIG on, a process sees at most one MIG instance, not the whole GPU: "
      "torch.cuda.device_count() is 0 or 1 and multi-GPU code fails with \"invalid device "
      "ordinal\".",
      {"pick an instance: nvidia-smi -L, then export CUDA_VISIBLE_DEVICES=MIG-<uuid>",
       "or turn MIG off: sudo nvidia-smi -i <N> -mig 0 && sudo nvidia-smi -i <N> -r"});
  f.with("mig_enabled_gpus", join(on, ", "));
  if (cvd)
    f.with("CUDA_VISIBLE_DEVICES", *cvd);
  return {f};
}

std::vector<Finding> fabric_manager(const Snapshot &s, const kb::KnowledgeBase &,
                                    const DoctorOptions &) {
  const auto &sv = s.software.services;
  if (sv.nvswitch_present != OptBool(true))
    return {};
  std::string branch = "<branch>";
  if (s.nvidia.driver_version)
    if (auto v = parse_version(*s.nvidia.driver_version); !v.empty())
      branch = std::to_string(v[0]);
  // NVML's fabric state (Hopper and later) says whether the fabric was set up, wherever Fabric
  // Manager runs: the answer from inside a container too.
  std::vector<std::string> not_ready, states;
  for (const auto *g : nvml_gpus(s)) {
    const auto &st = g->nvml->fabric_state;
    if (!st)
      continue;
    states.push_back(fmt::format("{}: {}{}", g->nvml->index, *st,
                                 g->nvml->fabric_error ? " (" + *g->nvml->fabric_error + ")" : ""));
    if (*st != "completed" || g->nvml->fabric_error)
      not_ready.push_back(std::to_string(g->nvml->index));
  }
  bool container = s.software.runtime.kind == OptStr("container");
  if (!states.empty()) {
    if (not_ready.empty())
      return {};
    Finding f = make_finding(
        "gpu.fabric-manager", Severity::fail,
        "The NVLink fabric is not set up for GPUs " + join(not_ready, ", ") +
            ": Fabric Manager has not registered them",
        "On NVSwitch systems CUDA cannot start until Fabric Manager has set up the NVLink fabric: "
        "\"cuda runtime error (802): system not yet initialized\". NVML reports each GPU's "
        "registration; \"in-progress\" right after boot settles within a minute.",
        {(container ? std::string("on the host: ") : std::string()) +
             "sudo systemctl status nvidia-fabricmanager   # running, same version as the driver",
         (container ? std::string("on the host: ") : std::string()) +
             "sudo apt install "
             "nvidia-fabricmanager-" +
             branch +
             " && sudo systemctl enable --now "
             "nvidia-fabricmanager"});
    f.with("nvswitch_present", "yes")
        .with("fabric_state", join(states, "; "))
        .with("driver_version", s.nvidia.driver_version.value_or("n/a"));
    return {f};
  }
  // In a container /proc lists only the container's processes: the host's Fabric Manager is
  // invisible there, so its absence from the list says nothing.
  if (container) {
    Finding f = could_not_check("gpu.fabric-manager", "Fabric Manager's state");
    f.why = "This runs in a container, whose /proc shows only the container's processes, and "
            "NVML does not report these GPUs' fabric state (nvmlDeviceGetGpuFabricInfo: Hopper "
            "and later, driver 525+). Check on the host: systemctl status nvidia-fabricmanager.";
    f.with("nvswitch_present", "yes").with("runtime", "container");
    return {f};
  }
  bool not_running = sv.fabricmanager_running == OptBool(false);
  bool version_differs = sv.fabricmanager_running == OptBool(true) && sv.fabricmanager_version &&
                         s.nvidia.driver_version &&
                         compare_versions(*sv.fabricmanager_version, *s.nvidia.driver_version) != 0;
  if (!not_running && !version_differs)
    return {};
  Finding f = make_finding(
      "gpu.fabric-manager", Severity::fail,
      not_running ? "NVSwitch system without Fabric Manager running"
                  : "Fabric Manager's version differs from the driver's",
      "On NVSwitch systems CUDA cannot start until Fabric Manager has set up the NVLink fabric: "
      "\"cuda runtime error (802): system not yet initialized\".",
      {"sudo apt install nvidia-fabricmanager-" + branch + "   # same version as the driver",
       "sudo systemctl enable --now nvidia-fabricmanager"});
  f.with("nvswitch_present", "yes")
      .with("fabricmanager_running", show_opt(sv.fabricmanager_running))
      .with("fabricmanager_version", sv.fabricmanager_version.value_or("n/a"))
      .with("driver_version", s.nvidia.driver_version.value_or("n/a"));
  return {f};
}

std::vector<Finding> compute_mode(const Snapshot &s, const kb::KnowledgeBase &,
                                  const DoctorOptions &) {
  std::vector<Finding> out;
  for (const auto *g : nvml_gpus(s)) {
    const auto &mode = g->nvml->compute_mode;
    if (!mode || *mode == "default")
      continue;
    bool prohibited = *mode == "prohibited";
    Finding f = make_finding(
        "gpu.compute-mode", prohibited ? Severity::fail : Severity::warn,
        fmt::format("{} is in compute mode {}", gpu_label(*g), *mode),
        prohibited ? "No process may create a CUDA context on a prohibited GPU."
                   : "An exclusive GPU takes one process (one context) at a time: a second one "
                     "fails with \"all CUDA-capable devices are busy or unavailable\" (DataLoader "
                     "workers or a second job touching CUDA included).",
        {fmt::format("sudo nvidia-smi -i {} -c DEFAULT", g->nvml->index)});
    f.with("compute_mode", *mode);
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Finding> memory_in_use(const Snapshot &s, const kb::KnowledgeBase &,
                                   const DoctorOptions &) {
  std::vector<Finding> out;
  for (const auto *g : nvml_gpus(s)) {
    const auto &n = *g->nvml;
    if (!n.memory_total_bytes || !n.memory_used_bytes || n.processes.empty() ||
        *n.memory_total_bytes == 0)
      continue;
    double share = static_cast<double>(*n.memory_used_bytes) / *n.memory_total_bytes;
    if (share < 0.5)
      continue;
    std::vector<std::string> procs;
    for (const auto &p : n.processes)
      procs.push_back(fmt::format("{} {} ({})", p.pid, p.name.value_or("?"),
                                  p.used_memory_bytes ? fmt_gib(*p.used_memory_bytes) : "n/a"));
    Finding f = make_finding(
        "gpu.memory-in-use", Severity::warn,
        fmt::format("{}: {:.0f}% of its memory is held by other processes", gpu_label(*g),
                    share * 100),
        "Memory another process holds is not available to yours: a model that fits an empty "
        "GPU fails with \"CUDA out of memory ... Process N has X GiB memory in use\".",
        {"nvidia-smi --query-compute-apps=pid,used_memory --format=csv",
         "kill <pid>   # when the process is stale or not yours to keep"});
    f.with("memory_used", bytes_of(static_cast<double>(*n.memory_used_bytes)))
        .with("memory_total", bytes_of(static_cast<double>(*n.memory_total_bytes)))
        .with("processes", join(procs, "; "));
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Finding> display_attached(const Snapshot &s, const kb::KnowledgeBase &,
                                      const DoctorOptions &) {
  std::vector<Finding> out;
  for (const auto *g : nvml_gpus(s)) {
    if (g->nvml->display_active != OptBool(true))
      continue;
    Finding f = make_finding(
        "gpu.display-attached", Severity::info, gpu_label(*g) + " also drives a display",
        "With a display on it, the display watchdog may kill a long-running kernel (\"the "
        "launch timed out and was terminated\") and the desktop takes some of its memory.",
        {"for long jobs, drive the display from another GPU or run headless: sudo systemctl "
         "stop display-manager"});
    f.with("display_active", "yes");
    out.push_back(std::move(f));
  }
  return out;
}

} // namespace

std::vector<Check> gpu_checks() {
  return {
      {"gpu.none-visible", "gpu", Severity::fail,
       "No NVIDIA GPU usable though one is on the PCI bus",
       "gpus[].driver, gpus[].nvml, nvidia.nvml_status, software.env.CUDA_VISIBLE_DEVICES, "
       "software.device_nodes",
       "an NVIDIA GPU is on the PCI bus and none is usable: no driver, nouveau or vfio-pci "
       "bound, NVML failing, CUDA_VISIBLE_DEVICES empty or -1, /dev/nvidia* missing or not "
       "accessible",
       "install/load the driver, unset CUDA_VISIBLE_DEVICES, create the device nodes or add the "
       "user to video/render",
       "https://github.com/qixuema/envs/issues/4; "
       "https://github.com/mattshma/bigdata/issues/133; "
       "https://github.com/Grace9994/CoMoSVC/issues/6; "
       "DCGM Software::checkPermissions "
       "https://github.com/NVIDIA/DCGM/blob/HEAD/nvvs/src/Software.cpp",
       none_visible},
      {"gpu.nvml-not-responding", "gpu", Severity::fail,
       "NVML hangs: a GPU or the driver stopped responding",
       "nvidia.nvml_status, nvidia.nvml_error",
       "NVML (its session and readings, run in a child process) did not answer within "
       "--nvml-timeout (30 s by default)",
       "find the Xid in `sudo dmesg`; stop the jobs and reboot; check power, seating, cooling",
       "NVIDIA Xid catalogue https://docs.nvidia.com/deploy/xid-errors/index.html (79: GPU has "
       "fallen off the bus); nvidia-smi stuck in uninterruptible sleep after Xid 45: "
       "https://github.com/leptonai/gpud/pull/117; "
       "https://github.com/NVIDIA/open-gpu-kernel-modules/issues/507",
       nvml_not_responding},
      {"gpu.fallen-off-bus", "gpu", Severity::fail, "A GPU has fallen off the bus",
       "nvidia.lost_gpus",
       "an NVML call for a GPU answered NVML_ERROR_GPU_IS_LOST (15) during the probe; readiness "
       "is decided by it when no other GPU NVML reads is left",
       "find the Xid in `sudo dmesg`; stop the jobs and reboot; check power, seating, BIOS, "
       "cooling",
       "NVML's nvmlReturn_t, NVML_ERROR_GPU_IS_LOST: \"The GPU has fallen off the bus or has "
       "otherwise become inaccessible\" (NVIDIA's nvml.h, "
       "https://github.com/NVIDIA/go-nvml/blob/main/pkg/nvml/nvml.h); NVIDIA Xid catalogue "
       "https://docs.nvidia.com/deploy/xid-errors/index.html (79); "
       "https://github.com/NVIDIA/open-gpu-kernel-modules/issues/507; "
       "https://github.com/NVIDIA/NVSentinel/issues/155",
       fallen_off_bus},
      {"gpu.thermal-throttle", "gpu", Severity::warn,
       "Clocks slowed for heat, or temperature near the slowdown threshold",
       "gpus[].nvml.throttle_reasons_mask, temperature_c, slowdown_temperature_c",
       "throttle bits HW slowdown (0x8), SW thermal (0x20) or HW thermal (0x40) are active, or "
       "the temperature is within 5 °C of the slowdown temperature",
       "airflow, fans, a cleaner heatsink, a lower power limit; an eGPU dock with active cooling",
       "NVML nvmlClocksEventReasons "
       "https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html; "
       "https://github.com/tensorflow/tensorflow/issues/40042; "
       "https://github.com/ollama/ollama/issues/13552",
       thermal_throttle},
      {"gpu.power-throttle", "gpu", Severity::warn,
       "Power limit lowered below the default, or the hardware power brake active",
       "gpus[].nvml.power_limit_w, power_default_limit_w, throttle_reasons_mask",
       "enforced power limit below the default limit, or throttle bit HW power brake (0x80)",
       "sudo nvidia-smi -i N -pl <default W>; check PSU and cables",
       "https://github.com/Microway/gpu-burn/issues/3; "
       "DCGM throttle field docs (no public URL recorded)",
       power_throttle},
      {"gpu.ecc-errors", "gpu", Severity::fail, "Uncorrectable ECC memory errors",
       "gpus[].nvml.ecc_uncorrected_volatile, ecc_uncorrected_aggregate",
       "fail: uncorrectable errors since the driver loaded; warn: in the GPU's lifetime",
       "reset the GPU (nvidia-smi -r); RMA when they recur",
       "https://github.com/vllm-project/vllm/issues/5222; "
       "https://github.com/Azure/azhpc-diagnostics/issues/75; "
       "https://github.com/leptonai/gpud/issues/108",
       ecc_errors},
      {"gpu.retired-pages", "gpu", Severity::fail,
       "Memory pages pending retirement or row remapping failed",
       "gpus[].nvml.retired_pages_pending, remapped_rows.pending, remapped_rows.failure",
       "warn: a retirement or remap is pending (needs a reset); fail: remapping failed",
       "reset or reboot; RMA on remap failure",
       "https://github.com/vllm-project/vllm/issues/5222; "
       "https://github.com/Azure/azhpc-diagnostics/issues/75; "
       "https://github.com/leptonai/gpud/issues/108",
       retired_pages},
      {"gpu.persistence-off", "gpu", Severity::warn, "Persistence mode off on a server",
       "gpus[].nvml.persistence_mode, software.services.persistenced_running, nvswitch_present, "
       "kb gpus form_factor",
       "on a server (NVSwitch, 4+ NVIDIA GPUs, or an SXM/OAM GPU) persistence is off and "
       "nvidia-persistenced is not running",
       "sudo systemctl enable --now nvidia-persistenced",
       "https://github.com/arrayfire/arrayfire/issues/2467; "
       "https://github.com/torch/cutorch/issues/346; "
       "https://github.com/GoogleCloudPlatform/ai-infra-cluster-provisioning/issues/227",
       persistence_off},
      {"gpu.mig-enabled", "gpu", Severity::warn, "MIG mode enabled",
       "gpus[].nvml.mig_enabled, software.env.CUDA_VISIBLE_DEVICES",
       "MIG is on (info only when CUDA_VISIBLE_DEVICES already names a MIG instance)",
       "export CUDA_VISIBLE_DEVICES=MIG-<uuid>, or nvidia-smi -mig 0 and reset",
       "https://github.com/pytorch/pytorch/issues/102715, "
       "https://github.com/pytorch/pytorch/issues/95784, "
       "https://github.com/pytorch/pytorch/issues/130181",
       mig_enabled},
      {"gpu.fabric-manager", "gpu", Severity::fail, "NVSwitch system without Fabric Manager",
       "software.services.nvswitch_present, fabricmanager_running, fabricmanager_version, "
       "gpus[].nvml.fabric_state, fabric_error, software.runtime.kind, nvidia.driver_version",
       "NVSwitch present and: NVML reports a GPU's fabric registration not completed (or "
       "completed with an error); or, when NVML does not report it and not in a container, "
       "Fabric Manager is not among the processes or its version differs from the driver. In a "
       "container without NVML's fabric state: info (unknown), never a failure",
       "apt install nvidia-fabricmanager-<branch>; systemctl enable --now nvidia-fabricmanager "
       "(on the host when in a container)",
       "https://github.com/pytorch/pytorch/issues/35710; "
       "DCGM Fabric Manager subtest "
       "https://github.com/NVIDIA/DCGM/blob/HEAD/nvvs/src/Software.cpp; "
       "fabric state: NVML nvmlDeviceGetGpuFabricInfo "
       "https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html; a container's "
       "/proc shows its own PID namespace: "
       "https://man7.org/linux/man-pages/man7/pid_namespaces.7.html",
       fabric_manager},
      {"gpu.compute-mode", "gpu", Severity::fail, "Compute mode exclusive or prohibited",
       "gpus[].nvml.compute_mode", "warn: exclusive-process/exclusive-thread; fail: prohibited",
       "sudo nvidia-smi -i N -c DEFAULT",
       "https://github.com/NVIDIA/DIGITS/issues/2005; "
       "https://github.com/tensorflow/tensorflow/issues/526",
       compute_mode},
      {"gpu.memory-in-use", "gpu", Severity::warn, "GPU memory held by other processes",
       "gpus[].nvml.memory_used_bytes, memory_total_bytes, processes",
       "processes hold half or more of a GPU's memory",
       "find them with nvidia-smi --query-compute-apps and stop the stale ones",
       "https://github.com/kaito-project/kaito/issues/976; "
       "https://github.com/RLinf/RLinf/issues/255",
       memory_in_use},
      {"gpu.display-attached", "gpu", Severity::info, "GPU also drives a display",
       "gpus[].nvml.display_active", "a display is active on the GPU (info only)",
       "drive the display from another GPU or run headless for long jobs",
       "https://github.com/numba/numba/issues/9381; "
       "https://github.com/ComputationalRadiationPhysics/picongpu/issues/2704",
       display_attached},
  };
}

} // namespace dlrig::doctor
