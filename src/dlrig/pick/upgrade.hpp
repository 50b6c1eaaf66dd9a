#pragma once
// `pick --from-this-machine`: what limits this machine for the workload — the GPU's memory, its
// speed, the link (an x4 slot, a Thunderbolt dock), the RAM, the CPU — and the cheapest fix of
// each. Pure: a snapshot, the request and pick's ranked options in.
#include "dlrig/core/snapshot.hpp"
#include "dlrig/pick/pick.hpp"

#include <string>
#include <vector>

namespace dlrig::pick {

struct UpgradeLine {
  std::string part;    // gpu memory | gpu speed | host link | ram | cpu
  std::string has;     // what this machine has
  std::string needs;   // what the workload needs
  bool limits = false; // this part keeps the machine from the goal (or from fitting)
  std::string fix;     // the cheapest fix, in words (empty when nothing to do)
};

struct UpgradeAdvice {
  std::string machine;         // "1x GeForce RTX 3080 (Thunderbolt)"
  std::optional<Option> as_is; // the workload on this machine's GPUs as they are
  std::vector<UpgradeLine> lines;
  std::string verdict; // one sentence: what limits it and the cheapest fix
  // Where more GPUs would go: the board's free PCI slots (snapshot host.pci_slots, occupied
  // false); nullopt when the kernel lists no slot, so whether one is free is unknown.
  std::optional<std::vector<PciSlot>> free_slots;
  std::string slot_check; // the free-slot check in words, or why it could not be done
};

// A slot as the advice names it: "slot 2 (x4, PCIe 16 GT/s)"; unknown readings are left out.
std::string slot_text(const PciSlot &slot);

UpgradeAdvice upgrade_advice(const Request &request, const Snapshot &snap,
                             const PickResult &result);

} // namespace dlrig::pick
