// The software section of `dlrig info`: kernel modules, driver libraries, CUDA toolkits, CUDA
// libraries, Python environments, the variables that are set and where dlrig runs.
#include "dlrig/core/text.hpp"
#include "dlrig/info/report.hpp"

#include <algorithm>

namespace dlrig {

namespace {

std::string module_state(const KernelModule &m) {
  std::string s = m.loaded ? (*m.loaded ? "loaded" : "not loaded") : kUnknown;
  if (m.version)
    s += " " + *m.version;
  if (m.blacklisted && *m.blacklisted)
    s += " (blacklisted)";
  return s;
}

std::string library_row(const FoundLibrary &lib) {
  std::string s = lib.path + "  " + show(lib.version);
  if (lib.origin && *lib.origin != "system")
    s += " [" + *lib.origin + "]";
  if (lib.via_ld_library_path.value_or(false))
    s += " (LD_LIBRARY_PATH)";
  return s;
}

// `libraries_unread`: why the driver libraries were not looked for, when they were not.
Table kernel_table(const SoftwareInfo &sw, const ProbeNote *libraries_unread) {
  Table t{"Software: kernel and driver", {}, {}};
  const auto &k = sw.kernel;
  std::string nvidia = module_state(k.nvidia);
  if (k.nvidia_open)
    nvidia += *k.nvidia_open ? " (open module)" : " (proprietary module)";
  t.add({"nvidia module", nvidia});
  t.add({"nouveau", module_state(k.nouveau)});
  t.add({"nvidia_uvm", module_state(k.nvidia_uvm)});
  std::string peer = module_state(k.nvidia_peermem);
  if (k.nv_peer_mem.loaded.value_or(false))
    peer += "; nv_peer_mem " + module_state(k.nv_peer_mem);
  t.add({"nvidia_peermem", peer});
  std::vector<std::string> nodes;
  int gpu_nodes = 0;
  for (const auto &n : sw.device_nodes) {
    std::string name = n.path.substr(n.path.rfind('/') + 1);
    bool gpu = name.size() > 6 && name.find_first_not_of("0123456789", 6) == std::string::npos;
    bool fine = n.exists.value_or(false) && n.accessible.value_or(false);
    if (gpu && fine) {
      ++gpu_nodes; // nvidia0..N are summed up below
      continue;
    }
    if (!n.exists)
      nodes.push_back(name + " n/a");
    else if (!*n.exists)
      nodes.push_back(name + " missing");
    else if (!n.accessible.value_or(false))
      nodes.push_back(name + " no access");
    else
      nodes.push_back(name);
  }
  if (gpu_nodes)
    nodes.insert(nodes.begin(), gpu_nodes == 1 ? std::string("1 GPU node")
                                               : std::to_string(gpu_nodes) + " GPU nodes");
  t.add({"/dev nodes", nodes.empty() ? kUnknown : join(nodes, ", ")});
  t.add({"nvidia-persistenced", show(sw.services.persistenced_running, "running", "not running")});
  if (sw.services.nvswitch_present.value_or(false) ||
      sw.services.fabricmanager_running.value_or(false))
    t.add({"fabric manager",
           show(sw.services.fabricmanager_running, "running", "not running") +
               (sw.services.nvswitch_present.value_or(false) ? " (NVSwitch present)" : "")});
  std::string iommu = show(k.iommu);
  if (k.iommu_groups)
    iommu += *k.iommu_groups ? ", IOMMU groups present" : ", no IOMMU groups";
  t.add({"IOMMU", iommu});
  if (!sw.acs.empty()) {
    int redirect = 0, off = 0, unknown = 0;
    for (const auto &b : sw.acs)
      ++(b.redirect_enabled ? (*b.redirect_enabled ? redirect : off) : unknown);
    std::string acs = std::to_string(sw.acs.size()) + " bridges:";
    if (redirect)
      acs += " " + std::to_string(redirect) + " redirect P2P";
    if (off)
      acs += " " + std::to_string(off) + " off";
    if (unknown)
      acs += " " + std::to_string(unknown) + " unknown (readable by root only)";
    t.add({"ACS on GPU bridges", acs});
  }
  t.add({"Secure Boot", show(k.secure_boot, "on", "off")});
  const auto &dl = sw.driver_libraries;
  std::string missing = libraries_unread ? kUnknown + (" (" + libraries_unread->reason + ")")
                                         : std::string("not found");
  t.add({"libcuda.so.1", dl.libcuda.empty() ? missing : library_row(dl.libcuda.front())});
  for (std::size_t i = 1; i < dl.libcuda.size(); ++i)
    t.add({"  also", library_row(dl.libcuda[i])});
  t.add({"libnvidia-ml.so.1",
         dl.libnvidia_ml.empty() ? missing : library_row(dl.libnvidia_ml.front())});
  if (dl.stub_ahead.value_or(false))
    t.add({"warning", "a CUDA toolkit stub libcuda comes before the driver's"});
  if (dl.compat_ahead.value_or(false))
    t.add({"note", "a cuda-compat libcuda comes before the driver's"});
  return t;
}

Table toolkit_table(const SoftwareInfo &sw) {
  Table t{"Software: CUDA toolkits", {"root", "version", "nvcc", "found by", "selected by"}, {}};
  const auto &sel = sw.cuda_selection;
  for (const auto &tk : sw.cuda_toolkits) {
    std::vector<std::string> by;
    if (sel.by_path == tk.root)
      by.emplace_back("PATH");
    if (sel.by_ld_library_path == tk.root)
      by.emplace_back("LD_LIBRARY_PATH");
    if (sel.by_cuda_home == tk.root)
      by.emplace_back("CUDA_HOME");
    if (sel.usr_local_cuda == tk.root)
      by.emplace_back("/usr/local/cuda");
    t.add({tk.root, show(tk.version), tk.nvcc ? "yes" : "no", join(tk.found_by, ", "),
           by.empty() ? "-" : join(by, ", ")});
  }
  if (sel.by_cuda_home &&
      std::none_of(sw.cuda_toolkits.begin(), sw.cuda_toolkits.end(),
                   [&](const CudaToolkit &tk) { return tk.root == *sel.by_cuda_home; }))
    t.add({*sel.by_cuda_home, kUnknown, "no", "cuda-home", "CUDA_HOME (no toolkit there)"});
  return t;
}

Table libraries_table(const SoftwareInfo &sw) {
  Table t{"Software: CUDA libraries", {"library", "version", "where", "origin"}, {}};
  auto add = [&](const char *name, const std::vector<FoundLibrary> &libs) {
    for (const auto &lib : libs)
      t.add({name, show(lib.version),
             lib.path + (lib.via_ld_library_path.value_or(false) ? " (LD_LIBRARY_PATH)" : ""),
             show(lib.origin)});
  };
  add("cuDNN", sw.libraries.cudnn);
  add("NCCL", sw.libraries.nccl);
  add("cuBLAS", sw.libraries.cublas);
  add("TensorRT", sw.libraries.tensorrt);
  return t;
}

Table python_table(const SoftwareInfo &sw) {
  Table t{"Software: Python environments",
          {"env", "python", "torch", "variant", "CUDA", "cuDNN", "NCCL", "arch list", "others"},
          {}};
  for (const auto &e : sw.python_envs) {
    // A report's interpreter has no kind (venv, conda...): print only what is known.
    std::string kind = e.kind ? *e.kind + " " : "";
    std::string env = kind + e.interpreter;
    if (e.name)
      env = kind + *e.name + " (" + e.interpreter + ")";
    if (e.active.value_or(false))
      env += " (active)";
    std::vector<std::string> others;
    if (e.torchvision)
      others.push_back("torchvision " + *e.torchvision);
    if (e.torchaudio)
      others.push_back("torchaudio " + *e.torchaudio);
    if (e.tensorflow)
      others.push_back("tensorflow " + *e.tensorflow);
    if (e.jax)
      others.push_back("jax " + *e.jax + (e.jaxlib_cuda ? " (" + *e.jaxlib_cuda + ")" : ""));
    if (e.transformers)
      others.push_back("transformers " + *e.transformers);
    if (e.deep) {
      if (e.deep->ran.value_or(false) && e.deep->cuda_available)
        others.push_back(std::string("deep: cuda ") +
                         (*e.deep->cuda_available ? "available" : "NOT available") + ", " +
                         show_int(e.deep->device_count) + " devices");
      if (e.deep->error)
        others.push_back("deep: " + *e.deep->error);
      if (e.deep->xpu_available.value_or(false))
        others.push_back("XPU available");
    }
    if (e.torch && e.torch->debug_build.value_or(false))
      others.push_back("torch DEBUG build (slow)");
    if (e.torch && e.torch->xnnpack)
      others.push_back(std::string("XNNPACK ") + (*e.torch->xnnpack ? "on" : "off"));
    std::string torch = "-", variant = "-", cuda = "-", cudnn = "-", nccl = "-", arch = "-";
    if (e.torch) {
      torch = show(e.torch->version);
      variant = e.torch->variant ? *e.torch->variant : "none";
      cuda = e.torch->cuda ? *e.torch->cuda : e.torch->hip ? "HIP " + *e.torch->hip : "none";
      cudnn = show(e.torch->cudnn);
      nccl = show(e.torch->nccl);
      arch = e.torch->arch_list.empty() ? std::string(kUnknown) + " (--deep)"
                                        : join(e.torch->arch_list, " ");
    }
    t.add({env, show(e.python_version), torch, variant, cuda, cudnn, nccl, arch,
           others.empty() ? "-" : join(others, "; ")});
  }
  return t;
}

Table environment_table(const SoftwareInfo &sw) {
  Table t{"Software: environment", {}, {}};
  for (const auto &[name, value] : sw.env)
    t.add({name, value.empty() ? "(set, empty)" : value});
  if (sw.master_port)
    t.add({"MASTER_PORT " + std::to_string(*sw.master_port),
           show(sw.master_port_in_use, "in use (something listens on it)", "free")});
  t.add({"host gcc", show(sw.host_compiler_version)});
  // What only a collect_env report states: shown when it did.
  for (const auto &[label, value] :
       {std::pair{"host clang", &sw.clang_version}, std::pair{"CMake", &sw.cmake_version},
        std::pair{"C library", &sw.libc_version}, std::pair{"HIP runtime", &sw.hip_runtime_version},
        std::pair{"MIOpen runtime", &sw.miopen_runtime_version}})
    if (*value)
      t.add({label, **value});
  const auto &rt = sw.runtime;
  std::string where = show(rt.kind);
  if (rt.container_engine)
    where += " (" + *rt.container_engine + ")";
  if (rt.hypervisor)
    where += " (" + *rt.hypervisor + ")";
  if (rt.nvidia_runtime)
    where += *rt.nvidia_runtime ? ", GPU injected by the NVIDIA runtime"
                                : ", no GPU injected (no NVIDIA container runtime)";
  t.add({"runs on", where});
  return t;
}

} // namespace

std::vector<Table> info_software_tables(const Snapshot &s) {
  const auto &sw = s.software;
  std::vector<Table> tables{kernel_table(sw, unread(s, "software.driver_libraries"))};
  if (!sw.cuda_toolkits.empty() || sw.cuda_selection.by_cuda_home)
    tables.push_back(toolkit_table(sw));
  if (!sw.libraries.cudnn.empty() || !sw.libraries.nccl.empty() || !sw.libraries.cublas.empty() ||
      !sw.libraries.tensorrt.empty())
    tables.push_back(libraries_table(sw));
  if (!sw.python_envs.empty())
    tables.push_back(python_table(sw));
  if (!sw.python_search.empty()) {
    Table searched{sw.python_envs.empty() ? "Software: no Python environment found" : "", {}, {}};
    searched.add({"Python looked for in", join(sw.python_search, ", ")});
    tables.push_back(std::move(searched));
  }
  tables.push_back(environment_table(sw));
  return tables;
}

} // namespace dlrig
