#include "dlrig/pick/upgrade.hpp"

#include "dlrig/fit/fit.hpp"
#include "dlrig/kb/kb.hpp"

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

} // namespace

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
  auto gpus = fit::gpu_targets(snap, kb);
  if (gpus.empty()) {
    a.machine = "no GPU";
    a.lines.push_back({"gpu", "none", "a GPU", true, best_fix});
    a.verdict = "this machine has no GPU: " + best_fix;
    return a;
  }
  const auto &g = gpus.front();
  const int count = static_cast<int>(std::count_if(
      gpus.begin(), gpus.end(), [&](const fit::GpuTarget &x) { return x.name == g.name; }));
  a.machine =
      fmt::format("{}x {}{}", count, g.name, g.host_link.empty() ? "" : " (" + g.host_link + ")");
  Option o = evaluate(rq.model, rq.run, g, count, rq.goal, rq.host);
  a.as_is = o;
  // The same GPUs, as many again: offered only where the board has the free slots for them, and
  // with the caveat where the kernel does not say.
  auto more = [&] { return evaluate(rq.model, rq.run, g, count * 2, rq.goal, rq.host); };
  const std::string more_gpus =
      count == 1 ? "a second " + g.name : fmt::format("{} more {}", count, g.name);
  // `offer` (more GPUs, and what they give) where the slots are free; else the best option, with
  // why more GPUs are not the fix.
  auto more_fix = [&](const std::string &offer) {
    if (!a.free_slots)
      return fmt::format("{}, if the board has a free slot: {}", offer, a.slot_check);
    if (static_cast<int>(a.free_slots->size()) < count)
      return fmt::format("{} (not {}: {})", best_fix, more_gpus, a.slot_check);
    std::vector<std::string> names;
    for (int i = 0; i < count; ++i)
      names.push_back(slot_text((*a.free_slots)[static_cast<std::size_t>(i)]));
    return fmt::format("{} in the free {}", offer, fmt::join(names, ", "));
  };

  // GPU memory.
  {
    UpgradeLine l{"gpu memory", g.memory_bytes ? gb(static_cast<double>(*g.memory_bytes)) : "n/a",
                  gb(static_cast<double>(o.device_bytes)) + " per GPU", false, ""};
    if (o.fits && !*o.fits) {
      l.limits = true;
      auto m = more();
      l.fix = m.fits.value_or(false)
                  ? more_fix(fmt::format("{} ({}: {} per GPU)", more_gpus, m.layout,
                                         gb(static_cast<double>(m.device_bytes))))
                  : best_fix;
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
    UpgradeLine l{"host link", now.link + ": " + now.speed, slot.link + ": " + slot.speed, false,
                  ""};
    if (now.slower) {
      l.limits = *now.slower > 0.03;
      if (l.limits)
        l.fix = fmt::format("{} at the card's own width: {} ({:.0f} % less time)", slot.link,
                            slot.speed, (1 - 1 / (1 + *now.slower)) * 100);
    }
    if (costs.size() > 2 && costs[2].slower)
      l.fix += fmt::format("{}{} dock: {} ({:+.0f} % against the slot)", l.fix.empty() ? "" : "; ",
                           costs[2].link, costs[2].speed, *costs[2].slower * 100);
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
      }
    }
    a.lines.push_back(l);
  }

  auto first =
      std::find_if(a.lines.begin(), a.lines.end(), [](const UpgradeLine &l) { return l.limits; });
  a.verdict = first == a.lines.end() ? "nothing on this machine limits the workload"
                                     : fmt::format("{} limits this machine: {}", first->part,
                                                   first->fix.empty() ? "see below" : first->fix);
  return a;
}

} // namespace dlrig::pick
