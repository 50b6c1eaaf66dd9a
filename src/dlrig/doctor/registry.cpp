#include "dlrig/doctor/check.hpp"
#include "dlrig/doctor/facts.hpp"

#include "dlrig/core/text.hpp"

#include <algorithm>
#include <exception>
#include <numeric>

namespace dlrig::doctor {

std::string_view to_string(Unit u) {
  switch (u) {
  case Unit::count:
    return "count";
  case Unit::bytes:
    return "bytes";
  case Unit::bytes_per_s:
    return "bytes_per_second";
  case Unit::percent:
    return "percent";
  case Unit::celsius:
    return "celsius";
  case Unit::watts:
    return "watts";
  }
  return "count";
}

std::string_view to_string(Severity s) {
  switch (s) {
  case Severity::ok:
    return "ok";
  case Severity::info:
    return "info";
  case Severity::warn:
    return "warn";
  case Severity::fail:
    return "fail";
  }
  return "ok";
}

const std::vector<Check> &all_checks() {
  static const std::vector<Check> checks = [] {
    std::vector<Check> all;
    for (auto group : {gpu_checks, driver_checks, torch_checks, cuda_checks, kernel_checks,
                       link_checks, host_checks, dist_checks, env_checks, container_checks}) {
      auto part = group();
      all.insert(all.end(), part.begin(), part.end());
    }
    return all;
  }();
  return checks;
}

std::vector<Finding> run_isolated(const Check &c, const Snapshot &s, const kb::KnowledgeBase &kb,
                                  const DoctorOptions &options) {
  std::vector<Finding> findings;
  try {
    findings = c.run(s, kb, options);
  } catch (const std::exception &e) {
    Finding f;
    f.severity = Severity::info;
    f.title = "Could not check: the check stopped on an unexpected value";
    f.why = "This check met a reading it could not handle, so it cannot decide; the other checks "
            "ran. Please report it with the snapshot (dlrig snapshot --redact).";
    f.evidence.push_back({"reason", e.what()});
    findings = {std::move(f)};
  }
  // A check reports only under its own id; keep that true whatever a rule group does.
  for (auto &f : findings)
    f.id = std::string(c.id);
  return findings;
}

std::optional<std::string> unknown_inputs(std::string_view area, const Snapshot &s) {
  const auto &k = s.software.kernel;
  bool gpus = !s.gpus.empty();
  bool kernel = s.host.os.kernel_release || k.nvidia.loaded || k.nouveau.loaded;
  bool env = !s.software.env.empty();
  if (area == "gpu" || area == "link")
    return gpus ? std::nullopt
                : std::optional<std::string>("no GPU readings in the snapshot (no PCI display "
                                             "controller recorded)");
  if (area == "driver")
    return gpus || s.nvidia.driver_version || k.nvidia.loaded
               ? std::nullopt
               : std::optional<std::string>("no GPU and no NVIDIA driver readings in the snapshot");
  if (area == "kernel")
    return kernel ? std::nullopt
                  : std::optional<std::string>("no kernel readings in the snapshot (release, "
                                               "loaded modules)");
  if (area == "host")
    return s.host.memory.total_bytes || s.host.cpu.threads || s.host.shm.size_bytes ||
                   !s.host.mounts.empty()
               ? std::nullopt
               : std::optional<std::string>("no host readings in the snapshot (memory, CPU, "
                                            "/dev/shm, mounts)");
  if (area == "torch")
    return !s.software.python_envs.empty()
               ? std::nullopt
               : std::optional<std::string>("no Python environment in the snapshot");
  if (area == "cuda" || area == "env" || area == "dist")
    return env || !s.software.cuda_toolkits.empty()
               ? std::nullopt
               : std::optional<std::string>("no environment variables and no CUDA toolkit in "
                                            "the snapshot");
  if (area == "container" || area == "wsl")
    return s.software.runtime.kind || kernel
               ? std::nullopt
               : std::optional<std::string>("no runtime readings in the snapshot (bare metal, "
                                            "VM, container or WSL2 unknown)");
  return std::nullopt;
}

std::optional<std::string> unknown_inputs(const Check &c, const Snapshot &s) {
  // Checks outside the gpu and link areas that decide on the GPUs themselves (their compute
  // capability, vendor or count): with the GPUs unknown (a collect_env report that lists none,
  // an unreadable PCI bus) finding nothing is not a pass.
  static constexpr std::string_view kNeedGpus[] = {
      "torch.cpu-only-build",   "torch.arch-unsupported",      "torch.triton-unsupported",
      "torch.vendor-mismatch",  "torch.tf32-off-by-default",   "host.ram-vs-vram",
      "host.cpu-cores-per-gpu", "kernel.open-module-required",
  };
  if (s.gpus.empty() && !gpus_known(s) &&
      std::find(std::begin(kNeedGpus), std::end(kNeedGpus), c.id) != std::end(kNeedGpus)) {
    for (const auto &n : s.notes)
      if (n.field == "gpus")
        return "the GPUs are unknown: " + n.reason;
    return std::string("the GPUs are unknown (the snapshot lists none)");
  }
  // Checks that decide on NVML's readings alone: with NVIDIA GPUs on the bus and NVML not read
  // (not loaded, failed, not answering, --no-nvml), finding nothing is not a pass.
  static constexpr std::string_view kNeedNvml[] = {
      "gpu.thermal-throttle", "gpu.power-throttle",  "gpu.ecc-errors",
      "gpu.retired-pages",    "gpu.persistence-off", "gpu.mig-enabled",
      "gpu.compute-mode",     "gpu.memory-in-use",   "gpu.display-attached",
  };
  const auto &status = s.nvidia.nvml_status;
  if (status && *status != "ok" && !nvidia_gpus(s).empty() &&
      std::find(std::begin(kNeedNvml), std::end(kNeedNvml), c.id) != std::end(kNeedNvml))
    return "NVML's readings are unknown (NVML " +
           std::string(*status == "not-probed" ? "not probed: --no-nvml" : *status) + ")";
  return unknown_inputs(c.area, s);
}

const Check *find_check(std::string_view id) {
  for (const auto &c : all_checks())
    if (c.id == id)
      return &c;
  return nullptr;
}

std::vector<std::string> nearest_ids(std::string_view id, std::size_t count) {
  // A query that is part of an id ("nouveau") is as near as it gets; then by edit distance.
  std::vector<std::string> out, rest;
  for (const auto &c : all_checks())
    (c.id.find(id) != std::string_view::npos ? out : rest).emplace_back(c.id);
  for (auto &near : nearest_names(rest, id, count))
    out.push_back(std::move(near));
  if (out.size() > count)
    out.resize(count);
  return out;
}

std::vector<std::string> all_areas() {
  std::vector<std::string> out;
  for (const auto &c : all_checks())
    if (std::find(out.begin(), out.end(), c.area) == out.end())
      out.emplace_back(c.area);
  return out;
}

} // namespace dlrig::doctor
