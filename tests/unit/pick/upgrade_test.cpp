// pick --from-this-machine: which part of a snapshot's machine limits the workload, and the fix.
#include "dlrig/fit/fit.hpp"
#include "dlrig/kb/kb.hpp"
#include "dlrig/pick/upgrade.hpp"

#include <gtest/gtest.h>

namespace dlrig::pick {
namespace {

// One RTX 4090 (by PCI id) at PCIe 4.0 x4, with `ram` bytes of RAM and `cores` CPU cores.
Snapshot machine(double ram, int cores) {
  Snapshot s;
  s.host.memory.total_bytes = static_cast<std::uint64_t>(ram);
  s.host.cpu.cores = cores;
  Gpu g;
  g.bdf = "0000:01:00.0";
  g.vendor_id = "0x10de";
  g.device_id = "0x2684";
  g.narrowest_gts = 16;
  g.narrowest_width = 4;
  NvmlGpu n;
  n.name = "NVIDIA GeForce RTX 4090";
  n.memory_total_bytes = 25'757'220'864ull;
  g.nvml = n;
  s.gpus.push_back(g);
  return s;
}

Request request(fit::Run run) {
  Request rq;
  rq.model = fit::model_from_catalog("resnet-50", kb::builtin()).value();
  rq.run = fit::resolve_run(rq.model, run, nullptr).value();
  rq.prices = builtin_prices();
  rq.today = "2026-11-25";
  return rq;
}

const UpgradeLine *part(const UpgradeAdvice &a, std::string_view name) {
  for (const auto &l : a.lines)
    if (l.part == name)
      return &l;
  return nullptr;
}

TEST(PickUpgrade, SmallRamFewCoresAndAnX4SlotAreNamed) {
  fit::Run run;
  run.batch = 256;
  run.precision = fit::Precision::fp16_amp;
  auto rq = request(run);
  auto snap = machine(16e9, 2);
  auto a = upgrade_advice(rq, snap, pick(rq));
  ASSERT_TRUE(a.as_is);
  EXPECT_EQ(a.as_is->name, a.machine) << "the option is this machine, named";
  EXPECT_EQ(a.as_is->acquire, Acquire::owned);
  EXPECT_NE(a.machine.find("PCIe 16 GT/s x4"), std::string::npos) << a.machine;
  const auto *ram = part(a, "ram");
  ASSERT_NE(ram, nullptr);
  EXPECT_TRUE(ram->limits) << "16 GB < 2 x 25.8 GB";
  EXPECT_NE(ram->fix.find("more RAM"), std::string::npos);
  const auto *cpu = part(a, "cpu");
  ASSERT_NE(cpu, nullptr);
  EXPECT_TRUE(cpu->limits) << "2 cores < 4 per GPU";
  // 256 fp32 images of 224 px per step through x4: the link is judged against the card's x16.
  const auto *link = part(a, "host link");
  ASSERT_NE(link, nullptr);
  // fit's time over the x4 link against the same card in its own x16 slot, both shown.
  EXPECT_NE(link->has.find("PCIe 16 GT/s x4 at "), std::string::npos) << link->has;
  EXPECT_NE(link->needs.find("an internal PCIe 4.0 x16 slot: "), std::string::npos) << link->needs;
  EXPECT_FALSE(a.verdict.empty());
}

// The disk: the read rate the predicted images/s needs, against the largest local disk's kind.
TEST(PickUpgrade, AHardDiskThatCannotFeedTheGpuIsNamed) {
  fit::Run run;
  run.batch = 256;
  run.precision = fit::Precision::fp16_amp;
  run.channels_last = true; // as mixed-precision CNN recipes run (no cuDNN transposes)
  auto rq = request(run);
  auto snap = machine(128e9, 16);
  snap.gpus[0].narrowest_width = 16;
  Mount boot, data;
  boot.mountpoint = "/";
  boot.kind = "nvme";
  boot.total_bytes = 500'000'000'000ull;
  data.mountpoint = "/data";
  data.kind = "hdd";
  data.total_bytes = 8'000'000'000'000ull;
  snap.host.mounts = {boot, data};
  auto a = upgrade_advice(rq, snap, pick(rq));
  const auto *disk = part(a, "disk");
  ASSERT_NE(disk, nullptr);
  EXPECT_NE(disk->has.find("hdd on /data"), std::string::npos) << disk->has;
  EXPECT_TRUE(disk->limits) << disk->needs;
  EXPECT_NE(disk->fix.find("NVMe"), std::string::npos) << disk->fix;
  // The same machine with the dataset's disk an NVMe drive: nothing to fix.
  snap.host.mounts[1].kind = "nvme";
  a = upgrade_advice(rq, snap, pick(rq));
  disk = part(a, "disk");
  ASSERT_NE(disk, nullptr);
  EXPECT_FALSE(disk->limits) << disk->needs;
}

TEST(PickUpgrade, ABigMachineHasNothingToFix) {
  fit::Run run;
  run.batch = 32;
  run.precision = fit::Precision::fp16_amp;
  auto rq = request(run);
  auto snap = machine(128e9, 16);
  snap.gpus[0].narrowest_width = 16;
  auto a = upgrade_advice(rq, snap, pick(rq));
  for (const auto &l : a.lines)
    EXPECT_FALSE(l.limits) << l.part << ": " << l.fix;
  EXPECT_EQ(a.verdict, "nothing on this machine limits the workload");
}

TEST(PickUpgrade, NoGpuPointsAtTheAnswer) {
  fit::Run run;
  run.batch = 32;
  auto rq = request(run);
  Snapshot s;
  auto a = upgrade_advice(rq, s, pick(rq));
  EXPECT_EQ(a.machine, "no GPU");
  ASSERT_EQ(a.lines.size(), 1u);
  EXPECT_TRUE(a.lines[0].limits);
  EXPECT_NE(a.verdict.find("no GPU"), std::string::npos);
}

// A second GPU is offered only where the board has a free slot for it: ResNet-50's 90 ImageNet
// epochs within a day, which one RTX 4090 misses and two reach in fit's time model.
Request too_slow_for_one() {
  fit::Run run;
  run.batch = 256;
  run.precision = fit::Precision::fp16_amp;
  run.samples = 1'281'167;
  run.epochs = 90;
  auto rq = request(run);
  rq.goal.within_s = 24 * 3600.0;
  return rq;
}

PciSlot slot(std::string name, bool occupied, int width) {
  PciSlot s;
  s.name = std::move(name);
  s.address = "0000:0" + s.name + ":00";
  s.occupied = occupied;
  s.max_width = width;
  s.max_gts = 16;
  return s;
}

TEST(PickUpgrade, ASecondGpuGoesInAFreeSlotNamedWithItsWidth) {
  auto rq = too_slow_for_one();
  auto snap = machine(128e9, 16);
  snap.gpus[0].narrowest_width = 16;
  snap.host.pci_slots = std::vector<PciSlot>{slot("1", true, 16), slot("2", false, 4)};
  auto a = upgrade_advice(rq, snap, pick(rq));
  const auto *speed = part(a, "gpu speed");
  ASSERT_NE(speed, nullptr);
  EXPECT_TRUE(speed->limits);
  EXPECT_NE(speed->fix.find("a second NVIDIA GeForce RTX 4090 (the job in"), std::string::npos)
      << speed->fix;
  EXPECT_NE(speed->fix.find("in the free slot 2 (x4, PCIe 16 GT/s)"), std::string::npos)
      << speed->fix;
  ASSERT_TRUE(a.free_slots);
  ASSERT_EQ(a.free_slots->size(), 1u);
  EXPECT_EQ(a.free_slots->front().name, "2");
  EXPECT_EQ(a.slot_check, "1 of 2 PCI slots free: slot 2 (x4, PCIe 16 GT/s)");
  // Two 450 W cards: 900 + 300 CPU + 150 = 1350 W sustained; their 3x excursions within the
  // PSU's 2x: (2700 + 450) / 2 = 1575 W, rounded up to 1600 W.
  EXPECT_NE(speed->fix.find("; the PSU must then deliver at least 1600 W (2 x 450 W GPU + 300 W "
                            "CPU + 150 W the rest, ATX 3.x; https://"),
            std::string::npos)
      << speed->fix;
  EXPECT_NE(speed->fix.find("check its label, software cannot read it"), std::string::npos);
}

TEST(PickUpgrade, NoSecondGpuWhenEverySlotIsTaken) {
  auto rq = too_slow_for_one();
  auto snap = machine(128e9, 16);
  snap.gpus[0].narrowest_width = 16;
  // A slot whose address could not be read is not counted as free either.
  auto unread = slot("3", false, 16);
  unread.address.reset();
  unread.occupied.reset();
  snap.host.pci_slots = std::vector<PciSlot>{slot("1", true, 16), slot("2", true, 4), unread};
  auto a = upgrade_advice(rq, snap, pick(rq));
  const auto *speed = part(a, "gpu speed");
  ASSERT_NE(speed, nullptr);
  EXPECT_TRUE(speed->limits);
  EXPECT_EQ(speed->fix.find("a second NVIDIA GeForce RTX 4090 ("), std::string::npos) << speed->fix;
  EXPECT_NE(
      speed->fix.find("(not a second NVIDIA GeForce RTX 4090: no free PCI slot: all 3 the kernel "
                      "lists are taken)"),
      std::string::npos)
      << speed->fix;
  ASSERT_TRUE(a.free_slots);
  EXPECT_TRUE(a.free_slots->empty());
}

TEST(PickUpgrade, UnlistedSlotsLeaveTheFreeSlotCheckUndone) {
  auto rq = too_slow_for_one();
  auto snap = machine(128e9, 16);
  snap.gpus[0].narrowest_width = 16;
  ASSERT_FALSE(snap.host.pci_slots); // the kernel lists none
  auto a = upgrade_advice(rq, snap, pick(rq));
  const auto *speed = part(a, "gpu speed");
  ASSERT_NE(speed, nullptr);
  EXPECT_NE(speed->fix.find("a second NVIDIA GeForce RTX 4090 (the job in"), std::string::npos)
      << speed->fix;
  EXPECT_NE(speed->fix.find("if the board has a free slot: the free-slot check could not be done: "
                            "the kernel lists no PCI slot"),
            std::string::npos)
      << speed->fix;
  EXPECT_FALSE(a.free_slots); // unknown, not "none free"
}

// Each fix carries its price and source: RAM kits at the sourced kit price, the CPU (unpriced in
// data/part_prices.csv) "price unknown", never 0.
TEST(PickUpgrade, EachFixPrintsItsPriceAndSourceOrPriceUnknown) {
  fit::Run run;
  run.batch = 256;
  run.precision = fit::Precision::fp16_amp;
  auto rq = request(run);
  auto snap = machine(16e9, 2);
  auto a = upgrade_advice(rq, snap, pick(rq));
  const auto *ram = part(a, "ram");
  ASSERT_NE(ram, nullptr);
  ASSERT_TRUE(ram->price);
  // 2 x 25.8 GB needed, 16 GB there: 35.5 GB missing -> one 64 GB DDR5 kit ($679.99, 2026-06-03).
  EXPECT_EQ(ram->quantity, 1);
  EXPECT_EQ(ram->price->amount, 679.99);
  EXPECT_EQ(ram->price->date, "2026-06-03");
  EXPECT_EQ(ram->price->source.rfind("https://", 0), 0u);
  EXPECT_NE(price_text(*ram).find("$680 (1x 64 GB DDR5 kit, 2026-06-03"), std::string::npos)
      << price_text(*ram);
  const auto *cpu = part(a, "cpu");
  ASSERT_NE(cpu, nullptr);
  EXPECT_FALSE(cpu->price);
  EXPECT_EQ(price_text(*cpu), "price unknown (a CPU)");
  // A line with nothing to fix has no price either way.
  UpgradeLine none;
  EXPECT_EQ(price_text(none), "-");
  // The type was not read (no SMBIOS records): priced as DDR5, and the fix says so.
  EXPECT_NE(ram->fix.find("the board's memory type is unknown (SMBIOS is readable by root only): "
                          "priced as DDR5"),
            std::string::npos)
      << ram->fix;
}

// The RAM fix follows the snapshot's SMBIOS records: the board's type is priced, full slots mean
// replacing the modules (kits for the whole need), soldered LPDDR cannot be added to.
TEST(PickUpgrade, RamIsPricedForTheBoardsModules) {
  fit::Run run;
  run.batch = 256;
  run.precision = fit::Precision::fp16_amp;
  auto rq = request(run);
  const auto res = pick(rq);

  // DDR4 with two of four slots free: 35.5 GB missing -> two 32 GB DDR4 kits ($240 each).
  auto ddr4 = machine(16e9, 16);
  ddr4.host.memory.type = "DDR4";
  ddr4.host.memory.dimm_slots = 4;
  ddr4.host.memory.dimms_installed = 2;
  auto a = upgrade_advice(rq, ddr4, res);
  const auto *ram = part(a, "ram");
  ASSERT_NE(ram, nullptr);
  ASSERT_TRUE(ram->limits);
  ASSERT_TRUE(ram->price);
  EXPECT_EQ(ram->quantity, 2);
  EXPECT_EQ(ram->price->amount, 240);
  EXPECT_NE(price_text(*ram).find("$480 (2x 32 GB DDR4 kit"), std::string::npos)
      << price_text(*ram);
  EXPECT_EQ(ram->fix.find("memory type"), std::string::npos) << ram->fix;
  EXPECT_EQ(ram->fix.find("DIMM slots"), std::string::npos) << ram->fix;

  // DDR5 in both of two slots: the modules are replaced, so the kits cover the whole 51.5 GB ->
  // one 64 GB kit (where adding would have needed only the missing 35.5 GB).
  auto full = machine(16e9, 16);
  full.host.memory.type = "DDR5";
  full.host.memory.dimm_slots = 2;
  full.host.memory.dimms_installed = 2;
  a = upgrade_advice(rq, full, res);
  ram = part(a, "ram");
  ASSERT_NE(ram, nullptr);
  EXPECT_NE(ram->fix.find("all 2 DIMM slots hold a module: replace them with larger ones"),
            std::string::npos)
      << ram->fix;
  ASSERT_TRUE(ram->price);
  EXPECT_EQ(ram->quantity, 1);
  EXPECT_EQ(*ram->price->capacity_gb, 64);

  // Soldered LPDDR5: no kit to buy.
  auto soldered = machine(16e9, 16);
  soldered.host.memory.type = "LPDDR5";
  a = upgrade_advice(rq, soldered, res);
  ram = part(a, "ram");
  ASSERT_NE(ram, nullptr);
  EXPECT_NE(ram->fix.find("this machine's LPDDR5 is soldered to the board"), std::string::npos)
      << ram->fix;
  EXPECT_FALSE(ram->price);
  EXPECT_EQ(price_text(*ram), "price unknown (a machine with more memory)");
}

TEST(PickUpgrade, PartPricesAreConvertedToTheBudgetsCurrency) {
  fit::Run run;
  run.batch = 256;
  run.precision = fit::Precision::fp16_amp;
  auto rq = request(run);
  rq.budget.currency = "EUR";
  auto snap = machine(16e9, 2);
  auto a = upgrade_advice(rq, snap, pick(rq));
  const auto *ram = part(a, "ram");
  ASSERT_NE(ram, nullptr);
  ASSERT_TRUE(ram->price);
  EXPECT_EQ(ram->price->currency, "EUR");
  EXPECT_NEAR(ram->price->amount, 679.99 / 1.1269, 1e-6);
  ASSERT_TRUE(ram->price->original_amount);
  EXPECT_EQ(*ram->price->original_amount, 679.99);
}

// A second card is timed at the free slot's link: in a chipset x4 slot the gradients of two cards
// cross PCIe 4.0 x4, not the first card's x16, so two cards take longer than over x16 slots.
TEST(PickUpgrade, ASecondGpuIsTimedAtItsSlotsWidth) {
  auto rq = too_slow_for_one();
  auto snap = machine(128e9, 16);
  snap.gpus[0].narrowest_width = 16;
  snap.host.pci_slots = std::vector<PciSlot>{slot("1", true, 16), slot("2", false, 4)};
  const auto narrow = upgrade_advice(rq, snap, pick(rq));
  snap.host.pci_slots = std::vector<PciSlot>{slot("1", true, 16), slot("2", false, 16)};
  const auto wide = upgrade_advice(rq, snap, pick(rq));
  const auto *a = part(narrow, "gpu speed"), *b = part(wide, "gpu speed");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a->fix, b->fix) << "the slot's width changes the time of two cards";

  const auto &kb = kb::builtin();
  auto g = fit::gpu_targets(snap, kb).front();
  const auto x4 = in_slots(g, {slot("2", false, 4)});
  EXPECT_EQ(x4.pcie_lanes, 4);
  EXPECT_EQ(x4.pcie_gen, 4);
  ASSERT_TRUE(x4.host_link_bytes_per_s);
  EXPECT_NEAR(*x4.host_link_bytes_per_s, 4 * 16e9 * 128 / 130 / 8, 1e6);
  EXPECT_NE(x4.host_link.find("slot 2 (x4, PCIe 16 GT/s)"), std::string::npos) << x4.host_link;
  const auto two_x4 = evaluate(rq.model, rq.run, x4, 2, rq.goal);
  const auto two_x16 = evaluate(rq.model, rq.run, g, 2, rq.goal);
  ASSERT_TRUE(two_x4.samples_per_s && two_x16.samples_per_s);
  EXPECT_LT(*two_x4.samples_per_s, *two_x16.samples_per_s);
  // A slot that says nothing leaves the card's link alone.
  PciSlot unknown;
  unknown.name = "9";
  const auto same = in_slots(g, {unknown});
  EXPECT_EQ(same.pcie_lanes, g.pcie_lanes);
  EXPECT_EQ(same.host_link_bytes_per_s, g.host_link_bytes_per_s);
}

} // namespace
} // namespace dlrig::pick
