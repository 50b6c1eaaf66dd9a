#include "dlrig/probe/cpu_names.hpp"
#include "probe_fixture.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>

namespace dlrig::test {
namespace {

const Mount *find_mount(const Snapshot &s, const std::string &mp) {
  for (const auto &m : s.host.mounts)
    if (m.mountpoint == mp)
      return &m;
  return nullptr;
}

TEST(ProbeHost, ServerCpuNumaLimits) {
  auto s = probe_fixture("server-8xh100", probe_host);
  const auto &h = s.host;
  EXPECT_EQ(h.hostname, "dgx-h100-07");
  EXPECT_EQ(h.os.distro_id, "ubuntu");
  EXPECT_EQ(h.os.distro_version, "22.04");
  EXPECT_EQ(h.os.arch, "x86_64");
  EXPECT_EQ(h.cpu.model, "Intel(R) Xeon(R) Platinum 8480+");
  EXPECT_EQ(h.cpu.sockets, 2);
  EXPECT_EQ(h.cpu.cores, 112);
  EXPECT_EQ(h.cpu.threads, 224);
  EXPECT_EQ(h.cpu.base_hz, 2.0e9);
  EXPECT_EQ(h.cpu.max_hz, 3.8e9);
  for (const char *flag :
       {"avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_tile", "amx_int8"})
    EXPECT_NE(std::find(h.cpu.isa.begin(), h.cpu.isa.end(), flag), h.cpu.isa.end()) << flag;
  ASSERT_EQ(h.cpu.numa_nodes.size(), 2u);
  EXPECT_EQ(h.cpu.numa_nodes[1].cpus, "56-111,168-223");
  EXPECT_EQ(h.memory.total_bytes, 2113305632ull * 1024);
  EXPECT_EQ(h.limits.memlock_bytes.soft_unlimited, true);
  EXPECT_EQ(h.limits.memlock_bytes.hard_unlimited, true);
  EXPECT_GT(*h.shm.size_bytes, 1'000'000'000'000ull);
  ASSERT_TRUE(find_mount(s, "/datasets"));
  EXPECT_EQ(find_mount(s, "/datasets")->kind, "network");
  EXPECT_EQ(find_mount(s, "/raid")->kind, "nvme");
  EXPECT_FALSE(find_mount(s, "/sys/fs/cgroup"));
  EXPECT_FALSE(find_mount(s, "/run"));
  ASSERT_EQ(h.rdma.size(), 8u);
  EXPECT_EQ(h.rdma[0].rate_bps, 400'000'000'000ull);
  EXPECT_EQ(h.rdma[0].state, "ACTIVE");
  EXPECT_EQ(h.rdma[0].link_layer, "InfiniBand");
  auto ib = std::count_if(h.network.begin(), h.network.end(),
                          [](const NetInterface &n) { return n.kind == "infiniband"; });
  EXPECT_EQ(ib, 8);
}

TEST(ProbeHost, DesktopDisks) {
  auto s = probe_fixture("desktop-rtx4090", probe_host);
  ASSERT_TRUE(find_mount(s, "/data"));
  EXPECT_EQ(find_mount(s, "/data")->kind, "hdd");
  EXPECT_EQ(find_mount(s, "/data")->total_bytes, 7937327349760ull);
  EXPECT_EQ(find_mount(s, "/")->kind, "nvme");
  EXPECT_EQ(s.host.cpu.numa_nodes.size(), 1u);
  EXPECT_FALSE(s.host.cpu.base_hz); // acpi-cpufreq has no base_frequency
  EXPECT_TRUE(has_note(s, "host.cpu.base_hz"));
  auto eth = std::find_if(s.host.network.begin(), s.host.network.end(),
                          [](auto &n) { return n.name == "enp5s0"; });
  ASSERT_NE(eth, s.host.network.end());
  EXPECT_EQ(eth->speed_bps, 1'000'000'000ull);
  EXPECT_EQ(eth->kind, "ethernet");
}

// The SMBIOS memory-device records: the AM4 desktop's two DDR4 modules in four slots; machines
// whose firmware lists none (the other fixtures, most VMs) leave all three unknown, silently.
TEST(ProbeHost, MemoryTypeAndSlotsFromSmbios) {
  auto s = probe_fixture("desktop-rtx4090", probe_host);
  EXPECT_EQ(s.host.memory.type, "DDR4");
  EXPECT_EQ(s.host.memory.dimm_slots, 4);
  EXPECT_EQ(s.host.memory.dimms_installed, 2);
  EXPECT_FALSE(has_note(s, "host.memory.type"));
  auto server = probe_fixture("server-8xh100", probe_host);
  EXPECT_FALSE(server.host.memory.type);
  EXPECT_FALSE(server.host.memory.dimm_slots);
  EXPECT_FALSE(server.host.memory.dimms_installed);
  EXPECT_FALSE(has_note(server, "host.memory.type"));
}

TEST(ProbeHost, ContainerShm) {
  auto s = probe_fixture("container-shm64", probe_host);
  EXPECT_EQ(s.host.shm.size_bytes, 64ull << 20);
  EXPECT_EQ(s.host.limits.memlock_bytes.soft, 65536u);
  EXPECT_EQ(find_mount(s, "/")->kind, "virtual");
  EXPECT_EQ(find_mount(s, "/workspace")->kind, "virtual"); // virtio disk
  EXPECT_FALSE(find_mount(s, "/etc/hosts"));
  EXPECT_FALSE(find_mount(s, "/dev"));
  EXPECT_TRUE(find_mount(s, "/dev/shm"));
}

TEST(ProbeHost, LaptopWifiHasNoSpeedAndNoNote) {
  auto s = probe_fixture("laptop-no-gpu", probe_host);
  EXPECT_EQ(s.host.memory.total_bytes, 16093888ull * 1024);
  EXPECT_EQ(s.host.cpu.threads, 8);
  EXPECT_FALSE(find_mount(s, "/snap/core22/1380"));
  EXPECT_FALSE(has_note(s, "host.network"));
}

class GarbageHost : public ::testing::Test {
protected:
  void SetUp() override {
    root = std::filesystem::temp_directory_path() / ("dlrig-host-" + std::to_string(::getpid()));
    std::filesystem::create_directories(root / "proc/self");
    std::filesystem::create_directories(root / "proc/sys/kernel");
    std::filesystem::create_directories(root / "sys/devices/system/cpu/cpu0/cpufreq");
    std::filesystem::create_directories(root / "etc");
    std::ofstream(root / "proc/meminfo") << "";
    std::ofstream(root / "proc/cpuinfo") << "\x01\x02\x03";
    std::ofstream(root / "proc/mounts") << "nonsense";
    std::ofstream(root / "proc/self/limits") << "Limit\nMax locked memory  lots";
    std::ofstream(root / "proc/sys/kernel/osrelease") << "   \n";
    std::ofstream(root / "etc/os-release") << "!!!";
    std::ofstream(root / "sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq") << "fast";
    // A memory-device record listed without its raw file: what a non-root reader meets.
    std::filesystem::create_directories(root / "sys/firmware/dmi/entries/17-0");
  }
  void TearDown() override { std::filesystem::remove_all(root); }
  std::filesystem::path root;
};

TEST_F(GarbageHost, UnknownWithReasons) {
  Sysroot fs(root.string());
  Snapshot snap;
  ProbeContext ctx{fs, {}, {}, snap};
  probe_host(ctx);
  const auto &h = snap.host;
  EXPECT_FALSE(h.memory.total_bytes);
  EXPECT_FALSE(h.cpu.model);
  EXPECT_FALSE(h.cpu.max_hz);
  EXPECT_FALSE(h.os.kernel_release);
  EXPECT_FALSE(h.os.distro_id);
  EXPECT_FALSE(h.limits.memlock_bytes.soft);
  EXPECT_FALSE(h.shm.size_bytes);
  EXPECT_TRUE(h.mounts.empty());
  EXPECT_FALSE(h.memory.type);
  EXPECT_FALSE(h.memory.dimm_slots);
  for (const char *f :
       {"host.memory", "host.cpu", "host.cpu.max_hz", "host.os.kernel_release", "host.os.distro_id",
        "host.limits", "host.mounts", "host.hostname", "host.memory.type"})
    EXPECT_TRUE(has_note(snap, f)) << f;
}

// GB10 (DGX Spark): ten Cortex-X925 and ten Cortex-A725 cores, no "model name" line. Before
// data/arm_cpus.csv the vendor printed as "0x41" and the model as unknown.
TEST(ProbeHost, ArmCoresAreNamed) {
  auto root = std::filesystem::temp_directory_path() / ("dlrig-arm-" + std::to_string(::getpid()));
  std::filesystem::create_directories(root / "proc");
  std::filesystem::create_directories(root / "sys/devices/soc0");
  std::string cpuinfo;
  for (int i = 0; i < 20; ++i)
    cpuinfo += fmt::format("processor\t: {}\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd sve2 bf16\n"
                           "CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\n"
                           "CPU part\t: {}\nCPU revision\t: 1\n\n",
                           i, i < 10 ? "0xd85" : "0xd87");
  std::ofstream(root / "proc/cpuinfo") << cpuinfo;
  std::ofstream(root / "sys/devices/soc0/family") << "jep106:036b\n";
  std::ofstream(root / "sys/devices/soc0/soc_id") << "jep106:036b:0241\n";
  Sysroot fs(root.string());
  Snapshot snap;
  ProbeContext ctx{fs, {}, {}, snap};
  probe_host(ctx);
  std::filesystem::remove_all(root);
  EXPECT_EQ(snap.host.cpu.vendor, "ARM");
  EXPECT_EQ(snap.host.cpu.model, "10x Cortex-X925 + 10x Cortex-A725");
  EXPECT_EQ(snap.host.cpu.soc, "jep106:036b jep106:036b:0241");
  EXPECT_EQ(snap.host.cpu.threads, 20);
}

TEST(ProbeHost, ArmDecodeNamesWhatTheTableKnowsAndCodesTheRest) {
  const auto &kb = kb::builtin();
  auto grace = probe::decode_arm_cpu(kb, "0x41", {{"0xd4f", 72}});
  EXPECT_EQ(grace.vendor, "ARM");
  EXPECT_EQ(grace.model, "Neoverse-V2"); // one kind of core: no count
  auto ampere = probe::decode_arm_cpu(kb, "0xc0", {{"0xac3", 128}});
  EXPECT_EQ(ampere.vendor, "Ampere");
  EXPECT_EQ(ampere.model, "Ampere-1");
  auto unknown_part = probe::decode_arm_cpu(kb, "0x41", {{"0xdff", 4}});
  EXPECT_EQ(unknown_part.model, "ARM part 0xdff");
  auto unknown_impl = probe::decode_arm_cpu(kb, "0x99", {{"0x001", 4}});
  EXPECT_EQ(unknown_impl.vendor, "Arm implementer 0x99");
  auto garbage = probe::decode_arm_cpu(kb, "GenuineIntel", {});
  EXPECT_FALSE(garbage.vendor);
  EXPECT_FALSE(garbage.model);
  EXPECT_FALSE(probe::decode_arm_cpu(kb, "0x41", {}).model); // no part lines: unknown
}

} // namespace
} // namespace dlrig::test
