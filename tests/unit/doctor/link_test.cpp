#include "dlrig/doctor/report.hpp"
#include "unit/doctor/machines.hpp"

#include <gtest/gtest.h>

namespace dlrig::doctor::test {
namespace {

Snapshot egpu_laptop() {
  Snapshot s = healthy_laptop();
  Gpu &g = s.gpus[1];
  g.behind_thunderbolt = true;
  g.link = PcieLink{8, 16, 16, 16};
  g.narrowest_gts = 8;
  g.narrowest_width = 4;
  g.narrowest_hop = "0000:05:01.0";
  PciHop tb;
  tb.bdf = "0000:05:01.0";
  tb.kind = "thunderbolt";
  tb.link = PcieLink{8, 4, 8, 4};
  g.path = {tb};
  return s;
}

std::string evidence(const Finding &f, const std::string &key) {
  for (const auto &e : f.evidence)
    if (e.key == key)
      return evidence_text(e); // as the table shows it
  return "";
}

TEST(DoctorLink, EgpuBandwidthAgainstAnX16Slot) {
  auto f = run_check("link.egpu-bandwidth", egpu_laptop());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::warn);
  EXPECT_EQ(evidence(f[0], "link"), "8 GT/s x4");
  EXPECT_EQ(evidence(f[0], "link_bandwidth_per_direction"), "3.9 GB/s"); // 4 x 0.985
  EXPECT_EQ(evidence(f[0], "x16_slot_at_same_gen"), "31.5 GB/s");        // Gen4 x16
  EXPECT_TRUE(run_check("link.egpu-bandwidth", healthy_laptop()).empty());
}

TEST(DoctorLink, EgpuIsNotASlotNarrowOrDowntrainedFinding) {
  EXPECT_TRUE(run_check("link.slot-narrow", egpu_laptop()).empty());
  EXPECT_TRUE(run_check("link.pcie-downtrained", egpu_laptop()).empty());
}

TEST(DoctorLink, PcieDowntrainedWidth) {
  Snapshot s = healthy_desktop();
  s.gpus[0].link.current_width = 8;
  auto f = run_check("link.pcie-downtrained", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].title.find("x8 of x16"), std::string::npos) << f[0].title;
}

TEST(DoctorLink, PcieSpeedCountsOnlyWhenBusy) {
  Snapshot idle = healthy_desktop(); // idle at 2.5 GT/s: normal
  EXPECT_TRUE(run_check("link.pcie-downtrained", idle).empty());
  Snapshot busy = healthy_desktop();
  busy.gpus[0].nvml->throttle_reasons_mask = 0;
  EXPECT_EQ(worst("link.pcie-downtrained", busy), Severity::warn);
  busy.gpus[0].link.current_gts = 16;
  EXPECT_TRUE(run_check("link.pcie-downtrained", busy).empty());
}

TEST(DoctorLink, PcieSlotWiredNarrowerIsNotDowntrained) {
  Snapshot s = healthy_desktop();
  s.gpus[0].link.current_width = 8;
  s.gpus[0].path[0].link.max_width = 8;
  EXPECT_TRUE(run_check("link.pcie-downtrained", s).empty());
}

TEST(DoctorLink, SlotNarrow) {
  Snapshot s = healthy_desktop();
  s.gpus[0].path[0].link.max_width = 4;
  EXPECT_EQ(worst("link.slot-narrow", s), Severity::warn);
  EXPECT_TRUE(run_check("link.slot-narrow", healthy_desktop()).empty());
}

Snapshot two_pcie_gpus() {
  Snapshot s = healthy_server();
  s.gpus.resize(2);
  for (auto &g : s.gpus)
    g.nvml->nvlinks.clear();
  s.nvidia.pairs = {GpuPair{0, 1, "NODE", "ok", "ok", "not-supported"}};
  s.software.services.nvswitch_present = false;
  return s;
}

TEST(DoctorLink, P2pBlockedByAcsOrIommu) {
  Snapshot acs = two_pcie_gpus();
  acs.software.acs = {AcsBridge{"0000:16:02.0", true}};
  auto f = run_check("link.p2p-blocked", acs);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].fix[0].rfind("stopgap: export NCCL_P2P_DISABLE=1", 0), 0u);
  EXPECT_EQ(f[0].fix.back(), "until reboot: sudo setpci -s 0000:16:02.0 ECAP_ACS+6.w=0000");
  Snapshot iommu = two_pcie_gpus();
  iommu.software.kernel.iommu = "on";
  iommu.software.kernel.iommu_groups = true;
  EXPECT_EQ(worst("link.p2p-blocked", iommu), Severity::warn);
  Snapshot cns = two_pcie_gpus();
  cns.nvidia.pairs[0].p2p_read = "chipset-not-supported";
  EXPECT_EQ(worst("link.p2p-blocked", cns), Severity::warn);
  EXPECT_TRUE(run_check("link.p2p-blocked", two_pcie_gpus()).empty());
}

TEST(DoctorLink, P2pBlockedIgnoresNvlinkPairs) {
  Snapshot s = healthy_server();
  s.software.kernel.iommu = "on";
  s.software.kernel.iommu_groups = true;
  EXPECT_TRUE(run_check("link.p2p-blocked", s).empty());
}

TEST(DoctorLink, P2pNotSupportedIsInfo) {
  Snapshot s = two_pcie_gpus();
  s.nvidia.pairs[0].p2p_read = "gpu-not-supported";
  EXPECT_EQ(worst("link.p2p-not-supported", s), Severity::info);
  EXPECT_EQ(worst("link.p2p-not-supported", two_pcie_gpus()), Severity::ok);
}

TEST(DoctorLink, NvlinkDown) {
  Snapshot s = healthy_server();
  s.gpus[5].nvml->nvlinks[3].active = false;
  auto f = run_check("link.nvlink-down", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(evidence(f[0], "links_down"), "3");
  EXPECT_TRUE(run_check("link.nvlink-down", healthy_server()).empty());
}

} // namespace
} // namespace dlrig::doctor::test
