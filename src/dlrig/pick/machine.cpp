#include "dlrig/pick/machine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace dlrig::pick {
namespace {

bool datacenter(const kb::GpuSpec &g) {
  return g.form_factor == "sxm" || g.form_factor == "pcie-server";
}

// RAM is sold in these totals (GB): the next one up.
double ram_size_gb(double need_gb) {
  for (double s : {16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096})
    if (s >= need_gb)
      return s;
  return std::ceil(need_gb / 1024) * 1024;
}

std::string rate(double bytes_per_s) {
  return bytes_per_s >= 1e6 ? fmt::format("{:.0f} MB/s", bytes_per_s / 1e6)
                            : fmt::format("{:.0f} kB/s", bytes_per_s / 1e3);
}

std::string gb(double bytes) {
  return fmt::format("{:.0f} GB", bytes / 1e9);
}

} // namespace

PsuNeed psu_need(double tdp_w, int count, const Sizing &s) {
  PsuNeed p;
  const double gpus_w = tdp_w * count;
  p.cpu_w = s["psu_cpu_w"];
  p.rest_w = s["psu_rest_w"];
  p.sustained = gpus_w + p.cpu_w + p.rest_w;
  const double excursion =
      (s["gpu_excursion_factor"] * gpus_w + p.cpu_w + p.rest_w) / s["psu_excursion_factor"];
  p.watts = std::ceil(std::max(p.sustained, excursion) / 50) * 50;
  return p;
}

MachinePlan plan_machine(const MachineInput &in, const Sizing &s) {
  MachinePlan plan;
  const auto &g = *in.gpu;
  const int n = in.count;
  auto add = [&](std::string id, std::string advice, const std::string &source, bool warn) {
    plan.rules.push_back({std::move(id), std::move(advice), source, warn});
  };

  // Platform: PCIe lanes for every GPU at x8 (consumer) or x16 (datacenter).
  if (!in.egpu) {
    const auto &lanes_rule = s.at(datacenter(g) ? "gpu_lanes_datacenter" : "gpu_lanes_consumer");
    const int per = static_cast<int>(lanes_rule.value);
    const int need = per * n;
    auto p = std::find_if(s.platforms.begin(), s.platforms.end(), [&](const Platform &pl) {
      return pl.cpu_lanes >= need && pl.max_gpus >= n;
    });
    if (p == s.platforms.end()) {
      add("platform",
          fmt::format("{} GPUs x {} lanes = {} CPU lanes: more than any platform of "
                      "data/platforms.csv; a server with PCIe switches or an HGX board",
                      n, per, need),
          lanes_rule.source, true);
    } else {
      plan.platform = p->name;
      add("platform",
          fmt::format("{} GPU{} x {} lanes = {} CPU lanes: {} ({} usable PCIe {} lanes){}", n,
                      n > 1 ? "s" : "", per, need, p->name, p->cpu_lanes, p->pcie_gen,
                      n > 1 && !p->notes.empty() ? ". " + p->notes : ""),
          p->source == lanes_rule.source ? p->source : lanes_rule.source + "; " + p->source,
          n > 1 && p->cpu_lanes < 16 * n);
    }
  }

  // CPU: cores per GPU, and JPEG decode threads for an image pipeline.
  const auto &cores = s.at("cpu_cores_per_gpu");
  plan.cpu_cores = static_cast<int>(cores.value) * n;
  std::string cpu = fmt::format("at least {} cores ({} per GPU)", plan.cpu_cores, cores.value);
  std::string cpu_source = cores.source;
  if (in.images && in.samples_per_s) {
    const auto &dec = s.at("decode_images_per_s_per_thread");
    const int threads = static_cast<int>(std::ceil(*in.samples_per_s / dec.value));
    if (threads > plan.cpu_cores) {
      plan.cpu_cores = threads;
      cpu = fmt::format("at least {} cores: {:.0f} images/s to decode at {:.0f} per thread (or "
                        "GPU decoding with DALI)",
                        threads, *in.samples_per_s, dec.value);
      cpu_source += "; " + dec.source;
    }
  }
  add("cpu", cpu, cpu_source, false);

  // RAM: twice the GPUs' memory, and the dataset if it should stay in the page cache.
  const auto &ratio = s.at("ram_per_gpu_memory");
  const double vram = g.memory_gb.value_or(0) * 1e9 * n;
  double need = ratio.value * vram;
  std::string ram = fmt::format("{} x {} of GPU memory", ratio.value, gb(vram));
  if (in.dataset_bytes && *in.dataset_bytes + vram > need) {
    need = *in.dataset_bytes + vram;
    ram = fmt::format("the dataset ({}) in the page cache + {} of GPU memory",
                      gb(*in.dataset_bytes), gb(vram));
  }
  plan.ram_bytes = ram_size_gb(need / 1e9) * 1e9;
  add("ram", fmt::format("{}: {}", gb(plan.ram_bytes), ram), ratio.source, false);

  // Storage: the read rate the predicted samples/s needs.
  if (in.samples_per_s && in.bytes_per_sample) {
    const auto &nvme = s.at("nvme_read_bytes_per_s");
    plan.read_bytes_per_s = *in.samples_per_s * *in.bytes_per_sample;
    const bool over = *plan.read_bytes_per_s > nvme.value;
    add("storage",
        fmt::format("reads {} at the predicted {:.3g} samples/s: {}", rate(*plan.read_bytes_per_s),
                    *in.samples_per_s,
                    over ? "more than one Gen3 NVMe drive (3.9 GB/s): Gen4 drives or RAID 0"
                         : "any NVMe drive (a Gen3 x4 link carries 3.9 GB/s)"),
        nvme.source + (in.images ? "; " + s.at("bytes_per_image").source : ""), over);
  }

  // PSU: the GPUs' board power + CPU + the rest, and the GPUs' 100 us excursions on ATX 3.x.
  if (!in.egpu && g.tdp_w) {
    const double gpus_w = *g.tdp_w * n;
    const PsuNeed psu = psu_need(*g.tdp_w, n, s);
    const double cpu_w = psu.cpu_w, rest_w = psu.rest_w, sustained = psu.sustained;
    plan.psu_w = psu.watts;
    add("psu",
        fmt::format("{:.0f} W ATX 3.x: {} x {:.0f} W GPU + {:.0f} W CPU + {:.0f} W the rest = "
                    "{:.0f} W; GPU excursions {:.0f}x for 100 us within the PSU's {:.0f}x",
                    plan.psu_w, n, *g.tdp_w, cpu_w, rest_w, sustained, s["gpu_excursion_factor"],
                    s["psu_excursion_factor"]),
        s.at("psu_cpu_w").source + "; " + s.at("psu_excursion_factor").source, false);
    const double slot = s["pcie_slot_w"], pin8 = s["pcie_8pin_w"], hp = s["connector_12v_2x6_w"];
    const int eight = static_cast<int>(std::ceil(std::max(0.0, *g.tdp_w - slot) / pin8));
    if (eight > 0)
      add("connectors",
          fmt::format("per card: {} PCIe 8-pin on separate cables ({:.0f} W each, {:.0f} W from "
                      "the slot){}",
                      eight, pin8, slot,
                      *g.tdp_w <= hp ? fmt::format(", or one 12V-2x6 ({:.0f} W)", hp) : ""),
          s.at("pcie_8pin_w").source + "; " + s.at("pcie_slot_w").source, false);
    const auto &circuit = s.at("circuit_us_w");
    if (plan.psu_w > circuit.value) {
      const double limited = gpus_w * s["power_limit_fraction"] + cpu_w + rest_w;
      add("circuit",
          fmt::format("{:.0f} W is more than a US 15 A / 120 V circuit ({:.0f} W): a 230 V "
                      "circuit, two circuits, or a power limit of {:.0f} % ({:.0f} W in all) "
                      "keeping about {:.0f} % of the throughput",
                      plan.psu_w, circuit.value, s["power_limit_fraction"] * 100, limited,
                      s["power_limit_throughput"] * 100),
          circuit.source, true);
    }
  }

  // Cooling: open-air consumer cards beyond two.
  const auto &open = s.at("open_air_max_gpus");
  if (g.form_factor == "desktop" && n > static_cast<int>(open.value))
    add("cooling",
        fmt::format("{} open-air consumer cards: more than {:.0f} need risers, an open frame or "
                    "blower / workstation cards (stacked cards throttle)",
                    n, open.value),
        open.source, true);

  // The eGPU: what each dock link costs this workload in fit's time model (the input copy over
  // the link's measured host-to-device rate), against the same card in an internal slot.
  if (in.egpu) {
    plan.egpu_links = in.egpu_links;
    const auto &tb = s.at("egpu_thunderbolt_inference_loss");
    std::string advice;
    bool slower = false;
    for (const auto &l : in.egpu_links) {
      advice += fmt::format("{}{}: {}", advice.empty() ? "" : "; ", l.link, l.speed);
      if (l.load_s)
        advice += fmt::format(", weights loaded in {:.1f} s", *l.load_s);
      if (l.slower) {
        advice += fmt::format(" ({:+.0f} % against the slot)", *l.slower * 100);
        slower = slower || *l.slower > 0.005;
      }
    }
    if (advice.empty())
      advice = "the time over the dock is unknown";
    advice += fmt::format(" — fit's time model, the inputs (serving: the weights once, then the "
                          "token ids of each step) copied over each link's measured rate; the "
                          "tunnel's per-step latency has no sourced figure and is not charged. "
                          "Published single-stream LLM inference: {:.0f} % slower over "
                          "Thunderbolt 4, {:.0f} % over OCuLink (not in the time above); "
                          "training over a dock is unmeasured",
                          tb.value * 100, s["egpu_oculink_inference_loss"] * 100);
    add("egpu", advice, "data/links.csv (measured host-to-device rates); " + tb.source, slower);
  }
  return plan;
}

} // namespace dlrig::pick
