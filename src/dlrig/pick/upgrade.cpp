#include "dlrig/pick/upgrade.hpp"

#include "dlrig/core/pcie.hpp"
#include "dlrig/fit/fit.hpp"
#include "dlrig/kb/kb.hpp"
#include "dlrig/pick/machine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace dlrig::pick {
namespace {

std::string gb(double bytes) {
  return fmt::format("{:.1f} GB", bytes / 1e9);
}

// The free-slot check: the slots no function occupies, and the check in words.
void check_slots(const Snapshot &snap, UpgradeAdvice &a) {
  if (!snap.host.pci_slots) {
    a.slot_check = "the free-slot check could not be done: the kernel lists no PCI slot "
                   "(/sys/bus/pci/slots is empty or missing, as in VMs and on many desktop "
                   "boards, or the snapshot was taken without it)";
    return;
  }
  const auto &all = *snap.host.pci_slots;
  a.free_slots.emplace();
  for (const auto &slot : all)
    if (slot.occupied == false)
      a.free_slots->push_back(slot);
  std::vector<std::string> names;
  for (const auto &slot : *a.free_slots)
    names.push_back(slot_text(slot));
  a.slot_check =
      a.free_slots->empty()
          ? fmt::format("no free PCI slot: all {} the kernel lists are taken", all.size())
          : fmt::format("{} of {} PCI slots free: {}", names.size(), all.size(),
                        fmt::join(names, ", "));
}

// The PCIe generation of a per-lane rate in GT/s (2.5 -> 1 ... 64 -> 6); nullopt for others.
std::optional<int> pcie_gen_of(double gts) {
  constexpr std::pair<double, int> kGens[] = {{2.5, 1}, {5, 2}, {8, 3}, {16, 4}, {32, 5}, {64, 6}};
  for (auto [rate, gen] : kGens)
    if (std::abs(gts - rate) < 0.01)
      return gen;
  return std::nullopt;
}

} // namespace

fit::GpuTarget in_slots(fit::GpuTarget g, const std::vector<PciSlot> &slots) {
  for (const auto &slot : slots) {
    if (!slot.max_width && !slot.max_gts)
      continue;
    const auto gen = slot.max_gts ? pcie_gen_of(*slot.max_gts) : std::nullopt;
    if (slot.max_width)
      g.pcie_lanes = std::min(g.pcie_lanes.value_or(*slot.max_width), *slot.max_width);
    if (gen)
      g.pcie_gen = std::min(g.pcie_gen.value_or(*gen), *gen);
    if (slot.max_gts && slot.max_width)
      if (auto bps = pcie_bytes_per_s(*slot.max_gts, *slot.max_width);
          bps && (!g.host_link_bytes_per_s || *bps < *g.host_link_bytes_per_s)) {
        g.host_link_bytes_per_s = bps;
        g.host_link = fmt::format("PCIe {:g} GT/s x{}, the free {}", *slot.max_gts, *slot.max_width,
                                  slot_text(slot));
      }
  }
  return g;
}

std::string price_text(const UpgradeLine &l) {
  if (l.fix.empty())
    return "-";
  if (!l.price)
    return l.priced.empty() ? "price unknown" : "price unknown (" + l.priced + ")";
  const auto &p = *l.price;
  std::string from;
  if (p.original_amount)
    from = fmt::format(", from {}{}", show_money(*p.original_amount, p.original_currency),
                       l.quantity > 1 ? " each" : "");
  return fmt::format("{} ({}{}, {}{}{}: {})", show_money(*l.total(), p.currency), l.priced, from,
                     p.date.empty() ? "undated" : p.date, p.stale ? ", stale" : "",
                     p.seller.empty() ? "" : ", " + p.seller, p.source);
}

std::string slot_text(const PciSlot &slot) {
  std::vector<std::string> parts;
  if (slot.max_width)
    parts.push_back(fmt::format("x{}", *slot.max_width));
  if (slot.max_gts)
    parts.push_back(fmt::format("PCIe {:g} GT/s", *slot.max_gts));
  return fmt::format("slot {}{}", slot.name,
                     parts.empty() ? "" : fmt::format(" ({})", fmt::join(parts, ", ")));
}

UpgradeAdvice upgrade_advice(const Request &rq, const Snapshot &snap, const PickResult &res) {
  const auto &kb = kb::builtin();
  const Sizing &s = rq.sizing ? *rq.sizing : builtin_sizing();
  UpgradeAdvice a;
  auto best = std::find_if(res.options.begin(), res.options.end(),
                           [](const Option &o) { return o.status == Status::ok; });
  const std::string best_fix =
      best == res.options.end()
          ? "none of the catalog's options reaches the goal"
          : fmt::format("{} ({} {})", best->name,
                        show_money(best->goal_cost.value_or(0), rq.budget.currency),
                        best->goal_cost_unit);

  check_slots(snap, a);
  const auto &fx = rq.fx ? *rq.fx : builtin_fx();
  const auto &parts = rq.part_prices ? *rq.part_prices : builtin_part_prices();
  const std::string &cur = rq.budget.currency;
  auto quote = [&](Part part, double min_gb = 0) {
    return quote_part(parts, part, cur, fx, rq.today, min_gb);
  };
  // The best option of the ranking as the fix: its own cost.
  auto best_price = [&](UpgradeLine &l) {
    if (best == res.options.end() || !best->price || !best->goal_cost)
      return;
    l.priced = best->name;
    PartQuote q;
    q.amount = *best->goal_cost;
    q.currency = best->price->currency;
    q.date = best->price->date;
    q.seller = best->price->seller;
    q.source = best->price->source;
    q.age_days = best->price->age_days;
    q.stale = best->price->stale;
    l.price = q;
  };
  auto gpus = fit::gpu_targets(snap, kb);
  if (gpus.empty()) {
    a.machine = "no GPU";
    a.lines.push_back({"gpu", "none", "a GPU", true, best_fix});
    best_price(a.lines.back());
    a.verdict = "this machine has no GPU: " + best_fix;
    return a;
  }
  const auto &g = gpus.front();
  const int count = static_cast<int>(std::count_if(
      gpus.begin(), gpus.end(), [&](const fit::GpuTarget &x) { return x.name == g.name; }));
  a.machine =
      fmt::format("{}x {}{}", count, g.name, g.host_link.empty() ? "" : " (" + g.host_link + ")");
  Option o = evaluate(rq.model, rq.run, g, count, rq.goal, rq.host);
  o.name = a.machine;
  o.acquire = Acquire::owned;
  a.as_is = o;
  // The same GPUs, as many again: offered only where the board has the free slots for them, and
  // with the caveat where the kernel does not say. Timed over the free slots' links: the added
  // cards' width and generation cap the link communication and data cross.
  const bool slots_free = a.free_slots && static_cast<int>(a.free_slots->size()) >= count;
  const fit::GpuTarget added =
      slots_free
          ? in_slots(g, std::vector<PciSlot>(a.free_slots->begin(), a.free_slots->begin() + count))
          : g;
  auto more = [&] { return evaluate(rq.model, rq.run, added, count * 2, rq.goal, rq.host); };
  // One more card of this GPU: its price as pick ranked it (new, else launch MSRP).
  auto card_price = [&](UpgradeLine &l) {
    l.priced = fmt::format("{}x {}", count, g.name);
    l.quantity = count;
    for (const auto &opt : res.options)
      if (opt.gpu == g.name && opt.count == 1 && opt.acquire == Acquire::buy_new && opt.price) {
        PartQuote q;
        q.amount = opt.price->amount;
        q.currency = opt.price->currency;
        q.date = opt.price->date;
        q.seller = opt.price->seller;
        q.source = opt.price->source;
        q.original_amount = opt.price->original_amount;
        q.original_currency = opt.price->original_currency;
        q.age_days = opt.price->age_days;
        q.stale = opt.price->stale;
        l.price = q;
        return;
      }
  };
  const bool offers_more = [&] {
    return !a.free_slots || static_cast<int>(a.free_slots->size()) >= count;
  }();
  const std::string more_gpus =
      count == 1 ? "a second " + g.name : fmt::format("{} more {}", count, g.name);
  // `offer` (more GPUs, and what they give) where the slots are free; else the best option, with
  // why more GPUs are not the fix.
  // The PSU the doubled GPUs need (machine.hpp's rule): software cannot read a PSU's rating, so
  // the user compares it with the label.
  std::string psu_text;
  if (const auto *spec = kb.find_gpu(g.name); spec && spec->tdp_w) {
    const PsuNeed psu = psu_need(*spec->tdp_w, count * 2, s);
    psu_text = fmt::format("; the PSU must then deliver at least {:.0f} W ({} x {:.0f} W GPU + "
                           "{:.0f} W CPU + {:.0f} W the rest, ATX 3.x; {}): check its label, "
                           "software cannot read it",
                           psu.watts, count * 2, *spec->tdp_w, psu.cpu_w, psu.rest_w,
                           s.at("psu_cpu_w").source);
  }
  auto more_fix = [&](const std::string &offer) {
    if (!a.free_slots)
      return fmt::format("{}, if the board has a free slot: {}{}", offer, a.slot_check, psu_text);
    if (static_cast<int>(a.free_slots->size()) < count)
      return fmt::format("{} (not {}: {})", best_fix, more_gpus, a.slot_check);
    std::vector<std::string> names;
    for (int i = 0; i < count; ++i)
      names.push_back(slot_text((*a.free_slots)[static_cast<std::size_t>(i)]));
    return fmt::format("{} in the free {}{}", offer, fmt::join(names, ", "), psu_text);
  };

  // GPU memory.
  {
    UpgradeLine l{"gpu memory", g.memory_bytes ? gb(static_cast<double>(*g.memory_bytes)) : "n/a",
                  o.device_bytes ? gb(static_cast<double>(*o.device_bytes)) + " per GPU" : "n/a",
                  false, ""};
    if (o.fits && !*o.fits) {
      l.limits = true;
      auto m = more();
      l.fix = m.fits.value_or(false)
                  ? more_fix(fmt::format("{} ({}: {} per GPU)", more_gpus, m.layout,
                                         gb(static_cast<double>(*m.device_bytes))))
                  : best_fix;
      if (m.fits.value_or(false) && offers_more)
        card_price(l);
      else
        best_price(l);
    }
    a.lines.push_back(l);
  }

  // GPU speed against the goal.
  if (rq.goal.any() && o.fits.value_or(false)) {
    UpgradeLine l{"gpu speed", speed_text(o),
                  rq.goal.tokens_per_s
                      ? fmt::format("{:g} tokens/s per stream", *rq.goal.tokens_per_s)
                      : fmt::format("the job within {:.1f} h", rq.goal.within_s.value_or(0) / 3600),
                  o.status == Status::too_slow, ""};
    if (l.limits) {
      auto m = more();
      l.fix = m.status == Status::ok ? more_fix(fmt::format("{} ({})", more_gpus, speed_text(m)))
                                     : best_fix;
      if (m.status == Status::ok && offers_more)
        card_price(l);
      else
        best_price(l);
    }
    a.lines.push_back(l);
  }

  // The host link: fit's time over this machine's link against the same GPU in a slot of its own
  // generation and width (and, for a Thunderbolt dock, over OCuLink).
  if (g.host_link_bytes_per_s && o.fits.value_or(false)) {
    std::vector<fit::GpuTarget> docked{g};
    const bool thunderbolt = g.host_link.find("Thunderbolt") != std::string::npos;
    if (thunderbolt) {
      fit::GpuTarget own = g;
      own.host_link_bytes_per_s.reset();
      docked.push_back(behind_link(own, "OCuLink", kb));
    }
    const auto costs = link_costs(rq.model, rq.run, g, docked, count, rq.goal, rq.host);
    const auto &slot = costs.front(), &now = costs[1];
    // Serving: the weights' load over each link is part of what the link costs.
    auto with_load = [](const LinkCost &c) {
      return c.link + ": " + c.speed +
             (c.load_s ? fmt::format(", weights loaded in {:.1f} s", *c.load_s) : "");
    };
    UpgradeLine l{"host link", with_load(now), with_load(slot), false, ""};
    if (now.slower) {
      l.limits = *now.slower > 0.03;
      if (l.limits)
        l.fix = fmt::format("{} at the card's own width: {} ({:.0f} % less time)", slot.link,
                            slot.speed, (1 - 1 / (1 + *now.slower)) * 100);
    }
    if (costs.size() > 2 && costs[2].slower)
      l.fix += fmt::format(
          "{}{} dock: {} ({:+.0f} % against the slot)", l.fix.empty() ? "" : "; ", costs[2].link,
          costs[2].speed + (costs[2].load_s
                                ? fmt::format(", weights loaded in {:.1f} s", *costs[2].load_s)
                                : ""),
          *costs[2].slower * 100);
    // Priced: an OCuLink dock where the card is docked (the internal slot means a desktop host,
    // which data/part_prices.csv does not price), a board whose CPU lanes give the card its
    // width where it sits in a narrow slot.
    if (!l.fix.empty()) {
      if (thunderbolt) {
        l.priced = "OCuLink dock (or a desktop host: price unknown)";
        l.price = quote(Part::egpu_oculink);
      } else {
        l.priced = "a board with the lanes";
        l.price = quote(Part::board_lanes);
      }
    }
    a.lines.push_back(l);
  }

  // RAM: twice the GPUs' memory.
  if (g.memory_bytes) {
    const auto &ratio = s.at("ram_per_gpu_memory");
    const double need = ratio.value * static_cast<double>(*g.memory_bytes) * count;
    const auto has = snap.host.memory.total_bytes;
    UpgradeLine l{"ram", has ? gb(static_cast<double>(*has)) : "n/a",
                  fmt::format("{} ({:g} x GPU memory)", gb(need), ratio.value), false, ""};
    if (has && static_cast<double>(*has) < need) {
      l.limits = true;
      l.fix = fmt::format("more RAM: at least {} ({})", gb(need), ratio.source);
      // The modules the board takes, from the snapshot's SMBIOS records: soldered LPDDR cannot
      // be added to; with every DIMM slot taken the kits replace the modules (the whole need);
      // else kits add the missing capacity. An unread type is priced as DDR5, and says so.
      const auto &mem = snap.host.memory;
      const bool soldered = mem.type && mem.type->rfind("LPDDR", 0) == 0;
      const bool full =
          mem.dimm_slots && mem.dimms_installed && *mem.dimms_installed >= *mem.dimm_slots;
      const bool ddr4 = mem.type == "DDR4";
      const std::string kind = ddr4 ? "DDR4" : "DDR5";
      if (soldered) {
        l.fix += fmt::format("; this machine's {} is soldered to the board: it takes a machine "
                             "with more memory",
                             *mem.type);
        l.priced = "a machine with more memory";
      } else {
        if (full)
          l.fix += fmt::format("; all {} DIMM slots hold a module: replace them with larger ones",
                               *mem.dimm_slots);
        else if (!mem.type || (*mem.type != "DDR4" && *mem.type != "DDR5"))
          l.fix += fmt::format("; the board's memory type is {}: priced as DDR5 (a DDR4 board "
                               "takes DDR4)",
                               mem.type ? *mem.type : "unknown (SMBIOS is readable by root only)");
        const double buy_gb = (full ? need : need - static_cast<double>(*has)) / 1e9;
        l.price = quote(ddr4 ? Part::ram_ddr4 : Part::ram_ddr5, buy_gb);
        if (l.price && l.price->capacity_gb && *l.price->capacity_gb > 0) {
          l.quantity = static_cast<int>(std::ceil(buy_gb / *l.price->capacity_gb));
          l.priced = fmt::format("{}x {:g} GB {} kit", l.quantity, *l.price->capacity_gb, kind);
        } else {
          l.priced = kind + " RAM";
        }
      }
    }
    a.lines.push_back(l);
  }

  // CPU cores per GPU.
  {
    const auto &per = s.at("cpu_cores_per_gpu");
    const int need = static_cast<int>(per.value) * count;
    const auto cores = snap.host.cpu.cores;
    UpgradeLine l{"cpu", cores ? fmt::format("{} cores", *cores) : "n/a",
                  fmt::format("{} cores ({:g} per GPU)", need, per.value), false, ""};
    if (cores && *cores < need) {
      l.limits = true;
      l.fix = fmt::format("a CPU with at least {} cores ({})", need, per.source);
      l.priced = "a CPU"; // data/part_prices.csv prices no CPU: "price unknown"
    }
    a.lines.push_back(l);
  }

  // The disk: the read rate the predicted training rate needs, against the largest local disk's
  // kind (where a dataset would go).
  if (rq.run.mode == fit::Mode::train && o.samples_per_s && o.fits.value_or(false)) {
    const bool images = rq.model.arch.family == model::ModelFamily::cnn ||
                        rq.model.arch.family == model::ModelFamily::unet;
    const double per_sample =
        images ? s["bytes_per_image"] : 4.0 * static_cast<double>(o.run.seq); // int32 token ids
    const double need = *o.samples_per_s * per_sample;
    const Mount *disk = nullptr;
    for (const auto &m : snap.host.mounts)
      if (m.kind && (*m.kind == "nvme" || *m.kind == "sata-ssd" || *m.kind == "hdd") &&
          (!disk || m.total_bytes.value_or(0) > disk->total_bytes.value_or(0)))
        disk = &m;
    UpgradeLine l{
        "disk", "n/a",
        fmt::format("{:.0f} MB/s at the predicted {:.3g} samples/s", need / 1e6, *o.samples_per_s),
        false, ""};
    if (disk) {
      const auto &rate = s.at(*disk->kind == "nvme"       ? "nvme_read_bytes_per_s"
                              : *disk->kind == "sata-ssd" ? "sata_ssd_read_bytes_per_s"
                                                          : "hdd_read_bytes_per_s");
      l.has = fmt::format("{} on {} (up to {:.0f} MB/s)", *disk->kind, disk->mountpoint,
                          rate.value / 1e6);
      if (need > rate.value) {
        l.limits = true;
        l.fix = fmt::format("an NVMe drive for the dataset{} ({})",
                            need > s["nvme_read_bytes_per_s"] ? ", or the dataset in RAM" : "",
                            rate.source);
        l.price = quote(Part::nvme_ssd);
        l.priced = l.price && l.price->capacity_gb
                       ? fmt::format("{:g} TB NVMe drive", *l.price->capacity_gb / 1000)
                       : "an NVMe drive";
      }
    }
    a.lines.push_back(l);
  }

  // The rates the converted prices used, once each.
  for (const auto &l : a.lines)
    if (l.price && l.price->original_amount &&
        std::none_of(a.conversions.begin(), a.conversions.end(),
                     [&](const Conversion &c) { return c.from == l.price->original_currency; }))
      if (auto c = conversion(fx, l.price->original_currency, cur, rq.today))
        a.conversions.push_back(*c);

  auto first =
      std::find_if(a.lines.begin(), a.lines.end(), [](const UpgradeLine &l) { return l.limits; });
  a.verdict = first == a.lines.end() ? "nothing on this machine limits the workload"
                                     : fmt::format("{} limits this machine: {}", first->part,
                                                   first->fix.empty() ? "see below" : first->fix);
  return a;
}

} // namespace dlrig::pick
