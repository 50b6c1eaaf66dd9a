#pragma once
// PCI bridges that carry a Thunderbolt or USB4 PCIe tunnel: a GPU behind one of them is an eGPU
// whose link is the tunnel's (PCIe 3.0 x4 for Thunderbolt 3/4; a TB3 dock's GPU reports 8GT/s x4 in
// https://github.com/ewagner12/all-ways-egpu/issues/37).
//
// Source: pci.ids 2023.04.10 (Debian package pci.ids), every device whose name says
// Thunderbolt or USB4 and Bridge, PCI Express Root Port or PCIe tunnel. ASMedia's USB4 bridges
// (ASM2464PD) have no such entry there yet; they are recognised by the second signal pci.cpp uses:
// a populated /sys/bus/thunderbolt/devices and a bridge the kernel marks "removable".
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string_view>

namespace dlrig::probe {

struct TunnelBridgeId {
  std::uint16_t vendor;
  std::uint16_t device;
  std::string_view name; // as pci.ids names it
};

inline constexpr TunnelBridgeId kTunnelBridges[] = {
    {0x1022, 0x14cd, "Family 19h USB4/Thunderbolt PCIe tunnel"},
    {0x106b, 0x1010, "Apple Silicon USB4/Thunderbolt PCI Express Root Port"},
    {0x8086, 0x0b26, "Thunderbolt 4 Bridge [Goshen Ridge 2020]"},
    {0x8086, 0x1136, "Thunderbolt 4 Bridge [Maple Ridge 4C 2020]"},
    {0x8086, 0x1567, "DSL4410 Thunderbolt Bridge [Redwood Ridge 2C 2013]"},
    {0x8086, 0x1569, "DSL4510 Thunderbolt Bridge [Redwood Ridge 4C 2013]"},
    {0x8086, 0x156b, "DSL5320 Thunderbolt 2 Bridge [Falcon Ridge 2C 2013]"},
    {0x8086, 0x156d, "DSL5520 Thunderbolt 2 Bridge [Falcon Ridge 4C 2013]"},
    {0x8086, 0x1576, "DSL6340 Thunderbolt 3 Bridge [Alpine Ridge 2C 2015]"},
    {0x8086, 0x1578, "DSL6540 Thunderbolt 3 Bridge [Alpine Ridge 4C 2015]"},
    {0x8086, 0x157e, "DSL5110 Thunderbolt 2 Bridge (Low Power) [Win Ridge 2C 2014]"},
    {0x8086, 0x15c0, "JHL6240 Thunderbolt 3 Bridge (Low Power) [Alpine Ridge LP 2016]"},
    {0x8086, 0x15d3, "JHL6540 Thunderbolt 3 Bridge (C step) [Alpine Ridge 4C 2016]"},
    {0x8086, 0x15da, "JHL6340 Thunderbolt 3 Bridge (C step) [Alpine Ridge 2C 2016]"},
    {0x8086, 0x15e7, "JHL7540 Thunderbolt 3 Bridge [Titan Ridge 2C 2018]"},
    {0x8086, 0x15ea, "JHL7540 Thunderbolt 3 Bridge [Titan Ridge 4C 2018]"},
    {0x8086, 0x15ef, "JHL7540 Thunderbolt 3 Bridge [Titan Ridge DD 2018]"},
    {0x8086, 0x461f, "Alder Lake-P Thunderbolt 4 PCI Express Root Port #3"},
    {0x8086, 0x462f, "Alder Lake-P Thunderbolt 4 PCI Express Root Port #2"},
    {0x8086, 0x463f, "Alder Lake-P Thunderbolt 4 PCI Express Root Port #1"},
    {0x8086, 0x466e, "Alder Lake-P Thunderbolt 4 PCI Express Root Port #0"},
    {0x8086, 0x7ec4, "Meteor Lake-P Thunderbolt 4 PCI Express Root Port #0"},
    {0x8086, 0x7ec5, "Meteor Lake-P Thunderbolt 4 PCI Express Root Port #1"},
    {0x8086, 0x7ec6, "Meteor Lake-P Thunderbolt 4 PCI Express Root Port #2"},
    {0x8086, 0x7ec7, "Meteor Lake-P Thunderbolt 4 PCI Express Root Port #3"},
    {0x8086, 0x8a1d, "Ice Lake Thunderbolt 3 PCI Express Root Port #0"},
    {0x8086, 0x8a1f, "Ice Lake Thunderbolt 3 PCI Express Root Port #1"},
    {0x8086, 0x8a21, "Ice Lake Thunderbolt 3 PCI Express Root Port #2"},
    {0x8086, 0x8a23, "Ice Lake Thunderbolt 3 PCI Express Root Port #3"},
    {0x8086, 0x9a23, "Tiger Lake-LP Thunderbolt 4 PCI Express Root Port #0"},
    {0x8086, 0x9a25, "Tiger Lake-LP Thunderbolt 4 PCI Express Root Port #1"},
    {0x8086, 0x9a27, "Tiger Lake-LP Thunderbolt 4 PCI Express Root Port #2"},
    {0x8086, 0x9a29, "Tiger Lake-LP Thunderbolt 4 PCI Express Root Port #3"},
    {0x8086, 0x9a2b, "Tiger Lake-H Thunderbolt 4 PCI Express Root Port #0"},
    {0x8086, 0x9a2d, "Tiger Lake-H Thunderbolt 4 PCI Express Root Port #1"},
    {0x8086, 0x9a2f, "Tiger Lake-H Thunderbolt 4 PCI Express Root Port #2"},
    {0x8086, 0x9a31, "Tiger Lake-H Thunderbolt 4 PCI Express Root Port #3"},
};

inline bool is_tunnel_bridge(std::uint32_t vendor, std::uint32_t device) {
  return std::any_of(
      std::begin(kTunnelBridges), std::end(kTunnelBridges),
      [&](const TunnelBridgeId &id) { return id.vendor == vendor && id.device == device; });
}

} // namespace dlrig::probe
