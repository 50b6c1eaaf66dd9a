#include "dlrig/probe/parse.hpp"

#include <gtest/gtest.h>

namespace dlrig::probe {
namespace {

TEST(ParseNumbers, WholeAndHex) {
  EXPECT_EQ(*parse_u64(" 42\n"), 42u);
  EXPECT_FALSE(parse_u64(""));
  EXPECT_FALSE(parse_u64("-1"));
  EXPECT_FALSE(parse_u64("12abc"));
  EXPECT_FALSE(parse_u64("99999999999999999999999"));
  EXPECT_EQ(*parse_i64("-1\n"), -1);
  EXPECT_EQ(*parse_hex_u32("0x10de\n"), 0x10deu);
  EXPECT_EQ(*parse_hex_id("0x10DE\n"), "0x10de");
  EXPECT_EQ(*parse_hex_id("2684"), "0x2684");
  EXPECT_FALSE(parse_hex_id("0x"));
  EXPECT_FALSE(parse_hex_id("nvidia"));
}

TEST(ParseMeminfo, ReadsKiBAsBytes) {
  auto m = parse_meminfo(
      "MemTotal:       16093888 kB\nMemFree:  100 kB\nMemAvailable:    9656332 kB\n"
      "SwapTotal:       2097148 kB\nSwapFree:        2097148 kB\nHugePages_Total:       0\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->total_bytes, 16093888ull * 1024);
  EXPECT_EQ(m->available_bytes, 9656332ull * 1024);
  EXPECT_EQ(m->swap_total_bytes, 2097148ull * 1024);
  EXPECT_EQ(m->free_bytes, 100ull * 1024);
}

TEST(ParseMeminfo, PerNodeFile) {
  auto m = parse_meminfo("Node 1 MemTotal:       1056652816 kB\nNode 1 MemFree:  5 kB\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->total_bytes, 1056652816ull * 1024);
}

TEST(ParseMeminfo, EmptyGarbageAndTruncated) {
  EXPECT_FALSE(parse_meminfo(""));
  EXPECT_FALSE(parse_meminfo("\x01\x02garbage\xff"));
  auto cut = parse_meminfo("MemTotal:       16093888 kB\nMemAvail");
  ASSERT_TRUE(cut);
  EXPECT_TRUE(cut->total_bytes);
  EXPECT_FALSE(cut->available_bytes);
  EXPECT_FALSE(parse_meminfo("MemTotal: 99999999999999999999 kB\n"));
}

constexpr const char *kTwoSocketCpuinfo =
    "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Xeon\n"
    "physical id\t: 0\ncore id\t\t: 0\nflags\t\t: fpu avx2 avx512f amx_bf16\n\n"
    "processor\t: 1\nvendor_id\t: GenuineIntel\nmodel name\t: Xeon\n"
    "physical id\t: 1\ncore id\t\t: 0\nflags\t\t: fpu avx2 avx512f amx_bf16\n\n"
    "processor\t: 2\nvendor_id\t: GenuineIntel\nmodel name\t: Xeon\n"
    "physical id\t: 0\ncore id\t\t: 0\nflags\t\t: fpu avx2 avx512f amx_bf16\n";

TEST(ParseCpuinfo, CountsSocketsCoresThreads) {
  auto c = parse_cpuinfo(kTwoSocketCpuinfo);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->vendor, "GenuineIntel");
  EXPECT_EQ(c->model, "Xeon");
  EXPECT_EQ(c->logical, 3);
  EXPECT_EQ(c->sockets, 2);
  EXPECT_EQ(c->cores, 2); // (0,0) twice is one core with two threads
  EXPECT_EQ(pytorch_isa(c->flags), (std::vector<std::string>{"avx2", "avx512f", "amx_bf16"}));
}

TEST(ParseCpuinfo, ArmHasNoSocketsButFeatures) {
  auto c =
      parse_cpuinfo("processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd sve sve2 bf16 i8mm\n"
                    "CPU implementer\t: 0x41\n\nprocessor\t: 1\nFeatures\t: fp asimd\n");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->logical, 2);
  EXPECT_FALSE(c->sockets);
  EXPECT_FALSE(c->cores);
  EXPECT_EQ(c->vendor, "0x41");
  EXPECT_TRUE(c->parts.empty()); // no "CPU part" lines
  EXPECT_EQ(pytorch_isa(c->flags),
            (std::vector<std::string>{"neon", "sve", "sve2", "bf16", "i8mm"}));
}

TEST(ParseCpuinfo, ArmPartsAreCountedInOrder) {
  auto c = parse_cpuinfo("processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd85\n\n"
                         "processor\t: 1\nCPU implementer\t: 0x41\nCPU part\t: 0xd87\n\n"
                         "processor\t: 2\nCPU implementer\t: 0x41\nCPU part\t: 0xd85\n");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->parts, (std::vector<std::pair<std::string, int>>{{"0xd85", 2}, {"0xd87", 1}}));
}

TEST(ParseCpuinfo, EmptyGarbageAndTruncated) {
  EXPECT_FALSE(parse_cpuinfo(""));
  EXPECT_FALSE(parse_cpuinfo("just some words\n"));
  EXPECT_FALSE(parse_cpuinfo("processor\t: x\n"));
  auto cut = parse_cpuinfo("processor\t: 0\nvendor_id\t: Genu");
  ASSERT_TRUE(cut);
  EXPECT_EQ(cut->logical, 1);
}

TEST(ParseCpulist, Counts) {
  EXPECT_EQ(*parse_cpulist_count("0-55,112-167\n"), 112);
  EXPECT_EQ(*parse_cpulist_count("0"), 1);
  EXPECT_EQ(*parse_cpulist_count("0,2,4-5"), 4);
  EXPECT_FALSE(parse_cpulist_count(""));
  EXPECT_FALSE(parse_cpulist_count("5-2"));
  EXPECT_FALSE(parse_cpulist_count("0-"));
  EXPECT_FALSE(parse_cpulist_count("a-b"));
  EXPECT_FALSE(parse_cpulist_count("0-4000000000"));
}

TEST(ParseMounts, FieldsAndEscapes) {
  auto m = parse_mounts("shm /dev/shm tmpfs rw,nosuid,size=65536k 0 0\n"
                        "/dev/sdb1 /mnt/my\\040data ext4 rw 0 0\n"
                        "/dev/sdc1 /trunc");
  ASSERT_TRUE(m);
  ASSERT_EQ(m->size(), 2u);
  EXPECT_EQ((*m)[0].mountpoint, "/dev/shm");
  EXPECT_EQ((*m)[1].mountpoint, "/mnt/my data");
  EXPECT_EQ(tmpfs_size_option((*m)[0].options), 65536ull * 1024);
  EXPECT_FALSE(parse_mounts(""));
  EXPECT_FALSE(parse_mounts("\xff\xfe garbage"));
}

TEST(ParseMounts, TmpfsSizeOption) {
  EXPECT_EQ(tmpfs_size_option("rw,size=64m"), 64ull << 20);
  EXPECT_EQ(tmpfs_size_option("size=1g,mode=1777"), 1ull << 30);
  EXPECT_EQ(tmpfs_size_option("size=4096"), 4096u);
  EXPECT_FALSE(tmpfs_size_option("rw,size=50%"));
  EXPECT_FALSE(tmpfs_size_option("rw,nosuid"));
  EXPECT_FALSE(tmpfs_size_option("size=k"));
  EXPECT_FALSE(tmpfs_size_option("size=99999999999999999999t"));
  EXPECT_TRUE(is_pseudo_fstype("cgroup2"));
  EXPECT_FALSE(is_pseudo_fstype("ext4"));
  EXPECT_TRUE(is_network_fstype("nfs4"));
  EXPECT_TRUE(is_network_fstype("lustre"));
  EXPECT_FALSE(is_network_fstype("xfs"));
}

constexpr const char *kLimits =
    "Limit                     Soft Limit           Hard Limit           Units     \n"
    "Max open files            1024                 1048576              files     \n"
    "Max locked memory         unlimited            unlimited            bytes     \n";

TEST(ParseLimits, NumbersAndUnlimited) {
  auto l = parse_limits(kLimits);
  ASSERT_TRUE(l);
  ASSERT_TRUE(l->memlock);
  EXPECT_EQ(l->memlock->soft_unlimited, true);
  EXPECT_FALSE(l->memlock->soft);
  ASSERT_TRUE(l->open_files);
  EXPECT_EQ(l->open_files->soft, 1024u);
  EXPECT_EQ(l->open_files->hard, 1048576u);
  EXPECT_EQ(l->open_files->hard_unlimited, false);
}

TEST(ParseLimits, EmptyGarbageAndTruncated) {
  EXPECT_FALSE(parse_limits(""));
  EXPECT_FALSE(parse_limits("garbage\n"));
  EXPECT_FALSE(parse_limits("Limit   Soft Limit   Hard Limit\nMax locked memory   lots   more\n"));
  auto cut = parse_limits(
      "Limit  Soft Limit  Hard Limit  Units\nMax open files  1024  4096  files\nMax locked mem");
  ASSERT_TRUE(cut);
  EXPECT_TRUE(cut->open_files);
  EXPECT_FALSE(cut->memlock);
}

TEST(ParsePci, LinkSpeedAndWidth) {
  EXPECT_DOUBLE_EQ(*parse_link_speed("16.0 GT/s PCIe\n"), 16.0);
  EXPECT_DOUBLE_EQ(*parse_link_speed("2.5 GT/s PCIe"), 2.5);
  EXPECT_DOUBLE_EQ(*parse_link_speed("8 GT/s"), 8.0); // kernels before 4.19
  EXPECT_FALSE(parse_link_speed("Unknown speed"));
  EXPECT_FALSE(parse_link_speed(""));
  EXPECT_FALSE(parse_link_speed("GT/s"));
  EXPECT_FALSE(parse_link_speed("-8 GT/s"));
  EXPECT_EQ(*parse_link_width("16\n"), 16);
  EXPECT_FALSE(parse_link_width("0"));
  EXPECT_FALSE(parse_link_width("255"));
  EXPECT_FALSE(parse_link_width("x16"));
}

// /sys/bus/pci/slots/NAME: max_bus_speed / cur_bus_speed as pci_speed_string() prints them, and
// address as drivers/pci/slot.c prints it.
TEST(ParsePci, SlotSpeedAndAddress) {
  EXPECT_EQ(*parse_slot_speed("16.0 GT/s PCIe\n"), 16.0);
  EXPECT_EQ(*parse_slot_speed("8.0 GT/s"), 8.0); // before Linux 5.7, without "PCIe"
  EXPECT_EQ(*parse_slot_speed("Unknown\n"), std::nullopt);
  EXPECT_EQ(*parse_slot_speed("33 MHz PCI"), std::nullopt);
  EXPECT_EQ(*parse_slot_speed("133 MHz PCI-X 533"), std::nullopt);
  EXPECT_FALSE(parse_slot_speed("fast"));
  EXPECT_FALSE(parse_slot_speed(""));
  EXPECT_EQ(*parse_slot_address("0000:0c:00\n"), "0000:0c:00.");
  EXPECT_EQ(*parse_slot_address("10000:e1:1f"), "10000:e1:1f."); // Intel VMD domain
  EXPECT_EQ(*parse_slot_address("0000:0c"), "0000:0c:");         // the kernel knows the bus only
  EXPECT_FALSE(parse_slot_address("0000:0c:00.0"));
  EXPECT_FALSE(parse_slot_address("0000:0C:00"));
  EXPECT_FALSE(parse_slot_address("slot 2"));
  EXPECT_FALSE(parse_slot_address(""));
}

TEST(ParsePci, NumaNode) {
  EXPECT_EQ(*parse_numa_node("1\n"), 1);
  EXPECT_EQ(*parse_numa_node("-1\n"), std::nullopt);
  EXPECT_FALSE(parse_numa_node("-7"));
  EXPECT_FALSE(parse_numa_node(""));
}

TEST(ParsePci, LinkBandwidth) {
  // 16 GT/s x16 with 128b/130b: 31.5 GB/s; TB3's Gen3 x4: 3.94 GB/s
  // (https://en.wikipedia.org/wiki/PCI_Express).
  EXPECT_NEAR(pcie_link_gbps(16, 16), 31.5, 0.01);
  EXPECT_NEAR(pcie_link_gbps(8, 4), 3.94, 0.01);
  EXPECT_NEAR(pcie_link_gbps(2.5, 1), 0.25, 1e-9);
  EXPECT_LT(pcie_link_gbps(8, 4), pcie_link_gbps(2.5, 16) * 2);
}

TEST(ParseOsRelease, QuotedAndPlain) {
  auto kv = parse_os_release("# comment\nNAME=\"Ubuntu\"\nVERSION_ID=\"22.04\"\nID=ubuntu\n"
                             "PRETTY_NAME='Say \\\"hi\\\"'\nbad line\n=x\n");
  ASSERT_TRUE(kv);
  EXPECT_EQ(kv->at("ID"), "ubuntu");
  EXPECT_EQ(kv->at("VERSION_ID"), "22.04");
  EXPECT_EQ(kv->at("PRETTY_NAME"), "Say \"hi\"");
  EXPECT_FALSE(parse_os_release(""));
  EXPECT_FALSE(parse_os_release("nothing here"));
  auto cut = parse_os_release("ID=debian\nPRETTY_NAME=\"Deb");
  ASSERT_TRUE(cut);
  EXPECT_EQ(cut->at("PRETTY_NAME"), "Deb");
}

TEST(ParseNet, SpeedRateState) {
  EXPECT_EQ(*parse_net_speed("1000\n"), 1'000'000'000ull);
  EXPECT_FALSE(parse_net_speed("-1"));
  EXPECT_FALSE(parse_net_speed(""));
  EXPECT_EQ(*parse_ib_rate("400 Gb/sec (4X NDR)\n"), 400'000'000'000ull);
  EXPECT_EQ(*parse_ib_rate("2.5 Gb/sec (1X SDR)"), 2'500'000'000ull);
  EXPECT_FALSE(parse_ib_rate("fast"));
  EXPECT_FALSE(parse_ib_rate("400 parsecs"));
  EXPECT_EQ(*parse_ib_state("4: ACTIVE\n"), "ACTIVE");
  EXPECT_EQ(*parse_ib_state("1: DOWN"), "DOWN");
  EXPECT_FALSE(parse_ib_state("4: "));
  EXPECT_FALSE(parse_ib_state(""));
}

TEST(ParseFreq, KhzAndDpm) {
  EXPECT_DOUBLE_EQ(*parse_khz("2800000\n"), 2.8e9);
  EXPECT_FALSE(parse_khz("0"));
  EXPECT_FALSE(parse_khz("fast"));
  auto d = parse_dpm("0: 500Mhz\n1: 1300Mhz *\n2: 2100Mhz\n");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->hz.size(), 3u);
  EXPECT_DOUBLE_EQ(*d->current_hz, 1.3e9);
  EXPECT_DOUBLE_EQ(d->max_hz(), 2.1e9);
  auto none = parse_dpm("0: 96Mhz\n");
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->current_hz);
  EXPECT_FALSE(parse_dpm(""));
  EXPECT_FALSE(parse_dpm("0: fastMhz *\n"));
  auto cut = parse_dpm("0: 500Mhz *\n1: 13");
  ASSERT_TRUE(cut);
  EXPECT_EQ(cut->hz.size(), 1u);
}

} // namespace
} // namespace dlrig::probe
