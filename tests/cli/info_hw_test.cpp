// dlrig info on every fixture machine: the real binary, human, --json and --markdown.
#include "support/cli.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>

namespace dlrig::test {
namespace {

using nlohmann::json;

const std::string kPciIds = "DLRIG_PCI_IDS=" + std::string(DLRIG_TEST_DATA) + "/pci.ids";

CliRun info(const std::string &machine, const std::vector<std::string> &extra = {}) {
  std::vector<std::string> args{"info", "--sysroot", fixture(machine)};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_dlrig(args, {kPciIds});
}

json info_json(const std::string &machine) {
  auto r = info(machine, {"--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out);
}

bool has(const std::string &text, const std::string &what) {
  return text.find(what) != std::string::npos;
}

TEST(InfoHw, EveryFixtureRunsInAllFormats) {
  for (const char *m : {"laptop-no-gpu", "desktop-rtx4090", "laptop-egpu-3080", "server-8xh100",
                        "node-mi300x", "container-shm64"}) {
    for (std::vector<std::string> fmt : {std::vector<std::string>{}, {"--json"}, {"--markdown"}}) {
      auto r = info(m, fmt);
      EXPECT_EQ(r.exit_code, 0) << m << ": " << r.err;
      EXPECT_FALSE(r.out.empty()) << m;
    }
    auto j = info_json(m);
    EXPECT_FALSE(j["host"]["cpu"]["model"].is_null()) << m;
    EXPECT_FALSE(j["host"]["memory"]["total_bytes"].is_null()) << m;
  }
}

TEST(InfoHw, LaptopWithoutGpuSaysSoAndShowsTheHost) {
  auto r = info("laptop-no-gpu");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "No NVIDIA or AMD GPU found on the PCI bus")) << r.out;
  EXPECT_TRUE(has(r.out, "Iris Xe Graphics"));
  EXPECT_TRUE(has(r.out, "11th Gen Intel(R) Core(TM) i7-1165G7"));
  EXPECT_TRUE(has(r.out, "15.3 GiB")); // 16093888 kB of RAM
  auto j = info_json("laptop-no-gpu");
  ASSERT_EQ(j["gpus"].size(), 1u);
  EXPECT_EQ(j["gpus"][0]["driver"], "i915");
}

TEST(InfoHw, NoPciGpuAtAll) {
  auto root =
      std::filesystem::temp_directory_path() / ("dlrig-nogpu-" + std::to_string(::getpid()));
  std::filesystem::create_directories(root / "proc");
  std::ofstream(root / "proc/meminfo") << "MemTotal: 1024 kB\n";
  // Without /sys the PCI bus was not read: whether there is a GPU is unknown, not "none".
  auto unread = run_dlrig({"info", "--sysroot", root.string()}, {kPciIds});
  EXPECT_EQ(unread.exit_code, 0) << unread.err;
  EXPECT_TRUE(has(unread.out, "GPU  unknown: no PCI device listed")) << unread.out;
  // A bus with only a host bridge on it: read, and no GPU.
  auto bridge = root / "sys/bus/pci/devices/0000:00:00.0";
  std::filesystem::create_directories(bridge);
  std::ofstream(bridge / "class") << "0x060000\n";
  std::ofstream(bridge / "vendor") << "0x1022\n";
  std::ofstream(bridge / "device") << "0x1480\n";
  auto r = run_dlrig({"info", "--sysroot", root.string()}, {kPciIds});
  std::filesystem::remove_all(root);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "No GPU found on the PCI bus")) << r.out;
  EXPECT_TRUE(has(r.out, "1.0 MiB")) << r.out; // the host is still shown
}

TEST(InfoHw, DesktopRtx4090) {
  auto j = info_json("desktop-rtx4090");
  ASSERT_EQ(j["gpus"].size(), 1u);
  auto g = j["gpus"][0];
  EXPECT_EQ(g["bdf"], "0000:01:00.0");
  EXPECT_EQ(g["name"], "GeForce RTX 4090");
  EXPECT_EQ(g["link"]["current_gts"], 16.0);
  EXPECT_EQ(g["link"]["current_width"], 16);
  EXPECT_EQ(g["path"][0]["bdf"], "0000:00:01.1");
  EXPECT_EQ(g["path"][0]["kind"], "root-port");
  bool hdd = false;
  for (const auto &m : j["host"]["mounts"])
    hdd = hdd || (m["mountpoint"] == "/data" && m["kind"] == "hdd");
  EXPECT_TRUE(hdd);
  auto r = info("desktop-rtx4090");
  EXPECT_TRUE(has(r.out, "16 GT/s x16")) << r.out;
}

TEST(InfoHw, EgpuThunderboltX4) {
  auto j = info_json("laptop-egpu-3080");
  ASSERT_EQ(j["gpus"].size(), 2u);
  auto g = j["gpus"][1];
  EXPECT_EQ(g["bdf"], "0000:07:00.0");
  EXPECT_EQ(g["behind_thunderbolt"], true);
  EXPECT_EQ(g["narrowest_gts"], 8.0);
  EXPECT_EQ(g["narrowest_width"], 4);
  EXPECT_EQ(g["link"]["max_width"], 16);
  auto r = info("laptop-egpu-3080");
  EXPECT_TRUE(has(r.out, "8 GT/s x4")) << r.out;
  EXPECT_TRUE(has(r.out, "eGPU (Thunderbolt/USB4)")) << r.out;
  auto md = info("laptop-egpu-3080", {"--markdown"});
  EXPECT_TRUE(has(md.out, "| 0000:07:00.0 |")) << md.out;
}

TEST(InfoHw, EightH100OnTwoNodesBehindSwitches) {
  auto j = info_json("server-8xh100");
  ASSERT_EQ(j["gpus"].size(), 8u);
  int per_node[2] = {0, 0};
  for (const auto &g : j["gpus"]) {
    EXPECT_EQ(g["device_id"], "0x2330");
    EXPECT_EQ(g["behind_switch"], true);
    per_node[g["numa_node"].get<int>()]++;
  }
  EXPECT_EQ(per_node[0], 4);
  EXPECT_EQ(per_node[1], 4);
  EXPECT_EQ(j["host"]["cpu"]["numa_nodes"].size(), 2u);
  EXPECT_EQ(j["host"]["rdma"].size(), 8u);
  EXPECT_EQ(j["host"]["limits"]["memlock_bytes"]["soft_unlimited"], true);
  auto r = info("server-8xh100");
  EXPECT_TRUE(has(r.out, "PCIe switch")) << r.out;
  EXPECT_TRUE(has(r.out, "unlimited"));
}

TEST(InfoHw, ContainerShm64MB) {
  auto j = info_json("container-shm64");
  EXPECT_EQ(j["host"]["shm"]["size_bytes"], 67108864u);
  auto r = info("container-shm64");
  EXPECT_TRUE(has(r.out, "64.0 MiB")) << r.out;
  EXPECT_TRUE(has(r.out, "NVIDIA A100 80GB PCIe")) << r.out; // the kb's name for 10de:20b5
}

TEST(InfoHw, Mi300xVram) {
  auto j = info_json("node-mi300x");
  ASSERT_EQ(j["gpus"].size(), 2u);
  for (const auto &g : j["gpus"]) {
    EXPECT_EQ(g["driver"], "amdgpu");
    EXPECT_EQ(g["amd"]["vram_total_bytes"], 205822885888u);
  }
  EXPECT_EQ(j["gpus"][1]["bdf"], "0000:26:00.0");
  auto r = info("node-mi300x");
  EXPECT_TRUE(has(r.out, "191.7 GiB")) << r.out;
}

TEST(InfoHw, NouveauBoundGpuIsNotUsable) {
  auto root =
      std::filesystem::temp_directory_path() / ("dlrig-nouveau-" + std::to_string(::getpid()));
  auto dev = root / "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0";
  std::filesystem::create_directories(dev);
  std::filesystem::create_directories(root / "sys/bus/pci/drivers/nouveau");
  // A bus with only a host bridge on it: read, and no GPU.
  auto bridge = root / "sys/bus/pci/devices/0000:00:00.0";
  std::filesystem::create_directories(bridge);
  std::ofstream(bridge / "class") << "0x060000\n";
  std::ofstream(bridge / "vendor") << "0x1022\n";
  std::ofstream(bridge / "device") << "0x1480\n";
  std::filesystem::create_directory_symlink("../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0",
                                            root / "sys/bus/pci/devices/0000:01:00.0");
  std::filesystem::create_directory_symlink("../../../../bus/pci/drivers/nouveau", dev / "driver");
  std::ofstream(dev / "class") << "0x030000\n";
  std::ofstream(dev / "vendor") << "0x10de\n";
  std::ofstream(dev / "device") << "0x2684\n";
  auto r = run_dlrig({"info", "--sysroot", root.string()}, {kPciIds});
  auto j = run_dlrig({"info", "--json", "--sysroot", root.string()}, {kPciIds});
  std::filesystem::remove_all(root);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(
      r.out, "0000:01:00.0 GeForce RTX 4090: not usable by CUDA (driver: nouveau; needs nvidia)"))
      << r.out;
  EXPECT_EQ(json::parse(j.out)["gpus"][0]["driver"], "nouveau");
}

// A fixture with empty and garbage values: each reading is null with a note, and dlrig exits 0.
TEST(InfoHw, GarbageSysfsIsNullWithNotes) {
  auto root =
      std::filesystem::temp_directory_path() / ("dlrig-garbage-" + std::to_string(::getpid()));
  auto dev = root / "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0";
  std::filesystem::create_directories(dev);
  // A bus with only a host bridge on it: read, and no GPU.
  auto bridge = root / "sys/bus/pci/devices/0000:00:00.0";
  std::filesystem::create_directories(bridge);
  std::ofstream(bridge / "class") << "0x060000\n";
  std::ofstream(bridge / "vendor") << "0x1022\n";
  std::ofstream(bridge / "device") << "0x1480\n";
  std::filesystem::create_directory_symlink("../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0",
                                            root / "sys/bus/pci/devices/0000:01:00.0");
  std::ofstream(dev / "class") << "0x030200\n";
  std::ofstream(dev / "vendor") << "0x10de\n";
  std::ofstream(dev / "device") << "zzzz";
  std::ofstream(dev / "current_link_speed") << "";
  std::ofstream(dev / "current_link_width") << "-3";
  std::ofstream(dev / "numa_node") << "\x01";
  std::filesystem::create_directories(root / "proc/self");
  std::ofstream(root / "proc/meminfo") << "MemTotal: lots\n";
  std::ofstream(root / "proc/cpuinfo") << "garbage";
  std::ofstream(root / "proc/self/limits") << "";
  std::ofstream(root / "proc/mounts") << "/dev/sda1";
  auto r = run_dlrig({"info", "--json", "--sysroot", root.string()}, {kPciIds});
  std::filesystem::remove_all(root);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = json::parse(r.out);
  ASSERT_EQ(j["gpus"].size(), 1u);
  EXPECT_EQ(j["gpus"][0]["vendor"], "NVIDIA");
  EXPECT_TRUE(j["gpus"][0]["device_id"].is_null());
  EXPECT_TRUE(j["gpus"][0]["link"]["current_gts"].is_null());
  EXPECT_TRUE(j["gpus"][0]["link"]["current_width"].is_null());
  EXPECT_TRUE(j["gpus"][0]["numa_node"].is_null());
  EXPECT_TRUE(j["host"]["memory"]["total_bytes"].is_null());
  std::set<std::string> noted;
  for (const auto &n : j["notes"])
    noted.insert(n["field"].get<std::string>());
  for (const char *f :
       {"gpus[0].device_id", "gpus[0].link.current_width", "gpus[0].link.current_gts",
        "gpus[0].numa_node", "host.memory", "host.cpu", "host.limits", "host.mounts"})
    EXPECT_TRUE(noted.count(f)) << f << "\n" << r.out;
}

// An unreadable /proc/cpuinfo leaves the ISA unknown (n/a, JSON null), never "none of ...";
// a snapshot with no readings does not say the PCI bus holds no GPU.
TEST(InfoHw, UnreadableCpuinfoAndEmptySnapshotAreUnknownNotNone) {
  auto root = scratch("empty-root");
  std::filesystem::create_directories(root);
  auto r = run_dlrig({"info", "--sysroot", root.string()}, {kPciIds});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(has(r.out, "none of AVX2")) << r.out;
  EXPECT_TRUE(has(r.out, "ISA for PyTorch            n/a")) << r.out;
  r = run_dlrig({"info", "--json", "--sysroot", root.string()}, {kPciIds});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(json::parse(r.out)["host"]["cpu"]["isa"].is_null()) << r.out;

  auto empty = scratch("empty.json");
  std::ofstream(empty) << R"({"schema_version":1})";
  r = run_dlrig({"info", "--from", empty.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(has(r.out, "No GPU found on the PCI bus")) << r.out;
  EXPECT_TRUE(has(r.out, "unknown: the snapshot holds no PCI reading")) << r.out;
  EXPECT_FALSE(has(r.out, "none of AVX2")) << r.out;
}

} // namespace
} // namespace dlrig::test
