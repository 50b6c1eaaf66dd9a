#include "dlrig/monitor/diagnose.hpp"
#include "dlrig/core/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace dlrig::monitor {

const std::vector<Rule> &diagnosis_rules() {
  static const std::vector<Rule> rules = {
      {"gpu-lost", "critical",
       "NVML answers GPU_IS_LOST for a GPU: it fell off the bus (Xid 79 in the kernel log)"},
      {"xid", "critical", "NVML's event set reported an Xid error for a GPU within the window"},
      {"throttling", "warning",
       "the latest sample's clocks event reasons include a power cap, a thermal slowdown, a "
       "hardware slowdown or the power brake"},
      {"idle-while-process-runs", "warning",
       "a GPU with a compute process was below 10 % utilisation in at least half of the window's "
       "samples (at least 5 samples)"},
      {"pcie-link-degraded", "warning",
       "a GPU above 30 % utilisation runs its PCIe link below its maximum generation or width"},
      {"memory-nearly-full", "warning",
       "device memory is at least 95 % used and more is used now than at the window's start"},
      {"pid-namespace", "info",
       "NVML reports processes that /proc does not show: dlrig runs in another PID namespace"},
  };
  return rules;
}

std::vector<std::string> throttle_reasons(std::uint64_t mask) {
  // nvmlClocksEventReasons bits
  // (https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html).
  struct Bit {
    std::uint64_t bit;
    const char *name;
  };
  static const Bit bits[] = {
      {0x4, "power cap"},         {0x8, "hardware slowdown"}, {0x20, "thermal"},
      {0x40, "hardware thermal"}, {0x80, "power brake"},
  };
  std::vector<std::string> out;
  for (const auto &b : bits)
    if (mask & b.bit)
      out.emplace_back(b.name);
  return out;
}

std::string xid_meaning(std::uint64_t xid) {
  // NVIDIA's Xid catalogue (https://docs.nvidia.com/deploy/xid-errors/index.html).
  switch (xid) {
  case 13:
    return "graphics engine exception";
  case 31:
    return "GPU memory page fault";
  case 43:
    return "GPU stopped processing";
  case 45:
    return "preemptive cleanup after a fault";
  case 48:
    return "double-bit ECC error";
  case 63:
    return "ECC page retirement or row remapping recorded";
  case 64:
    return "ECC page retirement or row remapping failed";
  case 74:
    return "NVLink error";
  case 79:
    return "GPU has fallen off the bus";
  case 92:
    return "high single-bit ECC error rate";
  case 94:
    return "contained ECC error";
  case 95:
    return "uncontained ECC error";
  default:
    return "";
  }
}

namespace {

const GpuSample *find_gpu(const Sample &s, unsigned index) {
  for (const auto &g : s.gpus)
    if (g.index == index)
      return &g;
  return nullptr;
}

std::string percent(double ratio) {
  return fmt::format("{:.0f} %", ratio * 100);
}

std::string window_words(const std::vector<Sample> &w) {
  double span = w.back().time - w.front().time;
  if (span >= 55 && span <= 65)
    return "the last minute";
  if (span >= 120)
    return fmt::format("the last {:.0f} minutes", span / 60);
  return fmt::format("the last {:.0f} s", std::max(span, 1.0));
}

std::string mhz(double hz) {
  return group_digits(std::llround(hz / 1e6));
}

std::string bytes_rate(double bps) {
  if (bps >= 1e9)
    return fmt::format("{:.1f} GB/s", bps / 1e9);
  return fmt::format("{:.0f} MB/s", bps / 1e6);
}

} // namespace

std::vector<Finding> diagnose(const std::vector<Sample> &window, const DiagnoseOptions &o) {
  std::vector<Finding> out;
  if (window.empty())
    return out;
  const Sample &now = window.back();
  for (const auto &g : now.gpus) {
    const unsigned i = g.index;
    if (g.lost) {
      out.push_back({"gpu-lost", "critical", i,
                     fmt::format("GPU {} fell off the bus (NVML: GPU is lost): its job has "
                                 "failed; the GPU needs a reset or a reboot",
                                 i)});
      continue;
    }

    // Xids raised within the window.
    std::vector<std::uint64_t> xids;
    for (const auto &s : window)
      if (const GpuSample *w = find_gpu(s, i))
        for (auto x : w->xids)
          if (std::find(xids.begin(), xids.end(), x) == xids.end())
            xids.push_back(x);
    for (auto x : xids) {
      std::string meaning = xid_meaning(x);
      out.push_back({"xid", "critical", i,
                     fmt::format("GPU {} reported Xid {}{}", i, x,
                                 meaning.empty() ? std::string() : " (" + meaning + ")")});
    }

    if (g.clocks_event_reasons) {
      auto reasons = throttle_reasons(static_cast<std::uint64_t>(*g.clocks_event_reasons));
      if (!reasons.empty()) {
        std::string why;
        for (const auto &r : reasons) {
          if (!why.empty())
            why += ", ";
          why += r;
          if ((r == "thermal" || r == "hardware thermal") && g.temperature_celsius)
            why += fmt::format(" {:.0f} °C", *g.temperature_celsius);
          if (r == "power cap" && g.power_limit_watts)
            why += fmt::format(" {:.0f} W", *g.power_limit_watts);
        }
        std::string clocks;
        if (g.sm_clock_hertz && g.sm_clock_max_hertz)
          clocks = fmt::format(": clocks {} of {} MHz", mhz(*g.sm_clock_hertz),
                               mhz(*g.sm_clock_max_hertz));
        out.push_back({"throttling", "warning", i,
                       fmt::format("GPU {} is throttling ({}){}", i, why, clocks)});
      }
    }

    // Idle while its process runs.
    if (window.size() >= o.idle_min_samples && g.processes && !g.processes->empty()) {
      std::size_t known = 0, idle = 0;
      for (const auto &s : window)
        if (const GpuSample *w = find_gpu(s, i); w && w->utilization_ratio) {
          ++known;
          if (*w->utilization_ratio < o.idle_utilization)
            ++idle;
        }
      if (known >= o.idle_min_samples &&
          static_cast<double>(idle) >= o.idle_share * static_cast<double>(known)) {
        double share = static_cast<double>(idle) / static_cast<double>(known);
        double cpu = 0, disk = 0;
        std::size_t cpu_n = 0, disk_n = 0;
        for (const auto &s : window) {
          if (s.host.cpu_utilization_ratio) {
            cpu += *s.host.cpu_utilization_ratio;
            ++cpu_n;
          }
          if (s.host.data_read_bytes_per_second) {
            disk += *s.host.data_read_bytes_per_second;
            ++disk_n;
          }
        }
        std::vector<std::string> evidence;
        bool cpu_busy = false;
        if (cpu_n) {
          cpu /= static_cast<double>(cpu_n);
          cpu_busy = cpu >= o.cpu_saturated;
          evidence.push_back("CPU " + percent(cpu));
        }
        if (disk_n)
          evidence.push_back("data disk " + bytes_rate(disk / static_cast<double>(disk_n)));
        std::string cause = cpu_busy ? "the input pipeline is starving it"
                                     : "the process is not keeping it busy (input pipeline, "
                                       "synchronisation or a stalled job)";
        std::string ev;
        for (const auto &e : evidence)
          ev += (ev.empty() ? "" : ", ") + e;
        out.push_back(
            {"idle-while-process-runs", "warning", i,
             fmt::format("GPU {} idle {} of {} while its process runs: {}{}", i, percent(share),
                         window_words(window), cause, ev.empty() ? "" : " (" + ev + ")")});
      }
    }

    // PCIe link below its best under load.
    if (g.utilization_ratio && *g.utilization_ratio >= o.busy_utilization) {
      bool gen_low = g.pcie_link_generation && g.pcie_link_generation_max &&
                     *g.pcie_link_generation < *g.pcie_link_generation_max;
      bool width_low =
          g.pcie_link_width && g.pcie_link_width_max && *g.pcie_link_width < *g.pcie_link_width_max;
      if (gen_low || width_low) {
        std::string what = gen_low
                               ? fmt::format("fell to Gen{:.0f} (of Gen{:.0f})",
                                             *g.pcie_link_generation, *g.pcie_link_generation_max)
                               : std::string();
        if (width_low)
          what += fmt::format("{}runs x{:.0f} of x{:.0f}", what.empty() ? "" : " and ",
                              *g.pcie_link_width, *g.pcie_link_width_max);
        out.push_back({"pcie-link-degraded", "warning", i,
                       fmt::format("GPU {} PCIe link {} under load: host-GPU copies slow down; "
                                   "reseat the card or check the riser, the slot and its BIOS "
                                   "setting",
                                   i, what)});
      }
    }

    // Memory nearly full and rising.
    if (g.memory_used_bytes && g.memory_total_bytes && *g.memory_total_bytes > 0) {
      double used = *g.memory_used_bytes / *g.memory_total_bytes;
      const GpuSample *first = find_gpu(window.front(), i);
      bool rising = first && first->memory_used_bytes && window.size() >= 2 &&
                    *g.memory_used_bytes > *first->memory_used_bytes;
      if (used >= o.memory_full && rising)
        out.push_back({"memory-nearly-full", "warning", i,
                       fmt::format("GPU {} memory {} full and rising: the next larger batch "
                                   "will run out of memory",
                                   i, percent(used))});
    }
  }

  std::size_t hidden = 0;
  for (const auto &g : now.gpus)
    if (g.processes)
      for (const auto &p : *g.processes)
        if (!p.visible)
          ++hidden;
  if (hidden)
    out.push_back({"pid-namespace", "info", std::nullopt,
                   fmt::format("{} GPU process{} not visible in /proc: dlrig runs in another PID "
                               "namespace (a container); run it with --pid=host to see users and "
                               "commands",
                               hidden, hidden == 1 ? " is" : "es are")});
  return out;
}

void add_to_window(std::vector<Sample> &window, Sample s, double seconds, double spacing) {
  const std::size_t n = window.size();
  // The newest is kept for good only once it stands spacing after the last one kept.
  if (spacing > 0 && n >= 2 && window[n - 1].time - window[n - 2].time < spacing) {
    for (auto &g : s.gpus)
      for (const auto &old : window.back().gpus)
        if (old.index == g.index && !old.xids.empty())
          g.xids.insert(g.xids.begin(), old.xids.begin(), old.xids.end());
    window.back() = std::move(s);
  } else {
    window.push_back(std::move(s));
  }
  const double now = window.back().time;
  auto kept = std::find_if(window.begin(), window.end() - 1,
                           [&](const Sample &old) { return now - old.time <= seconds; });
  window.erase(window.begin(), kept);
}

} // namespace dlrig::monitor
