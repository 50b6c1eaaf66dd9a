// The board's PCI slots as the kernel lists them: /sys/bus/pci/slots/NAME with `address`,
// `max_bus_speed` and `cur_bus_speed` (Documentation/ABI/testing/sysfs-bus-pci,
// drivers/pci/slot.c). A slot is occupied when a function at its address is in
// /sys/bus/pci/devices; its width is the link capability of the bridge whose secondary bus it is
// on (that bridge's directory holds pci_bus/DDDD:BB).
#include "dlrig/probe/parse.hpp"
#include "dlrig/probe/probe.hpp"
#include "dlrig/probe/read.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace dlrig {
namespace {

constexpr const char *kSlots = "/sys/bus/pci/slots/";
constexpr const char *kDevices = "/sys/bus/pci/devices/";

// Slot names are mostly the firmware's numbers: "2" before "10".
bool slot_order(const std::string &a, const std::string &b) {
  auto digits = [](const std::string &s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (digits(a) && digits(b) && a.size() != b.size())
    return a.size() < b.size();
  return a < b;
}

} // namespace

void probe_pci_slots(const ProbeContext &ctx) {
  auto names = ctx.fs.list(kSlots);
  if (names.empty())
    return; // no slot listed: whether one is free stays unknown (null)
  std::sort(names.begin(), names.end(), slot_order);
  const auto devices = ctx.fs.list(kDevices);
  // The bridge above each bus: a bridge's directory holds its secondary bus as pci_bus/DDDD:BB.
  std::map<std::string, std::string> bridge_of_bus;
  for (const auto &bdf : devices)
    for (const auto &bus : ctx.fs.list(kDevices + bdf + "/pci_bus"))
      bridge_of_bus.emplace(bus, bdf);

  std::vector<PciSlot> slots;
  for (const auto &name : names) {
    const std::string dir = kSlots + name;
    const auto field = fmt::format("host.pci_slots[{}]", slots.size());
    PciSlot s;
    s.name = name;
    auto speed = [&](const char *file, const std::string &f) {
      return probe::read_parsed(ctx, dir + "/" + file, f, probe::parse_slot_speed,
                                probe::IfMissing::skip(), 4096)
          .value_or(std::nullopt);
    };
    s.max_gts = speed("max_bus_speed", field + ".max_gts");
    s.current_gts = speed("cur_bus_speed", field + ".current_gts");
    auto prefix = probe::read_parsed(ctx, dir + "/address", field + ".address",
                                     probe::parse_slot_address, probe::IfMissing::note(), 4096);
    if (prefix) {
      s.address = prefix->substr(0, prefix->size() - 1);
      s.occupied = std::any_of(devices.begin(), devices.end(),
                               [&](const std::string &bdf) { return bdf.starts_with(*prefix); });
      const auto bus = s.address->substr(0, s.address->find(':', s.address->find(':') + 1));
      if (auto b = bridge_of_bus.find(bus); b != bridge_of_bus.end()) {
        s.bridge = b->second;
        s.max_width =
            probe::read_parsed(ctx, kDevices + b->second + "/max_link_width", field + ".max_width",
                               probe::parse_link_width, probe::IfMissing::skip(), 4096);
      }
    }
    slots.push_back(std::move(s));
  }
  ctx.snapshot.host.pci_slots = std::move(slots);
}

} // namespace dlrig
