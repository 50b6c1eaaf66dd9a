#include "dlrig/probe/nvml.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

namespace dlrig {
namespace {

namespace fs = std::filesystem;

// --- pure translations -------------------------------------------------------------------------

TEST(NvmlParse, BusIdTakesSysfsSpelling) {
  EXPECT_EQ(normalize_bus_id("00000000:2A:00.0"), "0000:2a:00.0");
  EXPECT_EQ(normalize_bus_id("0000:18:00.0"), "0000:18:00.0");
  EXPECT_EQ(normalize_bus_id("00000001:C1:00.0"), "0001:c1:00.0");
  EXPECT_EQ(normalize_bus_id("00010000:01:00.0"), "10000:01:00.0"); // a VMD domain, as sysfs has it
  EXPECT_EQ(normalize_bus_id("1:02:00.0"), "0001:02:00.0");
  EXPECT_EQ(normalize_bus_id("garbage"), "garbage");
}

TEST(NvmlParse, CudaVersionFromDriverInteger) {
  EXPECT_EQ(cuda_version_text(12040), "12.4");
  EXPECT_EQ(cuda_version_text(11080), "11.8");
  EXPECT_EQ(cuda_version_text(12080), "12.8");
  EXPECT_EQ(cuda_version_text(0), std::nullopt);
  EXPECT_EQ(cuda_version_text(-5), std::nullopt);
}

TEST(NvmlParse, TopologyLevelsAsNvidiaSmiPrintsThem) {
  EXPECT_EQ(topology_level_name(10), "PIX");
  EXPECT_EQ(topology_level_name(20), "PXB");
  EXPECT_EQ(topology_level_name(30), "PHB");
  EXPECT_EQ(topology_level_name(40), "NODE");
  EXPECT_EQ(topology_level_name(50), "SYS");
  EXPECT_EQ(topology_level_name(35), std::nullopt);
}

TEST(NvmlParse, P2PAndComputeModeNames) {
  EXPECT_EQ(p2p_status_name(0), "ok");
  EXPECT_EQ(p2p_status_name(2), "gpu-not-supported");
  EXPECT_EQ(p2p_status_name(4), "disabled-by-regkey");
  EXPECT_EQ(p2p_status_name(6), "unknown");
  EXPECT_EQ(p2p_status_name(7), std::nullopt);
  // nvmlGpuFabricState_t: 0 means no fabric (unknown), not a state.
  EXPECT_EQ(fabric_state_name(0), std::nullopt);
  EXPECT_EQ(fabric_state_name(1), "not-started");
  EXPECT_EQ(fabric_state_name(3), "completed");
  EXPECT_EQ(fabric_state_name(4), std::nullopt);
  EXPECT_EQ(compute_mode_name(0), "default");
  EXPECT_EQ(compute_mode_name(3), "exclusive-process");
  EXPECT_EQ(compute_mode_name(4), std::nullopt);
}

TEST(NvmlParse, ClocksEventReasonBits) {
  EXPECT_TRUE(clocks_event_reason_names(0).empty());
  EXPECT_EQ(clocks_event_reason_names(0x1), std::vector<std::string>{"gpu-idle"});
  EXPECT_EQ(
      clocks_event_reason_names(0x64),
      (std::vector<std::string>{"sw-power-cap", "sw-thermal-slowdown", "hw-thermal-slowdown"}));
  EXPECT_EQ(clocks_event_reason_names(0x188),
            (std::vector<std::string>{"hw-slowdown", "hw-power-brake-slowdown",
                                      "display-clock-setting"}));
  EXPECT_EQ(clocks_event_reason_names(0x200), std::vector<std::string>{"0x200"});
}

TEST(NvmlParse, KernelModuleVersion) {
  EXPECT_EQ(parse_nvidia_module_version(
                "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 "
                "UTC 2024\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"),
            "550.54.15");
  EXPECT_EQ(parse_nvidia_module_version(
                "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  560.35.03  Release "
                "Build  (dvs-builder@U16-I3-B03-4-3)  Fri Aug 16 21:42:42 UTC 2024\n"),
            "560.35.03");
  EXPECT_EQ(parse_nvidia_module_version(""), std::nullopt);
  EXPECT_EQ(parse_nvidia_module_version("NVRM version: NVIDIA UNIX Kernel Module\n550.1"),
            std::nullopt);
  EXPECT_EQ(parse_nvidia_module_version("\x01\x02 garbage Kernel Module x y z"), std::nullopt);
}

Gpu nvml_gpu(const std::string &bdf, std::vector<NvLink> links) {
  Gpu g;
  g.bdf = bdf;
  g.nvml = NvmlGpu{};
  g.nvml->nvlinks = std::move(links);
  return g;
}

NvLink link_to(const std::string &remote, const std::string &kind, bool active = true) {
  NvLink l;
  l.active = active;
  l.remote_bdf = remote;
  l.remote_kind = kind;
  return l;
}

TEST(NvmlParse, PairTopologyPrefersNvlink) {
  // Direct links: NV<count of links to that peer>, inactive links not counted.
  Gpu a = nvml_gpu("0000:01:00.0", {link_to("0000:02:00.0", "gpu"), link_to("0000:02:00.0", "gpu"),
                                    link_to("0000:02:00.0", "gpu", false)});
  Gpu b = nvml_gpu("0000:02:00.0", {link_to("0000:01:00.0", "gpu")});
  EXPECT_EQ(gpu_pair_topology(a, b, 30), "NV2");
  // Both on NVSwitches: the fewer switch links.
  Gpu s1 = nvml_gpu("0000:18:00.0", std::vector<NvLink>(18, link_to("0000:05:00.0", "switch")));
  Gpu s2 = nvml_gpu("0000:2a:00.0", std::vector<NvLink>(12, link_to("0000:06:00.0", "switch")));
  EXPECT_EQ(gpu_pair_topology(s1, s2, 50), "NV12");
  // No NVLink: the PCIe level; unknown level stays unknown.
  Gpu p1 = nvml_gpu("0000:01:00.0", {});
  Gpu p2 = nvml_gpu("0000:41:00.0", {});
  EXPECT_EQ(gpu_pair_topology(p1, p2, 30), "PHB");
  EXPECT_EQ(gpu_pair_topology(p1, p2, std::nullopt), std::nullopt);
  EXPECT_EQ(gpu_pair_topology(s1, p2, 40), "NODE");
}

// --- the probe over the fake NVML ----------------------------------------------------------------

std::string data(const std::string &rel) {
  return std::string(DLRIG_TEST_DATA) + "/" + rel;
}

// A machine root for the probe: /proc/driver/nvidia/version and the comm files of processes.
class NvmlProbe : public ::testing::Test {
protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("dlrig-nvml-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "proc/driver/nvidia");
    std::ofstream(root_ / "proc/driver/nvidia/version")
        << "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC "
           "2024\n";
    fs::create_directories(root_ / "proc/48211");
    std::ofstream(root_ / "proc/48211/comm") << "python3\n";
  }
  void TearDown() override { fs::remove_all(root_); }

  // Probes with the fake NVML answering scenario (a path under tests/data).
  Snapshot probe(const std::string &scenario, ProbeOptions options = {}) {
    Snapshot snap = seed_;
    ::setenv("DLRIG_FAKE_NVML_SCENARIO", scenario.c_str(), 1);
    Sysroot sysroot(root_.string());
    Environment env{{"DLRIG_NVML_LIBRARY", DLRIG_FAKE_NVML}};
    ProbeContext ctx{sysroot, env, options, snap};
    probe_nvml(ctx);
    return snap;
  }

  // The same, with the entry points resolved through a lookup that hides some symbols, as a
  // library from an older driver would not export them.
  Snapshot probe_hiding(const std::string &scenario, std::set<std::string> hidden) {
    Snapshot snap = seed_;
    ::setenv("DLRIG_FAKE_NVML_SCENARIO", scenario.c_str(), 1);
    auto session =
        nvml::Session::open(DLRIG_FAKE_NVML, [&](const char *name) { return !hidden.count(name); });
    Sysroot sysroot(root_.string());
    ProbeContext ctx{sysroot, {}, {}, snap};
    probe_nvml_with(ctx, session);
    return snap;
  }

  static const Gpu *gpu_at(const Snapshot &s, const std::string &bdf) {
    for (const auto &g : s.gpus)
      if (g.bdf == bdf)
        return &g;
    return nullptr;
  }

  static int notes_about(const Snapshot &s, const std::string &source) {
    int n = 0;
    for (const auto &note : s.notes)
      n += note.source == source;
    return n;
  }

  fs::path root_;
  Snapshot seed_;
};

TEST_F(NvmlProbe, ServerEightH100WithNvSwitch) {
  // The PCI probe saw the first GPU; NVML's readings join it, the rest get entries of their own.
  Gpu pci;
  pci.bdf = "0000:18:00.0";
  pci.numa_node = 0;
  pci.name = "H100 SXM5 80GB";
  pci.name_source = "kb";
  seed_.gpus.push_back(pci);
  Snapshot s = probe(data("server-8xh100/nvml.json"));

  const auto &nv = s.nvidia;
  EXPECT_EQ(nv.nvml_status, "ok");
  EXPECT_EQ(nv.nvml_error, std::nullopt);
  EXPECT_EQ(nv.driver_version, "550.54.15");
  EXPECT_EQ(nv.cuda_driver_version, "12.4");
  EXPECT_EQ(nv.nvml_version, "12.550.54.15");
  EXPECT_EQ(nv.kernel_module_version, "550.54.15");
  EXPECT_EQ(nv.gpu_count, 8);
  ASSERT_NE(nv.nvml_library, std::nullopt);
  EXPECT_NE(nv.nvml_library->find("libnvidia-ml-fake.so"), std::string::npos);

  ASSERT_EQ(s.gpus.size(), 8u);
  const std::vector<std::string> buses{"0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0",
                                       "0000:5d:00.0", "0000:9a:00.0", "0000:ab:00.0",
                                       "0000:ba:00.0", "0000:db:00.0"};
  for (std::size_t i = 0; i < buses.size(); ++i) {
    EXPECT_EQ(s.gpus[i].bdf, buses[i]);
    ASSERT_TRUE(s.gpus[i].nvml) << buses[i];
    EXPECT_EQ(s.gpus[i].nvml->index, static_cast<int>(i));
  }
  // The PCI probe's entry kept what it knew.
  EXPECT_EQ(s.gpus[0].numa_node, 0);
  EXPECT_EQ(s.gpus[0].name_source, "kb");
  // A GPU only NVML saw.
  EXPECT_EQ(s.gpus[1].vendor_id, "0x10de");
  EXPECT_EQ(s.gpus[1].device_id, "0x2330");
  EXPECT_EQ(s.gpus[1].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(s.gpus[1].name_source, "nvml");

  const NvmlGpu &g = *s.gpus[3].nvml;
  EXPECT_EQ(g.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g.uuid, "GPU-d1e70103-0000-4000-8000-000000000103");
  EXPECT_EQ(g.memory_total_bytes, 81559ULL * 1024 * 1024);
  EXPECT_EQ(g.memory_used_bytes, 541ULL * 1024 * 1024); // v2: reserved counted as used
  EXPECT_EQ(g.compute_capability, "9.0");
  EXPECT_EQ(g.architecture, "Hopper");
  EXPECT_EQ(g.sm_clock_hz, 345e6);
  EXPECT_EQ(g.sm_clock_max_hz, 1980e6);
  EXPECT_EQ(g.memory_clock_hz, 2619e6);
  EXPECT_EQ(g.memory_clock_max_hz, 2619e6);
  EXPECT_DOUBLE_EQ(*g.power_draw_w, 71.1);
  EXPECT_EQ(g.power_limit_w, 700.0);
  EXPECT_EQ(g.power_default_limit_w, 700.0);
  EXPECT_EQ(g.temperature_c, 32.0);
  EXPECT_EQ(g.slowdown_temperature_c, 89.0);
  EXPECT_EQ(g.fan_percent, std::nullopt); // passively cooled: NOT_SUPPORTED
  EXPECT_EQ(g.throttle_reasons_mask, 1u);
  EXPECT_EQ(g.throttle_reasons, std::vector<std::string>{"gpu-idle"});
  EXPECT_EQ(g.persistence_mode, true);
  EXPECT_EQ(g.compute_mode, "default");
  EXPECT_EQ(g.mig_enabled, false);
  EXPECT_EQ(g.ecc_enabled, true);
  EXPECT_EQ(g.ecc_uncorrected_volatile, 0u);
  EXPECT_EQ(g.ecc_corrected_volatile, 0u);
  EXPECT_EQ(g.ecc_uncorrected_aggregate, 0u);
  EXPECT_EQ(g.retired_pages, std::nullopt); // Hopper remaps rows instead
  EXPECT_EQ(g.remapped_rows.uncorrectable, 0u);
  EXPECT_EQ(g.remapped_rows.failure, false);
  EXPECT_EQ(g.display_active, false);
  EXPECT_EQ(g.pcie_gen_current, 5);
  EXPECT_EQ(g.pcie_width_max, 16);
  EXPECT_EQ(g.pcie_replay_counter, 0u);
  ASSERT_EQ(g.nvlinks.size(), 18u);
  for (const auto &l : g.nvlinks) {
    EXPECT_EQ(l.active, true);
    EXPECT_EQ(l.remote_kind, "switch");
    EXPECT_EQ(l.speed_bps, 26562ULL * 8'000'000ULL);
  }
  EXPECT_EQ(g.nvlinks[0].remote_bdf, "0000:05:00.0");
  EXPECT_EQ(g.nvlinks[17].remote_bdf, "0000:08:00.0");
  EXPECT_TRUE(g.processes.empty());

  ASSERT_EQ(nv.pairs.size(), 28u);
  for (const auto &p : nv.pairs) {
    EXPECT_LT(p.a, p.b);
    EXPECT_EQ(p.topology, "NV18");
    EXPECT_EQ(p.p2p_read, "ok");
    EXPECT_EQ(p.p2p_write, "ok");
    EXPECT_EQ(p.p2p_nvlink, "ok");
  }
  // NOT_SUPPORTED readings are silent; nothing else failed.
  EXPECT_TRUE(s.notes.empty()) << s.notes.front().field << ": " << s.notes.front().reason;

  // And the snapshot survives its JSON round trip.
  auto back = snapshot_from_json(to_json(s).dump());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(to_json(*back), to_json(s));
}

TEST_F(NvmlProbe, DesktopRtx4090) {
  Snapshot s = probe(data("desktop-rtx4090/nvml.json"));
  ASSERT_EQ(s.gpus.size(), 1u);
  const Gpu &gpu = s.gpus[0];
  EXPECT_EQ(gpu.bdf, "0000:01:00.0");
  EXPECT_EQ(gpu.device_id, "0x2684");
  const NvmlGpu &g = *gpu.nvml;
  EXPECT_EQ(g.name, "NVIDIA GeForce RTX 4090");
  EXPECT_EQ(g.compute_capability, "8.9");
  EXPECT_EQ(g.architecture, "Ada Lovelace");
  EXPECT_EQ(g.memory_total_bytes, 24564ULL * 1024 * 1024);
  EXPECT_EQ(g.persistence_mode, false);
  EXPECT_EQ(g.display_active, true);
  EXPECT_EQ(g.fan_percent, 30.0);
  EXPECT_EQ(g.power_limit_w, 450.0);
  EXPECT_EQ(g.slowdown_temperature_c, 87.0);
  // GeForce: no ECC, MIG, NVLink or row remapping: unknown, not "off" or 0.
  EXPECT_EQ(g.ecc_enabled, std::nullopt);
  EXPECT_EQ(g.ecc_uncorrected_volatile, std::nullopt);
  EXPECT_EQ(g.mig_enabled, std::nullopt);
  EXPECT_EQ(g.remapped_rows.uncorrectable, std::nullopt);
  EXPECT_TRUE(g.nvlinks.empty());
  EXPECT_EQ(g.pcie_gen_current, 4);
  EXPECT_EQ(g.pcie_width_current, 16);
  EXPECT_TRUE(s.nvidia.pairs.empty());
  EXPECT_EQ(s.nvidia.cuda_driver_version, "12.4");
}

TEST_F(NvmlProbe, LaptopEgpuSeesTheDocksLink) {
  Snapshot s = probe(data("laptop-egpu-3080/nvml.json"));
  ASSERT_EQ(s.gpus.size(), 1u);
  EXPECT_EQ(s.gpus[0].bdf, "0000:07:00.0");
  const NvmlGpu &g = *s.gpus[0].nvml;
  EXPECT_EQ(g.name, "NVIDIA GeForce RTX 3080");
  EXPECT_EQ(g.compute_capability, "8.6");
  EXPECT_EQ(g.architecture, "Ampere");
  EXPECT_EQ(g.pcie_gen_current, 3);
  EXPECT_EQ(g.pcie_width_current, 4);
  EXPECT_EQ(g.pcie_width_max, 4);
  EXPECT_EQ(s.nvidia.driver_version, "535.183.01");
  EXPECT_EQ(s.nvidia.cuda_driver_version, "12.2");
}

TEST_F(NvmlProbe, ContainerA100) {
  Snapshot s = probe(data("container-shm64/nvml.json"));
  ASSERT_EQ(s.gpus.size(), 1u);
  EXPECT_EQ(s.gpus[0].bdf, "0000:00:05.0");
  const NvmlGpu &g = *s.gpus[0].nvml;
  EXPECT_EQ(g.name, "NVIDIA A100 80GB PCIe");
  EXPECT_EQ(g.compute_capability, "8.0");
  EXPECT_EQ(g.memory_total_bytes, 80ULL * 1024 * 1024 * 1024);
  EXPECT_EQ(g.power_limit_w, 300.0);
  EXPECT_TRUE(g.nvlinks.empty());
}

TEST_F(NvmlProbe, VersionMismatchIsRecordedNotFatal) {
  Gpu pci;
  pci.bdf = "0000:01:00.0";
  pci.vendor = "NVIDIA";
  seed_.gpus.push_back(pci);
  Snapshot s = probe(data("nvml/version-mismatch.json"));
  EXPECT_EQ(s.nvidia.nvml_status, "init-failed");
  EXPECT_EQ(s.nvidia.nvml_error, "RM has detected an NVML/RM version mismatch");
  EXPECT_EQ(s.nvidia.nvml_error_code, 18);
  EXPECT_EQ(s.nvidia.driver_version, std::nullopt);
  EXPECT_EQ(s.nvidia.gpu_count, std::nullopt);
  // The kernel side still speaks, and the PCI GPU is left as it was.
  EXPECT_EQ(s.nvidia.kernel_module_version, "550.54.15");
  ASSERT_EQ(s.gpus.size(), 1u);
  EXPECT_FALSE(s.gpus[0].nvml);
}

TEST_F(NvmlProbe, DriverNotLoaded) {
  Snapshot s = probe(data("nvml/driver-not-loaded.json"));
  EXPECT_EQ(s.nvidia.nvml_status, "init-failed");
  EXPECT_EQ(s.nvidia.nvml_error, "Driver Not Loaded");
  EXPECT_EQ(s.nvidia.nvml_error_code, 9);
  EXPECT_TRUE(s.gpus.empty());
}

TEST_F(NvmlProbe, LibraryNotFound) {
  ProbeOptions options;
  options.nvml_library = "/nonexistent/libnvidia-ml.so.1"; // the option wins over the environment
  Snapshot s = probe(data("server-8xh100/nvml.json"), options);
  EXPECT_EQ(s.nvidia.nvml_status, "not-found");
  EXPECT_EQ(s.nvidia.nvml_library, "/nonexistent/libnvidia-ml.so.1");
  ASSERT_NE(s.nvidia.nvml_error, std::nullopt);
  EXPECT_NE(s.nvidia.nvml_error->find("/nonexistent/libnvidia-ml.so.1"), std::string::npos);
  EXPECT_EQ(s.nvidia.nvml_error_code, 12);
  EXPECT_TRUE(s.gpus.empty());
  EXPECT_EQ(s.nvidia.kernel_module_version, "550.54.15");
}

TEST_F(NvmlProbe, UnreadableScenarioFailsClosed) {
  Snapshot s = probe(data("nvml/no-such-scenario.json"));
  EXPECT_EQ(s.nvidia.nvml_status, "init-failed");
  EXPECT_TRUE(s.gpus.empty());
}

TEST_F(NvmlProbe, ThermalAndPowerThrottling) {
  Snapshot s = probe(data("nvml/throttling.json"));
  ASSERT_EQ(s.gpus.size(), 1u);
  const NvmlGpu &g = *s.gpus[0].nvml;
  EXPECT_EQ(g.throttle_reasons_mask, 0x64u);
  EXPECT_EQ(g.throttle_reasons, (std::vector<std::string>{"sw-power-cap", "sw-thermal-slowdown",
                                                          "hw-thermal-slowdown"}));
  EXPECT_EQ(g.temperature_c, 86.0);
  EXPECT_EQ(g.slowdown_temperature_c, 87.0);
  EXPECT_EQ(g.power_limit_w, 300.0);
  EXPECT_EQ(g.power_default_limit_w, 450.0);
  EXPECT_EQ(g.fan_percent, 100.0);
  ASSERT_EQ(g.processes.size(), 1u);
  EXPECT_EQ(g.processes[0].pid, 48211u);
  EXPECT_EQ(g.processes[0].used_memory_bytes, 20480ULL * 1024 * 1024);
  EXPECT_EQ(g.processes[0].name, "python3");
}

TEST_F(NvmlProbe, EccRetiredPagesAndRowRemapFailure) {
  Snapshot s = probe(data("nvml/ecc-errors.json"));
  ASSERT_EQ(s.gpus.size(), 2u);
  const NvmlGpu &volta = *s.gpus[0].nvml;
  EXPECT_EQ(volta.compute_capability, "7.0");
  EXPECT_EQ(volta.architecture, "Volta");
  EXPECT_EQ(volta.ecc_uncorrected_volatile, 2u);
  EXPECT_EQ(volta.ecc_corrected_volatile, 14u);
  EXPECT_EQ(volta.retired_pages, 3u);
  EXPECT_EQ(volta.retired_pages_pending, true);
  EXPECT_EQ(volta.remapped_rows.failure, std::nullopt);
  EXPECT_EQ(volta.mig_enabled, std::nullopt);
  const NvmlGpu &ampere = *s.gpus[1].nvml;
  EXPECT_EQ(ampere.ecc_uncorrected_volatile, 5u);
  EXPECT_EQ(ampere.ecc_uncorrected_aggregate, 12u);
  EXPECT_EQ(ampere.retired_pages, std::nullopt);
  EXPECT_EQ(ampere.remapped_rows.uncorrectable, 3u);
  EXPECT_EQ(ampere.remapped_rows.correctable, 1u);
  EXPECT_EQ(ampere.remapped_rows.pending, false);
  EXPECT_EQ(ampere.remapped_rows.failure, true);
  ASSERT_EQ(s.nvidia.pairs.size(), 1u);
  EXPECT_EQ(s.nvidia.pairs[0].topology, "PXB");
  EXPECT_EQ(s.nvidia.pairs[0].p2p_nvlink, "not-supported");
}

TEST_F(NvmlProbe, MigEnabled) {
  Snapshot s = probe(data("nvml/mig.json"));
  ASSERT_EQ(s.gpus.size(), 1u);
  EXPECT_EQ(s.gpus[0].nvml->mig_enabled, true);
}

TEST_F(NvmlProbe, ConsumerPairWithoutP2P) {
  Snapshot s = probe(data("nvml/two-4090-pcie.json"));
  ASSERT_EQ(s.nvidia.pairs.size(), 1u);
  EXPECT_EQ(s.nvidia.pairs[0].topology, "PHB");
  EXPECT_EQ(s.nvidia.pairs[0].p2p_read, "gpu-not-supported");
  EXPECT_EQ(s.nvidia.pairs[0].p2p_write, "gpu-not-supported");
}

TEST_F(NvmlProbe, MissingFunctionLeavesExactlyItsFieldsNull) {
  Snapshot full = probe(data("server-8xh100/nvml.json"));
  Snapshot s = probe(data("nvml/missing-functions.json"));
  ASSERT_EQ(s.gpus.size(), 1u);
  const NvmlGpu &g = *s.gpus[0].nvml;
  const NvmlGpu &ref = *full.gpus[0].nvml;
  EXPECT_EQ(g.power_draw_w, std::nullopt);
  EXPECT_EQ(g.remapped_rows.uncorrectable, std::nullopt);
  EXPECT_EQ(g.remapped_rows.failure, std::nullopt);
  EXPECT_EQ(s.nvidia.cuda_driver_version, std::nullopt);
  // Everything else is read as usual: compare with the same GPU where nothing is missing.
  NvmlGpu expected = ref;
  expected.power_draw_w.reset();
  expected.remapped_rows = RemappedRows{};
  EXPECT_EQ(Json(g), Json(expected));
  EXPECT_EQ(s.nvidia.driver_version, "550.54.15");
  // Each missing function is noted once, by name.
  EXPECT_EQ(notes_about(s, "nvmlDeviceGetPowerUsage"), 1);
  EXPECT_EQ(notes_about(s, "nvmlDeviceGetRemappedRows"), 1);
  EXPECT_EQ(notes_about(s, "nvmlSystemGetCudaDriverVersion_v2"), 1);
  EXPECT_EQ(s.notes.size(), 3u);
}

TEST_F(NvmlProbe, OlderSymbolVersionsAreUsedWhenNewerAreAbsent) {
  // A library from before the _v2/_v3 symbols: the older versions and their struct layouts.
  Snapshot s = probe_hiding(
      data("nvml/throttling.json"),
      {"nvmlInit_v2", "nvmlDeviceGetCount_v2", "nvmlDeviceGetHandleByIndex_v2",
       "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetMemoryInfo_v2", "nvmlSystemGetCudaDriverVersion_v2",
       "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetComputeRunningProcesses_v3",
       "nvmlDeviceGetComputeRunningProcesses_v2"});
  EXPECT_EQ(s.nvidia.nvml_status, "ok");
  EXPECT_EQ(s.nvidia.cuda_driver_version, "12.4");
  ASSERT_EQ(s.gpus.size(), 1u);
  EXPECT_EQ(s.gpus[0].bdf, "0000:01:00.0");
  const NvmlGpu &g = *s.gpus[0].nvml;
  // v1 memory leaves reserved memory out of "used".
  EXPECT_EQ(g.memory_total_bytes, 24564ULL * 1024 * 1024);
  EXPECT_EQ(g.memory_used_bytes, (21950ULL - 325ULL) * 1024 * 1024);
  EXPECT_EQ(g.throttle_reasons_mask, 0x64u); // through the deprecated throttle-reasons name
  // v1 process records are 16 bytes, not 24: pid and memory still line up.
  ASSERT_EQ(g.processes.size(), 1u);
  EXPECT_EQ(g.processes[0].pid, 48211u);
  EXPECT_EQ(g.processes[0].used_memory_bytes, 20480ULL * 1024 * 1024);
  EXPECT_TRUE(s.notes.empty());
}

TEST_F(NvmlProbe, SymbolAbsentFromLibraryLeavesItsFieldNull) {
  Snapshot s = probe_hiding(data("desktop-rtx4090/nvml.json"),
                            {"nvmlDeviceGetFanSpeed", "nvmlDeviceGetComputeRunningProcesses_v3",
                             "nvmlDeviceGetComputeRunningProcesses_v2",
                             "nvmlDeviceGetComputeRunningProcesses"});
  ASSERT_EQ(s.gpus.size(), 1u);
  EXPECT_EQ(s.gpus[0].nvml->fan_percent, std::nullopt);
  EXPECT_EQ(s.gpus[0].nvml->temperature_c, 38.0);
  EXPECT_EQ(notes_about(s, "nvmlDeviceGetFanSpeed"), 1);
  // None of the three versions is there: the note names the newest, the one the table asks for.
  EXPECT_EQ(notes_about(s, "nvmlDeviceGetComputeRunningProcesses_v3"), 1);
}

TEST_F(NvmlProbe, LibraryWithoutInitIsNotNvml) {
  Snapshot s = probe_hiding(data("server-8xh100/nvml.json"), {"nvmlInit_v2", "nvmlInit"});
  EXPECT_EQ(s.nvidia.nvml_status, "init-failed");
  ASSERT_NE(s.nvidia.nvml_error, std::nullopt);
  EXPECT_NE(s.nvidia.nvml_error->find("nvmlInit"), std::string::npos);
  EXPECT_TRUE(s.gpus.empty());
}

TEST_F(NvmlProbe, FailingCallIsNotedWithNvmlsReason) {
  // A scenario where one GPU's power reading fails with GPU_IS_LOST (15).
  auto path = root_ / "lost.json";
  std::ofstream(path) << R"({"driver_version": "550.54.15", "gpus": [
      {"bus_id": "00000000:01:00.0", "name": "NVIDIA GeForce RTX 4090", "power_usage_mw": 30000,
       "enforced_power_limit_mw": 450000, "errors": {"nvmlDeviceGetPowerUsage": 15}}]})";
  Snapshot s = probe(path.string());
  ASSERT_EQ(s.gpus.size(), 1u);
  EXPECT_EQ(s.gpus[0].nvml->power_draw_w, std::nullopt);
  EXPECT_EQ(s.gpus[0].nvml->power_limit_w, 450.0);
  ASSERT_EQ(notes_about(s, "nvmlDeviceGetPowerUsage"), 1);
  for (const auto &n : s.notes)
    if (n.source == "nvmlDeviceGetPowerUsage") {
      EXPECT_EQ(n.field, "gpus[0000:01:00.0].nvml.power_draw_w");
      EXPECT_EQ(n.reason, "GPU is lost");
    }
}

TEST_F(NvmlProbe, NotesNameTheSymbolActuallyBound) {
  // An older library: no _v2 CUDA version or _v3 PCI info. The versions called are the ones the
  // notes must name (they once named the newest version whatever was bound).
  auto path = root_ / "older.json";
  std::ofstream(path) << R"({"cuda_driver_version": 12040,
      "missing_functions": ["nvmlSystemGetCudaDriverVersion"],
      "gpus": [{"bus_id": "00000000:01:00.0", "errors": {"nvmlDeviceGetPciInfo_v2": 999}}]})";
  Snapshot s =
      probe_hiding(path.string(), {"nvmlSystemGetCudaDriverVersion_v2", "nvmlDeviceGetPciInfo_v3"});
  EXPECT_EQ(s.nvidia.nvml_status, "ok");
  EXPECT_EQ(s.nvidia.cuda_driver_version, std::nullopt);
  EXPECT_EQ(notes_about(s, "nvmlSystemGetCudaDriverVersion"), 1);
  EXPECT_EQ(notes_about(s, "nvmlSystemGetCudaDriverVersion_v2"), 0);
  EXPECT_EQ(notes_about(s, "nvmlDeviceGetPciInfo_v2"), 2); // the failed call, the GPU left out
  EXPECT_EQ(notes_about(s, "nvmlDeviceGetPciInfo_v3"), 0);
  EXPECT_TRUE(s.gpus.empty());
}

TEST_F(NvmlProbe, GpuLostDuringTheProbeLeavesNotesNotACrash) {
  // Four calls answered (handle, PCI info, name, UUID), then GPU_IS_LOST for everything else.
  auto path = root_ / "lost.json";
  std::ofstream(path) << R"({"gpus": [{"bus_id": "00000000:01:00.0", "lost_after_calls": 4,
      "name": "NVIDIA GeForce RTX 4090", "uuid": "GPU-1", "power_usage_mw": 30000,
      "memory": {"total": 25757220864, "used": 1244659712}}]})";
  Snapshot s = probe(path.string());
  EXPECT_EQ(s.nvidia.nvml_status, "ok");
  ASSERT_EQ(s.gpus.size(), 1u);
  const NvmlGpu &g = *s.gpus[0].nvml;
  EXPECT_EQ(g.name, "NVIDIA GeForce RTX 4090");
  EXPECT_EQ(g.uuid, "GPU-1");
  EXPECT_EQ(g.memory_total_bytes, std::nullopt);
  EXPECT_EQ(g.power_draw_w, std::nullopt);
  bool memory_noted = false;
  for (const auto &n : s.notes)
    if (n.field == "gpus[0000:01:00.0].nvml.memory_total_bytes")
      memory_noted = n.reason == "GPU is lost" && n.source == "nvmlDeviceGetMemoryInfo_v2";
  EXPECT_TRUE(memory_noted);
  // The doctor's gpu.fallen-off-bus reads this: which GPU, with the bus id NVML gave before.
  ASSERT_EQ(s.nvidia.lost_gpus.size(), 1u);
  EXPECT_EQ(s.nvidia.lost_gpus[0].index, 0);
  EXPECT_EQ(s.nvidia.lost_gpus[0].bdf, "0000:01:00.0");
}

TEST_F(NvmlProbe, AGpuLostBeforeItsHandleIsListedByIndex) {
  auto path = root_ / "lost-at-once.json";
  std::ofstream(path) << R"({"gpus": [
      {"bus_id": "00000000:01:00.0", "name": "NVIDIA GeForce RTX 4090"},
      {"bus_id": "00000000:41:00.0", "name": "NVIDIA GeForce RTX 4090", "lost_after_calls": 0}]})";
  Snapshot s = probe(path.string());
  EXPECT_EQ(s.nvidia.nvml_status, "ok");
  ASSERT_EQ(s.gpus.size(), 1u); // the lost one cannot be matched to the bus
  EXPECT_EQ(s.gpus[0].bdf, "0000:01:00.0");
  ASSERT_EQ(s.nvidia.lost_gpus.size(), 1u);
  EXPECT_EQ(s.nvidia.lost_gpus[0].index, 1);
  EXPECT_EQ(s.nvidia.lost_gpus[0].bdf, std::nullopt);
}

// A GPU that has stopped responding: NVML does not answer (here nvmlInit_v2, or the first GPU's
// handle, sleeps for a minute). The probe stops waiting at its deadline and keeps what the PCI bus
// and the kernel module said; nothing NVML would have said is half-kept.
TEST_F(NvmlProbe, NvmlThatDoesNotAnswerTimesOut) {
  Gpu pci; // what the PCI probe saw
  pci.bdf = "0000:01:00.0";
  pci.name = "GeForce RTX 4090";
  seed_.gpus.push_back(pci);
  for (const char *symbol : {"nvmlInit_v2", "nvmlDeviceGetHandleByIndex_v2"}) {
    auto path = root_ / "hang.json";
    std::ofstream(path) << R"({"driver_version": "550.54.15", "hang_ms": {")" << symbol
                        << R"(": 60000}, "gpus": [{"bus_id": "00000000:01:00.0",
        "name": "NVIDIA GeForce RTX 4090"}]})";
    ProbeOptions options;
    options.nvml_timeout = std::chrono::milliseconds(300);
    Snapshot s = probe(path.string(), options);
    EXPECT_EQ(s.nvidia.nvml_status, "timed-out") << symbol;
    EXPECT_NE(s.nvidia.nvml_error.value_or("").find("did not answer within 0.3 s"),
              std::string::npos)
        << s.nvidia.nvml_error.value_or("");
    EXPECT_EQ(s.nvidia.nvml_library, DLRIG_FAKE_NVML);
    EXPECT_EQ(s.nvidia.driver_version, std::nullopt) << symbol;
    EXPECT_EQ(s.nvidia.kernel_module_version, "550.54.15");
    ASSERT_EQ(s.gpus.size(), 1u);
    EXPECT_EQ(s.gpus[0].name, "GeForce RTX 4090");
    EXPECT_FALSE(s.gpus[0].nvml);
  }
}

// An NVML that crashes takes only its probe with it: the status says how it ended.
TEST_F(NvmlProbe, NvmlThatCrashesIsRecordedNotFatal) {
  auto path = root_ / "crash.json";
  std::ofstream(path) << R"({"driver_version": "550.54.15", "abort_in": "nvmlDeviceGetPowerUsage",
      "gpus": [{"bus_id": "00000000:01:00.0", "name": "NVIDIA GeForce RTX 4090",
                "power_usage_mw": 30000}]})";
  Snapshot s = probe(path.string());
  EXPECT_EQ(s.nvidia.nvml_status, "init-failed");
  EXPECT_NE(s.nvidia.nvml_error.value_or("").find("signal 6"), std::string::npos)
      << s.nvidia.nvml_error.value_or("");
  EXPECT_EQ(s.nvidia.driver_version, std::nullopt);
  EXPECT_TRUE(s.gpus.empty()); // the GPU NVML was reading is not half-kept
}

TEST_F(NvmlProbe, SnapshotIsOneSampleOfReadingsThatChange) {
  // Each reading is asked once per probe, so a snapshot of a scenario whose readings change shows
  // the first value of every sequence: one moment, not a mix of two.
  Snapshot s = probe(data("nvml/load-then-lost.json"));
  ASSERT_EQ(s.gpus.size(), 1u);
  const NvmlGpu &g = *s.gpus[0].nvml;
  EXPECT_EQ(g.memory_used_bytes, 1244659712u);
  EXPECT_EQ(g.memory_total_bytes, 25757220864u);
  EXPECT_DOUBLE_EQ(*g.power_draw_w, 27.83);
  EXPECT_EQ(g.sm_clock_hz, 210e6);
  EXPECT_EQ(g.temperature_c, 38.0);
  EXPECT_EQ(g.pcie_gen_current, 1);
  EXPECT_EQ(g.throttle_reasons, std::vector<std::string>{"gpu-idle"});
  EXPECT_TRUE(g.processes.empty());
  EXPECT_TRUE(s.notes.empty()) << s.notes.front().source.value_or("") << ": "
                               << s.notes.front().reason;
  EXPECT_TRUE(s.nvidia.lost_gpus.empty()); // lost later in the scenario, not in this sample
}

} // namespace
} // namespace dlrig
