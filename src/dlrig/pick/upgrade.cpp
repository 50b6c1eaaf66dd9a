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

std::string speed(const Option &o) {
  if (o.stream_tokens_per_s)
    return fmt::format("{:.1f} tokens/s per stream", *o.stream_tokens_per_s);
  if (o.job_s)
    return fmt::format("the job in {:.1f} h", *o.job_s / 3600);
  if (o.tokens_per_s)
    return fmt::format("{:.0f} tokens/s", *o.tokens_per_s);
  if (o.samples_per_s)
    return fmt::format("{:.0f} samples/s", *o.samples_per_s);
  return "n/a";
}

// Seconds of work per unit of the goal (lower is faster): the job, a token, or a sample.
std::optional<double> slowness(const Option &o) {
  if (o.stream_tokens_per_s && *o.stream_tokens_per_s > 0)
    return 1 / *o.stream_tokens_per_s;
  if (o.job_s)
    return o.job_s;
  if (o.samples_per_s && *o.samples_per_s > 0)
    return 1 / *o.samples_per_s;
  return std::nullopt;
}

} // namespace

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
  Option o = evaluate(rq.model, rq.run, g, count, rq.goal);
  a.as_is = o;
  // The same GPUs, one more of them (where the platform has the lanes: said by the machine rules).
  auto more = [&] { return evaluate(rq.model, rq.run, g, count * 2, rq.goal); };

  // GPU memory.
  {
    UpgradeLine l{"gpu memory", g.memory_bytes ? gb(static_cast<double>(*g.memory_bytes)) : "n/a",
                  gb(static_cast<double>(o.device_bytes)) + " per GPU", false, ""};
    if (o.fits && !*o.fits) {
      l.limits = true;
      auto m = more();
      l.fix = m.fits.value_or(false)
                  ? fmt::format("a second {} ({}: {} per GPU), where the board has the lanes",
                                g.name, m.layout, gb(static_cast<double>(m.device_bytes)))
                  : best_fix;
    }
    a.lines.push_back(l);
  }

  // GPU speed against the goal.
  if (rq.goal.any() && o.fits.value_or(false)) {
    UpgradeLine l{"gpu speed", speed(o),
                  rq.goal.tokens_per_s
                      ? fmt::format("{:g} tokens/s per stream", *rq.goal.tokens_per_s)
                      : fmt::format("the job within {:.1f} h", rq.goal.within_s.value_or(0) / 3600),
                  o.status == Status::too_slow, ""};
    if (l.limits) {
      auto m = more();
      l.fix = m.status == Status::ok ? fmt::format("a second {}: {}", g.name, speed(m)) : best_fix;
    }
    a.lines.push_back(l);
  }

  // The host link: the same GPU in a slot of its own generation and width.
  if (g.host_link_bytes_per_s && o.fits.value_or(false)) {
    fit::GpuTarget slot = g;
    slot.host_link_bytes_per_s.reset();
    slot.host_link.clear();
    Option in_slot = evaluate(rq.model, rq.run, slot, count, rq.goal);
    auto now = slowness(o), then = slowness(in_slot);
    UpgradeLine l{"host link", g.host_link, "", false, ""};
    if (now && then && *then > 0) {
      const double gain = *now / *then - 1;
      l.needs = g.pcie_gen && g.pcie_lanes
                    ? fmt::format("PCIe {}.0 x{} (the card's own)", *g.pcie_gen, *g.pcie_lanes)
                    : "the card's own link";
      l.limits = gain > 0.03;
      if (l.limits)
        l.fix =
            fmt::format("an internal slot at the card's own width: {:.0f} % faster", gain * 100);
    }
    if (g.host_link.find("Thunderbolt") != std::string::npos) {
      const auto &tb = s.at("egpu_thunderbolt_inference_loss");
      l.fix += fmt::format("{}measured: LLM inference {:.0f} % slower over Thunderbolt than in a "
                           "slot ({})",
                           l.fix.empty() ? "" : "; ", tb.value * 100, tb.source);
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

  auto first =
      std::find_if(a.lines.begin(), a.lines.end(), [](const UpgradeLine &l) { return l.limits; });
  a.verdict = first == a.lines.end() ? "nothing on this machine limits the workload"
                                     : fmt::format("{} limits this machine: {}", first->part,
                                                   first->fix.empty() ? "see below" : first->fix);
  return a;
}

} // namespace dlrig::pick
