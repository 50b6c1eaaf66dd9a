// Environment-variable checks: CUDA variables left from debugging or pointing at GPUs that are
// not there. Each check's `source` names the public reports it rests on.
#include "dlrig/doctor/facts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace dlrig::doctor {
namespace {

std::vector<std::string> split(const std::string &v, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= v.size()) {
    auto end = v.find(sep, start);
    if (end == std::string::npos)
      end = v.size();
    std::string part = v.substr(start, end - start);
    part.erase(0, part.find_first_not_of(" \t"));
    part.erase(part.find_last_not_of(" \t") + 1);
    out.push_back(part);
    start = end + 1;
  }
  return out;
}

std::vector<Finding> launch_blocking(const Snapshot &s, const kb::KnowledgeBase &,
                                     const DoctorOptions &) {
  auto v = env_var(s, "CUDA_LAUNCH_BLOCKING");
  if (!v || (*v != "1" && *v != "true"))
    return {};
  Finding f = make_finding(
      "env.cuda-launch-blocking", Severity::warn, "CUDA_LAUNCH_BLOCKING=1 is set",
      "It makes every kernel launch wait for the GPU to finish: useful to find which line "
      "raised a CUDA error, but it serialises CPU and GPU and slows training several-fold.",
      {"unset CUDA_LAUNCH_BLOCKING   # and remove it from ~/.bashrc or the job script"});
  f.with("CUDA_LAUNCH_BLOCKING", *v);
  return {f};
}

std::vector<Finding> visible_devices(const Snapshot &s, const kb::KnowledgeBase &,
                                     const DoctorOptions &) {
  auto v = env_var(s, "CUDA_VISIBLE_DEVICES");
  auto gpus = nvml_gpus(s);
  // Empty and -1 hide every GPU on purpose or by mistake: gpu.none-visible reports them.
  if (!v || v->empty() || *v == "-1" || *v == "none" || *v == "NoDevFiles" || gpus.empty())
    return {};
  std::set<std::string> uuids;
  for (const auto *g : gpus)
    if (g->nvml->uuid)
      uuids.insert(*g->nvml->uuid);
  std::vector<std::string> bad;
  std::size_t first_bad = std::string::npos;
  auto tokens = split(*v, ',');
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const auto &t = tokens[i];
    bool ok = true;
    if (t.rfind("GPU-", 0) == 0) {
      // CUDA accepts any unique prefix of a UUID.
      ok = uuids.empty() || std::any_of(uuids.begin(), uuids.end(),
                                        [&](const std::string &u) { return u.rfind(t, 0) == 0; });
    } else if (t.rfind("MIG-", 0) == 0) {
      ok = true;
    } else {
      auto digits = !t.empty() &&
                    std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
      // Compared as text: "00000000000000000000001" is index 1, and no index has 20 digits.
      auto index = t.substr(std::min(t.find_first_not_of('0'), t.size() - 1));
      ok = digits && index.size() <= 9 && std::stoul(index) < gpus.size();
    }
    if (!ok) {
      bad.push_back(t.empty() ? "\"\"" : t);
      if (first_bad == std::string::npos)
        first_bad = i;
    }
  }
  if (bad.empty())
    return {};
  bool none_left = first_bad == 0;
  Finding f = make_finding(
      "env.cuda-visible-devices", none_left ? Severity::fail : Severity::warn,
      fmt::format("CUDA_VISIBLE_DEVICES={} names GPUs that are not here ({})", *v, join(bad, ", ")),
      "CUDA stops reading the list at the first entry that matches no GPU: everything after it "
      "is hidden, and if it is the first, PyTorch says \"No CUDA GPUs are available\".",
      {fmt::format("export CUDA_VISIBLE_DEVICES={}   # indices run 0..{} here",
                   gpus.size() == 1 ? std::string("0") : fmt::format("0-{}", gpus.size() - 1),
                   gpus.size() - 1),
       "or unset CUDA_VISIBLE_DEVICES"});
  if (gpus.size() > 1)
    f.fix[0] = fmt::format(
        "export CUDA_VISIBLE_DEVICES={}   # indices run 0..{} here",
        [&] {
          std::vector<std::string> all;
          for (std::size_t i = 0; i < gpus.size(); ++i)
            all.push_back(std::to_string(i));
          return join(all, ",");
        }(),
        gpus.size() - 1);
  f.with("CUDA_VISIBLE_DEVICES", *v).with("gpus", count_of(static_cast<double>(gpus.size())));
  return {f};
}

std::vector<Finding> device_order(const Snapshot &s, const kb::KnowledgeBase &,
                                  const DoctorOptions &) {
  std::set<std::string> names;
  for (const auto *g : nvml_gpus(s))
    names.insert(gpu_name(*g));
  auto order = env_var(s, "CUDA_DEVICE_ORDER");
  if (names.size() < 2 || order == std::optional<std::string>("PCI_BUS_ID"))
    return {};
  Finding f = make_finding(
      "env.cuda-device-order", Severity::warn,
      "Mixed GPU models and CUDA_DEVICE_ORDER is not PCI_BUS_ID",
      "CUDA numbers GPUs fastest first, nvidia-smi in PCI order: with different models, "
      "cuda:0 and CUDA_VISIBLE_DEVICES=0 may be another GPU than nvidia-smi's GPU 0.",
      {"export CUDA_DEVICE_ORDER=PCI_BUS_ID"});
  f.with("models", join(std::vector<std::string>(names.begin(), names.end()), ", "))
      .with("CUDA_DEVICE_ORDER", order.value_or("unset"));
  return {f};
}

std::vector<Finding> debug_vars(const Snapshot &s, const kb::KnowledgeBase &,
                                const DoctorOptions &) {
  // DCGM's Software::checkForBadEnvVaribles list
  // (https://github.com/NVIDIA/DCGM/blob/HEAD/nvvs/src/Software.cpp).
  static const char *const kVars[] = {"NSIGHT_CUDA_DEBUGGER",
                                      "CUDA_INJECTION32_PATH",
                                      "CUDA_INJECTION64_PATH",
                                      "CUDA_AUTO_BOOST",
                                      "CUDA_ENABLE_COREDUMP_ON_EXCEPTION",
                                      "CUDA_COREDUMP_FILE",
                                      "CUDA_DEVICE_WAITS_ON_EXCEPTION",
                                      "CUDA_PROFILE",
                                      "COMPUTE_PROFILE",
                                      "OPENCL_PROFILE"};
  std::vector<std::string> set;
  Finding f = make_finding(
      "env.debug-vars", Severity::warn, "",
      "Debugger, profiler and core-dump variables make CUDA inject tools, dump cores or wait on "
      "exceptions: odd slowdowns, hangs and crashes in ordinary runs.");
  for (const char *var : kVars)
    if (auto v = env_var(s, var)) {
      set.push_back(var);
      f.with(var, *v);
    }
  if (set.empty())
    return {};
  f.title = "CUDA debugging/profiling variables are set: " + join(set, ", ");
  f.fix = {"unset " + join(set, " ")};
  return {f};
}

std::vector<Finding> alloc_conf(const Snapshot &s, const kb::KnowledgeBase &,
                                const DoctorOptions &) {
  // Options of PyTorch's caching allocator (PYTORCH_CUDA_ALLOC_CONF / PYTORCH_ALLOC_CONF).
  static const std::set<std::string> kKnown = {"backend",
                                               "max_split_size_mb",
                                               "garbage_collection_threshold",
                                               "expandable_segments",
                                               "roundup_power2_divisions",
                                               "release_lock_on_cudamalloc",
                                               "pinned_use_cuda_host_register",
                                               "pinned_num_register_threads",
                                               "pinned_use_background_threads",
                                               "per_process_memory_fraction",
                                               "graph_capture_record_stream_reuse"};
  std::vector<Finding> out;
  for (const char *var : {"PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"}) {
    auto v = env_var(s, var);
    if (!v || v->empty())
      continue;
    std::vector<std::string> bad;
    for (const auto &item : split(*v, ',')) {
      if (item.empty())
        continue;
      auto colon = item.find(':');
      std::string key = item.substr(0, colon);
      if (colon == std::string::npos || !kKnown.count(key))
        bad.push_back(item);
    }
    if (bad.empty())
      continue;
    Finding f = make_finding(
        "env.alloc-conf", Severity::warn,
        fmt::format("{} has entries PyTorch does not know: {}", var, join(bad, ", ")),
        "The caching allocator parses this variable at the first CUDA allocation and stops with "
        "\"Unrecognized CachingAllocator option\" (or a parse error) on an entry it does not "
        "know; entries are key:value, separated by commas.",
        {std::string("export ") + var +
         "=expandable_segments:True   # the usual fix for "
         "fragmentation OOMs"});
    f.with(var, *v);
    out.push_back(std::move(f));
  }
  return out;
}

} // namespace

std::vector<Check> env_checks() {
  return {
      {"env.cuda-launch-blocking", "env", Severity::warn, "CUDA_LAUNCH_BLOCKING=1 left on",
       "software.env.CUDA_LAUNCH_BLOCKING", "CUDA_LAUNCH_BLOCKING is 1 or true",
       "unset CUDA_LAUNCH_BLOCKING",
       "DCGM Software::checkForBadEnvVaribles "
       "https://github.com/NVIDIA/DCGM/blob/HEAD/nvvs/src/Software.cpp",
       launch_blocking},
      {"env.cuda-visible-devices", "env", Severity::fail,
       "CUDA_VISIBLE_DEVICES names GPUs that are not here",
       "software.env.CUDA_VISIBLE_DEVICES, gpus[].nvml (index, uuid)",
       "an entry is an index at or above the GPU count, an unknown UUID or not a GPU id: fail "
       "when it is the first entry (no GPU left), warn otherwise (empty and -1: gpu.none-visible)",
       "export a valid list or unset it",
       "https://github.com/Grace9994/CoMoSVC/issues/6; "
       "https://github.com/KeYang8/WITT/issues/34",
       visible_devices},
      {"env.cuda-device-order", "env", Severity::warn,
       "Mixed GPU models without CUDA_DEVICE_ORDER=PCI_BUS_ID",
       "gpus[].nvml.name, software.env.CUDA_DEVICE_ORDER",
       "two or more GPU models and CUDA_DEVICE_ORDER is not PCI_BUS_ID",
       "export CUDA_DEVICE_ORDER=PCI_BUS_ID",
       "https://github.com/flux-framework/flux-core/issues/1598; "
       "https://github.com/nanoporetech/bonito/issues/120; "
       "https://github.com/gpustack/gpustack/issues/1633",
       device_order},
      {"env.debug-vars", "env", Severity::warn, "CUDA debugger/profiler variables set",
       "software.env (DCGM's list: CUDA_INJECTION64_PATH, CUDA_ENABLE_COREDUMP_ON_EXCEPTION...)",
       "any variable of DCGM's bad-variable list is set", "unset them",
       "DCGM Software::checkForBadEnvVaribles "
       "https://github.com/NVIDIA/DCGM/blob/HEAD/nvvs/src/Software.cpp; "
       "https://docs.nvidia.com/datacenter/dcgm/latest/reference/command-line-reference/dcgmi/"
       "dcgmi-diag.html",
       debug_vars},
      {"env.alloc-conf", "env", Severity::warn, "Allocator configuration PyTorch cannot parse",
       "software.env PYTORCH_CUDA_ALLOC_CONF, PYTORCH_ALLOC_CONF",
       "an entry is not key:value with a key of the caching allocator",
       "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
       "https://github.com/jhc13/taggui/issues/188; "
       "PyTorch CUDA semantics (memory management) https://pytorch.org/docs/stable/notes/cuda.html",
       alloc_conf},
  };
}

} // namespace dlrig::doctor
