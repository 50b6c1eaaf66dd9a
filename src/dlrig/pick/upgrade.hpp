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
  // What the fix costs: the part's sourced, dated price (x quantity), in the budget's currency.
  // nullopt with a fix: "price unknown" (no row of data/part_prices.csv or data/prices.csv).
  std::optional<PartQuote> price;
  int quantity = 1;   // kits, drives or cards the fix needs
  std::string priced; // what the price is for ("2x 32 GB DDR5 kit"); empty: no priced part
  std::optional<double> total() const {
    return price ? std::optional<double>(price->amount * quantity) : std::nullopt;
  }
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
  // The exchange rates the fixes' prices were converted at (empty: none).
  std::vector<Conversion> conversions;
};

// A slot as the advice names it: "slot 2 (x4, PCIe 16 GT/s)"; unknown readings are left out.
std::string slot_text(const PciSlot &slot);

// `gpu` as it runs with more cards added in `slots`: a collective and the inputs cross the
// slowest link, so each slot's width and generation (a chipset x4 slot on AM5) cap the link fit
// times communication and data over. Unchanged where the slots do not say.
fit::GpuTarget in_slots(fit::GpuTarget gpu, const std::vector<PciSlot> &slots);

// A fix's price in words: "$750 (2x 32 GB DDR5 kit, 2026-06-03, PCPartPicker: URL)", or
// "price unknown".
std::string price_text(const UpgradeLine &line);

UpgradeAdvice upgrade_advice(const Request &request, const Snapshot &snap,
                             const PickResult &result);

} // namespace dlrig::pick
