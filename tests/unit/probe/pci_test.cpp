#include "dlrig/probe/thunderbolt_ids.hpp"
#include "probe_fixture.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <tuple>

namespace dlrig::test {
namespace {

TEST(ProbePci, DesktopRtx4090) {
  auto s = probe_fixture("desktop-rtx4090", probe_pci_gpus);
  ASSERT_EQ(s.gpus.size(), 1u); // the HDMI audio function 01:00.1 is no GPU
  const auto &g = s.gpus[0];
  EXPECT_EQ(g.bdf, "0000:01:00.0");
  EXPECT_EQ(g.vendor, "NVIDIA");
  EXPECT_EQ(g.vendor_id, "0x10de");
  EXPECT_EQ(g.device_id, "0x2684");
  EXPECT_EQ(g.pci_class, "0x030000");
  EXPECT_EQ(g.name, "GeForce RTX 4090");
  EXPECT_EQ(g.name_source, "kb");
  EXPECT_EQ(g.driver, "nvidia");
  EXPECT_EQ(g.numa_node, std::nullopt); // numa_node -1: no affinity
  EXPECT_EQ(g.link.current_gts, 16.0);
  EXPECT_EQ(g.link.current_width, 16);
  ASSERT_EQ(g.path.size(), 1u);
  EXPECT_EQ(g.path[0].bdf, "0000:00:01.1");
  EXPECT_EQ(g.path[0].kind, "root-port");
  EXPECT_EQ(g.path[0].name, "Starship/Matisse GPP Bridge");
  EXPECT_EQ(g.behind_thunderbolt, false);
  EXPECT_EQ(g.behind_switch, false);
  EXPECT_EQ(g.narrowest_hop, "0000:01:00.0");
}

TEST(ProbePci, EgpuBehindThunderbolt) {
  auto s = probe_fixture("laptop-egpu-3080", probe_pci_gpus);
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_EQ(s.gpus[0].bdf, "0000:00:02.0");
  EXPECT_EQ(s.gpus[0].behind_thunderbolt, false);
  const auto &g = s.gpus[1];
  EXPECT_EQ(g.bdf, "0000:07:00.0");
  EXPECT_EQ(g.behind_thunderbolt, true);
  EXPECT_EQ(g.behind_switch, false);
  ASSERT_EQ(g.path.size(), 3u);
  EXPECT_EQ(g.path[0].bdf, "0000:06:01.0");
  EXPECT_EQ(g.path[0].kind, "thunderbolt");
  EXPECT_EQ(g.path[2].bdf, "0000:00:07.0");
  EXPECT_EQ(g.narrowest_gts, 8.0);
  EXPECT_EQ(g.narrowest_width, 4);
  EXPECT_EQ(g.link.max_width, 16);
}

TEST(ProbePci, EightH100BehindSwitchesOnTwoNodes) {
  auto s = probe_fixture("server-8xh100", probe_pci_gpus);
  ASSERT_EQ(s.gpus.size(), 8u); // the four NVSwitch chips (class 0x0680) are not GPUs
  int node1 = 0;
  for (const auto &g : s.gpus) {
    EXPECT_EQ(g.device_id, "0x2330");
    EXPECT_EQ(g.behind_switch, true) << g.bdf;
    EXPECT_EQ(g.behind_thunderbolt, false);
    ASSERT_EQ(g.path.size(), 3u);
    EXPECT_EQ(g.path[0].kind, "switch-port");
    EXPECT_EQ(g.path[1].kind, "switch-port");
    EXPECT_EQ(g.path[2].kind, "root-port");
    EXPECT_EQ(g.link.current_gts, 32.0);
    node1 += g.numa_node == 1;
  }
  EXPECT_EQ(node1, 4);
  EXPECT_EQ(s.gpus[0].bdf, "0000:18:00.0");
  EXPECT_EQ(s.gpus[7].bdf, "0000:db:00.0");
}

TEST(ProbePci, VmGpuOnTheRootBus) {
  auto s = probe_fixture("container-shm64", probe_pci_gpus);
  ASSERT_EQ(s.gpus.size(), 1u);
  EXPECT_EQ(s.gpus[0].name, "NVIDIA A100 80GB PCIe");
  EXPECT_TRUE(s.gpus[0].path.empty());
  EXPECT_EQ(s.gpus[0].behind_switch, false);
  EXPECT_EQ(s.gpus[0].narrowest_hop, "0000:00:05.0");
}

// One NVIDIA display controller with DEVICE_ID on the root bus of a made-up sysfs, probed with
// the test's pci.ids.
Snapshot one_nvidia_gpu(const std::string &device_id) {
  auto root =
      std::filesystem::temp_directory_path() / ("dlrig-one-gpu-" + std::to_string(::getpid()));
  auto dev = root / "sys/devices/pci0000:00/0000:00:02.0";
  std::filesystem::create_directories(dev);
  std::filesystem::create_directories(root / "sys/bus/pci/devices");
  std::filesystem::create_directory_symlink("../../../devices/pci0000:00/0000:00:02.0",
                                            root / "sys/bus/pci/devices/0000:00:02.0");
  std::ofstream(dev / "class") << "0x030000\n";
  std::ofstream(dev / "vendor") << "0x10de\n";
  std::ofstream(dev / "device") << device_id << "\n";
  Sysroot fs(root.string());
  Snapshot snap;
  ProbeContext ctx{fs, {{"DLRIG_PCI_IDS", std::string(DLRIG_TEST_DATA) + "/pci.ids"}}, {}, snap};
  probe_pci_gpus(ctx);
  std::filesystem::remove_all(root);
  return snap;
}

TEST(ProbePci, KnowledgeBaseNamesBeforePciIds) {
  auto s = probe_fixture("node-mi300x", probe_pci_gpus);
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_EQ(s.gpus[0].name, "AMD Instinct MI300X"); // 1002:74a1 is not in the test's pci.ids
  EXPECT_EQ(s.gpus[0].name_source, "kb");
  // 10de:20b3 (A100-SXM-64GB) has no row in the kb: pci.ids names it.
  auto other = one_nvidia_gpu("0x20b3");
  ASSERT_EQ(other.gpus.size(), 1u);
  EXPECT_EQ(other.gpus[0].name, "A100-SXM-64GB");
  EXPECT_EQ(other.gpus[0].name_source, "pci.ids");
}

TEST(ProbePci, UnknownIdGetsANote) {
  auto snap = one_nvidia_gpu("0xfffe");
  ASSERT_EQ(snap.gpus.size(), 1u);
  EXPECT_FALSE(snap.gpus[0].name);
  EXPECT_TRUE(has_note(snap, "gpus[0].name"));
  EXPECT_TRUE(snap.gpus[0].path.empty()); // on the root bus
}

TEST(ProbePci, TunnelBridgeTable) {
  EXPECT_TRUE(probe::is_tunnel_bridge(0x8086, 0x15e7));
  EXPECT_TRUE(probe::is_tunnel_bridge(0x8086, 0x15ef));
  EXPECT_FALSE(probe::is_tunnel_bridge(0x1000, 0xc030));
}

class GarbagePci : public ::testing::Test {
protected:
  void SetUp() override {
    root = std::filesystem::temp_directory_path() / ("dlrig-pci-" + std::to_string(::getpid()));
    auto dev = root / "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0";
    std::filesystem::create_directories(dev);
    std::filesystem::create_directories(root / "sys/bus/pci/devices");
    std::filesystem::create_directory_symlink(
        "../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0",
        root / "sys/bus/pci/devices/0000:01:00.0");
    std::ofstream(dev / "class") << "0x030000\n";
    std::ofstream(dev / "vendor") << "";
    std::ofstream(dev / "device") << "\xff\xfe";
    std::ofstream(dev / "numa_node") << "banana";
    std::ofstream(dev / "current_link_speed") << "Unknown speed\n";
    std::ofstream(dev / "current_link_width") << "0\n";
    std::ofstream(dev / "max_link_speed") << "16.0 GT/s PC"; // truncated: still readable
    std::ofstream(dev / "max_link_width") << "1";
  }
  void TearDown() override { std::filesystem::remove_all(root); }
  std::filesystem::path root;
};

TEST_F(GarbagePci, UnknownWithReasons) {
  Sysroot fs(root.string());
  Snapshot snap;
  ProbeContext ctx{fs, {}, {}, snap};
  probe_pci_gpus(ctx);
  ASSERT_EQ(snap.gpus.size(), 1u);
  const auto &g = snap.gpus[0];
  EXPECT_FALSE(g.vendor_id);
  EXPECT_FALSE(g.device_id);
  EXPECT_FALSE(g.numa_node);
  EXPECT_FALSE(g.link.current_gts);
  EXPECT_FALSE(g.link.current_width);
  EXPECT_EQ(g.link.max_gts, 16.0);
  EXPECT_FALSE(g.narrowest_hop);
  EXPECT_TRUE(has_note(snap, "gpus[0].vendor_id"));
  EXPECT_TRUE(has_note(snap, "gpus[0].device_id"));
  EXPECT_TRUE(has_note(snap, "gpus[0].numa_node"));
  EXPECT_TRUE(has_note(snap, "gpus[0].link.current_gts"));
  EXPECT_TRUE(has_note(snap, "gpus[0].link.current_width"));
}

// A USB4 bridge that is not in the id table (ASMedia's): recognised by "removable" while a
// Thunderbolt/USB4 domain is up, and only then.
class RemovableBridge : public ::testing::Test {
protected:
  void SetUp() override {
    root = std::filesystem::temp_directory_path() / ("dlrig-usb4-" + std::to_string(::getpid()));
    auto rp = root / "sys/devices/pci0000:00/0000:00:07.0";
    auto br = rp / "0000:05:00.0";
    auto gpu = br / "0000:06:00.0";
    std::filesystem::create_directories(gpu);
    std::filesystem::create_directories(root / "sys/bus/pci/devices");
    std::filesystem::create_directory_symlink(
        "../../../devices/pci0000:00/0000:00:07.0/0000:05:00.0/0000:06:00.0",
        root / "sys/bus/pci/devices/0000:06:00.0");
    for (auto [dir, vendor, device, cls, removable] :
         {std::tuple{rp, "0x1022", "0x1483", "0x060400", "fixed"},
          std::tuple{br, "0x1b21", "0x2463", "0x060400", "removable"},
          std::tuple{gpu, "0x10de", "0x2684", "0x030000", "removable"}}) {
      std::ofstream(dir / "vendor") << vendor << "\n";
      std::ofstream(dir / "device") << device << "\n";
      std::ofstream(dir / "class") << cls << "\n";
      std::ofstream(dir / "removable") << removable << "\n";
    }
  }
  void TearDown() override { std::filesystem::remove_all(root); }
  Gpu probe() {
    Sysroot fs(root.string());
    Snapshot snap;
    ProbeContext ctx{fs, {}, {}, snap};
    probe_pci_gpus(ctx);
    EXPECT_EQ(snap.gpus.size(), 1u);
    return snap.gpus.empty() ? Gpu{} : snap.gpus[0];
  }
  std::filesystem::path root;
};

TEST_F(RemovableBridge, ThunderboltOnlyWithADomain) {
  auto g = probe();
  EXPECT_EQ(g.behind_thunderbolt, false);
  ASSERT_EQ(g.path.size(), 2u);
  EXPECT_EQ(g.path[0].kind, "bridge");
  EXPECT_EQ(g.path[1].kind, "root-port");
  std::filesystem::create_directories(root / "sys/bus/thunderbolt/devices/0-1");
  g = probe();
  EXPECT_EQ(g.behind_thunderbolt, true);
  EXPECT_EQ(g.path[0].kind, "thunderbolt");
  EXPECT_EQ(g.path[1].kind, "root-port");
}

TEST(ProbePci, NoSysfsIsANote) {
  Sysroot fs("/nonexistent-dlrig-root");
  Snapshot snap;
  ProbeContext ctx{fs, {}, {}, snap};
  probe_pci_gpus(ctx);
  EXPECT_TRUE(snap.gpus.empty());
  EXPECT_TRUE(has_note(snap, "gpus"));
}

// /sys/bus/pci/slots: the desktop's RTX 4090 in slot 1 on its x16 root port, slot 2 empty and wired
// x4; every slot of the HGX server taken by its ConnectX-7 cards; none listed on the laptop.
TEST(ProbePciSlots, FreeAndTakenSlotsWithTheirWidth) {
  auto s = probe_fixture("desktop-rtx4090", probe_pci_slots);
  ASSERT_TRUE(s.host.pci_slots);
  const auto &slots = *s.host.pci_slots;
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_EQ(slots[0].name, "1");
  EXPECT_EQ(slots[0].address, "0000:01:00");
  EXPECT_EQ(slots[0].occupied, true);
  EXPECT_EQ(slots[0].bridge, "0000:00:01.1");
  EXPECT_EQ(slots[0].max_width, 16);
  EXPECT_EQ(slots[0].max_gts, 16.0);
  EXPECT_EQ(slots[0].current_gts, 16.0);
  EXPECT_EQ(slots[1].name, "2");
  EXPECT_EQ(slots[1].address, "0000:0c:00");
  EXPECT_EQ(slots[1].occupied, false);
  EXPECT_EQ(slots[1].bridge, "0000:00:03.1");
  EXPECT_EQ(slots[1].max_width, 4);
  EXPECT_EQ(slots[1].max_gts, 16.0);
  EXPECT_EQ(slots[1].current_gts, std::nullopt); // "Unknown": the empty slot's link is down
  EXPECT_TRUE(s.notes.empty()) << s.notes.front().field << ": " << s.notes.front().reason;
  // The slots survive the snapshot's JSON round trip.
  auto back = snapshot_from_json(to_json(s).dump());
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(Json(back->host.pci_slots), Json(s.host.pci_slots));

  auto server = probe_fixture("server-8xh100", probe_pci_slots);
  ASSERT_TRUE(server.host.pci_slots);
  ASSERT_EQ(server.host.pci_slots->size(), 8u);
  for (const auto &slot : *server.host.pci_slots) {
    EXPECT_EQ(slot.occupied, true) << slot.name;
    EXPECT_EQ(slot.max_width, 16) << slot.name;
    EXPECT_EQ(slot.max_gts, 32.0) << slot.name;
  }
}

TEST(ProbePciSlots, NoSlotDirectoryIsUnknownNotNone) {
  auto s = probe_fixture("laptop-egpu-3080", probe_pci_slots);
  EXPECT_EQ(s.host.pci_slots, std::nullopt);
  EXPECT_TRUE(s.notes.empty());
  // ...and stays null through JSON, where an empty list would claim the board has no slot.
  EXPECT_TRUE(to_json(s)["host"]["pci_slots"].is_null());
}

TEST(ProbePciSlots, AnUnreadableAddressIsNotedAndLeavesTheSlotUnknown) {
  const auto root =
      std::filesystem::temp_directory_path() / ("dlrig-pci-slots-" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "sys/bus/pci/slots/7");
  std::ofstream(root / "sys/bus/pci/slots/7/address") << "slot seven\n";
  std::ofstream(root / "sys/bus/pci/slots/7/max_bus_speed") << "8.0 GT/s PCIe\n";
  Sysroot fs(root.string());
  Snapshot snap;
  ProbeOptions options;
  options.sysroot = fs.root();
  ProbeContext ctx{fs, {}, options, snap};
  probe_pci_slots(ctx);
  ASSERT_TRUE(snap.host.pci_slots);
  ASSERT_EQ(snap.host.pci_slots->size(), 1u);
  const auto &slot = snap.host.pci_slots->front();
  EXPECT_EQ(slot.max_gts, 8.0);
  EXPECT_EQ(slot.address, std::nullopt);
  EXPECT_EQ(slot.occupied, std::nullopt); // unknown, never "free"
  EXPECT_TRUE(has_note(snap, "host.pci_slots[0].address"));
  std::filesystem::remove_all(root);
}

} // namespace
// `fit --gpu NAME` reads only the host (its CPU comparison): no PCI walk, no NVML, no software.
TEST(ProbeMachine, HostOnlyReadsNoGpuOrSoftware) {
  Sysroot fs(std::string(DLRIG_TEST_DATA) + "/desktop-rtx4090");
  ProbeOptions options;
  options.sysroot = fs.root();
  options.skip_nvml = true;
  const Environment env{{"DLRIG_PCI_IDS", std::string(DLRIG_TEST_DATA) + "/pci.ids"}};
  auto all = probe_machine(fs, env, options);
  ASSERT_FALSE(all.gpus.empty());
  options.host_only = true;
  auto host = probe_machine(fs, env, options);
  EXPECT_TRUE(host.gpus.empty());
  EXPECT_TRUE(host.software.python_envs.empty());
  EXPECT_TRUE(host.software.python_search.empty());
  EXPECT_EQ(host.host.cpu.model, all.host.cpu.model);
}

} // namespace dlrig::test
