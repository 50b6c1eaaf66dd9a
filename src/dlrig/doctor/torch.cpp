// PyTorch install checks: the wheel against the GPUs (arch coverage, rule R1), the vendor, its
// companions and its bundled libraries. Each check's `source` names the public reports it rests
// on; releases, variants, arch lists and index URLs are the kb's torch table (data/torch.csv).
#include "dlrig/doctor/facts.hpp"

#include <fmt/format.h>

#include <cctype>

namespace dlrig::doctor {
namespace {

std::string suffix(std::string_view version) {
  auto p = version.find('+');
  return p == std::string_view::npos ? "" : std::string(version.substr(p + 1));
}

bool usable_nvidia(const Snapshot &s) {
  if (!nvml_gpus(s).empty())
    return true;
  bool nvml_failed =
      s.nvidia.nvml_status == OptStr("not-found") || s.nvidia.nvml_status == OptStr("init-failed");
  for (const auto *g : nvidia_gpus(s))
    if (g->driver == OptStr("nvidia") && !nvml_failed)
      return true;
  // Without NVML (--no-nvml, a partial probe): the module is loaded and a GPU node opens.
  if (nvml_failed || nvidia_gpus(s).empty() || s.software.kernel.nvidia.loaded != OptBool(true))
    return false;
  for (const auto &n : s.software.device_nodes)
    if (n.path.size() > 11 && n.path.rfind("/dev/nvidia", 0) == 0 &&
        std::isdigit(static_cast<unsigned char>(n.path[11])) && n.exists == OptBool(true) &&
        n.accessible != OptBool(false))
      return true;
  return false;
}

bool is_cpu_build(const Snapshot &s, const TorchInstall &t) {
  if (t.variant == OptStr("cpu") || (t.version && suffix(*t.version) == "cpu") ||
      t.cpu_only == OptBool(true))
    return true;
  // aarch64 PyPI wheels before 2.11 are CPU builds without a +cpu suffix (§2 #2).
  return !t.cuda && !t.hip && !t.variant && t.version && suffix(*t.version).empty() &&
         s.host.os.arch == OptStr("aarch64") && compare_versions(*t.version, "2.11") < 0;
}

std::string generic_pip(const std::optional<std::string> &dc) {
  std::string tag = "cuXXX";
  if (dc)
    if (auto v = parse_version(*dc); v.size() >= 2)
      tag = fmt::format("cu{}{}", v[0], v[1]);
  return "pip install --force-reinstall torch torchvision torchaudio --index-url "
         "https://download.pytorch.org/whl/" +
         tag + "   # pick a cuXXX the driver supports (at most CUDA " + dc.value_or("?") + ")";
}

std::vector<Finding> cpu_only_build(const Snapshot &s, const kb::KnowledgeBase &kb,
                                    const DoctorOptions &) {
  if (!usable_nvidia(s))
    return {};
  std::vector<Finding> out;
  auto dc = driver_cuda(s, kb);
  for (const auto &env : s.software.python_envs) {
    if (!env.torch || !is_cpu_build(s, *env.torch))
      continue;
    Finding f = make_finding(
        "torch.cpu-only-build", Severity::fail,
        fmt::format("torch {} in {} is a CPU-only build, on a machine with a usable NVIDIA GPU",
                    env.torch->version.value_or("?"), env.interpreter),
        "A CPU wheel has no CUDA at all: torch.cuda.is_available() is False and .cuda() raises "
        "\"Torch not compiled with CUDA enabled\"; training runs on the CPU, tens of times "
        "slower.");
    if (auto w = choose_wheel(kb, dc, nvidia_ccs(s, kb), env.torch->version.value_or("")))
      f.fix.push_back(w->pip);
    else
      f.fix.push_back(generic_pip(dc));
    f.with("python", env.interpreter)
        .with("torch", env.torch->version.value_or("n/a"))
        .with("variant", env.torch->variant.value_or("n/a"))
        .with("driver_cuda", dc.value_or("n/a"));
    out.push_back(std::move(f));
  }
  return out;
}

// The arch list of an install: its own, else what --deep asked torch, else the kb's for its
// variant.
std::vector<std::string> arch_list_of(const PythonEnv &env, const kb::KnowledgeBase &kb,
                                      std::string *from, bool *partial) {
  *partial = false;
  if (!env.torch->arch_list.empty()) {
    *from = "installed torch";
    return env.torch->arch_list;
  }
  if (env.deep && !env.deep->arch_list.empty()) {
    *from = "torch.cuda.get_arch_list()";
    return env.deep->arch_list;
  }
  if (env.torch->version)
    if (const auto *r = torch_release(kb, *env.torch->version)) {
      std::string tag = env.torch->variant.value_or(suffix(*env.torch->version));
      for (const auto &v : r->variants)
        if ((!tag.empty() && v.tag == tag) || (tag.empty() && v.pypi_default)) {
          *from = "knowledge base (" + r->version + " " + v.tag + ")";
          *partial = v.arch_list_partial;
          return v.arch_list;
        }
    }
  return {};
}

std::vector<Finding> arch_unsupported(const Snapshot &s, const kb::KnowledgeBase &kb,
                                      const DoctorOptions &) {
  std::vector<Finding> out;
  auto dc = driver_cuda(s, kb);
  auto ccs = nvidia_ccs(s, kb);
  for (const auto &env : s.software.python_envs) {
    if (!env.torch || !env.torch->cuda || is_cpu_build(s, *env.torch))
      continue;
    std::string from;
    bool partial = false;
    auto archs = arch_list_of(env, kb, &from, &partial);
    for (const auto *g : nvidia_gpus(s)) {
      auto cc = compute_capability(*g, kb);
      // A GPU the knowledge base does not know (a name from a collect_env report, no NVML) cannot
      // pass this check: without its capability nothing says the wheel has kernels for it.
      if (!cc) {
        out.push_back(could_not_check("torch.arch-unsupported",
                                      "the compute capability of " + gpu_label(*g)));
        break;
      }
      auto covered = arch_covers(archs, *cc);
      // A list the kb knows only in part cannot prove a capability missing.
      if (!covered || (!*covered && partial)) {
        out.push_back(could_not_check("torch.arch-unsupported",
                                      "the arch list of torch in " + env.interpreter));
        break;
      }
      if (*covered)
        continue;
      Finding f = make_finding(
          "torch.arch-unsupported", Severity::fail,
          fmt::format("torch {} has no kernels for {} (compute capability {})",
                      env.torch->version.value_or("?"), gpu_label(*g), *cc),
          "The wheel carries compiled kernels (sm_XY) and PTX (compute_XY) only for the GPUs in "
          "its arch list: on another GPU the first CUDA op fails with \"no kernel image is "
          "available for execution on the device\" (torch.cuda.is_available() still says "
          "True).");
      if (auto w = choose_wheel(kb, dc, ccs))
        f.fix.push_back(w->pip + "   # " + w->release->version + " " + w->variant->tag +
                        " covers " + join(ccs, ", "));
      else
        f.fix.push_back("no wheel in dlrig's knowledge base covers compute capability " + *cc +
                        " with this driver: upgrade the driver, then install a newer cuXXX wheel");
      f.with("python", env.interpreter)
          .with("torch", env.torch->version.value_or("n/a"))
          .with("compute_capability", *cc)
          .with("arch_list", join(archs, " "))
          .with("arch_list_from", from);
      out.push_back(std::move(f));
    }
  }
  return out;
}

std::vector<Finding> companion_mismatch(const Snapshot &s, const kb::KnowledgeBase &kb,
                                        const DoctorOptions &) {
  std::vector<Finding> out;
  for (const auto &env : s.software.python_envs) {
    if (!env.torch || !env.torch->version)
      continue;
    const std::string &tv = *env.torch->version;
    // The exact patch release's companions when the kb lists it; otherwise (an unlisted patch,
    // a nightly) only the major.minor family is certain.
    auto look = kb.lookup_torch(tv);
    const auto *r = look.release;
    std::vector<std::string> problems;
    Finding f = make_finding(
        "torch.companion-mismatch", Severity::fail, "",
        "torchvision and torchaudio contain compiled operators linked against one torch build: "
        "with another torch or CUDA they fail at import (\"undefined symbol\", \"operator "
        "torchvision::nms does not exist\") or when the operator first runs.");
    auto check = [&](const char *name, const OptStr &ver, const std::string &expected,
                     const std::vector<std::string> &also) {
      if (!ver)
        return;
      f.with(name, *ver);
      std::string a = suffix(tv), b = suffix(*ver);
      auto mine = kb::parse_torch_version(*ver).release;
      bool paired = compare_versions(mine, expected) == 0;
      for (const auto &x : also)
        paired = paired || compare_versions(mine, x) == 0;
      auto family = kb::torch_companion_family(tv, name);
      auto parts = parse_version(mine);
      const std::string mm = parts.size() >= 2 ? fmt::format("{}.{}", parts[0], parts[1]) : "";
      bool in_family = !mm.empty() && mm == family;
      // A build on PyTorch's stable ABI loads in its own torch and newer ones (not older).
      if (const auto since = kb::torch_stable_abi_since(name);
          !since.empty() && !mm.empty() && !family.empty() && compare_versions(mm, since) >= 0 &&
          compare_versions(mm, family) <= 0)
        paired = in_family = true;
      if (!a.empty() && !b.empty() && a != b)
        problems.push_back(fmt::format("{} {} is built for {}, torch for {}", name, *ver, b, a));
      else if (!expected.empty() && !paired)
        problems.push_back(fmt::format("{} {} belongs to another torch (torch {} pairs with {} {})",
                                       name, *ver, r->version, name, expected));
      else if (expected.empty() && !family.empty() && !in_family)
        problems.push_back(
            fmt::format("{} {} belongs to another torch (torch {} pairs with {} {}.x)", name, *ver,
                        look.parsed.release, name, family));
    };
    check("torchvision", env.torchvision, look.exact ? r->torchvision : "",
          look.exact ? r->torchvision_also : std::vector<std::string>{});
    check("torchaudio", env.torchaudio, look.exact ? r->torchaudio : "",
          look.exact ? r->torchaudio_also : std::vector<std::string>{});
    if (problems.empty())
      continue;
    f.title = join(problems, "; ");
    f.with("python", env.interpreter).with("torch", tv);
    auto dc = driver_cuda(s, kb);
    if (r) {
      const kb::TorchVariant *same = nullptr;
      std::string tag = env.torch->variant.value_or(suffix(tv));
      for (const auto &v : r->variants)
        if (v.tag == tag || (tag.empty() && v.pypi_default))
          same = &v;
      if (same)
        f.fix.push_back(reinstall_command(*r, *same));
      // No torchaudio of its own for this torch (2.11 on): the kb's line leaves the installed
      // one as it is, so the stable-ABI range is named for the same index.
      const auto since = kb::torch_stable_abi_since("torchaudio");
      const auto family = kb::torch_companion_family(r->version, "torchaudio");
      if (same && env.torchaudio && r->torchaudio.empty() && !since.empty() && !family.empty() &&
          compare_versions(family, since) >= 0) {
        const auto next = parse_version(family);
        f.fix.push_back(fmt::format(
            "and a torchaudio of {} up to torch's {} (built on PyTorch's stable ABI; torch {} has "
            "no torchaudio of its own): pip install --force-reinstall \"torchaudio>={},<{}.{}\"{}",
            since, family, r->version, since, next.at(0), next.at(1) + 1,
            same->index_url.rfind("https://pypi.org/", 0) == 0
                ? ""
                : " --index-url " + same->index_url));
      }
    }
    if (f.fix.empty())
      f.fix.push_back("reinstall the three together from one index: pip install "
                      "--force-reinstall torch==<ver> torchvision==<ver> torchaudio==<ver> "
                      "--index-url https://download.pytorch.org/whl/<variant>");
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Finding> triton_unsupported(const Snapshot &s, const kb::KnowledgeBase &kb,
                                        const DoctorOptions &) {
  bool torch2 = false;
  std::string version;
  for (const auto &env : s.software.python_envs)
    if (env.torch && env.torch->cuda && env.torch->version &&
        compare_versions(*env.torch->version, "2.0") >= 0) {
      torch2 = true;
      version = *env.torch->version;
    }
  if (!torch2)
    return {};
  for (const auto *g : nvidia_gpus(s)) {
    auto cc = compute_capability(*g, kb);
    if (!cc)
      return {could_not_check("torch.triton-unsupported",
                              "the compute capability of " + gpu_label(*g))};
    if (compare_versions(*cc, "7.0") >= 0)
      continue;
    Finding f = make_finding(
        "torch.triton-unsupported", Severity::warn,
        fmt::format("{} (compute capability {}) is too old for torch.compile", gpu_label(*g), *cc),
        "torch.compile generates Triton kernels, and Triton needs compute capability 7.0 or "
        "newer: compiling fails with \"too old to be supported by the triton GPU compiler\".",
        {on_windows(s) ? "do not call torch.compile on this GPU, or disable it: set "
                         "TORCHDYNAMO_DISABLE=1   # PowerShell: $env:TORCHDYNAMO_DISABLE=1"
                       : "do not call torch.compile on this GPU, or disable it: export "
                         "TORCHDYNAMO_DISABLE=1"});
    f.with("compute_capability", *cc).with("torch", version);
    return {f};
  }
  return {};
}

std::vector<Finding> vendor_mismatch(const Snapshot &s, const kb::KnowledgeBase &kb,
                                     const DoctorOptions &) {
  bool nvidia = !nvidia_gpus(s).empty();
  bool amd = false;
  for (const auto &g : s.gpus)
    amd = amd || is_amd(g);
  std::vector<Finding> out;
  for (const auto &env : s.software.python_envs) {
    if (!env.torch)
      continue;
    bool cuda_build = env.torch->cuda.has_value();
    bool rocm_build =
        env.torch->hip.has_value() || env.torch->variant.value_or("").rfind("rocm", 0) == 0;
    if (amd && !nvidia && cuda_build) {
      Finding f = make_finding(
          "torch.vendor-mismatch", Severity::fail,
          fmt::format("torch {} is a CUDA build but the GPUs here are AMD",
                      env.torch->version.value_or("?")),
          "A CUDA build cannot drive AMD GPUs: torch.cuda.is_available() is False. AMD GPUs need "
          "the ROCm build, which answers through the same torch.cuda API.");
      std::string cmd;
      // This torch's own release, else the newest with a ROCm build (not 1.8's).
      for (auto it = kb.torch.rbegin(); it != kb.torch.rend(); ++it)
        if (const auto &r = *it;
            cmd.empty() ||
            (env.torch->version && compare_versions(r.version, *env.torch->version) == 0))
          for (const auto &v : r.variants)
            if (v.tag.rfind("rocm", 0) == 0 && !v.index_url.empty())
              cmd = reinstall_command(r, v);
      f.fix.push_back(!cmd.empty() ? cmd
                                   : "pip install --force-reinstall torch torchvision torchaudio "
                                     "--index-url https://download.pytorch.org/whl/rocmX.Y");
      f.with("python", env.interpreter).with("torch", env.torch->version.value_or("n/a"));
      out.push_back(std::move(f));
    } else if (nvidia && !amd && rocm_build) {
      Finding f = make_finding(
          "torch.vendor-mismatch", Severity::fail,
          fmt::format("torch {} is a ROCm build but the GPUs here are NVIDIA",
                      env.torch->version.value_or("?")),
          "A ROCm build cannot drive NVIDIA GPUs: torch.cuda.is_available() is False.");
      auto w = choose_wheel(kb, driver_cuda(s, kb), nvidia_ccs(s, kb));
      f.fix.push_back(w ? w->pip : generic_pip(driver_cuda(s, kb)));
      f.with("python", env.interpreter).with("torch", env.torch->version.value_or("n/a"));
      out.push_back(std::move(f));
    }
  }
  return out;
}

std::vector<Finding> deep_cuda_unavailable(const Snapshot &s, const kb::KnowledgeBase &,
                                           const DoctorOptions &) {
  if (nvidia_gpus(s).empty())
    return {};
  std::vector<Finding> out;
  for (const auto &env : s.software.python_envs) {
    if (!env.torch || !env.deep || env.deep->ran != OptBool(true) ||
        env.deep->cuda_available != OptBool(false) || is_cpu_build(s, *env.torch))
      continue;
    Finding f = make_finding(
        "torch.cuda-unavailable", Severity::fail,
        fmt::format("torch in {} says torch.cuda.is_available() is False", env.interpreter),
        "PyTorch itself could not start CUDA here; its error text names the cause (driver, "
        "device nodes, CUDA_VISIBLE_DEVICES, a broken nvidia_uvm after suspend).",
        {"read the error below; the other findings usually name the cause"});
    // WSL2 and Windows have no nvidia_uvm module: their driver is Windows'.
    if (!windows_driver(s))
      f.fix.push_back("after a suspend/resume: sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm");
    f.with("python", env.interpreter).with("error", env.deep->error.value_or("n/a"));
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Finding> bundled_cudnn(const Snapshot &s, const kb::KnowledgeBase &kb,
                                   const DoctorOptions &) {
  std::vector<Finding> out;
  for (const auto &env : s.software.python_envs) {
    if (!env.torch || !env.torch->version || !env.torch->cuda)
      continue;
    const auto *r = torch_release(kb, *env.torch->version);
    if (!r)
      continue;
    std::string tag = env.torch->variant.value_or(suffix(*env.torch->version));
    const kb::TorchVariant *var = nullptr;
    for (const auto &v : r->variants)
      if (v.tag == tag || (tag.empty() && v.pypi_default))
        var = &v;
    if (!var || var->cudnn.empty())
      continue;
    for (const auto &[pkg, ver] : env.nvidia_wheels) {
      if (pkg.rfind("nvidia-cudnn-cu", 0) != 0)
        continue;
      if (parse_version(ver).empty() || parse_version(var->cudnn).empty() ||
          parse_version(ver)[0] == parse_version(var->cudnn)[0])
        continue;
      Finding f = make_finding(
          "torch.cudnn-wheel-mismatch", Severity::fail,
          fmt::format("{} {} is installed, but torch {} is built against cuDNN {}", pkg, ver,
                      *env.torch->version, var->cudnn),
          "torch loads the cuDNN of the nvidia-cudnn wheel beside it; another major version "
          "fails at the first convolution (\"cuDNN version incompatibility\") or at import.",
          {fmt::format("pip install --force-reinstall {}=={}", pkg, var->cudnn)});
      f.with("python", env.interpreter).with(pkg, ver).with("torch_cudnn", var->cudnn);
      out.push_back(std::move(f));
    }
  }
  return out;
}

std::vector<Finding> tf32_default_off(const Snapshot &s, const kb::KnowledgeBase &kb,
                                      const DoctorOptions &) {
  bool cuda_torch = false;
  for (const auto &env : s.software.python_envs)
    cuda_torch = cuda_torch || (env.torch && env.torch->cuda);
  if (!cuda_torch)
    return {};
  for (const auto *g : nvidia_gpus(s)) {
    auto cc = compute_capability(*g, kb);
    if (!cc || compare_versions(*cc, "8.0") < 0)
      continue;
    Finding f = make_finding(
        "torch.tf32-off-by-default", Severity::info,
        "This GPU has TF32 tensor cores; PyTorch leaves them off for float32 matmuls",
        "Since PyTorch 1.12 float32 matrix multiplies default to full FP32, several times slower "
        "than TF32 on Ampere and newer (PyTorch's A100 example: 0.11 s vs 0.016 s).",
        {"in the training script: torch.set_float32_matmul_precision('high')"});
    f.with("compute_capability", *cc).with("gpu", gpu_label(*g));
    return {f};
  }
  return {};
}

} // namespace

std::vector<Check> torch_checks() {
  return {
      {"torch.cpu-only-build", "torch", Severity::fail,
       "A +cpu wheel on a machine with a usable GPU",
       "software.python_envs[].torch (version, variant, cuda), host.os.arch, gpus[], kb torch",
       "torch is a CPU build (variant cpu, +cpu, or an aarch64 PyPI wheel before 2.11) and an "
       "NVIDIA GPU is usable",
       "pip install the matching cuXXX wheel with its index URL, chosen for this driver and GPU",
       "https://github.com/pytorch/pytorch/issues/28111; "
       "https://github.com/facebookresearch/detectron2/issues/460; "
       "aarch64 wheels before 2.11: secondary note, no public URL recorded (UNVERIFIED); "
       "https://github.com/pytorch/pytorch/blob/main/RELEASE.md",
       cpu_only_build},
      {"torch.arch-unsupported", "torch", Severity::fail,
       "The GPU's compute capability is not in the wheel's arch list",
       "software.python_envs[].torch.arch_list (else --deep arch list, else kb variant), "
       "gpus[].nvml.compute_capability (else kb by PCI id), kb torch",
       "rule R1 finds no sm_ cubin of the same major and lower-or-equal minor and no PTX at or "
       "below the capability",
       "pip install the newest kb wheel that covers every GPU and that the driver runs",
       "https://github.com/pytorch/pytorch/issues/150733, "
       "https://github.com/pytorch/pytorch/issues/182250; "
       "https://github.com/googlecolab/colabtools/issues/5982; "
       "rule R1: https://docs.nvidia.com/cuda/ada-compatibility-guide/; "
       "https://github.com/pytorch/pytorch/blob/main/RELEASE.md",
       arch_unsupported},
      {"torch.companion-mismatch", "torch", Severity::fail,
       "torchvision/torchaudio built for another torch or CUDA",
       "software.python_envs[].torch.version, torchvision, torchaudio, kb torch companions",
       "their +cuXXX suffix differs from torch's, or their version is not the one the kb pairs "
       "with this exact torch release; for a release the kb does not list (a nightly, an "
       "unlisted patch), their major.minor is not torch's family (torchvision 0.(minor+15) for "
       "2.x); a torchaudio from 2.10 on (built on PyTorch's stable ABI) pairs with its own torch "
       "and newer ones",
       "reinstall torch, torchvision and torchaudio together from one index",
       "https://pytorch.org/get-started/previous-versions/; "
       "https://github.com/pytorch/vision/blob/main/README.md; "
       "https://github.com/pytorch/audio/pull/4142; https://github.com/pytorch/audio/pull/4147; "
       "dlrig issue 4 (torchvision/torchaudio ↔ torch)",
       companion_mismatch},
      {"torch.triton-unsupported", "torch", Severity::warn,
       "torch.compile on a GPU below compute capability 7.0",
       "software.python_envs[].torch, gpus[] compute capability",
       "torch 2.x with CUDA and a GPU below 7.0", "skip torch.compile or TORCHDYNAMO_DISABLE=1",
       "https://github.com/karpathy/nanoGPT/issues/157; "
       "https://github.com/MIC-DKFZ/nnUNet/issues/2188",
       triton_unsupported},
      {"torch.vendor-mismatch", "torch", Severity::fail,
       "A CUDA build on AMD GPUs, or a ROCm build on NVIDIA GPUs",
       "software.python_envs[].torch (cuda, hip, variant), gpus[].vendor, kb torch",
       "only AMD GPUs and torch is a CUDA build, or only NVIDIA GPUs and torch is a ROCm build",
       "pip install the build for this vendor",
       "https://github.com/pytorch/pytorch/blob/main/RELEASE.md (Release Compatibility Matrix)",
       vendor_mismatch},
      {"torch.cuda-unavailable", "torch", Severity::fail,
       "torch itself reports CUDA unavailable (--deep)",
       "software.python_envs[].deep (ran, cuda_available, error)",
       "--deep ran the interpreter, torch is not a CPU build and is_available() was False",
       "follow the error text; reload nvidia_uvm after suspend",
       "https://github.com/pytorch/pytorch/issues/88639, "
       "https://github.com/pytorch/pytorch/issues/167244",
       deep_cuda_unavailable},
      {"torch.cudnn-wheel-mismatch", "torch", Severity::fail,
       "nvidia-cudnn wheel of another major than torch was built with",
       "software.python_envs[].nvidia_wheels, torch.version, kb torch variant cudnn",
       "the nvidia-cudnn-cuXX wheel's major differs from the kb's cuDNN for this torch variant",
       "pip install the cuDNN wheel version torch pins",
       "collect_env pip patterns "
       "https://github.com/pytorch/pytorch/blob/main/torch/utils/collect_env.py; "
       "https://github.com/pytorch/pytorch/issues/80637; "
       "cuDNN per release https://github.com/pytorch/pytorch/blob/main/RELEASE.md",
       bundled_cudnn},
      {"torch.tf32-off-by-default", "torch", Severity::info,
       "TF32 tensor cores left unused for float32 matmuls",
       "gpus[] compute capability, software.python_envs[].torch.cuda",
       "a GPU of compute capability 8.0 or newer with a CUDA torch (advice, info only)",
       "torch.set_float32_matmul_precision('high')",
       "https://github.com/pytorch/pytorch/pull/79537; "
       "PyTorch CUDA semantics https://pytorch.org/docs/stable/notes/cuda.html",
       tf32_default_off},
  };
}

} // namespace dlrig::doctor
