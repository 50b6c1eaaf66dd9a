#include "unit/doctor/machines.hpp"

#include <stdexcept>

namespace dlrig::doctor::test {

namespace {
constexpr std::uint64_t GiB = 1024ull * 1024 * 1024;

std::vector<std::string> archs(std::initializer_list<const char *> l) {
  return std::vector<std::string>(l.begin(), l.end());
}

kb::TorchVariant variant(std::string tag, std::string cuda, std::vector<std::string> arch_list,
                         std::string cudnn, bool pypi_default = false) {
  kb::TorchVariant v;
  v.tag = tag;
  v.cuda = std::move(cuda);
  v.arch_list = std::move(arch_list);
  v.cudnn = std::move(cudnn);
  v.index_url = "https://download.pytorch.org/whl/" + tag;
  v.pypi_default = pypi_default;
  return v;
}

kb::GpuSpec spec(std::string name, std::string cc, std::string pci, std::string form,
                 std::uint64_t mem) {
  kb::GpuSpec g;
  g.name = std::move(name);
  g.vendor = "NVIDIA";
  g.compute_capability = std::move(cc);
  g.pci_ids = {std::move(pci)};
  g.form_factor = std::move(form);
  g.memory_bytes = mem;
  return g;
}

Gpu nvidia_gpu(int index, std::string bdf, std::string name, std::string device_id, std::string cc,
               std::uint64_t mem, double gts, int width) {
  Gpu g;
  g.bdf = std::move(bdf);
  g.vendor = "NVIDIA";
  g.vendor_id = "0x10de";
  g.device_id = std::move(device_id);
  g.name = name;
  g.driver = "nvidia";
  g.link = PcieLink{2.5, width, gts, width}; // idle: the link rests at 2.5 GT/s
  g.behind_thunderbolt = false;
  g.behind_switch = false;
  PciHop port;
  port.bdf = "0000:00:01.0";
  port.kind = "root-port";
  port.link = PcieLink{gts, width, gts, width};
  g.path = {port};
  NvmlGpu n;
  n.index = index;
  n.name = std::move(name);
  n.uuid = "GPU-0000000" + std::to_string(index) + "-aaaa-bbbb-cccc-dddddddddddd";
  n.memory_total_bytes = mem;
  n.memory_used_bytes = 600ull * 1024 * 1024;
  n.compute_capability = std::move(cc);
  n.power_draw_w = 70;
  n.temperature_c = 35;
  n.slowdown_temperature_c = 87;
  n.throttle_reasons_mask = 0x1;
  n.throttle_reasons = {"gpu_idle"};
  n.persistence_mode = true;
  n.compute_mode = "default";
  n.mig_enabled = false;
  n.ecc_enabled = true;
  n.ecc_uncorrected_volatile = 0;
  n.ecc_corrected_volatile = 0;
  n.ecc_uncorrected_aggregate = 0;
  n.retired_pages = 0;
  n.retired_pages_pending = false;
  n.remapped_rows = RemappedRows{0, 0, false, false};
  n.display_active = false;
  n.pcie_gen_current = 1;
  n.pcie_width_current = width;
  n.pcie_width_max = width;
  n.pcie_replay_counter = 0;
  g.nvml = n;
  return g;
}

PythonEnv venv(std::string torch_version, std::string variant_tag, std::string cuda,
               std::string vision, std::string audio) {
  PythonEnv e;
  e.interpreter = "/home/ana/venv/bin/python";
  e.kind = "venv";
  e.active = true;
  e.python_version = "3.11.9";
  TorchInstall t;
  t.version = torch_version;
  t.variant = variant_tag;
  if (!cuda.empty())
    t.cuda = cuda;
  t.cudnn = "9.1.0.70";
  t.nccl = "2.21.5";
  t.arch_list = archs({"sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"});
  e.torch = t;
  e.torchvision = vision;
  e.torchaudio = audio;
  e.nvidia_wheels = {{"nvidia-cudnn-cu12", "9.1.0.70"}, {"nvidia-nccl-cu12", "2.21.5"}};
  return e;
}

void common_software(Snapshot &s) {
  // The venv's nvidia wheels hold cuBLASLt and NCCL (cuda.cublaslt-not-found, dist.nccl-not-found).
  const std::string wheels = "/home/ana/venv/lib/python3.11/site-packages/nvidia";
  const std::string from = "the torch environment /home/ana/venv/bin/python (pip wheel, nvidia/";
  s.software.cublaslt_files = LibraryFiles{
      {wheels + "/cublas/lib"}, {{wheels + "/cublas/lib/libcublasLt.so.12", from + "cublas)"}}};
  s.software.nccl_files =
      LibraryFiles{{wheels + "/nccl/lib"}, {{wheels + "/nccl/lib/libnccl.so.2", from + "nccl)"}}};
  auto &k = s.software.kernel;
  k.nvidia = KernelModule{true, "550.54.15", "Dual MIT/GPL", false};
  k.nvidia_open = true;
  k.nouveau = KernelModule{false, std::nullopt, std::nullopt, true};
  k.nvidia_uvm = KernelModule{true, std::nullopt, std::nullopt, false};
  k.iommu = "pt";
  k.secure_boot = false;
  s.software.device_nodes = {{"/dev/nvidiactl", true, true}, {"/dev/nvidia-uvm", true, true}};
  for (const auto &g : s.gpus)
    if (g.nvml)
      s.software.device_nodes.push_back(
          {"/dev/nvidia" + std::to_string(g.nvml->index), true, true});
  s.software.driver_libraries.libcuda = {
      {"/usr/lib/x86_64-linux-gnu/libcuda.so.1", "550.54.15", "system", std::nullopt}};
  s.software.driver_libraries.libnvidia_ml = {
      {"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "550.54.15", "system", std::nullopt}};
  s.software.driver_libraries.stub_ahead = false;
  s.software.driver_libraries.compat_ahead = false;
  s.software.master_port_in_use = false;
  s.software.runtime.kind = "bare-metal";
  s.software.env = {{"PATH", "/usr/local/bin:/usr/bin:/bin"}};
  s.nvidia.nvml_status = "ok";
  s.nvidia.driver_version = "550.54.15";
  s.nvidia.cuda_driver_version = "12.4";
  s.nvidia.kernel_module_version = "550.54.15";
  s.host.os.arch = "x86_64";
  s.host.os.kernel_release = "6.8.0-45-generic";
  s.host.limits.open_files = Limit{1048576, 1048576, false, false};
  s.host.limits.memlock_bytes = Limit{std::nullopt, std::nullopt, true, true};
}

} // namespace

kb::KnowledgeBase test_kb() {
  kb::KnowledgeBase kb;
  kb.links = kb::builtin().links;         // link rates are plain facts: the shipped rows
  kb.p2p_hangs = kb::builtin().p2p_hangs; // so are the drivers with reported P2P hangs
  // §3a: CUDA -> minimum Linux driver; the 12.x minor-version floor.
  auto row = [](std::string cuda, std::string version, std::string min, std::string compat) {
    kb::CudaDriverMin r;
    r.cuda = std::move(cuda);
    r.version = std::move(version);
    r.min_driver_linux = std::move(min);
    r.minor_compat_min_driver = std::move(compat);
    return r;
  };
  kb.cuda = {row("11.8", "11.8.0", "520.61.05", "450.80.02"),
             row("12.1", "12.1.0", "530.30.02", "525.60.13"),
             row("12.4", "12.4.0", "550.54.14", "525.60.13"),
             row("12.4", "12.4.1", "550.54.15", "525.60.13"),
             row("12.6", "12.6.0", "560.28.03", "525.60.13"),
             row("12.8", "12.8.0", "570.26", "525.60.13"),
             row("13.0", "13.0.0", "580.65.06", "580.65.06")};
  auto sm50_90 = archs({"sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"});
  auto sm37_90 = archs({"sm_37", "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"});
  kb::TorchRelease r25;
  r25.version = "2.5.1";
  r25.torchvision = "0.20.1";
  r25.torchaudio = "2.5.1";
  r25.variants = {variant("cu118", "11.8", sm37_90, "9.1.0.70"),
                  variant("cu121", "12.1", sm50_90, "9.1.0.70"),
                  variant("cu124", "12.4", sm50_90, "9.1.0.70", true), variant("cpu", "", {}, ""),
                  variant("rocm6.2", "", {}, "")};
  kb::TorchRelease r28;
  r28.version = "2.8.0";
  r28.torchvision = "0.23.0";
  r28.torchaudio = "2.8.0";
  r28.variants = {variant("cu126", "12.6", sm50_90, "9.10.2.21"),
                  variant("cu128", "12.8",
                          archs({"sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"}),
                          "9.10.2.21", true)};
  kb.torch = {r25, r28};
  kb.gpus = {spec("H100 SXM5 80GB", "9.0", "10de:2330", "sxm", 80 * 1000000000ull),
             spec("GeForce RTX 4090", "8.9", "10de:2684", "desktop", 24 * GiB),
             spec("GeForce RTX 5090", "12.0", "10de:2b85", "desktop", 32 * GiB),
             spec("Tesla P100 PCIe 16GB", "6.0", "10de:15f8", "pcie-server", 16 * GiB)};
  return kb;
}

Snapshot healthy_server() {
  Snapshot s;
  s.host.hostname = "dgx01";
  s.host.cpu.threads = 224;
  s.host.cpu.cores = 112;
  s.host.memory.total_bytes = 2048 * GiB;
  s.host.shm.size_bytes = 1024 * GiB;
  s.host.mounts = {{"/", "/dev/nvme0n1p2", "ext4", "nvme", 1900 * GiB, 1000 * GiB},
                   {"/data", "/dev/md0", "xfs", "nvme", 30000 * GiB, 20000 * GiB}};
  s.host.network = {{"lo", "unknown", std::nullopt, "loopback"},
                    {"enp170s0f0", "up", 100000000000ull, "ethernet"},
                    {"ibp24s0", "up", 400000000000ull, "infiniband"}};
  s.host.rdma = {{"mlx5_0", 1, "InfiniBand", "ACTIVE", 400000000000ull}};
  const char *bdfs[] = {"0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
                        "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0"};
  for (int i = 0; i < 8; ++i) {
    Gpu g = nvidia_gpu(i, bdfs[i], "NVIDIA H100 80GB HBM3", "0x2330", "9.0", 81559 * 1024ull * 1024,
                       32, 16);
    g.behind_switch = true;
    g.numa_node = i / 4;
    for (int l = 0; l < 18; ++l)
      g.nvml->nvlinks.push_back(NvLink{l, true, std::nullopt, "switch", std::nullopt});
    g.nvml->power_limit_w = 700;
    g.nvml->power_default_limit_w = 700;
    s.gpus.push_back(g);
  }
  for (int a = 0; a < 8; ++a)
    for (int b = a + 1; b < 8; ++b)
      s.nvidia.pairs.push_back(GpuPair{a, b, "NV18", "ok", "ok", "ok"});
  s.nvidia.gpu_count = 8;
  common_software(s);
  s.software.kernel.nvidia_peermem = KernelModule{true, std::nullopt, std::nullopt, false};
  s.software.services = Services{true, true, "550.54.15", true};
  s.software.python_envs = {venv("2.5.1+cu124", "cu124", "12.4", "0.20.1+cu124", "2.5.1+cu124")};
  return s;
}

Snapshot healthy_desktop() {
  Snapshot s;
  s.host.hostname = "tower";
  s.host.cpu.threads = 32;
  s.host.cpu.cores = 16;
  s.host.memory.total_bytes = 64 * GiB;
  s.host.shm.size_bytes = 32 * GiB;
  s.host.mounts = {{"/", "/dev/nvme0n1p2", "ext4", "nvme", 1900 * GiB, 1000 * GiB},
                   {"/mnt/archive", "/dev/sda1", "ext4", "hdd", 4000 * GiB, 1000 * GiB}};
  s.host.network = {{"lo", "unknown", std::nullopt, "loopback"},
                    {"enp5s0", "up", 2500000000ull, "ethernet"}};
  Gpu g = nvidia_gpu(0, "0000:01:00.0", "NVIDIA GeForce RTX 4090", "0x2684", "8.9",
                     24564ull * 1024 * 1024, 16, 16);
  g.nvml->display_active = true;
  g.nvml->persistence_mode = false;
  g.nvml->ecc_enabled = false;
  g.nvml->power_limit_w = 450;
  g.nvml->power_default_limit_w = 450;
  s.gpus.push_back(g);
  s.nvidia.gpu_count = 1;
  common_software(s);
  s.software.services = Services{false, std::nullopt, std::nullopt, false};
  s.software.python_envs = {venv("2.5.1+cu124", "cu124", "12.4", "0.20.1+cu124", "2.5.1+cu124")};
  s.host.limits.open_files = Limit{65536, 1048576, false, false}; // raised: 1024 warns
  return s;
}

Snapshot healthy_laptop() {
  Snapshot s;
  s.host.hostname = "thinkpad";
  s.host.cpu.threads = 16;
  s.host.cpu.cores = 8;
  s.host.memory.total_bytes = 32 * GiB;
  s.host.shm.size_bytes = 16 * GiB;
  s.host.mounts = {{"/", "/dev/nvme0n1p2", "ext4", "nvme", 900 * GiB, 500 * GiB}};
  s.host.network = {{"lo", "unknown", std::nullopt, "loopback"},
                    {"wlp0s20f3", "up", std::nullopt, "wireless"}};
  Gpu g = nvidia_gpu(0, "0000:01:00.0", "NVIDIA GeForce RTX 3080 Laptop GPU", "0x249c", "8.6",
                     16384ull * 1024 * 1024, 16, 8);
  g.nvml->persistence_mode = false;
  g.nvml->ecc_enabled = false;
  g.nvml->power_limit_w = 115;
  g.nvml->power_default_limit_w = 115;
  s.gpus.push_back(g);
  Gpu igpu;
  igpu.bdf = "0000:00:02.0";
  igpu.vendor = "Intel";
  igpu.vendor_id = "0x8086";
  igpu.driver = "i915";
  s.gpus.insert(s.gpus.begin(), igpu);
  s.nvidia.gpu_count = 1;
  common_software(s);
  s.software.services = Services{false, std::nullopt, std::nullopt, false};
  s.software.python_envs = {venv("2.5.1+cu121", "cu121", "12.1", "0.20.1+cu121", "2.5.1+cu121")};
  s.software.env["CUDA_VISIBLE_DEVICES"] = "0";
  return s;
}

std::vector<Finding> run_check(const std::string &id, const Snapshot &s,
                               const kb::KnowledgeBase &kb, const DoctorOptions &o) {
  const Check *c = find_check(id);
  if (!c)
    throw std::runtime_error("no check " + id);
  auto out = c->run(s, kb, o);
  for (auto &f : out)
    if (f.id != id)
      throw std::runtime_error("check " + id + " reported under id " + f.id);
  return out;
}

std::vector<Finding> run_check(const std::string &id, const Snapshot &s, const DoctorOptions &o) {
  static const kb::KnowledgeBase kb = test_kb();
  return run_check(id, s, kb, o);
}

Severity worst(const std::string &id, const Snapshot &s, const DoctorOptions &o) {
  Severity w = Severity::ok;
  for (const auto &f : run_check(id, s, o))
    w = std::max(w, f.severity);
  return w;
}

std::vector<std::string> alarms(const Snapshot &s, const DoctorOptions &o) {
  std::vector<std::string> out;
  for (const auto &c : all_checks())
    for (const auto &f : run_check(std::string(c.id), s, o))
      if (f.severity >= Severity::warn)
        out.push_back(f.id + ": " + f.title);
  return out;
}

} // namespace dlrig::doctor::test
