// Environment variables that matter to PyTorch, whether MASTER_PORT is taken, the host compiler,
// and where dlrig runs (bare metal, VM, container, WSL2).
#include "dlrig/probe/software_parse.hpp"
#include "dlrig/probe/software_probe.hpp"

#include <algorithm>
#include <charconv>

namespace dlrig {

namespace {

// From the software issue's list and the failure modes the doctor checks cite (docs/doctor.md).
constexpr const char *kVariables[] = {
    "CUDA_HOME",
    "CUDA_PATH",
    "PATH",
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_LAUNCH_BLOCKING",
    "CUDA_MODULE_LOADING",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
    "OMP_NUM_THREADS",
    "MASTER_ADDR",
    "MASTER_PORT",
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "CUDA_INJECTION64_PATH",
    "CUDA_ENABLE_COREDUMP_ON_EXCEPTION",
    "KUBERNETES_SERVICE_HOST",
    // Read only when CUDA extensions are built (torch.utils.cpp_extension).
    "TORCH_CUDA_ARCH_LIST",
    "TORCH_EXTENSIONS_DIR",
    // Where dlrig bench loads cuBLASLt and NCCL from (doctor's cuda.cublaslt-not-found and
    // dist.nccl-not-found take them as found when the file exists).
    "DLRIG_CUBLASLT_LIBRARY",
    "DLRIG_NCCL_LIBRARY",
};

void probe_variables(const ProbeContext &ctx, SoftwareInfo &sw) {
  for (const char *name : kVariables)
    if (auto it = ctx.env.find(name); it != ctx.env.end())
      sw.env[name] = it->second;
  for (const auto &[name, value] : ctx.env)
    if (name.rfind("NCCL_", 0) == 0)
      sw.env[name] = value;
}

void probe_master_port(const ProbeContext &ctx, SoftwareInfo &sw) {
  int port = 29500; // torch.distributed's default
  if (auto it = ctx.env.find("MASTER_PORT"); it != ctx.env.end()) {
    int v = 0;
    const auto &s = it->second;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || v <= 0 || v > 65535) {
      ctx.note("software.master_port", "MASTER_PORT", "not a port number: \"" + s + "\"");
      return;
    }
    port = v;
  }
  sw.master_port = port;
  bool any = false, listening = false;
  for (const char *file : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    auto text = ctx.fs.read(file, 1 << 20);
    if (!text)
      continue;
    any = true;
    listening = listening || parse_listen_ports(*text).count(port) > 0;
  }
  if (any)
    sw.master_port_in_use = listening;
  else
    ctx.note("software.master_port_in_use", "/proc/net/tcp", "not readable");
}

// gcc's major version from the names the packages install: /usr/bin/gcc -> gcc-12, or the one
// folder under /usr/lib/gcc/<triple>/. Files only: no compiler is run.
void probe_compiler(const ProbeContext &ctx, SoftwareInfo &sw) {
  if (auto target = ctx.fs.canonical("/usr/bin/gcc")) {
    auto name = base_name(*target);
    auto dash = name.rfind('-');
    if (dash != std::string::npos) {
      auto v = name.substr(dash + 1);
      if (!v.empty() && std::all_of(v.begin(), v.end(), [](char c) {
            return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
          })) {
        sw.host_compiler_version = v;
        return;
      }
    }
  }
  if (!ctx.fs.exists("/usr/bin/gcc"))
    return;
  std::vector<std::string> versions;
  for (const auto &triple : ctx.fs.list("/usr/lib/gcc"))
    for (const auto &v : ctx.fs.list("/usr/lib/gcc/" + triple))
      if (!v.empty() && std::isdigit(static_cast<unsigned char>(v.front())))
        versions.push_back(v);
  if (versions.size() == 1)
    sw.host_compiler_version = versions.front();
}

// The C library, clang and CMake from their files, as collect_env's "Libc version", "Clang
// version" and "CMake version" lines report them; nothing is run. glibc's shared object carries
// its banner ("GNU C Library (Debian GLIBC 2.36-9+deb12u7) stable release version 2.36.", what
// running libc.so.6 prints): "glibc-2.36", collect_env's form. clang: the major of the versioned
// binary /usr/bin/clang points to (clang-14 -> "14"); CMake: major.minor of its module folder
// (/usr/share/cmake-3.25 -> "3.25"). Partial versions are what the files say; unknown otherwise.
void probe_toolchain(const ProbeContext &ctx, SoftwareInfo &sw) {
  for (const char *path :
       {"/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "/lib/aarch64-linux-gnu/libc.so.6", "/usr/lib/aarch64-linux-gnu/libc.so.6",
        "/lib64/libc.so.6", "/usr/lib64/libc.so.6", "/lib/libc.so.6"}) {
    if (!ctx.fs.exists(path))
      continue;
    auto text = ctx.fs.read(path, 8 << 20);
    if (!text)
      continue;
    // "... stable release version 2.36." (or "development release version 2.39.9000.")
    static constexpr std::string_view kRelease = "release version ";
    auto at = text->find("GNU C Library");
    at = at == std::string::npos ? at : text->find(kRelease, at);
    if (at == std::string::npos)
      break;
    std::size_t b = at + kRelease.size(), e = b;
    while (e < text->size() && e - b < 16 &&
           (std::isdigit(static_cast<unsigned char>((*text)[e])) || (*text)[e] == '.'))
      ++e;
    while (e > b && (*text)[e - 1] == '.')
      --e;
    if (e > b && std::isdigit(static_cast<unsigned char>((*text)[b])))
      sw.libc_version = "glibc-" + text->substr(b, e - b);
    break;
  }
  auto numeric = [](const std::string &v) {
    return !v.empty() && std::isdigit(static_cast<unsigned char>(v.front())) &&
           std::all_of(v.begin(), v.end(), [](char c) {
             return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
           });
  };
  if (auto target = ctx.fs.canonical("/usr/bin/clang")) {
    // Debian: /usr/bin/clang -> clang-14 -> ../lib/llvm-14/bin/clang; elsewhere clang-17.
    auto name = base_name(*target);
    auto llvm = target->find("/llvm-");
    std::string v;
    if (llvm != std::string::npos)
      v = target->substr(llvm + 6, target->find('/', llvm + 6) - (llvm + 6));
    else if (auto dash = name.rfind('-'); dash != std::string::npos)
      v = name.substr(dash + 1);
    if (numeric(v))
      sw.clang_version = v;
  }
  std::vector<std::string> cmakes;
  for (const auto &dir : ctx.fs.list("/usr/share"))
    if (dir.rfind("cmake-", 0) == 0 && numeric(dir.substr(6)))
      cmakes.push_back(dir.substr(6));
  if (cmakes.size() == 1 && ctx.fs.exists("/usr/bin/cmake"))
    sw.cmake_version = cmakes.front();
}

void probe_runtime(const ProbeContext &ctx, SoftwareInfo &sw) {
  auto &rt = sw.runtime;
  auto version = ctx.fs.read("/proc/version", 4096);
  if (version) {
    std::string lower = *version;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    if (lower.find("microsoft") != std::string::npos) {
      rt.kind = "wsl2";
      return;
    }
  }
  if (ctx.fs.is_directory("/usr/lib/wsl/lib")) {
    rt.kind = "wsl2";
    return;
  }

  if (ctx.fs.exists("/.dockerenv"))
    rt.container_engine = "docker";
  else if (ctx.fs.exists("/run/.containerenv"))
    rt.container_engine = "podman";
  if (ctx.env.count("KUBERNETES_SERVICE_HOST"))
    rt.container_engine = "kubernetes";
  if (!rt.container_engine)
    if (auto cgroup = ctx.fs.read("/proc/1/cgroup", 1 << 16))
      rt.container_engine = container_engine_from_cgroup(*cgroup);
  if (rt.container_engine) {
    rt.kind = "container";
    // The NVIDIA container runtime mounts the device nodes, the driver's libcuda and
    // /proc/driver/nvidia into the container; without it none of them is there.
    bool nodes = ctx.fs.exists("/dev/nvidiactl");
    bool lib =
        !sw.driver_libraries.libcuda.empty() &&
        sw.driver_libraries.libcuda.front().origin != std::optional<std::string>("toolkit-stub");
    bool procfs = ctx.fs.is_directory("/proc/driver/nvidia");
    rt.nvidia_runtime = nodes && lib && procfs;
    return;
  }

  auto cpuinfo = ctx.fs.read("/proc/cpuinfo", 1 << 16);
  auto vendor = read_trimmed(ctx.fs, "/sys/class/dmi/id/sys_vendor");
  auto product = read_trimmed(ctx.fs, "/sys/class/dmi/id/product_name");
  auto by_dmi = hypervisor_from_dmi(vendor.value_or(""), product.value_or(""));
  bool flag = false;
  if (cpuinfo) {
    // The "hypervisor" CPU flag is set by every x86 hypervisor for its guests.
    for (std::size_t at = cpuinfo->find("flags"); at != std::string::npos;
         at = cpuinfo->find("flags", at + 5)) {
      auto eol = cpuinfo->find('\n', at);
      if (cpuinfo->substr(at, eol - at).find(" hypervisor") != std::string::npos)
        flag = true;
      break;
    }
  }
  if (flag || by_dmi) {
    rt.kind = "vm";
    rt.hypervisor = by_dmi;
  } else if (cpuinfo || vendor) {
    rt.kind = "bare-metal";
  } else {
    ctx.note("software.runtime.kind", "/proc/cpuinfo, /sys/class/dmi/id",
             "neither is readable; cannot tell bare metal from a virtual machine");
  }
}

} // namespace

void probe_software_env(const ProbeContext &ctx) {
  auto &sw = ctx.snapshot.software;
  probe_variables(ctx, sw);
  probe_master_port(ctx, sw);
  probe_compiler(ctx, sw);
  probe_toolchain(ctx, sw);
  probe_runtime(ctx, sw);
}

} // namespace dlrig
