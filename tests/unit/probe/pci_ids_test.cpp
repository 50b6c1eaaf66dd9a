#include "dlrig/probe/pci_ids.hpp"

#include <gtest/gtest.h>

namespace dlrig::probe {
namespace {

constexpr const char *kDb = "# comment\n"
                            "1002  Advanced Micro Devices, Inc. [AMD/ATI]\n"
                            "\t74a0  Aqua Vanjaram [Instinct MI300A]\n"
                            "10de  NVIDIA Corporation\n"
                            "\t2330  GH100[H100 SXM5 80GB]\n"
                            "\t\t10de 16c1  H100 SXM5 80GB\n"
                            "#\t2331  commented out\n"
                            "\t2684  AD102 [GeForce RTX 4090]\n"
                            "10df  Emulex Corporation\n"
                            "\t2684  Not a GPU\n"
                            "C 03  Display controller\n";

TEST(PciIds, FindsVendorAndDevice) {
  auto n = pci_ids_lookup(kDb, 0x10de, 0x2684);
  EXPECT_EQ(n.vendor, "NVIDIA Corporation");
  EXPECT_EQ(n.device, "AD102 [GeForce RTX 4090]");
  EXPECT_EQ(pci_ids_lookup(kDb, 0x10de, 0x2330).device, "GH100[H100 SXM5 80GB]");
}

TEST(PciIds, FirstLineAndUnknownIds) {
  EXPECT_EQ(pci_ids_lookup("1002  AMD\n\t74a1  MI300X\n", 0x1002, 0x74a1).device, "MI300X");
  auto n = pci_ids_lookup(kDb, 0x1002, 0x74a1);
  EXPECT_EQ(n.vendor, "Advanced Micro Devices, Inc. [AMD/ATI]");
  EXPECT_FALSE(n.device);
  EXPECT_FALSE(pci_ids_lookup(kDb, 0x10de, 0x16c1).device); // a subsystem line is no device
  EXPECT_FALSE(pci_ids_lookup(kDb, 0xabcd, 0x0001).vendor);
  EXPECT_FALSE(pci_ids_lookup("", 0x10de, 0x2684).vendor);
  EXPECT_FALSE(pci_ids_lookup("10de", 0x10de, 0x2684).vendor); // truncated
}

TEST(PciIds, ShortName) {
  EXPECT_EQ(pci_ids_short_name("AD102 [GeForce RTX 4090]"), "GeForce RTX 4090");
  EXPECT_EQ(pci_ids_short_name("GH100[H100 SXM5 80GB]"), "H100 SXM5 80GB");
  EXPECT_EQ(pci_ids_short_name("Starship/Matisse GPP Bridge"), "Starship/Matisse GPP Bridge");
  EXPECT_EQ(pci_ids_short_name("odd []"), "odd []");
}

TEST(PciIds, MissingFileSaysWhy) {
  PciIds ids("/nonexistent/pci.ids");
  EXPECT_FALSE(ids.lookup(0x10de, 0x2684).device);
  EXPECT_NE(ids.error().find("/nonexistent/pci.ids"), std::string::npos);
}

TEST(PciIds, PathFromEnvironment) {
  EXPECT_EQ(pci_ids_path({{"DLRIG_PCI_IDS", "/tmp/x.ids"}}), "/tmp/x.ids");
  EXPECT_EQ(pci_ids_path({}), DLRIG_PCI_IDS);
}

} // namespace
} // namespace dlrig::probe
