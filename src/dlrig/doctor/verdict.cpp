#include "dlrig/doctor/verdict.hpp"

#include "dlrig/doctor/facts.hpp"
#include "dlrig/doctor/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace dlrig::doctor {
namespace {

// The checks whose failure means PyTorch cannot use the GPU, root causes first: what surrounds
// the device (a container without the NVIDIA runtime, a Linux driver inside WSL2), the driver
// (a version mismatch, nouveau, no module, a proprietary module on Blackwell, a stub or compat
// libcuda ahead of it), then the GPUs being unusable (NVML hanging, every GPU off the bus, none
// visible, the NVLink fabric not set up, CUDA_VISIBLE_DEVICES naming no GPU here, every GPU
// prohibited), then torch's build against it, then torch's own answer (--deep, or a collect_env
// report's "Is CUDA available"). Only a fail finding decides (env.cuda-visible-devices fails only
// when its first entry matches no GPU, so none is left); a failure of any other check (a
// torchvision mismatch, ECC errors) leaves the GPU usable and shows below.
constexpr std::array<std::string_view, 20> kDeciding = {
    "container.no-gpu-runtime",    "container.lost-gpu",       "wsl.driver-inside",
    "driver.nvml-mismatch",        "kernel.nouveau-loaded",    "driver.no-kernel-module",
    "kernel.open-module-required", "driver.stub-libcuda",      "driver.compat-lib",
    "gpu.nvml-not-responding",     "gpu.fallen-off-bus",       "gpu.none-visible",
    "gpu.fabric-manager",          "env.cuda-visible-devices", "gpu.compute-mode",
    "torch.cpu-only-build",        "torch.vendor-mismatch",    "driver.too-old-for-torch",
    "torch.arch-unsupported",      "torch.cuda-unavailable",
};

// gpu.compute-mode fails once per prohibited GPU: it keeps PyTorch off the GPU only when every
// GPU NVML sees is prohibited; otherwise PyTorch uses the others (step 4 leaves them out).
bool prohibited(const Gpu &g) {
  return g.nvml && g.nvml->compute_mode == OptStr("prohibited");
}

// gpu.fallen-off-bus keeps PyTorch off the GPU only when no GPU NVML reads is left; otherwise
// PyTorch uses the others (step 4 leaves the lost ones out).
bool lost(const Snapshot &s, const Gpu &g) {
  for (const auto &l : s.nvidia.lost_gpus)
    if (l.bdf == OptStr(g.bdf) || (g.nvml && g.nvml->index == l.index))
      return true;
  return false;
}

const Finding *deciding_failure(const Snapshot &s, const std::vector<CheckResult> &results) {
  const auto seen = nvml_gpus(s);
  const bool all_prohibited =
      !seen.empty() &&
      std::all_of(seen.begin(), seen.end(), [](const Gpu *g) { return prohibited(*g); });
  const bool all_lost =
      std::all_of(seen.begin(), seen.end(), [&](const Gpu *g) { return lost(s, *g); });
  for (auto id : kDeciding) {
    if (id == "gpu.compute-mode" && !all_prohibited)
      continue;
    if (id == "gpu.fallen-off-bus" && !all_lost)
      continue;
    for (const auto &r : results)
      if (r.check && r.check->id == id)
        for (const auto &f : r.findings)
          if (f.severity == Severity::fail)
            return &f;
  }
  return nullptr;
}

std::string build_of(const TorchInstall &t) {
  if (t.cuda)
    return "CUDA " + *t.cuda;
  if (t.hip)
    return "ROCm " + *t.hip;
  if (t.cpu_only == OptBool(true) || t.variant == OptStr("cpu"))
    return "CPU-only";
  return "";
}

std::vector<const Gpu *> amd_gpus(const Snapshot &s) {
  std::vector<const Gpu *> out;
  for (const auto &g : s.gpus)
    if (is_amd(g))
      out.push_back(&g);
  return out;
}

// The newest kb release that has a variant of this kind ("cpu", "rocm"): its install line.
std::optional<std::string> install_line(const kb::KnowledgeBase &kb, std::string_view kind) {
  const kb::TorchRelease *best = nullptr;
  const kb::TorchVariant *variant = nullptr;
  for (const auto &r : kb.torch)
    for (const auto &v : r.variants)
      if (v.tag.rfind(kind, 0) == 0 && !v.index_url.empty() &&
          (!best || compare_versions(r.version, best->version) > 0)) {
        best = &r;
        variant = &v;
      }
  if (!best)
    return std::nullopt;
  return kb::pip_command(*best, *variant);
}

std::string gpu_list(const std::vector<std::string> &gpus) {
  if (gpus.empty())
    return "the GPU";
  if (gpus.size() == 1)
    return gpus.front();
  return fmt::format("{} and {} more", gpus.front(), gpus.size() - 1);
}

} // namespace

std::string_view to_string(Readiness r) {
  switch (r) {
  case Readiness::yes:
    return "yes";
  case Readiness::no:
    return "no";
  case Readiness::unknown:
    return "unknown";
  }
  return "unknown";
}

const PythonEnv *verdict_env(const Snapshot &s) {
  const PythonEnv *on_path = nullptr, *first = nullptr;
  for (const auto &e : s.software.python_envs) {
    if (!e.torch)
      continue;
    if (e.active == OptBool(true))
      return &e;
    if (!on_path && std::find(e.found_by.begin(), e.found_by.end(), "path") != e.found_by.end())
      on_path = &e;
    if (!first)
      first = &e;
  }
  return on_path ? on_path : first;
}

Verdict readiness(const Snapshot &s, const std::vector<CheckResult> &results,
                  const kb::KnowledgeBase &kb) {
  Verdict v;
  const PythonEnv *env = verdict_env(s);
  if (env) {
    v.python = env->interpreter;
    v.torch = env->torch->version;
    if (auto b = build_of(*env->torch); !b.empty())
      v.build = b;
  }
  const auto nv = nvidia_gpus(s);
  const auto amd = amd_gpus(s);
  const auto torch_said = env && env->deep && env->deep->ran == OptBool(true)
                              ? env->deep->cuda_available
                              : std::nullopt;

  // 1. Nothing to run on.
  if (gpus_known(s) && nv.empty() && amd.empty() && torch_said != OptBool(true)) {
    v.ready = Readiness::no;
    v.answer = "no NVIDIA or AMD GPU on the PCI bus: PyTorch will run on the CPU";
    if (!env && !s.software.python_search.empty())
      if (auto line = install_line(kb, "cpu")) {
        v.answer += "; no PyTorch in any Python environment found";
        v.fix = {*line};
      }
    return v;
  }

  // 2. A failure that keeps PyTorch off the GPU.
  if (const Finding *f = deciding_failure(s, results)) {
    v.ready = Readiness::no;
    v.answer = f->title;
    v.decided_by = f->id;
    v.fix = f->fix;
    if (const auto n = nvml_gpus(s).size(); f->id == "gpu.compute-mode" && n > 1) {
      v.answer += fmt::format(", as are the other {} GPUs", n - 1);
      v.fix = {"sudo nvidia-smi -c DEFAULT   # every GPU"};
    }
    return v;
  }

  // 3. No PyTorch.
  if (!env) {
    bool looked = !s.software.python_envs.empty() || !s.software.python_search.empty();
    v.ready = looked ? Readiness::no : Readiness::unknown;
    if (!looked) {
      v.answer = "the snapshot names no Python environment, so whether PyTorch is installed is "
                 "unknown";
      return v;
    }
    v.answer = "no PyTorch in any Python environment found";
    if (!nv.empty()) {
      if (auto w = choose_wheel(kb, driver_cuda(s, kb), nvidia_ccs(s, kb)))
        v.fix = {kb::pip_command(*w->release, *w->variant)};
      v.answer += fmt::format(": install a CUDA build for {}", gpu_label(*nv.front()));
    } else if (!amd.empty()) {
      if (auto line = install_line(kb, "rocm"))
        v.fix = {*line};
      v.answer += fmt::format(": install a ROCm build for {}", gpu_label(*amd.front()));
    }
    return v;
  }

  // 4. PyTorch and a GPU: which GPUs its build will use.
  const auto &t = *env->torch;
  const bool amd_build = t.hip.has_value();
  std::vector<std::string> names;
  if (amd_build) {
    for (const auto *g : amd)
      names.push_back(gpu_label(*g));
  } else {
    auto seen = nvml_gpus(s);
    for (const auto *g : seen.empty() ? nv : seen)
      if (!prohibited(*g) && !lost(s, *g))
        names.push_back(gpu_label(*g));
  }
  v.gpus = names;
  const std::string who = fmt::format("torch {}{} in {}", t.version.value_or("(version unknown)"),
                                      v.build ? " (" + *v.build + ")" : "", env->interpreter);
  if (v.build == OptStr("CPU-only")) {
    // A CPU build where the checks found no usable GPU to blame it for (torch.cpu-only-build
    // decides above when there is one).
    v.ready = Readiness::no;
    v.answer = who + " is a CPU-only build: PyTorch will run on the CPU";
    return v;
  }
  if (torch_said == OptBool(false)) {
    v.ready = Readiness::no;
    v.answer = who + " says CUDA is not available" +
               (env->deep->error ? ": " + *env->deep->error : std::string());
    return v;
  }
  if (!t.cuda && !t.hip) {
    v.ready = Readiness::unknown;
    v.answer = who + " does not say which CUDA or ROCm it was built with";
    return v;
  }
  if (names.empty()) {
    v.ready = torch_said == OptBool(true) ? Readiness::yes : Readiness::unknown;
    v.answer = torch_said == OptBool(true)
                   ? who + " says CUDA is available (which GPU is not recorded)"
                   : who + ": which GPU it would use is not known (no GPU readings)";
    return v;
  }
  v.ready = Readiness::yes;
  v.answer = who + " will use " + gpu_list(names);
  if (auto cvd = env_var(s, "CUDA_VISIBLE_DEVICES"))
    v.answer += " (as far as CUDA_VISIBLE_DEVICES=" + *cvd + " lets it)";
  return v;
}

} // namespace dlrig::doctor
